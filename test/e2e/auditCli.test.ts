import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { hostname, tmpdir, userInfo } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { parseApiKey } from "../../src/auth/apiKeys.ts";
import type { AuditRecord } from "../../src/domain/audit.ts";
import { attestdCli } from "../helpers/serverProcess.ts";

/**
 * The audit trail from the CLI, each command a real `attestd` process: an operator's changes are recorded with the
 * OS user and the host (`cli`), before and after without secrets, also appended to --audit-file; `attestd audit
 * list` and `attestd audit export` read them back (all, one tenant's, filtered), the export as JSON lines to
 * stdout or a file.
 */
describe("attestd audit, and the records the CLI's changes leave", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-audit-cli-"));
  const auditFile = path.join(dir, "audit.jsonl");
  const data = ["--data-dir", dir, "--audit-file", auditFile];
  const cli = (...args: string[]) => attestdCli([...args, ...data]);
  after(() => rmSync(dir, { recursive: true, force: true }));
  const list = (...args: string[]): AuditRecord[] => {
    const r = cli("audit", "list", ...args);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as AuditRecord[];
  };

  it("tenant and key changes are recorded with the OS user and host, the key's secret nowhere", () => {
    assert.equal(cli("tenant", "create", "acme").status, 0);
    assert.equal(cli("tenant", "create", "globex").status, 0);
    const key = cli("key", "create", "--tenant", "acme", "--label", "shop");
    assert.equal(key.status, 0, key.stderr);
    // The secret by the key's own grammar: base64url holds "_" too, so splitting on it can leave a fragment short
    // enough to occur in the store by chance.
    const { keyId, secret } = parseApiKey(key.stdout.trim())!;
    assert.equal(keyId, /key id (\S+)/.exec(key.stderr)![1]);
    assert.equal(cli("key", "revoke", keyId).status, 0);
    assert.equal(cli("tenant", "set-state", "globex", "blocked").status, 0);

    const records = list().reverse();
    assert.deepEqual(records.map((r) => r.action), ["tenant.created", "tenant.created", "key.created", "key.revoked", "tenant.blocked"]);
    for (const r of records) {
      assert.deepEqual(r.actor, { kind: "operator", id: userInfo().username });
      assert.deepEqual(r.from, { kind: "cli", hostname: hostname() });
    }
    const created = records[2]!;
    assert.deepEqual([created.target, (created.after as { label: string }).label], [{ kind: "api-key", id: keyId }, "shop"]);
    assert.ok(!readFileSync(path.join(dir, "attestd.sqlite")).includes(secret), "the secret is not in the store");
    assert.ok(!JSON.stringify(records).includes(secret));

    // --audit-file: the same records, one JSON line each, a private file
    const lines = readFileSync(auditFile, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRecord);
    assert.deepEqual(lines, records);
    assert.equal(statSync(auditFile).mode & 0o777, 0o600);
  });

  it("list filters: one tenant, an action family, a target; a bad filter is one line, exit 1", () => {
    const acme = list("--tenant", "acme");
    assert.deepEqual(acme.map((r) => r.action).sort(), ["key.created", "key.revoked", "tenant.created"]);
    assert.deepEqual(list("--action", "key.*").map((r) => r.action), ["key.revoked", "key.created"]);
    assert.equal(list("--action", "tenant.blocked", "--target", "tenant").length, 1);
    assert.equal(list("--actor", "user").length, 0);
    assert.equal(list("--limit", "2").length, 2);
    const bad = cli("audit", "list", "--from", "yesterday");
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /^attestd: .*from/);
  });

  it("export: JSON lines to stdout, or to a new file", () => {
    const out = cli("audit", "export");
    assert.equal(out.status, 0, out.stderr);
    const lines = out.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRecord);
    assert.deepEqual(lines, list());
    const file = path.join(dir, "export.jsonl");
    const toFile = cli("audit", "export", "--tenant", "acme", "--out", file);
    assert.equal(toFile.status, 0, toFile.stderr);
    assert.equal(toFile.stderr, `3 audit records written to ${file}\n`);
    assert.deepEqual(readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRecord), list("--tenant", "acme"));
    const again = cli("audit", "export", "--out", file);
    assert.equal(again.status, 1, "an existing file is not overwritten");
  });

  it("an EAR signing key rotation is an operator-wide record (no tenant), without the private key", () => {
    const rotated = cli("keys", "rotate");
    assert.equal(rotated.status, 0, rotated.stderr);
    const kid = (JSON.parse(rotated.stdout) as { kid: string }).kid;
    const [r] = list("--action", "signing-key.*");
    assert.deepEqual([r!.action, r!.tenantId, r!.target], ["signing-key.rotated", null, { kind: "signing-key", id: kid }]);
    assert.doesNotMatch(JSON.stringify(r), /PRIVATE KEY|privateKey/);
    assert.deepEqual(list("--tenant", "acme").filter((x) => x.action.startsWith("signing-key")), [], "not in a tenant's view");
  });
});
