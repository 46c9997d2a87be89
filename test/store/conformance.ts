import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { VERDICT_FIELDS, type ReferenceValue } from "../../src/attestation/types.ts";
import { takeToken } from "../../src/store/memory/memoryRateLimitStore.ts";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import type { NonceRecord } from "../../src/nonces/types.ts";
import type { ActivityFilter, DurableStore, JtiStore, NonceStore, RateLimitStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The store conformance suite: one set of assertions that every backend must pass (memory, SQLite, PostgreSQL,
 * Redis). A backend provides the interfaces it implements; the suite runs the sections for those. The factory is
 * called once per backend and the stores are shared by the tests, so every test works under its own random ids
 * (tenants, nonces, buckets): the same suite runs unchanged on a long-lived database.
 */
export interface BackendUnderTest {
  durable?: DurableStore;
  nonces?: NonceStore;
  rateLimits?: RateLimitStore;
  jti?: JtiStore;
  close(): Promise<void>;
}

export type BackendFactory = () => Promise<BackendUnderTest>;

/** The interfaces a backend implements: the suite registers exactly those sections (nothing is skipped). */
export type Section = "durable" | "nonces" | "rateLimits" | "jti";

const iso = (ms: number) => new Date(ms).toISOString();
const uid = (p = "") => p + randomBytes(9).toString("base64url");
const nonceValue = () => randomBytes(32).toString("base64url");

function verdict(objectId: string, tenantId: string): StoredVerdict {
  return {
    objectId,
    tenantId,
    format: "vendor",
    record: {
      measurements: "ab".repeat(32),
      tamperBit: "0",
      IMEI: "490154203237518",
      status: "Success",
      nonce: nonceValue(),
      chipId: "0a1b",
      verdict: "Yes",
      MAC: "aa:bb:cc:dd:ee:ff",
      version: "2",
      createdDate: iso(T0),
      updateDate: iso(T0),
    },
    reason: "reference values match",
    detail: { model: "X1", firmware: { version: "1.2.3", build: 7 }, certs: ["a", "b"], empty: null, unicode: "Grüße ✓" },
    createdAt: iso(T0),
  };
}

function activity(over: Partial<ActivityEntry>): ActivityEntry {
  return {
    time: iso(T0),
    errorId: null,
    tenantId: null,
    clientId: null,
    method: "POST",
    route: "/v2/nonces",
    status: 200,
    code: null,
    latencyMs: 1.25,
    remoteAddress: "127.0.0.1",
    ...over,
  };
}

export function storeConformance(name: string, provides: readonly Section[], factory: BackendFactory): void {
  const has = (s: Section) => provides.includes(s);
  describe(`store conformance: ${name}`, () => {
    let b: BackendUnderTest;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b?.close();
    });

    const need = <K extends keyof BackendUnderTest>(k: K): NonNullable<BackendUnderTest[K]> => {
      const v = b[k];
      assert.ok(v, `${name} promised ${String(k)} but the factory did not provide it`);
      return v!;
    };

    if (has("durable")) describe("durable records", () => {
      const durable = () => need("durable");
      const newTenant = async (kind: "customer" | "reseller" = "customer", createdAt = iso(T0)) => {
        const id = uid("t_");
        return durable().createTenant({ tenantId: id, name: "n-" + id, customerId: String(BigInt("0x" + randomBytes(7).toString("hex"))), kind, createdAt });
      };

      it("ping answers", async () => {
        await durable().ping();
      });

      it("creates and reads tenants by id, name and customer id", async () => {
        const t = await newTenant();
        assert.deepEqual(t, {
          tenantId: t.tenantId,
          name: t.name,
          customerId: t.customerId,
          kind: "customer",
          state: "active",
          enrollmentEnabled: true,
          createdAt: iso(T0),
        });
        assert.deepEqual(await durable().getTenant(t.tenantId), t);
        assert.deepEqual(await durable().getTenantByName(t.name), t);
        assert.deepEqual(await durable().getTenantByCustomerId(t.customerId), t);
        assert.equal(await durable().getTenant(uid("t_")), undefined);
        assert.equal(await durable().getTenantByName(uid("none-")), undefined);
        assert.equal(await durable().getTenantByCustomerId("0"), undefined);
        const r = await newTenant("reseller");
        assert.equal(r.kind, "reseller");
        assert.equal(r.enrollmentEnabled, false, "resellers start blocked from enrollment");
      });

      it("refuses a second tenant with the same name or customer id", async () => {
        const t = await newTenant();
        await assert.rejects(
          durable().createTenant({ tenantId: uid("t_"), name: t.name, customerId: "98765" + Date.now(), kind: "customer", createdAt: iso(T0) }),
        );
        await assert.rejects(
          durable().createTenant({ tenantId: uid("t_"), name: uid("n-"), customerId: t.customerId, kind: "customer", createdAt: iso(T0) }),
        );
        assert.deepEqual(await durable().getTenantByName(t.name), t, "the first tenant is untouched");
      });

      it("lists tenants by creation time, then name", async () => {
        const late = await newTenant("customer", iso(T0 + 2000));
        const early = await newTenant("customer", iso(T0 - 2000));
        const mine = new Set([late.tenantId, early.tenantId]);
        const listed = (await durable().listTenants()).filter((t) => mine.has(t.tenantId));
        assert.deepEqual(listed, [early, late]);
        const all = await durable().listTenants();
        for (let i = 1; i < all.length; i++) {
          const [a, c] = [all[i - 1]!, all[i]!];
          assert.ok(a.createdAt < c.createdAt || (a.createdAt === c.createdAt && a.name < c.name), "ordered");
        }
      });

      it("sets tenant state and enrollment, false for an unknown name", async () => {
        const t = await newTenant("reseller");
        assert.equal(await durable().setTenantState(t.name, "blocked"), true);
        assert.equal((await durable().getTenant(t.tenantId))!.state, "blocked");
        assert.equal(await durable().setTenantState(t.name, "inactive"), true);
        assert.equal((await durable().getTenant(t.tenantId))!.state, "inactive");
        assert.equal(await durable().setEnrollmentEnabled(t.name, true), true);
        assert.equal((await durable().getTenant(t.tenantId))!.enrollmentEnabled, true);
        assert.equal(await durable().setEnrollmentEnabled(t.name, false), true);
        assert.equal((await durable().getTenant(t.tenantId))!.enrollmentEnabled, false);
        assert.equal(await durable().setTenantState(uid("none-"), "active"), false);
        assert.equal(await durable().setEnrollmentEnabled(uid("none-"), true), false);
      });

      it("creates, lists, restricts and revokes API keys", async () => {
        const t = await newTenant();
        const other = await newTenant();
        const mk = (createdAt: string, rps = 0.5, burst = 3) => ({
          keyId: uid("k"),
          tenantId: t.tenantId,
          secretHash: randomBytes(32).toString("hex"),
          rps,
          burst,
          createdAt,
        });
        const k2 = mk(iso(T0 + 1000), 12.75, 30);
        const k1 = mk(iso(T0));
        const k3 = mk(iso(T0 + 1000)); // same time as k2, created after it
        for (const k of [k2, k1, k3]) await durable().createApiKey(k);
        await durable().createApiKey({ ...mk(iso(T0)), tenantId: other.tenantId });
        const full = (k: typeof k1) => ({ ...k, revokedAt: null, restrictions: null, label: null, lastUsedAt: null });
        assert.deepEqual(await durable().getApiKey(k2.keyId), full(k2), "fractional rps survives");
        assert.equal(await durable().getApiKey(uid("k")), undefined);
        assert.deepEqual(await durable().listApiKeys(t.tenantId), [full(k1), full(k2), full(k3)], "by time, then creation order");
        assert.deepEqual(await durable().listApiKeys(uid("t_")), []);
        await assert.rejects(durable().createApiKey(k1), "duplicate key id");

        const restrictions = { ipAddresses: ["10.0.0.0/8", "2001:db8::1"], referers: ["https://shop.example/*"] };
        assert.equal(await durable().setApiKeyRestrictions(k1.keyId, restrictions), true);
        assert.deepEqual((await durable().getApiKey(k1.keyId))!.restrictions, restrictions);
        assert.equal(await durable().setApiKeyRestrictions(k1.keyId, null), true);
        assert.equal((await durable().getApiKey(k1.keyId))!.restrictions, null);
        assert.equal(await durable().setApiKeyRestrictions(uid("k"), restrictions), false);

        const at = iso(T0 + 5000);
        assert.equal(await durable().revokeApiKey(k1.keyId, at), true);
        assert.equal(await durable().revokeApiKey(k1.keyId, iso(T0 + 9000)), false, "already revoked");
        assert.equal((await durable().getApiKey(k1.keyId))!.revokedAt, at, "the first revocation time stays");
        assert.equal(await durable().revokeApiKey(uid("k"), at), false);
      });

      it("saves and reads verdicts, field order and detail intact", async () => {
        const t = await newTenant();
        const v = verdict(uid("o"), t.tenantId);
        await durable().saveVerdict(v);
        const got = await durable().getVerdict(v.objectId);
        assert.deepEqual(got, v);
        assert.deepEqual(Object.keys(got!.record), [...VERDICT_FIELDS], "the record keeps the wire order");
        assert.equal(await durable().getVerdict(uid("o")), undefined);
        await assert.rejects(durable().saveVerdict(v), "an objectId is stored once");
      });

      it("appends activity and filters it by tenant, error id, time and limit", async () => {
        const tenant = uid("t_");
        const e1 = uid("e");
        const entries = [
          activity({ tenantId: tenant, time: iso(T0 + 1), route: "/a" }),
          activity({ tenantId: tenant, time: iso(T0 + 3), errorId: e1, status: 400, code: "4000002", clientId: "k1" }),
          activity({ tenantId: tenant, time: iso(T0 + 2), latencyMs: 0.001, remoteAddress: "::1" }),
          activity({ tenantId: tenant, time: iso(T0 + 2), route: "/same-time-later-id" }),
          activity({ tenantId: null, time: iso(T0 + 4), method: "GET", route: "unmatched", status: 404 }),
        ];
        await durable().appendActivity(entries.slice(0, 2));
        await durable().appendActivity(entries.slice(2));
        await durable().appendActivity([]);
        // seq is the backend's own row order (test/store/portalConformance.ts pages by it); the entries are as written
        const query = async (f: ActivityFilter) => (await durable().queryActivity(f)).map(({ seq: _seq, ...e }) => e);
        const byTenant = await query({ tenantId: tenant });
        assert.deepEqual(byTenant, [entries[1], entries[3], entries[2], entries[0]], "newest first, later insert first on ties");
        assert.deepEqual(await query({ errorId: e1 }), [entries[1]]);
        assert.deepEqual(await query({ tenantId: tenant, since: iso(T0 + 2) }), [entries[1], entries[3], entries[2]]);
        assert.deepEqual(await query({ tenantId: tenant, limit: 2 }), [entries[1], entries[3]]);
        assert.deepEqual(await query({ tenantId: tenant, errorId: e1, since: iso(T0 + 4) }), []);
        const recent = await durable().queryActivity({ since: iso(T0 + 4), limit: 100_000 });
        assert.ok(recent.some((e) => e.route === "unmatched" && e.tenantId === null && e.status === 404));
        await assert.rejects(durable().appendActivity([activity({ errorId: e1 })]), "an error id is logged once");
      });

      it("upserts and lists reference values", async () => {
        const model = uid("M-");
        const a: ReferenceValue = { model, firmwareVersion: "2.0", measurements: ["aa".repeat(32), "bb".repeat(32)] };
        const b0: ReferenceValue = { model, firmwareVersion: "1.0", measurements: ["cc".repeat(32)] };
        assert.equal(await durable().upsertReferenceValues([a, b0], iso(T0)), 2);
        const b1: ReferenceValue = { ...b0, measurements: ["dd".repeat(32), "ee".repeat(32), "ff".repeat(32)] };
        assert.equal(await durable().upsertReferenceValues([b1], iso(T0 + 1)), 1);
        const mine = (await durable().listReferenceValues()).filter((v) => v.model === model);
        assert.deepEqual(mine, [b1, a], "by model, then firmware version; the upsert replaced 1.0");
        assert.equal(await durable().upsertReferenceValues([], iso(T0)), 0);
      });

      it("keeps a tenant's reference sets apart from the global ones and from other tenants', pages and deletes them", async () => {
        const [t1, t2] = [await newTenant(), await newTenant()];
        const model = uid("M-");
        const digest = (c: string) => c.repeat(64);
        const global: ReferenceValue = { model, firmwareVersion: "1.0", measurements: [digest("a")] };
        const own = [
          { model, firmwareVersion: "1.0", measurements: [digest("b"), digest("c")] },
          { model, firmwareVersion: "2.0", measurements: [digest("d")] },
          { model, firmwareVersion: "3.0", measurements: [digest("e")] },
        ];
        await durable().upsertReferenceValues([global], iso(T0));
        assert.equal(await durable().upsertReferenceValues(own, iso(T0 + 1), t1.tenantId), 3);
        await durable().upsertReferenceValues([{ ...own[1]!, measurements: [digest("f")] }], iso(T0 + 2), t2.tenantId);

        assert.deepEqual((await durable().listReferenceValues()).filter((v) => v.model === model), [global], "the global sets alone");
        const sets = (tenantId: string | null, q: { after?: { model: string; firmwareVersion: string }; limit?: number } = {}) =>
          durable().listReferenceSets({ tenantId, model, ...q });
        assert.deepEqual(await sets(null), [{ ...global, tenantId: null, updatedAt: iso(T0) }]);
        assert.deepEqual(await sets(t1.tenantId), own.map((v) => ({ ...v, tenantId: t1.tenantId, updatedAt: iso(T0 + 1) })));
        assert.deepEqual((await sets(t2.tenantId)).map((v) => [v.firmwareVersion, v.measurements]), [["2.0", [digest("f")]]], "t1's upload did not touch t2");

        // keyset paging in (model, firmwareVersion) order
        const first = await sets(t1.tenantId, { limit: 2 });
        assert.deepEqual(first.map((v) => v.firmwareVersion), ["1.0", "2.0"]);
        const next = await sets(t1.tenantId, { limit: 2, after: { model, firmwareVersion: "2.0" } });
        assert.deepEqual(next.map((v) => v.firmwareVersion), ["3.0"]);

        // every scope at once (the trust refresh): global first, then by tenant
        const all = (await durable().listReferenceSets({})).filter((v) => v.model === model);
        const byTenant = { [t1.tenantId]: ["1.0", "2.0", "3.0"], [t2.tenantId]: ["2.0"] };
        const tenantOrder = [t1.tenantId, t2.tenantId].sort(); // bytewise, as the stores order TEXT
        assert.deepEqual(
          all.map((v) => [v.tenantId, v.firmwareVersion]),
          [[null, "1.0"], ...tenantOrder.flatMap((id) => byTenant[id]!.map((f) => [id, f]))],
        );

        // a delete names its scope: t1's 1.0 goes, the global 1.0 and t2's sets stay
        assert.equal(await durable().deleteReferenceSet(t1.tenantId, model, "1.0"), true);
        assert.equal(await durable().deleteReferenceSet(t1.tenantId, model, "1.0"), false);
        assert.equal(await durable().deleteReferenceSet(t2.tenantId, model, "3.0"), false, "another tenant's pair");
        assert.deepEqual((await sets(null)).length, 1);
        assert.deepEqual((await sets(t1.tenantId)).map((v) => v.firmwareVersion), ["2.0", "3.0"]);
        assert.equal(await durable().deleteReferenceSet(null, model, "1.0"), true);
        assert.deepEqual(await sets(null), []);
        assert.equal((await sets(t2.tenantId)).length, 1);
      });
    });

    if (has("nonces")) describe("nonces", () => {
      const nonces = () => need("nonces");
      const TTL = 300_000;
      const rec = (tenantId: string, at = T0, ttl = TTL): NonceRecord => ({
        nonce: nonceValue(),
        tenantId,
        createdAtMs: at,
        expiresAtMs: at + ttl,
      });

      it("issues a nonce that is consumed once", async () => {
        const tenant = uid("t_");
        const n = rec(tenant);
        assert.equal(await nonces().issue(n, 10, T0), "ok");
        assert.equal(await nonces().consume(n.nonce, tenant, T0 + 1000), "ok");
        assert.equal(await nonces().consume(n.nonce, tenant, T0 + 2000), "used");
      });

      it("answers unknown for a nonce never issued", async () => {
        assert.equal(await nonces().consume(nonceValue(), uid("t_"), T0), "unknown");
      });

      it("answers unknown to another tenant, without using the nonce up", async () => {
        const [owner, other] = [uid("t_"), uid("t_")];
        const n = rec(owner);
        assert.equal(await nonces().issue(n, 10, T0), "ok");
        assert.equal(await nonces().consume(n.nonce, other, T0 + 1), "unknown");
        assert.equal(await nonces().consume(n.nonce, owner, T0 + 2), "ok");
        assert.equal(await nonces().consume(n.nonce, other, T0 + 3), "unknown", "used or not, it is not theirs");
      });

      it("answers expired from the expiry instant on; used wins over expired", async () => {
        const tenant = uid("t_");
        const n = rec(tenant);
        const m = rec(tenant);
        await nonces().issue(n, 10, T0);
        await nonces().issue(m, 10, T0);
        assert.equal(await nonces().consume(n.nonce, tenant, n.expiresAtMs), "expired");
        assert.equal(await nonces().consume(n.nonce, tenant, n.expiresAtMs + 60_000), "expired");
        assert.equal(await nonces().consume(m.nonce, tenant, m.expiresAtMs - 1), "ok", "valid until the last ms");
        assert.equal(await nonces().consume(m.nonce, tenant, m.expiresAtMs + 60_000), "used");
      });

      it("caps outstanding nonces per tenant; used and expired ones do not count", async () => {
        const [tenant, other] = [uid("t_"), uid("t_")];
        const first = [rec(tenant), rec(tenant), rec(tenant)];
        for (const n of first) assert.equal(await nonces().issue(n, 3, T0), "ok");
        assert.equal(await nonces().issue(rec(tenant), 3, T0), "limit");
        assert.equal(await nonces().issue(rec(other), 3, T0), "ok", "the cap is per tenant");
        assert.equal(await nonces().consume(first[0]!.nonce, tenant, T0 + 1), "ok");
        assert.equal(await nonces().issue(rec(tenant, T0 + 2), 3, T0 + 2), "ok", "a used nonce frees its place");
        assert.equal(await nonces().issue(rec(tenant, T0 + 3), 3, T0 + 3), "limit");
        // first[1], first[2] expire at T0 + TTL; the one issued at T0 + 2 is still outstanding then
        const later = T0 + TTL;
        assert.equal(await nonces().issue(rec(tenant, later), 3, later), "ok", "expired ones stop counting before any purge");
        assert.equal(await nonces().issue(rec(tenant, later), 3, later), "ok");
        assert.equal(await nonces().issue(rec(tenant, later), 3, later), "limit");
      });

      it("keeps the cap exact under concurrent issues", async () => {
        const tenant = uid("t_");
        const outcomes = await Promise.all(Array.from({ length: 30 }, () => nonces().issue(rec(tenant), 7, T0)));
        assert.equal(outcomes.filter((o) => o === "ok").length, 7);
        assert.equal(outcomes.filter((o) => o === "limit").length, 23);
      });

      it("lets exactly one of 50 concurrent consumes of one nonce succeed", async () => {
        const tenant = uid("t_");
        const n = rec(tenant);
        assert.equal(await nonces().issue(n, 10, T0), "ok");
        const outcomes = await Promise.all(Array.from({ length: 50 }, () => nonces().consume(n.nonce, tenant, T0 + 10)));
        assert.equal(outcomes.filter((o) => o === "ok").length, 1, JSON.stringify(outcomes));
        assert.equal(outcomes.filter((o) => o === "used").length, 49);
      });

      it("purges nonces expired longer than the retention, keeping the rest answerable", async () => {
        const tenant = uid("t_");
        // Purging is global: run it at a time after every nonce of the other tests is past retention, so the count
        // below is only this test's (the other tests' nonces are purged by the first call).
        const base = T0 + 10 * 86_400_000;
        const retain = 60_000;
        const old1 = rec(tenant, base - 500_000); // expired at base - 200 000: past retention at base
        const old2 = rec(tenant, base - 400_000); // expired at base - 100 000: past retention
        const recentUsed = rec(tenant, base - 330_000); // expired at base - 30 000: within retention
        const recentUnused = rec(tenant, base - 320_000);
        const live = rec(tenant, base);
        for (const n of [old1, old2, recentUsed, recentUnused, live]) assert.equal(await nonces().issue(n, 100, n.createdAtMs), "ok");
        assert.equal(await nonces().consume(recentUsed.nonce, tenant, base - 329_000), "ok");
        await nonces().purgeExpired(base - 1_000_000, 0); // everything older, from other tests
        assert.equal(await nonces().purgeExpired(base, retain), 2);
        assert.equal(await nonces().purgeExpired(base, retain), 0, "nothing left to purge");
        assert.equal(await nonces().consume(old1.nonce, tenant, base), "unknown", "purged");
        assert.equal(await nonces().consume(old2.nonce, tenant, base), "unknown");
        assert.equal(await nonces().consume(recentUsed.nonce, tenant, base), "used", "retained");
        assert.equal(await nonces().consume(recentUnused.nonce, tenant, base), "expired", "retained");
        assert.equal(await nonces().consume(live.nonce, tenant, base + 1), "ok");
        // purged unused nonces do not count against the cap either
        assert.equal(await nonces().issue(rec(tenant, base), 1, base), "ok");
      });
    });

    if (has("rateLimits")) describe("rate limits", () => {
      const rl = () => need("rateLimits");

      it("spends the burst, then refuses with the time to the next token", async () => {
        const bucket = uid("key:");
        const d = [];
        for (let i = 0; i < 4; i++) d.push(await rl().take(bucket, 2, 3, T0));
        assert.deepEqual(d, [
          { allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 500 },
          { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000 },
          { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1500 },
          { allowed: false, remaining: 0, retryAfterMs: 500, resetMs: 1500 },
        ]);
        assert.deepEqual(await rl().take(bucket, 2, 3, T0 + 250), { allowed: false, remaining: 0, retryAfterMs: 250, resetMs: 1250 });
        assert.deepEqual(await rl().take(bucket, 2, 3, T0 + 500), { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1500 });
        // a long pause refills to the burst, never beyond
        assert.deepEqual(await rl().take(bucket, 2, 3, T0 + 60_000), { allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 500 });
        assert.equal((await rl().take(uid("key:"), 2, 3, T0)).remaining, 2, "buckets are independent");
      });

      it("follows takeToken's arithmetic for any rate, burst and timing", async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.double({ min: 0.01, max: 500, noNaN: true }),
            fc.integer({ min: 1, max: 50 }),
            fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 25 }),
            async (rate, burst, gaps) => {
              const bucket = uid("key:");
              const model = { tokens: burst, updatedMs: T0 };
              let now = T0;
              for (const gap of gaps) {
                now += gap;
                assert.deepEqual(await rl().take(bucket, rate, burst, now), takeToken(model, rate, burst, now));
              }
            },
          ),
          { numRuns: 40 },
        );
      });

      it("never grants more than the burst to concurrent takes", async () => {
        const bucket = uid("key:");
        const d = await Promise.all(Array.from({ length: 40 }, () => rl().take(bucket, 0.001, 10, T0)));
        assert.equal(d.filter((x) => x.allowed).length, 10);
        assert.deepEqual(d.filter((x) => x.allowed).map((x) => x.remaining).sort((p, q) => p - q), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });
    });

    if (has("jti")) describe("jti replay set", () => {
      const jti = () => need("jti");

      it("remembers a jti until it expires", async () => {
        const id = uid("j");
        assert.equal(await jti().remember(id, T0 + 60_000, T0), true);
        assert.equal(await jti().remember(id, T0 + 60_000, T0 + 1), false, "replay");
        assert.equal(await jti().remember(id, T0 + 60_000, T0 + 59_999), false);
        assert.equal(await jti().remember(id, T0 + 120_000, T0 + 60_000), true, "expired entries no longer count");
        assert.equal(await jti().remember(id, T0 + 120_000, T0 + 60_001), false);
        assert.equal(await jti().remember(uid("j"), T0 + 60_000, T0 + 1), true, "other jtis are independent");
      });

      it("lets exactly one of 50 concurrent remembers of one jti succeed", async () => {
        const id = uid("j");
        const r = await Promise.all(Array.from({ length: 50 }, () => jti().remember(id, T0 + 60_000, T0)));
        assert.equal(r.filter(Boolean).length, 1);
      });
    });
  });
}
