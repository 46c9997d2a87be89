import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { appraise } from "../../src/attestation/appraise.ts";
import { openWithApps } from "../../src/attestation/encoding/playIntegrityToken.ts";
import { DEMO_APP_ID, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import type { TenantPolicyInForce, TrustConfig } from "../../src/attestation/types.ts";
import { demoCa, NONCE as IOS_NONCE, NOW as IOS_NOW, trustOf } from "../appAttest/fixtures.ts";
import { emptyTrust, joseToken, makeApp, NONCE, NOW, payload } from "../playIntegrity/fixtures.ts";

/**
 * A tenant's stored policy beyond Android (docs/policy.md): the floors under its Play apps and its App Attest
 * environments decide the verdict where the app's own settings would pass it, and the verdict names the version.
 */
const withPolicy = (trust: TrustConfig, tenantPolicy: TenantPolicyInForce): TrustConfig => ({ ...trust, tenantPolicy });

describe("tenant policy floors", () => {
  it("playIntegrity.minDeviceVerdict: an app whose own floor is basic is held to the tenant's device floor", async () => {
    const app = makeApp({ deviceFloor: "MEETS_BASIC_INTEGRITY" });
    const token = await joseToken(payload({ deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY"] } }), app);
    const blob = Buffer.from(token, "latin1");
    const run = async (trust: TrustConfig) => appraise({ blob, nonce: NONCE, trust, now: NOW, playIntegrity: await openWithApps(token, [app.registered]) });
    const before = await run(emptyTrust);
    assert.equal(before.record.verdict, "Yes", before.reason);
    assert.equal(before.detail.policyVersion, undefined);
    const after = await run(withPolicy(emptyTrust, { version: 2, playIntegrityFloor: "MEETS_DEVICE_INTEGRITY" }));
    assert.deepEqual([after.record.verdict, after.detail.rule], ["No", "device-floor"], after.reason);
    assert.match(after.reason, /below the floor MEETS_DEVICE_INTEGRITY/);
    assert.equal(after.detail.policyVersion, 2);
    assert.match(String(after.detail.appraisalPolicyId), /^urn:attestd:appraisal-policy:sha-256:[0-9a-f]{64};policy=v2$/);
    // a lower tenant floor leaves a higher app floor as it is
    const strictApp = makeApp({ deviceFloor: "MEETS_STRONG_INTEGRITY" });
    const strictToken = await joseToken(payload({ deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"] } }), strictApp);
    const lower = appraise({
      blob: Buffer.from(strictToken, "latin1"),
      nonce: NONCE,
      trust: withPolicy(emptyTrust, { version: 1, playIntegrityFloor: "MEETS_BASIC_INTEGRITY" }),
      now: NOW,
      playIntegrity: await openWithApps(strictToken, [strictApp.registered]),
    });
    assert.deepEqual([lower.record.verdict, lower.detail.rule], ["No", "device-floor"], lower.reason);
  });

  it("appAttest.environments: a development key of an app allowing both is refused when the tenant admits production only", async () => {
    const ca = await demoCa();
    const { blob } = await makeAppAttestAttestation(ca, { nonce: IOS_NONCE, now: IOS_NOW, environment: "development" });
    const apps = [{ appId: DEMO_APP_ID, environment: "both" as const }];
    const yes = appraise({ blob, nonce: IOS_NONCE, trust: trustOf(ca), now: IOS_NOW, appAttest: { apps } });
    assert.equal(yes.record.verdict, "Yes", yes.reason);
    const no = appraise({ blob, nonce: IOS_NONCE, trust: withPolicy(trustOf(ca), { version: 4, appAttestEnvironments: ["production"] }), now: IOS_NOW, appAttest: { apps } });
    assert.deepEqual([no.record.verdict, no.detail.rule], ["No", "environment"], no.reason);
    assert.match(no.reason, /the tenant's policy admits production only/);
    assert.equal(no.detail.policyVersion, 4);
    const both = appraise({ blob, nonce: IOS_NONCE, trust: withPolicy(trustOf(ca), { version: 5, appAttestEnvironments: ["production", "development"] }), now: IOS_NOW, appAttest: { apps } });
    assert.equal(both.record.verdict, "Yes", both.reason);
  });
});
