import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import type { NewWebhookDelivery, StoredWebhookEndpoint, WebhookPlan } from "../../src/domain/webhooks.ts";
import type { DurableStore, NonceDeviceVerdictStore, NonceStore, NonceVerdictStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * Signed webhooks' store (WebhookStore, and the `webhooks` argument of the verdict and key writes), asserted the
 * same on memory, SQLite and PostgreSQL: endpoints within one tenant; outbox rows committed with the event's own
 * write or not at all; claims under a lease that a second claimer (another connection: another instance) never
 * shares; an attempt recorded only by the lease's holder.
 */
export interface WebhookBackend {
  durable: DurableStore;
  /** a second store on the same database (another instance); absent on memory */
  other?: DurableStore;
  /** the store that commits a nonce's consumption with its verdict (SQLite) */
  nonceVerdicts?: NonceVerdictStore & NonceDeviceVerdictStore & NonceStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const rid = (p: string) => `${p}${randomBytes(10).toString("hex")}`;

export function webhookConformance(name: string, factory: () => Promise<WebhookBackend>): void {
  describe(`webhook store conformance: ${name}`, () => {
    let b: WebhookBackend;
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

    function endpoint(t: Tenant, over: Partial<StoredWebhookEndpoint> = {}): StoredWebhookEndpoint {
      return {
        id: rid("we_"),
        tenantId: t.tenantId,
        url: "https://hooks.example.com/a",
        description: "ops",
        events: ["verdict.stored", "key.created"],
        verdicts: "non-yes",
        enabled: true,
        sealedSecret: "sealed:abc",
        createdAt: iso(T0),
        updatedAt: iso(T0),
        ...over,
      };
    }

    function row(t: Tenant, over: Partial<NewWebhookDelivery> = {}): NewWebhookDelivery {
      return {
        id: rid("whd_"),
        eventId: rid("msg_"),
        tenantId: t.tenantId,
        endpointId: "we_x",
        eventType: "verdict.stored",
        payload: JSON.stringify({ type: "verdict.stored", data: { n: 1 } }),
        createdAt: iso(T0),
        nextAttemptMs: T0,
        giveUpAtMs: T0 + 86_400_000,
        ...over,
      };
    }

    function verdict(t: Tenant): StoredVerdict {
      return {
        objectId: randomBytes(16).toString("base64url"),
        tenantId: t.tenantId,
        format: "android-key",
        record: { verdict: "No", status: "SignatureInvalid" },
        reason: "bad",
        detail: {},
        createdAt: iso(T0),
      } as unknown as StoredVerdict;
    }

    const planOf = (t: Tenant, n = 1): WebhookPlan => (v) => Array.from({ length: n }, () => row(t, { payload: JSON.stringify({ objectId: v.objectId }) }));

    it("keeps a tenant's endpoints as given, within the tenant", async () => {
      const t = await tenant();
      const other = await tenant();
      const e = endpoint(t);
      await b.durable.addWebhookEndpoint(e);
      assert.deepEqual(await b.durable.getWebhookEndpoint(t.tenantId, e.id), e);
      assert.equal(await b.durable.getWebhookEndpoint(other.tenantId, e.id), undefined);
      assert.deepEqual(await b.durable.listWebhookEndpoints(t.tenantId), [e]);
      assert.equal(await b.durable.updateWebhookEndpoint(other.tenantId, e.id, { enabled: false, updatedAt: iso(T0 + 1) }), false);
      assert.equal(await b.durable.updateWebhookEndpoint(t.tenantId, e.id, { enabled: false, events: ["key.revoked"], url: "https://x.example/b", updatedAt: iso(T0 + 1) }), true);
      assert.deepEqual(await b.durable.getWebhookEndpoint(t.tenantId, e.id), { ...e, enabled: false, events: ["key.revoked"], url: "https://x.example/b", updatedAt: iso(T0 + 1) });
      assert.equal(await b.durable.removeWebhookEndpoint(other.tenantId, e.id), false);
      assert.equal(await b.durable.removeWebhookEndpoint(t.tenantId, e.id), true);
      assert.deepEqual(await b.durable.listWebhookEndpoints(t.tenantId), []);
    });

    it("writes a verdict's outbox rows with it, and neither when one fails", async () => {
      const t = await tenant();
      const v = verdict(t);
      await b.durable.saveVerdict(v, planOf(t, 2));
      assert.ok(await b.durable.getVerdict(v.objectId));
      const rows = await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 });
      assert.equal(rows.length, 2);
      assert.ok(rows.every((r) => r.state === "pending" && r.attempts === 0 && JSON.parse(r.payload).objectId === v.objectId));
      // a plan whose rows break a constraint (one id twice): the verdict is not stored either
      const bad = verdict(t);
      const dup = row(t);
      await assert.rejects(b.durable.saveVerdict(bad, () => [dup, dup]));
      assert.equal(await b.durable.getVerdict(bad.objectId), undefined);
      assert.equal((await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 })).length, 2);
    });

    it("writes a device verdict's rows in its transaction, from the verdict as decided", async () => {
      const t = await tenant();
      const v = verdict(t);
      const seen: string[] = [];
      await b.durable.saveDeviceVerdict(
        t.tenantId,
        "dev-1",
        () => ({
          verdict: { ...v, record: { ...v.record, verdict: "No" } },
          device: {
            tenantId: t.tenantId, deviceId: "dev-1", firstSeen: v.createdAt, lastSeen: v.createdAt, count: 1,
            last: { objectId: v.objectId, at: v.createdAt, verdict: "No", status: "SignatureInvalid", pin: "none" },
            latestFacts: null, pin: null, resets: 0,
          },
        }),
        (decided) => (seen.push(decided.record.verdict), [row(t, { eventType: "device.pin.refused" })]),
      );
      assert.deepEqual(seen.slice(-1), ["No"]);
      const rows = await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 });
      assert.deepEqual(rows.map((r) => r.eventType), ["device.pin.refused"]);
    });

    it("writes key events with the key, and none for a revocation that changes nothing", async () => {
      const t = await tenant();
      const keyId = rid("k");
      await b.durable.createApiKey({ keyId, tenantId: t.tenantId, secretHash: "h", rps: 1, burst: 1, createdAt: iso(T0) }, [row(t, { eventType: "key.created" })]);
      assert.equal(await b.durable.revokeApiKey(keyId, iso(T0 + 1), [row(t, { eventType: "key.revoked" })]), true);
      assert.equal(await b.durable.revokeApiKey(keyId, iso(T0 + 2), [row(t, { eventType: "key.revoked" })]), false);
      const types = (await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 })).map((r) => r.eventType).sort();
      assert.deepEqual(types, ["key.created", "key.revoked"]);
    });

    it("commits a nonce's consumption, its verdict and its rows together where the store can", async () => {
      // nonces and verdicts share no transaction on this backend: consumeThenSave (attestationService.ts) passes the plan to saveVerdict, tested above
      if (!b.nonceVerdicts) return;
      const t = await tenant();
      const nonce = randomBytes(16).toString("base64url");
      await b.nonceVerdicts.issue({ nonce, tenantId: t.tenantId, createdAtMs: T0, expiresAtMs: T0 + 60_000 }, 100, T0);
      const v = verdict(t);
      assert.equal(await b.nonceVerdicts.consumeWithVerdict(nonce, t.tenantId, T0 + 1, v, planOf(t)), "ok");
      assert.equal((await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 })).length, 1);
      // used: no verdict, no row
      assert.equal(await b.nonceVerdicts.consumeWithVerdict(nonce, t.tenantId, T0 + 2, verdict(t), planOf(t)), "used");
      assert.equal((await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 })).length, 1);
    });

    it("leases due rows to one claimer; an attempt is recorded only by the lease's holder", async () => {
      const t = await tenant();
      // far in the future of every other test's rows, so the claims below see only these
      const base = T0 + 1_000 * 86_400_000 + Math.floor(Math.random() * 1e9);
      const rows = [row(t, { nextAttemptMs: base }), row(t, { nextAttemptMs: base + 1 }), row(t, { nextAttemptMs: base + 10_000 })];
      await b.durable.enqueueWebhookDeliveries(rows);
      const a = await b.durable.claimWebhookDeliveries("A", 10, base + 5, 60_000);
      const mine = a.filter((d) => d.tenantId === t.tenantId).map((d) => d.id);
      assert.deepEqual(mine, [rows[0]!.id, rows[1]!.id]);
      const second = b.other ?? b.durable;
      const c = await second.claimWebhookDeliveries("B", 10, base + 5, 60_000);
      assert.deepEqual(c.filter((d) => d.tenantId === t.tenantId), []);
      // B may not record on A's lease
      const attempt = { deliveryId: rows[0]!.id, attempt: 1, at: iso(base), status: 200, durationMs: 12, error: null, response: "ok" };
      assert.equal(await second.recordWebhookAttempt("B", attempt, { state: "delivered", at: iso(base) }), false);
      assert.equal(await b.durable.recordWebhookAttempt("A", attempt, { state: "delivered", at: iso(base) }), true);
      assert.equal(await b.durable.recordWebhookAttempt("A", { ...attempt, attempt: 2 }, { state: "delivered", at: iso(base) }), false);
      const retry = { ...attempt, deliveryId: rows[1]!.id, status: 503, response: "busy" };
      assert.equal(await b.durable.recordWebhookAttempt("A", retry, { state: "pending", nextAttemptMs: base + 20_000 }), true);
      const d1 = (await b.durable.getWebhookDelivery(t.tenantId, rows[1]!.id))!;
      assert.deepEqual([d1.state, d1.attempts, d1.tries, d1.lastStatus, d1.nextAttemptMs], ["pending", 1, 1, 503, base + 20_000]);
      assert.deepEqual(await b.durable.listWebhookAttempts(t.tenantId, rows[1]!.id), [retry]);
      const d0 = (await b.durable.getWebhookDelivery(t.tenantId, rows[0]!.id))!;
      assert.deepEqual([d0.state, d0.finishedAt], ["delivered", iso(base)]);
      // the lease on row 2 (never claimed) and an expired lease: B claims once due
      const later = await second.claimWebhookDeliveries("B", 10, base + 20_000, 60_000);
      assert.deepEqual(later.filter((d) => d.tenantId === t.tenantId).map((d) => d.id).sort(), [rows[1]!.id, rows[2]!.id].sort());
      // resend: a delivered row pending again, its lease dropped
      assert.equal(await b.durable.resendWebhookDelivery(t.tenantId, rows[0]!.id, base + 30_000, base + 90_000), true);
      const again = (await b.durable.getWebhookDelivery(t.tenantId, rows[0]!.id))!;
      assert.deepEqual([again.state, again.tries, again.nextAttemptMs, again.giveUpAtMs, again.finishedAt], ["pending", 0, base + 30_000, base + 90_000, null]);
      const other = await tenant();
      assert.equal(await b.durable.resendWebhookDelivery(other.tenantId, rows[0]!.id, base, base), false);
      assert.deepEqual(await b.durable.listWebhookAttempts(other.tenantId, rows[1]!.id), []);
      assert.ok((await b.durable.countPendingWebhookDeliveries()) >= 3);
    });

    it("concurrent claimers never share a row", async () => {
      const t = await tenant();
      const base = T0 + 2_000 * 86_400_000 + Math.floor(Math.random() * 1e9);
      const rows = Array.from({ length: 40 }, (_, i) => row(t, { nextAttemptMs: base + i }));
      await b.durable.enqueueWebhookDeliveries(rows);
      const second = b.other ?? b.durable;
      const claims = await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? second : b.durable).claimWebhookDeliveries(`W${i}`, 15, base + 100, 60_000)));
      const ids = claims.flat().filter((d) => d.tenantId === t.tenantId).map((d) => d.id);
      assert.equal(new Set(ids).size, ids.length);
      assert.equal(ids.length, 40);
    });

    it("pages a tenant's deliveries newest first", async () => {
      const t = await tenant();
      const rows = [0, 1, 2].map((i) => row(t, { createdAt: iso(T0 + i), endpointId: i === 1 ? "we_b" : "we_a" }));
      await b.durable.enqueueWebhookDeliveries(rows);
      const page1 = await b.durable.listWebhookDeliveries(t.tenantId, { limit: 2 });
      assert.deepEqual(page1.map((d) => d.id), [rows[2]!.id, rows[1]!.id]);
      const page2 = await b.durable.listWebhookDeliveries(t.tenantId, { limit: 2, before: { createdAt: page1[1]!.createdAt, id: page1[1]!.id } });
      assert.deepEqual(page2.map((d) => d.id), [rows[0]!.id]);
      assert.deepEqual((await b.durable.listWebhookDeliveries(t.tenantId, { limit: 5, endpointId: "we_b" })).map((d) => d.id), [rows[1]!.id]);
    });

    it("purges finished deliveries past the cutoff with their attempts, never a pending one", async () => {
      const t = await tenant();
      // old, and before every other test's rows, so the purge below takes only these
      const old = (ms: number) => iso(Date.parse("2001-01-01T00:00:00.000Z") + ms + Math.floor(Math.random() * 1000) * 10);
      const base = T0 + 3_000 * 86_400_000 + Math.floor(Math.random() * 1e9);
      const rows = [row(t, { createdAt: old(1), nextAttemptMs: base }), row(t, { createdAt: old(2), nextAttemptMs: base }), row(t, { createdAt: old(3), nextAttemptMs: base + 10 ** 9 })];
      await b.durable.enqueueWebhookDeliveries(rows);
      const claimed = (await b.durable.claimWebhookDeliveries("P", 100, base + 1, 60_000)).filter((d) => d.tenantId === t.tenantId);
      assert.equal(claimed.length, 2);
      for (const d of claimed) {
        assert.equal(await b.durable.recordWebhookAttempt("P", { deliveryId: d.id, attempt: 1, at: iso(base), status: 200, durationMs: 1, error: null, response: null }, { state: "delivered", at: iso(base) }), true);
      }
      const n = await b.durable.purgeWebhookDeliveries("2001-01-02T00:00:00.000Z", 1_000);
      assert.ok(n >= 2, `purged ${n}`);
      assert.deepEqual((await b.durable.listWebhookDeliveries(t.tenantId, { limit: 10 })).map((d) => d.id), [rows[2]!.id], "the pending one stays");
      assert.deepEqual(await b.durable.listWebhookAttempts(t.tenantId, rows[0]!.id), []);
    });
  });
}
