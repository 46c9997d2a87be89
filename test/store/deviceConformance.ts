import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { DeviceFacts } from "../../src/attestation/types.ts";
import type { DevicePin, DeviceRecord } from "../../src/domain/devices.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { applyDevicePin } from "../../src/services/devicePinning.ts";
import type { DeviceVerdictDecision, DurableStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";
import type { AuditRecord } from "../../src/domain/audit.ts";

/**
 * Per-device memory (DeviceStore), asserted the same on every durable backend: a device's record and its verdict
 * written together, read back exactly, kept per tenant; a failed decision writes nothing; the pin reset and its
 * audit trail; and the race the pin exists for — of concurrent first appraisals of one device, on one connection
 * or on two stores sharing the database (`openPeer`, the SQL backends), exactly one pins and every other one is
 * decided against the winner's record. Every test uses its own random tenant and device ids.
 */
export interface DeviceBackend {
  durable: DurableStore;
  /** a second store on the same database, as another instance would open it (SQL backends) */
  openPeer?: () => Promise<{ durable: DurableStore; close(): Promise<void> }>;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const uid = (p = "") => p + randomBytes(9).toString("base64url");

/** A verdict as an appraisal makes it (before the pin is consulted). */
export function appraisedVerdict(tenantId: string, verdict: "Yes" | "No" | "Unknown" = "Yes", at = T0): StoredVerdict {
  return {
    objectId: uid("o"),
    tenantId,
    format: "android-key",
    record: {
      measurements: "ab".repeat(32),
      tamperBit: "0",
      IMEI: "",
      status: "Success",
      nonce: randomBytes(32).toString("base64url"),
      chipId: "01",
      verdict,
      MAC: "",
      version: "300",
      createdDate: iso(at),
      updateDate: iso(at),
    },
    reason: "verified chain to a pinned root; TrustedEnvironment, locked, Verified boot",
    detail: { format: "android-key", unicode: "Grüße ✓" },
    createdAt: iso(at),
  };
}

export function androidFacts(over: { bootKey?: string; osPatchLevel?: number } = {}): DeviceFacts {
  return {
    format: "android-key",
    identity: { securityLevel: "TrustedEnvironment", verifiedBootKey: over.bootKey ?? "0b".repeat(32), appPackages: "com.example.wallet" },
    levels: { osVersion: 150000, osPatchLevel: over.osPatchLevel ?? 202611, vendorPatchLevel: 20261101 },
  };
}

/** `peers`: the backend can be opened twice on one database (the SQL ones); the factory then gives `openPeer`. */
export function deviceConformance(name: string, peers: boolean, factory: () => Promise<DeviceBackend>): void {
  describe(`device store conformance: ${name}`, () => {
    let b: DeviceBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b.close();
    });

    const decision = (deviceId: string, verdict: StoredVerdict, facts: DeviceFacts | undefined, seen: (DeviceRecord | undefined)[] = []) =>
      ((current) => {
        seen.push(current && structuredClone(current));
        return applyDevicePin(current, { deviceId, verdict, facts });
      }) satisfies DeviceVerdictDecision;

    it("a new device: the decision sees none; its record and its verdict are stored together and read back exactly", async () => {
      const tenantId = uid("t_");
      const deviceId = uid("dev:");
      const seen: (DeviceRecord | undefined)[] = [];
      const v = appraisedVerdict(tenantId);
      const stored = await b.durable.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, v, androidFacts(), seen));
      assert.deepEqual(seen, [undefined]);
      assert.deepEqual(stored.detail.device, { deviceId, pin: "first" });
      assert.deepEqual(await b.durable.getVerdict(v.objectId), stored);
      const d = await b.durable.getDevice(tenantId, deviceId);
      assert.deepEqual(d, {
        tenantId,
        deviceId,
        firstSeen: iso(T0),
        lastSeen: iso(T0),
        count: 1,
        last: { objectId: v.objectId, at: iso(T0), verdict: "Yes", status: "Success", pin: "first" },
        latestFacts: { ...androidFacts(), objectId: v.objectId, at: iso(T0) },
        pin: {
          pinnedAt: iso(T0),
          objectId: v.objectId,
          format: "android-key",
          identity: androidFacts().identity,
          levels: androidFacts().levels,
          raisedAt: iso(T0),
        },
        resets: 0,
      });
    });

    it("the next appraisal's decision sees the record exactly as stored; a No without facts keeps pin and latest facts", async () => {
      const tenantId = uid("t_");
      const deviceId = uid("dev.");
      await b.durable.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, appraisedVerdict(tenantId), androidFacts()));
      const before = await b.durable.getDevice(tenantId, deviceId);
      const seen: (DeviceRecord | undefined)[] = [];
      const later = appraisedVerdict(tenantId, "No", T0 + 60_000);
      await b.durable.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, later, undefined, seen));
      assert.deepEqual(seen, [before]);
      const d = (await b.durable.getDevice(tenantId, deviceId))!;
      assert.equal(d.count, 2);
      assert.equal(d.firstSeen, iso(T0));
      assert.equal(d.lastSeen, iso(T0 + 60_000));
      assert.deepEqual(d.last, { objectId: later.objectId, at: iso(T0 + 60_000), verdict: "No", status: "Success", pin: "none" });
      assert.deepEqual(d.pin, before!.pin);
      assert.deepEqual(d.latestFacts, before!.latestFacts);
    });

    it("lists one tenant's devices in bytewise deviceId order, a page after a cursor, never another tenant's", async () => {
      const [t1, t2] = [uid("t_"), uid("t_")];
      // bytewise: digits < upper case < "_" < lower case, as both SQL backends' keys order them
      const ids = ["b-2", "B.1", "a:9", "_x", "0"];
      for (const id of ids) await b.durable.saveDeviceVerdict(t1, id, decision(id, appraisedVerdict(t1), androidFacts()));
      await b.durable.saveDeviceVerdict(t2, "a:0", decision("a:0", appraisedVerdict(t2), androidFacts()));
      const names = (ds: DeviceRecord[]) => ds.map((d) => d.deviceId);
      assert.deepEqual(names(await b.durable.listDevices(t1, { limit: 10 })), ["0", "B.1", "_x", "a:9", "b-2"]);
      assert.deepEqual(names(await b.durable.listDevices(t1, { limit: 2 })), ["0", "B.1"]);
      assert.deepEqual(names(await b.durable.listDevices(t1, { after: "B.1", limit: 2 })), ["_x", "a:9"]);
      assert.deepEqual(names(await b.durable.listDevices(t1, { after: "b-2", limit: 2 })), []);
      const [listed] = await b.durable.listDevices(t1, { after: "a:8", limit: 1 });
      assert.deepEqual(listed, await b.durable.getDevice(t1, "a:9"), "the whole record, as getDevice reads it");
      assert.deepEqual(names(await b.durable.listDevices(t2, { limit: 10 })), ["a:0"]);
      assert.deepEqual(await b.durable.listDevices(uid("t_"), { limit: 10 }), []);
    });

    it("devices are per tenant: the same deviceId in two tenants is two devices", async () => {
      const [t1, t2] = [uid("t_"), uid("t_")];
      const deviceId = uid("shared-");
      await b.durable.saveDeviceVerdict(t1, deviceId, decision(deviceId, appraisedVerdict(t1), androidFacts()));
      assert.equal(await b.durable.getDevice(t2, deviceId), undefined);
      const other = await b.durable.saveDeviceVerdict(t2, deviceId, decision(deviceId, appraisedVerdict(t2), androidFacts({ bootKey: "cc".repeat(32) })));
      assert.equal((other.detail.device as { pin: string }).pin, "first", "t1's pin is not t2's");
      assert.equal((await b.durable.getDevice(t1, deviceId))!.pin!.identity.verifiedBootKey, "0b".repeat(32));
      assert.equal((await b.durable.getDevice(t2, deviceId))!.pin!.identity.verifiedBootKey, "cc".repeat(32));
      assert.equal(await b.durable.resetDevicePin(t2, uid("nobody-"), (pin) => resetRecord(t2, "nobody", pin, T0, "test")), undefined);
    });

    it("a decision that throws writes nothing: no device, no verdict", async () => {
      const tenantId = uid("t_");
      const deviceId = uid("dev-");
      const v = appraisedVerdict(tenantId);
      await assert.rejects(
        b.durable.saveDeviceVerdict(tenantId, deviceId, () => {
          throw new Error("decision failed");
        }),
        /decision failed/,
      );
      assert.equal(await b.durable.getDevice(tenantId, deviceId), undefined);
      assert.equal(await b.durable.getVerdict(v.objectId), undefined);
      // and a verdict id that already exists fails the save as a whole: the device is not half-written
      const first = await b.durable.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, v, androidFacts()));
      const clash = { ...appraisedVerdict(tenantId, "Yes", T0 + 1000), objectId: first.objectId };
      await assert.rejects(b.durable.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, clash, androidFacts({ osPatchLevel: 202612 }))));
      const d = (await b.durable.getDevice(tenantId, deviceId))!;
      assert.equal(d.count, 1);
      assert.equal(d.pin!.levels.osPatchLevel, 202611);
    });

    it("reset clears the pin, keeps the history, counts, and keeps an audit record with the pin it cleared", async () => {
      const tenantId = uid("t_");
      const deviceId = uid("dev_");
      await b.durable.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, appraisedVerdict(tenantId), androidFacts()));
      const pinned = (await b.durable.getDevice(tenantId, deviceId))!;
      const r1 = await b.durable.resetDevicePin(tenantId, deviceId, (pin) => resetRecord(tenantId, deviceId, pin, T0 + 1000, "cli"));
      assert.deepEqual(r1, resetRecord(tenantId, deviceId, pinned.pin, T0 + 1000, "cli"));
      const after1 = (await b.durable.getDevice(tenantId, deviceId))!;
      assert.deepEqual(after1, { ...pinned, pin: null, resets: 1 });
      const r2 = await b.durable.resetDevicePin(tenantId, deviceId, (pin) => resetRecord(tenantId, deviceId, pin, T0 + 2000, "u_admin"));
      assert.deepEqual(r2, resetRecord(tenantId, deviceId, null, T0 + 2000, "u_admin"));
      // the reset's audit record was written in its transaction, into the one audit trail
      assert.deepEqual(await b.durable.queryAudit({ tenantId, targetKind: "device", targetId: deviceId }), [r2, r1]);
      assert.deepEqual(await b.durable.queryAudit({ tenantId: uid("t_"), targetId: deviceId }), []);
      // the next Yes pins afresh, with other facts
      const again = await b.durable.saveDeviceVerdict(
        tenantId,
        deviceId,
        decision(deviceId, appraisedVerdict(tenantId, "Yes", T0 + 3000), androidFacts({ bootKey: "dd".repeat(32) })),
      );
      assert.equal((again.detail.device as { pin: string }).pin, "first");
      const d = (await b.durable.getDevice(tenantId, deviceId))!;
      assert.equal(d.resets, 2);
      assert.equal(d.count, 2);
      assert.equal(d.pin!.identity.verifiedBootKey, "dd".repeat(32));
    });

    /**
     * Twenty first appraisals of one new device at once, each with a boot key of its own: exactly one pins, and
     * every other is decided against the winner's pin (changed, hence No); the stored pin is the winner's.
     */
    async function race(stores: DurableStore[]) {
      const tenantId = uid("t_");
      const deviceId = uid("race-");
      const keys = Array.from({ length: 20 }, (_, i) => i.toString(16).padStart(2, "0").repeat(32));
      const results = await Promise.all(
        keys.map((k, i) =>
          stores[i % stores.length]!.saveDeviceVerdict(tenantId, deviceId, decision(deviceId, appraisedVerdict(tenantId), androidFacts({ bootKey: k }))),
        ),
      );
      const pins = results.map((v) => (v.detail.device as { pin: string }).pin);
      assert.equal(pins.filter((p) => p === "first").length, 1, pins.join(","));
      assert.equal(pins.filter((p) => p === "changed").length, 19, pins.join(","));
      const winner = keys[pins.indexOf("first")]!;
      const d = (await stores[0]!.getDevice(tenantId, deviceId))!;
      assert.equal(d.count, 20);
      assert.equal(d.pin!.identity.verifiedBootKey, winner);
      for (const [i, v] of results.entries()) {
        if (pins[i] === "first") continue;
        assert.equal(v.record.verdict, "No");
        assert.deepEqual((v.detail.device as { changes: unknown }).changes, [{ fact: "verifiedBootKey", from: winner, to: keys[i] }]);
        assert.deepEqual(await stores[0]!.getVerdict(v.objectId), v);
      }
    }

    it("concurrent first appraisals of one device: exactly one pins, every other compares against the winner", async () => {
      await race([b.durable]);
    });

    // the memory backend is one process's memory: it has no second instance to race
    if (peers) it("the same race across two stores on one database (two instances)", async () => {
      assert.ok(b.openPeer, `${name} promised a second instance but the factory gave no openPeer`);
      const peer = await b.openPeer();
      try {
        await race([b.durable, peer.durable]);
      } finally {
        await peer.close();
      }
    });
  });
}

/** The audit record a pin reset writes in its own transaction (DeviceService.resetPin stamps one like it). */
function resetRecord(tenantId: string, deviceId: string, previousPin: DevicePin | null, atMs: number, by: string): AuditRecord {
  return {
    id: `au_${deviceId}_${atMs}`,
    time: new Date(atMs).toISOString(),
    actor: { kind: "operator", id: by },
    tenantId,
    action: "device.pin-reset",
    target: { kind: "device", id: deviceId },
    before: { pin: previousPin },
    after: { pin: null },
    from: { kind: "cli", hostname: "test" },
  };
}
