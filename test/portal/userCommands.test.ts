import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { isAppError } from "../../src/errors/AppError.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { PORTAL_PASSWORD } from "../helpers/portalPeople.ts";
import { startTestRuntime } from "../helpers/runtime.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * `attestd user ...` for portal accounts, as an operator runs it: the same PortalAccounts operations as the
 * portal's Users page (test/http/portalAuth.test.ts), so the two agree on what a person looks like and may do.
 */
describe("attestd user: portal accounts from the command line", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-users-"));
  const data = ["--data-dir", dir];
  after(() => rmSync(dir, { recursive: true, force: true }));

  const ok = (args: string[]) => {
    const r = attestdCli([...args, ...data]);
    assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  const people = (...filter: string[]) => JSON.parse(ok(["user", "list-portal", ...filter]).stdout) as { email: string; tenant: string | null; role: string; state: string }[];

  it("invite, list-portal, set-role, disable and enable, with the portal's refusals as one-line errors", () => {
    ok(["tenant", "create", "acme"]);
    const link = ok(["user", "invite", "--email", "Ana@Acme.example", "--tenant", "acme", "--role", "viewer"]).stdout.trim();
    assert.match(link, /^https:\/\/localhost:8443\/portal\/invite#[A-Za-z0-9_-]{43}$/, "the default public URL: localhost for a loopback host");
    ok(["user", "invite", "--operator", "--email", "root@example.org", "--public-url", "https://attest.example/"]);

    assert.deepEqual(people("--tenant", "acme").map((p) => [p.email, p.tenant, p.role, p.state]), [["ana@acme.example", "acme", "viewer", "invited"]]);
    assert.deepEqual(people("--operators").map((p) => [p.email, p.tenant, p.role]), [["root@example.org", null, "operator"]]);
    assert.equal(people().length, 2);
    assert.ok(!ok(["user", "list-portal"]).stdout.includes("passwordHash"));

    ok(["user", "set-role", "ana@acme.example", "admin"]);
    assert.equal(people("--tenant", "acme")[0]!.role, "admin");
    const badRole = attestdCli(["user", "set-role", "ana@acme.example", "operator", ...data]);
    assert.notEqual(badRole.status, 0);
    const opRole = attestdCli(["user", "set-role", "root@example.org", "viewer", ...data]);
    assert.equal(opRole.status, 1);
    assert.match(opRole.stderr, /operator/);
    assert.doesNotMatch(opRole.stderr, /\n\s+at /, "one line, no stack");

    ok(["user", "disable", "ana@acme.example"]);
    assert.equal(people("--tenant", "acme")[0]!.state, "disabled");
    ok(["user", "enable", "ana@acme.example"]);
    assert.equal(people("--tenant", "acme")[0]!.state, "invited", "never set a password: back to invited");

    const unknown = attestdCli(["user", "list-portal", "--tenant", "nope", ...data]);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /no tenant "nope"/);
  });

  it("reset-link EMAIL: prints a one-time link that voids the earlier one; none for a disabled or unknown person", async () => {
    ok(["tenant", "create", "globex"]);
    const invitation = ok(["user", "invite", "--email", "rae@globex.example", "--tenant", "globex"]).stdout.trim();
    const reset = ok(["user", "reset-link", "RAE@globex.example", "--public-url", "https://attest.example/"]);
    assert.match(reset.stdout.trim(), /^https:\/\/attest\.example\/portal\/reset#[A-Za-z0-9_-]{43}$/);
    assert.match(reset.stderr, /rae@globex\.example may set a new password with that link until \S+Z; it works once/);

    // what the links do, through the same store as a server on this data dir
    const t = await startTestRuntime({}, { dir });
    try {
      const { accounts } = t.runtime.portal;
      await assert.rejects(accounts.acceptInvite(invitation.split("#")[1]!, PORTAL_PASSWORD, (a) => testActor(undefined, a)), (e: unknown) => isAppError(e) && e.entry === catalog.PORTAL_INVITE_INVALID);
      assert.equal((await accounts.acceptInvite(reset.stdout.trim().split("#")[1]!, PORTAL_PASSWORD, (a) => testActor(undefined, a))).state, "active");
    } finally {
      await t.close();
    }

    ok(["user", "disable", "rae@globex.example"]);
    const disabled = attestdCli(["user", "reset-link", "rae@globex.example", ...data]);
    assert.deepEqual([disabled.status, disabled.stdout], [1, ""]);
    assert.match(disabled.stderr, /disabled; enable it first/);
    assert.doesNotMatch(disabled.stderr, /\n\s+at /, "one line, no stack");
    const unknown = attestdCli(["user", "reset-link", "nobody@globex.example", ...data]);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /no portal user nobody@globex\.example/);
  });
});
