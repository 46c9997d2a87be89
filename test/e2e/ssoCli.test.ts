import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { attestdCli } from "../helpers/serverProcess.ts";

/**
 * `attestd sso map|unmap|list` through the compiled CLI on a SQLite data dir (docs/sso.md, "Mapping people"): what
 * the portal's /portal/api/sso/mappings does, with refusals as one line and exit 1. Runs dist/: `npm run build` first.
 */
describe("attestd sso: an operator's single sign-on mappings", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-sso-cli-"));
  const cli = (...args: string[]) => attestdCli([...args, "--data-dir", dir]);
  const ok = (...args: string[]) => {
    const r = cli(...args);
    assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("map by subject and by email (lowercased), replace, list, unmap; refusals name the problem", () => {
    ok("tenant", "create", "acme");
    ok("tenant", "create", "globex");
    const bySub = JSON.parse(ok("sso", "map", "--subject", "00u1abcd", "--tenant", "acme", "--role", "viewer").stdout);
    assert.deepEqual({ ...bySub, createdAt: undefined }, { kind: "subject", value: "00u1abcd", tenant: "acme", role: "viewer", createdAt: undefined });
    const byEmail = ok("sso", "map", "--email", "Ada@Acme.Example", "--tenant", "acme", "--role", "admin");
    assert.equal(JSON.parse(byEmail.stdout).value, "ada@acme.example");
    assert.match(byEmail.stderr, /signs in through the provider as admin of tenant acme/);
    ok("sso", "map", "--subject", "00u1abcd", "--tenant", "globex", "--role", "admin");
    const list = JSON.parse(ok("sso", "list").stdout) as { kind: string; value: string; tenant: string; role: string }[];
    assert.deepEqual(
      list.map((m) => [m.kind, m.value, m.tenant, m.role]),
      [
        ["email", "ada@acme.example", "acme", "admin"],
        ["subject", "00u1abcd", "globex", "admin"],
      ],
    );
    ok("sso", "unmap", "--email", "ada@acme.example");
    assert.equal((JSON.parse(ok("sso", "list").stdout) as unknown[]).length, 1);

    const refusals: [string[], RegExp][] = [
      [["sso", "unmap", "--email", "ada@acme.example"], /no mapping for ada@acme.example/],
      [["sso", "map", "--subject", "x", "--tenant", "nosuch", "--role", "viewer"], /no tenant "nosuch"/],
      [["sso", "map", "--subject", "x", "--tenant", "acme", "--role", "operator"], /operator.*invalid|Allowed choices/i],
      [["sso", "map", "--subject", "x", "--email", "x@y.example", "--tenant", "acme", "--role", "viewer"], /one of the two/],
      [["sso", "map", "--email", "not-an-email", "--tenant", "acme", "--role", "viewer"], /is not an email address/],
    ];
    for (const [args, message] of refusals) {
      const r = cli(...args);
      assert.equal(r.status, 1, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, message);
    }
  });
});
