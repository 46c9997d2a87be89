import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPublicKey } from "node:crypto";
import { compactDecrypt, compactVerify } from "jose";
import { independentPlayToken } from "../helpers/independentJose.ts";
import { joseToken, makeApp, NONCE, openAndAppraise, payload } from "./fixtures.ts";

/**
 * Tokens made by a second JOSE implementation (test/helpers/independentJose.ts: node:crypto primitives only) must
 * appraise exactly as jose-made ones: same record, reason, detail and facts. A bug shared by jose's encoder and its
 * decoder (and so invisible to tests that make tokens with jose) would show here.
 */

const app = makeApp();
const independent = (p: unknown) => independentPlayToken(p, { decryptionKey: app.decryptionKey, signingKey: app.signingKey });

const cases: [string, Record<string, unknown>][] = [
  ["Yes", payload()],
  ["classic nonce", payload({ requestDetails: { requestHash: undefined, nonce: NONCE } })],
  ["device below the floor", payload({ deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY"] } })],
  ["another package", payload({ requestDetails: { requestPackageName: "com.other" } })],
  ["stale", payload({ requestDetails: { timestampMillis: "1000" } })],
  ["unrecognized app", payload({ appIntegrity: { appRecognitionVerdict: "UNRECOGNIZED_VERSION" } })],
  ["non-ASCII text in an ignored field", { ...payload(), note: "münchen ✓" }],
];

describe("play-integrity: an independent JOSE implementation's tokens appraise identically", () => {
  for (const [name, p] of cases) {
    it(name, async () => {
      const a = await openAndAppraise(await joseToken(p, app), [app]);
      const b = await openAndAppraise(independent(p), [app]);
      assert.equal(b.evidence.opened, true);
      assert.deepEqual(b.result, a.result);
    });
  }

  it("jose reads the independent tokens as the JWE / JWS they claim to be (the helper is a real implementation)", async () => {
    const token = independent(payload());
    const { plaintext, protectedHeader } = await compactDecrypt(token, app.decryptionKey, { keyManagementAlgorithms: ["A256KW"], contentEncryptionAlgorithms: ["A256GCM"] });
    assert.deepEqual(protectedHeader, { alg: "A256KW", enc: "A256GCM" });
    const { payload: signed } = await compactVerify(new TextDecoder().decode(plaintext), createPublicKey({ key: Buffer.from(app.registered.responseKeys!.verificationKeySpki), format: "der", type: "spki" }), { algorithms: ["ES256"] });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(signed)), payload());
  });

  it("a token the independent implementation made with another app's keys is refused alike", async () => {
    const other = makeApp();
    const token = independentPlayToken(payload(), { decryptionKey: other.decryptionKey, signingKey: other.signingKey });
    const { result } = await openAndAppraise(token, [app]);
    assert.deepEqual([result.record.status, result.record.verdict, result.detail.rule], ["SignatureInvalid", "No", "not-opened"]);
  });
});
