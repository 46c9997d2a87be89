import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { POLICY_CACHE_MS } from "../../src/services/tenantPolicies.ts";
import { attestdCliAsync, attestdCliRun, startInstance, type Instance } from "../helpers/serverProcess.ts";
import { createTestDatabase, type TestDatabase } from "../store/backends.ts";
import { issueNonce, KEY, postBlob, request, tenantWithKeys } from "./harness.ts";

/**
 * Two real attestd processes on one PostgreSQL database (issue 26, docs/policy.md "the bound"): a policy version
 * stored by a third process (`attestd policy set`) is in force on both within POLICY_CACHE_MS. Every verdict is
 * checked against the bound: a Yes (the old policy) from a request that began later than the bound after the change
 * would break it. The simulated phone (`device-sim --format android-key`, a TEE key) passes the old policy and is
 * refused by the new one (StrongBox required).
 */
describe("tenant policy across two real instances on one PostgreSQL", { timeout: 180_000 }, () => {
  let db: TestDatabase;
  let dirs: string[] = [];
  let a: Instance;
  let b: Instance;
  let key: string;
  let storeFlags: string[];
  let ca: string;
  let scratch: string;

  before(async () => {
    db = await createTestDatabase("policyscale");
    storeFlags = ["--store", "postgres", "--database-url", db.url];
    dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), "attestd-policy-scale-")));
    // the phones' chains in a directory of their own, not in an instance's data directory
    scratch = mkdtempSync(path.join(tmpdir(), "attestd-policy-scale-chains-"));
    ca = path.join(dirs[0]!, "android-ca");
    await attestdCliAsync(["dev-ca", "--android", "--out", ca]);
    const keyFile = path.join(dirs[0]!, "shared-secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    const trust = ["--android-roots", path.join(ca, "root.pem"), "--android-status", path.join(ca, "status.json")];
    const started = await Promise.all(dirs.map((d) => startInstance([...storeFlags, ...trust, "--data-dir", d, "--secrets-key-file", keyFile])));
    [a, b] = [started[0]!, started[1]!];
    [key] = (await tenantWithKeys(storeFlags, "acme", [{ rps: 10_000, burst: 10_000 }])) as [string];
  });

  after(async () => {
    for (const i of [a, b]) {
      if (i && i.proc.exitCode === null && i.proc.signalCode === null) {
        i.kill("SIGTERM");
        await i.exited;
      }
    }
    for (const d of [...dirs, scratch]) if (d) rmSync(d, { recursive: true, force: true });
    await db?.drop();
  });

  /**
   * The chain device-sim just wrote. Once in CI (not reproduced in dozens of runs here) the file was gone by the time
   * it was read; a second failure should say what was there instead of only ENOENT.
   */
  function readChain(file: string, simOutput: string): Buffer {
    try {
      return readFileSync(file);
    } catch (e) {
      const dir = path.dirname(file);
      const seen = existsSync(dir) ? `${dir} holds ${JSON.stringify(readdirSync(dir))}` : `${dir} is gone`;
      throw new Error(`device-sim exited 0 (it said ${JSON.stringify(simOutput)}) but ${file} cannot be read (${(e as Error).message}); ${seen}`);
    }
  }

  /** a fresh nonce from `inst`, a TEE phone's chain for it; answers when the post began, the verdict and its policy version */
  async function appraiseOn(inst: Instance): Promise<{ startedAt: number; verdict: string; policyVersion: unknown }> {
    const nonce = await issueNonce(inst.base, key);
    const chain = path.join(scratch, `chain-${randomBytes(4).toString("hex")}.der`);
    const made = await attestdCliRun(["device-sim", "--format", "android-key", "--ca", ca, "--nonce", nonce, "--out", chain]);
    assert.equal(made.status, 0, made.stderr);
    const startedAt = Date.now();
    const res = await postBlob(inst.base, key, nonce, readChain(chain, made.stderr));
    assert.equal(res.status, 200, res.body);
    const full = await request("GET", `${inst.base}${res.headers.location}?detail=full`, { [KEY]: key });
    return { startedAt, verdict: res.json().verdict, policyVersion: full.json().attestation.detail.policyVersion };
  }

  it(`a version stored by the CLI is in force on both instances within ${POLICY_CACHE_MS / 1000} s`, async () => {
    // both read (and cache) the tenant's policy: none
    for (const inst of [a, b]) assert.equal((await appraiseOn(inst)).verdict, "Yes");
    const file = path.join(dirs[0]!, "policy.json");
    writeFileSync(file, JSON.stringify({ android: { requiredSecurityLevel: "StrongBox" } }));
    await attestdCliAsync(["policy", "set", file, "--tenant", "acme", ...storeFlags]);
    // the write happened before this moment: a request begun more than the bound after it must see the new version
    const changed = Date.now();
    for (const inst of [a, b]) {
      for (;;) {
        const v = await appraiseOn(inst);
        if (v.verdict === "No") {
          assert.equal(v.policyVersion, 1, "the verdict names the version");
          break;
        }
        assert.ok(v.startedAt - changed < POLICY_CACHE_MS, `a Yes (the old policy) from a request begun ${v.startedAt - changed} ms after the change`);
      }
    }
  });
});
