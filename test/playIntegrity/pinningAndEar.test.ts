import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { comparePin } from "../../src/services/devicePinning.ts";
import { earAppraisal } from "../../src/results/ear.ts";
import type { DeviceFacts } from "../../src/attestation/types.ts";
import type { DevicePin } from "../../src/domain/devices.ts";
import { joseToken, makeApp, NOW, openAndAppraise, payload } from "./fixtures.ts";

/**
 * A play-integrity verdict in the machinery the other formats use: its facts against a device pin (the pure
 * comparison the service applies, docs/devices.md), and its EAR submod (labels and vector) from the stored verdict.
 */

const app = makeApp({ certDigests: [] });

async function factsOf(p: Record<string, unknown>): Promise<DeviceFacts> {
  const { result } = await openAndAppraise(await joseToken(p, app), [app]);
  assert.equal(result.record.verdict, "Yes", result.reason);
  return result.facts!;
}

const pinOf = (f: DeviceFacts): DevicePin => ({ pinnedAt: NOW.toISOString(), objectId: "o1", format: f.format, identity: f.identity, levels: f.levels, raisedAt: NOW.toISOString() });

describe("play-integrity: device pinning", () => {
  it("the same app on the same Android level matches; another signer is changed; an older SDK a downgrade; another format changed", async () => {
    const pin = pinOf(await factsOf(payload()));
    assert.equal(comparePin(pin, await factsOf(payload())).outcome, "matched");
    const otherSigner = await factsOf(payload({ appIntegrity: { certificateSha256Digest: [Buffer.alloc(32, 9).toString("base64url")] } }));
    assert.deepEqual(comparePin(pin, otherSigner).changes.map((c) => c.fact), ["appSignatureDigests"]);
    const older = await factsOf(payload({ deviceIntegrity: { deviceAttributes: { sdkVersion: 33 } } }));
    assert.deepEqual(comparePin(pin, older), { outcome: "downgrade", changes: [{ fact: "sdkVersion", from: "35", to: "33" }], raisedLevels: { sdkVersion: 35 } });
    assert.equal(comparePin({ ...pin, format: "android-key" }, await factsOf(payload())).outcome, "changed");
  });
});

describe("play-integrity: the EAR of a stored verdict", () => {
  it("carries the labels and the vector; a No reads contraindicated", async () => {
    const { result } = await openAndAppraise(await joseToken(payload({ deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_DEVICE_INTEGRITY"] } }), app), [app]);
    const stored = { objectId: "o", tenantId: "t", format: result.format, record: result.record, reason: result.reason, detail: result.detail, createdAt: NOW.toISOString() };
    const ear = earAppraisal(stored);
    assert.deepEqual(ear["attestd.device-integrity"], { deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"] });
    assert.equal(ear["ear.status"], "affirming");
    assert.deepEqual(ear["ear.trustworthiness-vector"], { "instance-identity": 2, configuration: 2, executables: 2, hardware: 2 });
    const no = await openAndAppraise(await joseToken(payload({ appIntegrity: { appRecognitionVerdict: "UNRECOGNIZED_VERSION" } }), app), [app]);
    assert.equal(earAppraisal({ ...stored, record: no.result.record, detail: no.result.detail })["ear.status"], "contraindicated");
  });
});
