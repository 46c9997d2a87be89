import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { appraisalPolicyId } from "../../src/attestation/policy/policyId.ts";
import type { ReferenceValue, TrustConfig } from "../../src/attestation/types.ts";
import { emptyAndroidTrust } from "../../src/trust/androidTrustSource.ts";

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
});
