import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { AppAttestKeyEffect, StoredAppAttestKey } from "../../src/domain/iosApps.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import type { DurableStore, NonceAppAttestStore, NonceStore } from "../../src/store/types.ts";
import { applyDevicePin } from "../../src/services/devicePinning.ts";
import type { WebhookPlan } from "../../src/domain/webhooks.ts";
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
  /** where nonces live in the same store (SQLite; PostgreSQL without Redis): the one-transaction path, and another connection's */
  nonceAppAttest?: NonceAppAttestStore & NonceStore;
  otherNonceAppAttest?: NonceAppAttestStore & NonceStore;
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
        riskMetric: null,
        riskMetricAt: null,
        lastRefreshResult: null,
        lastRefreshReason: null,
        lastRefreshAt: null,
        // as stored for an app without a developer key (never due); the refresh tests give their own
        refreshDueAt: null,
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
      const a = { id: `ia_${randomBytes(8).toString("hex")}`, tenantId: t.tenantId, appId: "ZZZZZ12345.b.app", environment: "both" as const, createdAt: iso(T0), developerKeyId: null, sealedDeveloperKey: null };
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
  
    it("developer keys and receipt refresh: set and cleared per app; due keys of apps with a key claimed once, across tenants; outcomes stored", async () => {
      const t = await tenant();
      const other = await tenant();
      const app = (tt: Tenant, appId: string) => ({ id: `ia_${randomBytes(8).toString("hex")}`, tenantId: tt.tenantId, appId, environment: "both" as const, createdAt: iso(T0), developerKeyId: null, sealedDeveloperKey: null });
      const withKey = app(t, "ABCDE12345.com.example.app");
      const noKey = app(t, "ZZZZZ12345.com.example.nokey");
      const otherApp = app(other, "ABCDE12345.com.example.app");
      for (const a of [withKey, noKey, otherApp]) assert.equal(await b.durable.addIosApp(a), "ok");
      assert.equal(await b.durable.setIosAppDeveloperKey(other.tenantId, withKey.id, { keyId: "K", sealed: "s" }, iso(T0)), false, "another tenant's app");
      assert.equal(await b.durable.setIosAppDeveloperKey(t.tenantId, withKey.id, { keyId: "KEY1234567", sealed: "sealed:v1:x" }, iso(T0)), true);
      assert.deepEqual(
        (await b.durable.listIosApps(t.tenantId)).find((a) => a.id === withKey.id),
        { ...withKey, developerKeyId: "KEY1234567", sealedDeveloperKey: "sealed:v1:x" },
      );
      // keys: due at T0 (with a key), due at T0 (its app has none), due later, revoked, another tenant's app without a key
      const due = key(t, { refreshDueAt: iso(T0) });
      const dueNoKey = key(t, { appId: noKey.appId, refreshDueAt: iso(T0) });
      const later = key(t, { refreshDueAt: iso(T0 + 60_000) });
      const revoked = key(t, { refreshDueAt: iso(T0) });
      const othersKey = key(other, { refreshDueAt: iso(T0) });
      for (const k of [due, dueNoKey, later, revoked, othersKey]) await saved(attested(k), k.tenantId === t.tenantId ? t : other);
      await b.durable.revokeAppAttestKey(t.tenantId, revoked.keyId, iso(T0));
      // a key of an app without a developer key is never due: the sweep's range holds only keys it can refresh
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, dueNoKey.keyId))?.refreshDueAt, null);
      assert.equal((await b.durable.getAppAttestKey(other.tenantId, othersKey.keyId))?.refreshDueAt, null);
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, due.keyId))?.refreshDueAt, iso(T0));

      const lease = iso(T0 + 600_000);
      const claimed = await b.durable.claimAppAttestRefreshes(iso(T0 + 1000), lease, 10);
      assert.deepEqual(claimed.map((k) => k.keyId), [due.keyId]);
      assert.equal(claimed[0]!.refreshDueAt, lease);
      assert.deepEqual(await b.durable.claimAppAttestRefreshes(iso(T0 + 1000), lease, 10), [], "claimed once: leased until later");
      // the other tenant's app gets a key: its key is due from then on, and claimed too; the limit holds
      await b.durable.setIosAppDeveloperKey(other.tenantId, otherApp.id, { keyId: "KEY7654321", sealed: "sealed:v1:y" }, iso(T0 + 5));
      assert.equal((await b.durable.getAppAttestKey(other.tenantId, othersKey.keyId))?.refreshDueAt, iso(T0 + 5));
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, dueNoKey.keyId))?.refreshDueAt, null, "another app's keys stay as they were");
      assert.deepEqual((await b.durable.claimAppAttestRefreshes(iso(T0 + 120_000), lease, 1)).map((k) => k.keyId), [othersKey.keyId], "the oldest due first");
      assert.deepEqual((await b.durable.claimAppAttestRefreshes(iso(T0 + 120_000), lease, 10)).map((k) => k.keyId), [later.keyId]);

      // an outcome that refreshed: receipt, metric and times; one that did not keeps the metric
      const receipt = randomBytes(50).toString("base64");
      assert.equal(await b.durable.saveAppAttestRefresh({ tenantId: other.tenantId, keyId: due.keyId, result: "refreshed", reason: null, at: iso(T0), refreshDueAt: null }), false, "another tenant's key");
      assert.equal(
        await b.durable.saveAppAttestRefresh({ tenantId: t.tenantId, keyId: due.keyId, result: "refreshed", reason: null, at: iso(T0 + 2000), refreshed: { receipt, riskMetric: 3 }, refreshDueAt: iso(T0 + 86_400_000) }),
        true,
      );
      assert.deepEqual(await b.durable.getAppAttestKey(t.tenantId, due.keyId), {
        ...due, receipt, riskMetric: 3, riskMetricAt: iso(T0 + 2000), lastRefreshResult: "refreshed", lastRefreshReason: null, lastRefreshAt: iso(T0 + 2000), refreshDueAt: iso(T0 + 86_400_000),
      });
      await b.durable.saveAppAttestRefresh({ tenantId: t.tenantId, keyId: due.keyId, result: "unreachable", reason: "not refreshed: no network", at: iso(T0 + 3000), refreshDueAt: iso(T0 + 3_603_000) });
      const after = await b.durable.getAppAttestKey(t.tenantId, due.keyId);
      assert.deepEqual(
        { receipt: after?.receipt, riskMetric: after?.riskMetric, riskMetricAt: after?.riskMetricAt, result: after?.lastRefreshResult, reason: after?.lastRefreshReason, due: after?.refreshDueAt },
        { receipt, riskMetric: 3, riskMetricAt: iso(T0 + 2000), result: "unreachable", reason: "not refreshed: no network", due: iso(T0 + 3_603_000) },
      );
      // a refreshed receipt without a metric clears it (the metric shown is the last receipt's); clearing the app's key stops claims
      await b.durable.saveAppAttestRefresh({ tenantId: t.tenantId, keyId: due.keyId, result: "refreshed", reason: null, at: iso(T0 + 4000), refreshed: { receipt, riskMetric: null }, refreshDueAt: iso(T0) });
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, due.keyId))?.riskMetric, null);
      await b.durable.setIosAppDeveloperKey(t.tenantId, withKey.id, null, iso(T0 + 5000));
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, due.keyId))?.refreshDueAt, null, "cleared: its keys are never due");
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, later.keyId))?.refreshDueAt, null);
      assert.deepEqual((await b.durable.claimAppAttestRefreshes(iso(T0 + 10_000_000), lease, 10)).map((k) => k.keyId), [othersKey.keyId], "only the other tenant's, whose app has a key");
      // set again: the app's keys that are not revoked are due at once; the revoked one stays as it was
      await b.durable.setIosAppDeveloperKey(t.tenantId, withKey.id, { keyId: "KEY1234567", sealed: "sealed:v1:z" }, iso(T0 + 6000));
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, due.keyId))?.refreshDueAt, iso(T0 + 6000));
      assert.equal((await b.durable.getAppAttestKey(t.tenantId, revoked.keyId))?.refreshDueAt, null);
    });

    it("concurrent claims take each due key once", async () => {
      const t = await tenant();
      const a = { id: `ia_${randomBytes(8).toString("hex")}`, tenantId: t.tenantId, appId: "ABCDE12345.com.example.app", environment: "both" as const, createdAt: iso(T0), developerKeyId: "KEY1234567", sealedDeveloperKey: "sealed:v1:x" };
      await b.durable.addIosApp(a);
      const keys = Array.from({ length: 12 }, () => key(t, { refreshDueAt: iso(T0 - 1) }));
      for (const k of keys) await saved(attested(k), t);
      const second = b.other ?? b.durable;
      const lease = iso(T0 + 600_000);
      const batches = await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? second : b.durable).claimAppAttestRefreshes(iso(T0), lease, 4)));
      const ids = batches.flat().map((k) => k.keyId).filter((id) => keys.some((k) => k.keyId === id));
      assert.equal(new Set(ids).size, ids.length, "no key claimed twice");
      assert.equal(ids.length, 12);
    });
  
    describe("nonce, key effect and verdict in one transaction (consumeWithAppAttestVerdict)", () => {
      const NOW = T0 + 1000;
      const issued = async (t: Tenant): Promise<string> => {
        const nonce = randomBytes(32).toString("base64url");
        assert.equal(await b.nonceAppAttest!.issue({ nonce, tenantId: t.tenantId, createdAtMs: T0, expiresAtMs: T0 + 300_000 }, 1000, T0), "ok");
        return nonce;
      };
      const pair = (t: Tenant) => {
        const id = randomBytes(16).toString("base64url");
        return { verdict: verdict(t, "Yes", id), refused: verdict(t, "No", id) };
      };

      it("a refused nonce touches neither key nor verdict; a refused effect spends the nonce and stores the refused verdict", async (ctx) => {
        if (!b.nonceAppAttest) return ctx.skip("nonces live apart on this backend (the service consumes first)");
        const t = await tenant();
        const k = key(t);
        const first = pair(t);
        const n1 = await issued(t);
        const att = await b.nonceAppAttest.consumeWithAppAttestVerdict(n1, t.tenantId, NOW, attested(k), first);
        assert.deepEqual([att.outcome, att.applied, att.verdict?.record.verdict], ["ok", true, "Yes"]);
        assert.deepEqual(await b.durable.getVerdict(first.verdict.objectId), first.verdict);

        // the same nonce again, with an assertion: "used"; the counter stays, no verdict is stored
        const again = pair(t);
        assert.deepEqual(await b.nonceAppAttest.consumeWithAppAttestVerdict(n1, t.tenantId, NOW, asserted(t, k, 1), again), { outcome: "used" });
        assert.equal((await b.durable.getAppAttestKey(t.tenantId, k.keyId))?.counter, 0);
        assert.equal(await b.durable.getVerdict(again.verdict.objectId), undefined);
        // a nonce of another tenant, an unknown one: the same
        const other = await tenant();
        const n2 = await issued(other);
        assert.deepEqual(await b.nonceAppAttest.consumeWithAppAttestVerdict(n2, t.tenantId, NOW, asserted(t, k, 1), again), { outcome: "unknown" });
        assert.equal((await b.durable.getAppAttestKey(t.tenantId, k.keyId))?.counter, 0);

        // counter 1 applies; a replay of counter 1 with a fresh nonce is refused by the effect: the nonce is spent all the same
        assert.equal((await b.nonceAppAttest.consumeWithAppAttestVerdict(await issued(t), t.tenantId, NOW, asserted(t, k, 1), pair(t))).applied, true);
        const n3 = await issued(t);
        const replay = pair(t);
        const r = await b.nonceAppAttest.consumeWithAppAttestVerdict(n3, t.tenantId, NOW, asserted(t, k, 1), replay);
        assert.deepEqual([r.outcome, r.applied, r.verdict?.record.verdict], ["ok", false, "No"]);
        assert.deepEqual(await b.durable.getVerdict(replay.verdict.objectId), replay.refused, "the refused verdict is the one stored");
        assert.equal(await b.nonceAppAttest.consume(n3, t.tenantId, NOW), "used", "the nonce is spent");
      });

      it("all or nothing: a verdict that cannot be stored leaves the nonce unspent and the counter where it was", async (ctx) => {
        if (!b.nonceAppAttest) return ctx.skip("nonces live apart on this backend");
        const t = await tenant();
        const k = key(t);
        await saved(attested(k), t);
        const existing = pair(t);
        await b.durable.saveVerdict(existing.verdict);
        const n = await issued(t);
        // the verdict's objectId is taken: its insert fails inside the transaction
        await assert.rejects(b.nonceAppAttest.consumeWithAppAttestVerdict(n, t.tenantId, NOW, asserted(t, k, 5), existing));
        assert.equal((await b.durable.getAppAttestKey(t.tenantId, k.keyId))?.counter, 0, "the effect rolled back");
        assert.equal(await b.nonceAppAttest.consume(n, t.tenantId, NOW), "ok", "the nonce rolled back: still unused");
      });

      it("with a named device: the device's record is written with the verdict decide(applied) reaches, in the same transaction", async (ctx) => {
        if (!b.nonceAppAttest) return ctx.skip("nonces live apart on this backend");
        const t = await tenant();
        const k = key(t);
        const p = pair(t);
        const seen: boolean[] = [];
        const r = await b.nonceAppAttest.consumeWithAppAttestVerdict(await issued(t), t.tenantId, NOW, attested(k), {
          deviceId: "phone-1",
          decide: (applied) => {
            seen.push(applied);
            return (current) => applyDevicePin(current, { deviceId: "phone-1", verdict: applied ? p.verdict : p.refused, facts: undefined });
          },
        });
        assert.deepEqual(seen, [true]);
        assert.equal(r.verdict?.record.verdict, "Yes");
        assert.equal((await b.durable.getDevice(t.tenantId, "phone-1"))?.count, 1);
        assert.deepEqual(await b.durable.getVerdict(p.verdict.objectId), r.verdict);
      });

      it("the verdict's webhook rows commit with it, for the verdict stored; a refused nonce writes none", async (ctx) => {
        if (!b.nonceAppAttest) return ctx.skip("nonces live apart on this backend");
        const t = await tenant();
        const k = key(t);
        const plan: WebhookPlan = (v) => [
          {
            id: "whd_" + randomBytes(9).toString("base64url"),
            eventId: "msg_" + randomBytes(9).toString("base64url"),
            tenantId: t.tenantId,
            endpointId: "we_x",
            eventType: "verdict.stored",
            payload: JSON.stringify({ objectId: v.objectId, verdict: v.record.verdict }),
            createdAt: new Date(NOW).toISOString(),
            nextAttemptMs: NOW,
            giveUpAtMs: NOW + 86_400_000,
          },
        ];
        const p = pair(t);
        const n = await issued(t);
        const r = await b.nonceAppAttest.consumeWithAppAttestVerdict(n, t.tenantId, NOW, attested(k), p, plan);
        assert.equal(r.verdict?.record.verdict, "Yes");
        const rows = await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 });
        assert.deepEqual(rows.map((d) => JSON.parse(d.payload)), [{ objectId: p.verdict.objectId, verdict: "Yes" }]);
        assert.deepEqual(await b.nonceAppAttest.consumeWithAppAttestVerdict(n, t.tenantId, NOW, asserted(t, k, 1), pair(t), plan), { outcome: "used" });
        assert.equal((await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 })).length, 1, "the refused nonce wrote no row");
      });

      it("concurrent assertions with one counter, each with its own nonce, across connections: exactly one is Yes, every nonce spent", async (ctx) => {
        if (!b.nonceAppAttest) return ctx.skip("nonces live apart on this backend");
        const t = await tenant();
        const k = key(t);
        await saved(attested(k), t);
        const second = b.otherNonceAppAttest ?? b.nonceAppAttest;
        for (let counter = 1; counter <= 10; counter++) {
          const nonces = await Promise.all([issued(t), issued(t), issued(t)]);
          const outcomes = await Promise.all(
            nonces.map((n, i) => (i === 0 ? b.nonceAppAttest! : second).consumeWithAppAttestVerdict(n, t.tenantId, NOW, asserted(t, k, counter), pair(t))),
          );
          assert.deepEqual(outcomes.map((o) => o.outcome), ["ok", "ok", "ok"]);
          assert.equal(outcomes.filter((o) => o.verdict?.record.verdict === "Yes").length, 1, `counter ${counter}`);
        }
        assert.equal((await b.durable.getAppAttestKey(t.tenantId, k.keyId))?.counter, 10);
      });
    });
  });
}