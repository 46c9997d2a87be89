import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { appraise } from "../../src/attestation/appraise.ts";
import { readAppAttestAssertion } from "../../src/attestation/encoding/appAttestObject.ts";
import { makeAppAttestAssertion, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import type { AppAttestEvidence, AppraisalResult } from "../../src/attestation/types.ts";
import { AppAttestKeys } from "../../src/services/appAttestKeys.ts";
import { CryptoThreads } from "../../src/services/cryptoThreads.ts";
import type { StoredAppAttestKey } from "../../src/domain/iosApps.ts";
import type { AppAttestStore } from "../../src/store/types.ts";
import { NONCE, NOW, demoCa, knownKey, trustOf } from "./fixtures.ts";

/**
 * An assertion's signature checked before the appraisal, on CryptoThreads' threads (AppAttestKeys, --play-threads):
 * every verdict the same as when the appraisal checks it itself, an answer used only for its own key and nonce (and
 * the body the service read only for that body), and no assertion lost to a thread that dies.
 */

const other = Buffer.alloc(32, 1).toString("base64");
const verdictOf = (r: AppraisalResult) => [r.detail.rule, r.record.status, r.record.verdict, r.detail.nonceReading];

describe("app-attest: assertion signatures checked on threads", async () => {
  const pool = new CryptoThreads(2);
  after(() => pool.close());
  const ca = await demoCa();
  const { key } = await makeAppAttestAttestation(ca, { nonce: NONCE, now: NOW });
  const known = knownKey(key);
  const stored: StoredAppAttestKey = {
    ...known, tenantId: "t", environment: "production", receipt: "", attestedAt: NOW.toISOString(), lastAssertedAt: null,
    revokedAt: null, riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null, refreshDueAt: null,
  };
  const store = { getAppAttestKey: async (_t: string, id: string) => (id === stored.keyId ? stored : undefined) } as unknown as AppAttestStore;
  const apps = { appsForAppraisal: async () => [] };
  const clock = { nowMs: () => NOW.getTime() };
  const onThreads = new AppAttestKeys(store, apps, clock, undefined, pool.checkAssertionSignature);
  const inline = new AppAttestKeys(store, apps, clock);
  const appraised = (body: Uint8Array, evidence: AppAttestEvidence | undefined, nonce = NONCE) => appraise({ blob: body, nonce, trust: trustOf(ca), now: NOW, ...(evidence ? { appAttest: evidence } : {}) });

  it("gives every verdict the appraisal gives when it checks the signature itself", async () => {
    const ascii = "not-a-nonce-but-ascii";
    const cases: [string, Uint8Array, string][] = [
      ["good", makeAppAttestAssertion(key, { nonce: NONCE }).body, NONCE],
      ["a nonce read as its ASCII", makeAppAttestAssertion(key, { nonce: ascii }).body, ascii],
      ["a tampered signature", makeAppAttestAssertion(key, { nonce: NONCE, tamperedSignature: true }).body, NONCE],
      ["another nonce", makeAppAttestAssertion(key, { nonce: NONCE, wrongNonce: true }).body, NONCE],
      ["another app's RP ID", makeAppAttestAssertion(key, { nonce: NONCE, otherAppId: "DEMOTEAM01.x.y" }).body, NONCE],
      ["an unknown key", makeAppAttestAssertion(key, { nonce: NONCE, unknownKeyId: true }).body, NONCE],
    ];
    for (const [name, body, nonce] of cases) {
      const checked = await onThreads.evidence("t", body, nonce);
      const plain = await inline.evidence("t", body, nonce);
      assert.equal(plain?.signature, undefined, `${name}: no checker, no answer`);
      assert.deepEqual(verdictOf(appraised(body, checked, nonce)), verdictOf(appraised(body, plain, nonce)), name);
    }
    const good = await onThreads.evidence("t", cases[0]![1], NONCE);
    assert.deepEqual(good?.signature, { keyId: key.keyId, nonce: NONCE, reading: 0 });
    assert.equal((await onThreads.evidence("t", cases[2]![1], NONCE))?.signature?.reading, -1, "a tampered signature verifies over none");
    assert.equal((await onThreads.evidence("t", cases[5]![1], NONCE))?.signature, undefined, "an unknown key is not checked");
  });

  it("an answer counts only for its own key and nonce: otherwise the appraisal checks the signature itself", async () => {
    const body = makeAppAttestAssertion(key, { nonce: NONCE, tamperedSignature: true }).body;
    // a forged "verifies" for another key id, or for another nonce, changes nothing
    for (const signature of [{ keyId: other, nonce: NONCE, reading: 0 }, { keyId: key.keyId, nonce: "another", reading: 0 }]) {
      const r = appraised(body, { apps: [], key: known, signature });
      assert.deepEqual(verdictOf(r).slice(0, 3), ["signature", "SignatureInvalid", "No"], JSON.stringify(signature));
    }
    // the body the service read counts only for that very body: another one is read afresh
    const good0 = makeAppAttestAssertion(key, { nonce: NONCE }).body;
    const readElsewhere = appraised(body, { apps: [], key: known, assertion: { blob: good0, read: readAppAttestAssertion(good0) } });
    assert.deepEqual(verdictOf(readElsewhere).slice(0, 3), ["signature", "SignatureInvalid", "No"]);
    // the answer for this key and nonce is what the appraisal goes by
    const good = makeAppAttestAssertion(key, { nonce: NONCE }).body;
    assert.deepEqual(verdictOf(appraised(good, { apps: [], key: known, signature: { keyId: key.keyId, nonce: NONCE, reading: -1 } })).slice(0, 3), ["signature", "SignatureInvalid", "No"]);
  });

  it("a revoked key is not checked (its rule comes first); a thread that dies loses no assertion", async () => {
    const revoked = new AppAttestKeys({ getAppAttestKey: async () => ({ ...stored, revokedAt: NOW.toISOString() }) } as unknown as AppAttestStore, apps, clock, undefined, pool.checkAssertionSignature);
    assert.equal((await revoked.evidence("t", makeAppAttestAssertion(key, { nonce: NONCE }).body, NONCE))?.signature, undefined);

    const bodies = Array.from({ length: 16 }, (_, i) => makeAppAttestAssertion({ ...key, counter: i }, { nonce: NONCE }).body);
    const answers = bodies.map((b) => onThreads.evidence("t", b, NONCE));
    const threads = (pool as unknown as { threads: ({ worker: { terminate(): Promise<number> } } | undefined)[] }).threads;
    await Promise.all(threads.map((t) => t?.worker.terminate()));
    const evidences = await Promise.all(answers);
    assert.deepEqual(evidences.map((e) => e?.signature?.reading), bodies.map(() => 0));
    assert.ok(pool.replaced >= 1, `replaced ${pool.replaced}`);
  });
});
