import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { attestdCli } from "../helpers/serverProcess.ts";

/**
 * `attestd tenant ...` and `attestd key ...` as an operator runs them: the same services as the portal's Tenants
 * and API keys pages (TenantAdmin, ApiKeyAdmin), so what one can change the other can, with the same refusals.
 */
describe("attestd tenant and key commands", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-cli-"));
  const data = ["--data-dir", dir];
  const cli = (...args: string[]) => attestdCli([...args, ...data]);
  after(() => rmSync(dir, { recursive: true, force: true }));

  // (each command is a process: the refusals the service shares with the portal are tried over HTTP, test/http/portalOverview.test.ts)
  it("tenants: created (refused twice), listed, state and enrollment changed", () => {
    const made = cli("tenant", "create", "acme", "--kind", "reseller", "--customer-id", "4242");
    assert.equal(made.status, 0, made.stderr);
    assert.deepEqual(
      (({ name, kind, customerId, state, enrollmentEnabled }) => ({ name, kind, customerId, state, enrollmentEnabled }))(JSON.parse(made.stdout)),
      { name: "acme", kind: "reseller", customerId: "4242", state: "active", enrollmentEnabled: false },
    );
    const again = cli("tenant", "create", "acme");
    assert.equal(again.status, 1);
    assert.equal(again.stderr, 'attestd: tenant "acme" already exists\n');
    assert.equal(cli("tenant", "set-state", "acme", "blocked").status, 0);
    assert.equal(cli("tenant", "enable-enrollment", "acme").status, 0);
    const listed = JSON.parse(cli("tenant", "list").stdout) as { name: string; state: string; enrollmentEnabled: boolean }[];
    assert.deepEqual(listed.map((t) => [t.name, t.state, t.enrollmentEnabled]), [["acme", "blocked", true]]);
  });

  it("key set: limits, label and restrictions, parsed as the portal parses them; a bad entry changes nothing", () => {
    const key = cli("key", "create", "--tenant", "acme", "--label", "shop");
    assert.equal(key.status, 0, key.stderr);
    const keyId = /key id (\S+)/.exec(key.stderr)![1]!;
    const set = cli("key", "set", keyId, "--rps", "5", "--ip", "203.0.113.7, 10.0.0.0/8", "--referer", "https://*.acme.example/*", "--label", "shop, production");
    assert.equal(set.status, 0, set.stderr);
    const after = JSON.parse(set.stdout);
    assert.deepEqual([after.rps, after.burst, after.label, after.restrictions], [5, 10, "shop, production", { ipAddresses: ["203.0.113.7/32", "10.0.0.0/8"], referers: ["https://*.acme.example/*"] }]);
    assert.ok(!("secretHash" in after));

    const bad = cli("key", "set", keyId, "--ip", "10.0.0.300", "--rps", "9");
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /^attestd: ipAddresses\[0\] is not an IPv4\/IPv6 address or CIDR block\n$/);
    const cleared = JSON.parse(cli("key", "set", keyId, "--ip", "", "--referer", "").stdout);
    assert.deepEqual([cleared.rps, cleared.restrictions], [5, null], "the refused edit changed nothing; empty lists lift the restrictions");

    assert.equal(cli("key", "revoke", keyId).status, 0);
    const revoked = cli("key", "set", keyId, "--rps", "1");
    assert.deepEqual([revoked.status, revoked.stderr], [1, `attestd: no active key with id "${keyId}"\n`]);
  });
});
