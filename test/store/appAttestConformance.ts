import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { AppAttestKeyEffect, StoredAppAttestKey } from "../../src/domain/iosApps.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import type { DurableStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * App Attest's records (AppAttestStore), asserted the same on memory, SQLite and PostgreSQL: iOS apps one per
 * (tenant, app id), keys one per key id across tenants, every read within one tenant, and the counter moved only
 * forward, compare-and-set, with the verdict that moved it: of concurrent assertions with one counter exactly one
 * applies, also through a second connection to the same database (`other`).
 */
export interface AppAttestBackend {
  durable: DurableStore;
  /** a second store on the same database (another process's view), for the races; memory has none */
  other?: DurableStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function appAttestConformance(name: string, factory: () => Promise<AppAttestBackend>): void {
  describe(`app attest store conformance: ${name}`, () => {
    let b: AppAttestBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b.close();
    });

    async function tenant(): Promise<Tenant> {
      const n = randomBytes(9).toString("base64url");
      return b.durable.createTenant({ tenantId: `t_${n}`, name: n, customerId: `c${randomBytes(6).toString("hex")}`, kind: "customer", createdAt: iso(T0) });
    }

    function key(t: Tenant, over: Partial<StoredAppAttestKey> = {}): StoredAppAttestKey {
      return {
        tenantId: t.tenantId,
        keyId: randomBytes(32).toString("base64"),
        appId: "ABCDE12345.com.example.app",
        publicKey: Buffer.concat([Buffer.from([4]), randomBytes(64)]).toString("base64"),
        counter: 0,
        environment: "production",
        receipt: randomBytes(40).toString("base64"),
        attestedAt: iso(T0),
        lastAssertedAt: null,
        revokedAt: null,
        ...over,
      };
    }

    function verdict(t: Tenant, verdict: "Yes" | "No", objectId = randomBytes(16).toString("base64url")): StoredVerdict {
      return {
        objectId,
        tenantId: t.tenantId,
        format: "app-attest",
        record: {
          measurements: "", tamperBit: "", IMEI: "", status: verdict === "Yes" ? "Success" : "NonceMismatch", nonce: "n", chipId: "", verdict, MAC: "", version: "",
          createdDate: iso(T0), updateDate: iso(T0),
        },
        reason: verdict === "Yes" ? "rule pass" : "rule counter",
        detail: {},
        createdAt: iso(T0),
      };
    }

    const attested = (k: StoredAppAttestKey): AppAttestKeyEffect => ({ kind: "attested", key: k });
    const asserted = (t: Tenant, k: StoredAppAttestKey, counter: number): AppAttestKeyEffect => ({ kind: "asserted", tenantId: t.tenantId, keyId: k.keyId, counter, at: iso(T0 + counter) });

    async function saved(effect: AppAttestKeyEffect, t: Tenant, store = b.durable) {
      const id = randomBytes(16).toString("base64url");
      const v = await store.saveAppAttestVerdict(effect, verdict(t, "Yes", id), verdict(t, "No", id));
      assert.deepEqual(await b.durable.getVerdict(id), v, "the verdict answered is the one stored");
      return v.record.verdict;
    }

    it("iOS apps: one per (tenant, app id), listed by app id, removed within the tenant", async () => {
      const t = await tenant();
      const other = await tenant();
      const a = { id: `ia_${randomBytes(8).toString("hex")}`, tenantId: t.tenantId, appId: "ZZZZZ12345.b.app", environment: "both" as const, createdAt: iso(T0) };
      const a2 = { ...a, id: `ia_${randomBytes(8).toString("hex")}`, appId: "AAAAA12345.a.app", environment: "development" as const };
      assert.equal(await b.durable.addIosApp(a), "ok");
      assert.equal(await b.durable.addIosApp(a2), "ok");
      assert.equal(await b.durable.addIosApp({ ...a, id: `ia_${randomBytes(8).toString("hex")}` }), "exists");
      assert.equal(await b.durable.addIosApp({ ...a, id: `ia_${randomBytes(8).toString("hex")}`, tenantId: other.tenantId }), "ok");
      assert.deepEqual(await b.durable.listIosApps(t.tenantId), [a2, a]);
      assert.equal(await b.durable.removeIosApp(other.tenantId, a.id), false);
      assert.equal(await b.durable.removeIosApp(t.tenantId, a.id), true);
      assert.deepEqual(await b.durable.listIosApps(t.tenantId), [a2]);
    });

    it("keys: an attestation stores the key once, for one tenant; reads stay within the tenant", async () => {
      const t = await tenant();
      const other = await tenant();
      const k = key(t);
      assert.equal(await saved(attested(k), t), "Yes");
      assert.deepEqual(await b.durable.getAppAttestKey(t.tenantId, k.keyId), k);
      assert.equal(await b.durable.getAppAttestKey(other.tenantId, k.keyId), undefined);
      // the same key attested again, by this tenant or another: refused, the first record stays
      assert.equal(await saved(attested({ ...k, appId: "OTHER12345.x.y" }), t), "No");
      assert.equal(await saved(attested({ ...k, tenantId: other.tenantId }), other), "No");
      assert.deepEqual(await b.durable.getAppAttestKey(t.tenantId, k.keyId), k);
      assert.deepEqual(await b.durable.listAppAttestKeys(other.tenantId, { limit: 10 }), []);
      const k2 = key(t);
      await saved(attested(k2), t);
      const listed = await b.durable.listAppAttestKeys(t.tenantId, { limit: 10 });
      assert.deepEqual(listed.map((x) => x.keyId), [k.keyId, k2.keyId].sort());
      assert.deepEqual((await b.durable.listAppAttestKeys(t.tenantId, { after: listed[0]!.keyId, limit: 10 })).map((x) => x.keyId), [listed[1]!.keyId]);
    });

    it("assertions: the counter only moves forward, with its verdict; never on another tenant's or a revoked key", async () => {
      const t = await tenant();
      const other = await tenant();
      const k = key(t);
      await saved(attested(k), t);
      assert.equal(await saved(asserted(t, k, 1), t), "Yes");
      assert.equal(await saved(asserted(t, k, 1), t), "No", "a replay");
      assert.equal(await saved(asserted(t, k, 0), t), "No");
      assert.equal(await saved(asserted(t, k, 7), t), "Yes");
      assert.equal(await saved(asserted(other, k, 8), other), "No", "another tenant's key");
      const now = await b.durable.getAppAttestKey(t.tenantId, k.keyId);
      assert.equal(now?.counter, 7);
      assert.equal(now?.lastAssertedAt, iso(T0 + 7));
      assert.equal(await b.durable.applyAppAttestEffect(asserted(t, k, 9)), true);
      assert.equal(await b.durable.applyAppAttestEffect(asserted(t, k, 9)), false);
      assert.equal(await b.durable.revokeAppAttestKey(other.tenantId, k.keyId, iso(T0)), false);
      assert.equal(await b.durable.revokeAppAttestKey(t.tenantId, k.keyId, iso(T0 + 100)), true);
      assert.equal(await b.durable.revokeAppAttestKey(t.tenantId, k.keyId, iso(T0 + 100)), false);
      assert.equal(await saved(asserted(t, k, 10), t), "No", "a revoked key");
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, k.keyId))?.revokedAt, iso(T0 + 100));
    });

    it("concurrent assertions with one counter: exactly one is Yes, every round", async () => {
      const t = await tenant();
      const k = key(t);
      await saved(attested(k), t);
      const second = b.other ?? b.durable;
      for (let counter = 1; counter <= 15; counter++) {
        const outcomes = await Promise.all([saved(asserted(t, k, counter), t), saved(asserted(t, k, counter), t, second), saved(asserted(t, k, counter), t, second)]);
        assert.deepEqual(outcomes.filter((o) => o === "Yes").length, 1, `counter ${counter}: ${outcomes.join(", ")}`);
      }
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, k.keyId))?.counter, 15);
    });
  });
}
