import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { attestdCli } from "../helpers/serverProcess.ts";
import { walkthroughBlocks, walkthroughSession } from "../helpers/walkthrough.ts";
import { pemBlob, vec } from "../android/fixtures.ts";

/**
 * `attestd policy show|set|versions|rollback` (docs/policy.md) through the compiled CLI: the same TenantPolicies as
 * the admin API, so the same versions, parser and refusals; the author is the operator's OS user.
 */
describe("attestd policy", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-policy-cli-"));
  const cli = (...args: string[]) => attestdCli([...args, "--data-dir", dir]);
  const file = (name: string, doc: unknown) => {
    const f = path.join(dir, name);
    writeFileSync(f, typeof doc === "string" ? doc : JSON.stringify(doc));
    return f;
  };

  before(() => {
    const t = cli("tenant", "create", "acme");
    assert.equal(t.status, 0, t.stderr);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("show before any version: refused, saying the defaults apply", () => {
    const r = cli("policy", "show", "--tenant", "acme");
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /no stored policy/);
  });

  it("set stores versions 1 and 2, show prints the one in force, versions lists them newest first", () => {
    const one = cli("policy", "set", file("v1.json", { android: { minOsPatchLevel: "2024-01" } }), "--tenant", "acme");
    assert.equal(one.status, 0, one.stderr);
    const v1 = JSON.parse(one.stdout);
    assert.deepEqual([v1.version, v1.author, v1.document], [1, `operator:${userInfo().username}`, { android: { minOsPatchLevel: "2024-01" } }]);
    const two = cli("policy", "set", file("v2.json", { android: { requiredSecurityLevel: "StrongBox" }, appAttest: { environments: ["production"] } }), "--tenant", "acme");
    assert.equal(two.status, 0, two.stderr);
    assert.equal(JSON.parse(cli("policy", "show", "--tenant", "acme").stdout).version, 2);
    assert.equal(JSON.parse(cli("policy", "show", "--tenant", "acme", "--number", "1").stdout).document.android.minOsPatchLevel, "2024-01");
    assert.deepEqual(JSON.parse(cli("policy", "versions", "--tenant", "acme").stdout).map((v: { version: number }) => v.version), [2, 1]);
  });

  it("set refuses a bad document naming the field, and stores nothing", () => {
    const r = cli("policy", "set", file("bad.json", { android: { minOsPatchLevel: "January 2024" } }), "--tenant", "acme");
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /android\.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD/);
    const notJson = cli("policy", "set", file("bad.txt", "{"), "--tenant", "acme");
    assert.notEqual(notJson.status, 0);
    assert.match(notJson.stderr, /is not JSON/);
    assert.equal(JSON.parse(cli("policy", "show", "--tenant", "acme").stdout).version, 2);
  });

  it("attestd appraise --tenant appraises under the tenant's stored version, and names it", () => {
    // a real Sony Xperia 10 III chain (TEE): refused under version 2, which requires StrongBox
    const blob = path.join(dir, "sony.der");
    writeFileSync(blob, pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem"));
    const r = cli(
      "appraise", blob, "--challenge-hex", "3eafe4d5dd0090de5a42b432b42481af5ce29963656b2584c59a492de16d00c9", "--detail", "--tenant", "acme",
      "--android-roots", vec("android_keyattestation/roots.json"), "--android-status", vec("google_android-key-attestation/status.json"), "--at", "2025-06-01T00:00:00Z",
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.record.verdict, "No");
    assert.match(out.reason, /below the policy's required StrongBox/);
    assert.equal(out.detail.policyVersion, 2);
    assert.match(out.detail.appraisalPolicyId, /;policy=v2$/);
  });

  it("rollback stores the old document as the next version", () => {
    const r = cli("policy", "rollback", "--tenant", "acme", "--to", "1");
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual([JSON.parse(r.stdout).version, JSON.parse(r.stdout).document], [3, { android: { minOsPatchLevel: "2024-01" } }]);
    const none = cli("policy", "rollback", "--tenant", "acme", "--to", "9");
    assert.notEqual(none.status, 0);
    assert.match(none.stderr, /no policy version 9/);
  });

  it("docs/policy.md's commands, as written", async () => {
    const session = await walkthroughSession();
    try {
      session.bash(session.localise("npm run --silent attestd -- tenant create acme >/dev/null"));
      const [block] = walkthroughBlocks("docs/policy.md");
      const out = session.bash(session.localise(block!));
      // three JSON documents: the new version, the list, the rollback
      const versions = out.trim().split(/\n(?=[[{])/).map((t) => JSON.parse(t));
      assert.equal(versions[0].version, 1);
      assert.deepEqual(versions[0].document, { android: { minOsPatchLevel: "2025-01", requiredSecurityLevel: "StrongBox" } });
      assert.deepEqual(versions[1].map((v: { version: number }) => v.version), [1]);
      assert.equal(versions[2].version, 2);
    } finally {
      await session.close();
    }
  });
});
