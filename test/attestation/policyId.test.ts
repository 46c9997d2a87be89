import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { appraisalPolicyId } from "../../src/attestation/policy/policyId.ts";
import type { ReferenceValue, TrustConfig } from "../../src/attestation/types.ts";
import { emptyAndroidTrust } from "../../src/trust/androidTrustSource.ts";
import { DEMO_APP_ID, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import { NONCE, NOW, appraiseAttestation, demoCa } from "../appAttest/fixtures.ts";

const globalSet: ReferenceValue = { model: "M1", firmwareVersion: "1.0", measurements: ["aa".repeat(32)] };
const tenantSet: ReferenceValue = { model: "M1", firmwareVersion: "1.1-custom", measurements: ["bb".repeat(32)] };

function trust(tenantReferenceValues?: ReferenceValue[]): TrustConfig {
  return {
    vendor: { rootsDer: [], revocations: new Map(), referenceValues: [globalSet], ...(tenantReferenceValues ? { tenantReferenceValues } : {}) },
    android: emptyAndroidTrust(),
  };
}

describe("appraisal policy id", () => {
  it("names a tenant's own reference sets: they decide its verdicts, so another set is another policy", () => {
    const plain = appraisalPolicyId(trust());
    assert.equal(appraisalPolicyId(trust([])), plain, "no own sets is the global policy");
    const own = appraisalPolicyId(trust([tenantSet]));
    assert.notEqual(own, plain);
    assert.equal(appraisalPolicyId(trust([{ ...tenantSet }])), own, "the same sets, the same id");
    assert.notEqual(appraisalPolicyId(trust([{ ...tenantSet, measurements: ["cc".repeat(32)] }])), own);
  });

  it("an app-attest attestation's names its iOS app: the app id, the environment it accepts and the App Attestation roots", () => {
    const t = { ...trust(), appAttest: { rootsDer: [new Uint8Array([1, 2, 3])] } };
    const plain = appraisalPolicyId(t);
    const production = appraisalPolicyId(t, undefined, { appId: "ABCDE12345.com.example.app", environment: "production" });
    assert.notEqual(production, plain);
    assert.equal(appraisalPolicyId(t, undefined, { appId: "ABCDE12345.com.example.app", environment: "production" }), production, "the same app, the same id");
    assert.notEqual(appraisalPolicyId(t, undefined, { appId: "ABCDE12345.com.example.app", environment: "both" }), production, "another environment, another policy");
    assert.notEqual(appraisalPolicyId(t, undefined, { appId: "ABCDE12345.com.example.app", environment: "development" }), production);
    assert.notEqual(appraisalPolicyId(t, undefined, { appId: "ABCDE12345.com.example.other", environment: "production" }), production);
    const otherRoot = { ...t, appAttest: { rootsDer: [new Uint8Array([9])] } };
    assert.notEqual(appraisalPolicyId(otherRoot, undefined, { appId: "ABCDE12345.com.example.app", environment: "production" }), production, "another root, another policy");
  });

  it("an App Attest verdict records its app's environment in detail.appraisalPolicyId", async () => {
    const { blob } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
    const production = await appraiseAttestation(blob, { apps: [{ appId: DEMO_APP_ID, environment: "production" }] });
    const both = await appraiseAttestation(blob, { apps: [{ appId: DEMO_APP_ID, environment: "both" }] });
    assert.deepEqual([production.record.verdict, both.record.verdict], ["Yes", "Yes"]);
    assert.match(String(production.detail.appraisalPolicyId), /^urn:attestd:appraisal-policy:sha-256:[0-9a-f]{64}$/);
    assert.notEqual(production.detail.appraisalPolicyId, both.detail.appraisalPolicyId);
  });
});
