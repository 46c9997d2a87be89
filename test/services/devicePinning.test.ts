import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { DeviceFacts } from "../../src/attestation/types.ts";
import type { DeviceRecord } from "../../src/domain/devices.ts";
import { applyDevicePin, comparePin } from "../../src/services/devicePinning.ts";
import { androidFacts, appraisedVerdict } from "../store/deviceConformance.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The pin decision alone (src/services/devicePinning.ts): the cases the HTTP tests cannot reach with a simulated
 * device (a level that disappears, one that appears, a format switch), and the rules as properties over arbitrary
 * facts: a refused appraisal never moves the pin, only a Yes raises a mark and marks never fall.
 */
const TENANT = "t_pin";
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function pinnedWith(facts: DeviceFacts): DeviceRecord {
  return applyDevicePin(undefined, { deviceId: "d", verdict: appraisedVerdict(TENANT), facts }).device;
}

describe("device pin decision", () => {
  it("a level the device no longer attests is a change, not a downgrade; a level it newly attests becomes a mark", () => {
    const pin = pinnedWith(androidFacts()).pin!;
    const { vendorPatchLevel: _gone, ...rest } = androidFacts().levels;
    const missing = comparePin(pin, { ...androidFacts(), levels: rest });
    assert.equal(missing.outcome, "changed");
    assert.deepEqual(missing.changes, [{ fact: "vendorPatchLevel", from: "20261101", to: "" }]);
    const more = comparePin(pin, { ...androidFacts(), levels: { ...androidFacts().levels, bootPatchLevel: 20261105 } });
    assert.equal(more.outcome, "matched");
    assert.equal(more.raisedLevels.bootPatchLevel, 20261105);
  });

  it("an identity fact that appears or disappears is a change, from or to the empty string", () => {
    const pin = pinnedWith(androidFacts()).pin!;
    const extra = comparePin(pin, { ...androidFacts(), identity: { ...androidFacts().identity, batchKey: "ab" } });
    assert.deepEqual(extra.changes, [{ fact: "batchKey", from: "", to: "ab" }]);
    const { appPackages: _p, ...fewer } = androidFacts().identity;
    assert.deepEqual(comparePin(pin, { ...androidFacts(), identity: fewer }).changes, [{ fact: "appPackages", from: "com.example.wallet", to: "" }]);
  });

  it("another format is one change, whatever else differs", () => {
    const pin = pinnedWith(androidFacts()).pin!;
    const vendor: DeviceFacts = { format: "vendor", identity: { leafKey: "aa", chipId: "01" }, levels: {} };
    assert.deepEqual(comparePin(pin, vendor), { outcome: "changed", changes: [{ fact: "format", from: "android-key", to: "vendor" }], raisedLevels: pin.levels });
  });

  it("the refusal names what changed in the reason, keeps the appraisal's reason, and makes the verdict No", () => {
    const current = pinnedWith(androidFacts());
    const v = appraisedVerdict(TENANT, "Yes", T0 + 5000);
    const out = applyDevicePin(current, { deviceId: "d", verdict: v, facts: androidFacts({ osPatchLevel: 202601 }) });
    assert.equal(out.verdict.record.verdict, "No");
    assert.equal(out.verdict.reason, `device pin downgrade: osPatchLevel from 202611 to 202601; appraisal: ${v.reason}`);
    assert.deepEqual(out.verdict.detail.device, { deviceId: "d", pin: "downgrade", changes: [{ fact: "osPatchLevel", from: "202611", to: "202601" }] });
    assert.deepEqual(out.verdict.record, { ...v.record, verdict: "No" }, "nothing else of the record changes");
    assert.equal(v.record.verdict, "Yes", "the appraised verdict object is not mutated");
  });

  const factsArb: fc.Arbitrary<DeviceFacts> = fc.record({
    format: fc.constantFrom("android-key" as const, "vendor" as const),
    identity: fc.dictionary(fc.constantFrom("verifiedBootKey", "securityLevel", "leafKey"), fc.constantFrom("a", "b"), { maxKeys: 3 }),
    levels: fc.dictionary(fc.constantFrom("osVersion", "osPatchLevel"), fc.integer({ min: 1, max: 5 }), { maxKeys: 2 }),
  });

  it("properties: a pin moves only on a matching Yes, marks never fall, and matched means no change", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(factsArb, fc.constantFrom("Yes" as const, "No" as const, "Unknown" as const), fc.boolean()), { minLength: 1, maxLength: 12 }), (steps) => {
        let device: DeviceRecord | undefined;
        steps.forEach(([facts, verdict, authenticated], i) => {
          const before = device?.pin ?? null;
          const out = applyDevicePin(device, { deviceId: "d", verdict: appraisedVerdict(TENANT, verdict, T0 + i * 1000), facts: authenticated ? facts : undefined });
          const pin = (out.verdict.detail.device as { pin: string }).pin;
          const after = out.device.pin;
          if (pin === "first") assert.ok(before === null && verdict === "Yes" && authenticated);
          if (before === null && pin !== "first") assert.equal(after, null);
          if (before && !(pin === "matched" && verdict === "Yes")) assert.deepEqual(after, before);
          if (before && after) {
            for (const [k, mark] of Object.entries(before.levels)) assert.ok(after.levels[k]! >= mark);
            assert.deepEqual(after.identity, before.identity);
          }
          if (pin === "changed" || pin === "downgrade") assert.equal(out.verdict.record.verdict, "No");
          else assert.equal(out.verdict.record.verdict, verdict);
          if (before && authenticated) assert.equal(pin === "matched", comparePin(before, facts).changes.length === 0);
          assert.equal(out.device.count, i + 1);
          assert.equal(out.device.lastSeen, at(i));
          device = out.device;
        });
      }),
      { numRuns: 300 },
    );
  });
});
