import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { StoredVerdict, VerdictValue } from "../../src/domain/verdicts.ts";
import { hourOf, STATS_REASON_CHARS } from "../../src/store/historyQueries.ts";
import type { DurableStore, NonceStore, NonceVerdictStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The overview's counts (StatsStore) and API key edits, asserted the same on memory, SQLite and PostgreSQL: counts
 * follow the rows as they are written (by every path that writes them), per tenant or for every tenant, in the
 * backends' common order. Every test works under its own tenants; the every-tenant checks compare before and
 * after, so the suite also runs on a database other suites write to.
 */
export interface StatsBackend {
  durable: DurableStore;
  /** the store that commits a nonce's use with its verdict (SQLite), whose verdicts must be counted too */
  nonceVerdicts?: NonceVerdictStore & NonceStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;
/** random like a real objectId (base64url of 16 CSPRNG bytes), so PostgreSQL's counter slots all get used */
const objectId = () => randomBytes(16).toString("base64url");

/** `withNonceVerdicts`: the backend also commits verdicts with their nonce's use (SQLite), and is checked for that. */
export function statsConformance(name: string, withNonceVerdicts: boolean, factory: () => Promise<StatsBackend>): void {
  describe(`overview counts conformance: ${name}`, () => {
    let b: StatsBackend;
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

    function verdict(t: Tenant, at: number, v: VerdictValue, status = v === "Yes" ? "Success" : "SignatureInvalid", reason = `rule for ${status}`): StoredVerdict {
      return {
        objectId: objectId(),
        tenantId: t.tenantId,
        format: "vendor",
        record: {
          measurements: "",
          tamperBit: "0",
          IMEI: "",
          status: status as StoredVerdict["record"]["status"],
          nonce: "n",
          chipId: "",
          verdict: v,
          MAC: "",
          version: "2",
          createdDate: iso(at),
          updateDate: iso(at),
        },
        reason,
        detail: {},
        createdAt: iso(at),
      };
    }

    const H0 = hourOf(iso(T0));
    const H1 = hourOf(iso(T0 + HOUR));
    const H25 = hourOf(iso(T0 + 25 * HOUR));

    it("verdicts per hour and per day, of one tenant or every tenant, counted as they are saved", async () => {
      const t = await tenant();
      const other = await tenant();
      const everyBefore = await b.durable.verdictCounts({ fromHour: H0, bucket: "hour" });
      for (let i = 0; i < 12; i++) await b.durable.saveVerdict(verdict(t, T0 + i * 1000, "Yes"));
      await b.durable.saveVerdict(verdict(t, T0 + 5000, "No"));
      for (let i = 0; i < 2; i++) await b.durable.saveVerdict(verdict(t, T0 + HOUR + i, "Unknown", "DeviceError"));
      await b.durable.saveVerdict(verdict(t, T0 + 25 * HOUR, "Yes"));
      await b.durable.saveVerdict(verdict(other, T0, "Yes"));

      assert.deepEqual(await b.durable.verdictCounts({ tenantId: t.tenantId, fromHour: H0, bucket: "hour" }), [
        { bucket: H0, verdict: "No", n: 1 },
        { bucket: H0, verdict: "Yes", n: 12 },
        { bucket: H1, verdict: "Unknown", n: 2 },
        { bucket: H25, verdict: "Yes", n: 1 },
      ]);
      assert.deepEqual(await b.durable.verdictCounts({ tenantId: t.tenantId, fromHour: H1, bucket: "hour" }), [
        { bucket: H1, verdict: "Unknown", n: 2 },
        { bucket: H25, verdict: "Yes", n: 1 },
      ]);
      assert.deepEqual(await b.durable.verdictCounts({ tenantId: t.tenantId, fromHour: H0, bucket: "day" }), [
        { bucket: H0.slice(0, 10), verdict: "No", n: 1 },
        { bucket: H0.slice(0, 10), verdict: "Unknown", n: 2 },
        { bucket: H0.slice(0, 10), verdict: "Yes", n: 12 },
        { bucket: H25.slice(0, 10), verdict: "Yes", n: 1 },
      ]);
      assert.deepEqual(await b.durable.verdictCounts({ tenantId: t.tenantId, fromHour: hourOf(iso(T0 + 26 * HOUR)), bucket: "hour" }), []);

      const everyAfter = await b.durable.verdictCounts({ fromHour: H0, bucket: "hour" });
      const n = (rows: typeof everyAfter, bucket: string, v: VerdictValue) => rows.find((r) => r.bucket === bucket && r.verdict === v)?.n ?? 0;
      assert.equal(n(everyAfter, H0, "Yes") - n(everyBefore, H0, "Yes"), 13, "both tenants' Yes of the first hour");
      assert.equal(n(everyAfter, H1, "Unknown") - n(everyBefore, H1, "Unknown"), 2);
    });

    if (withNonceVerdicts) it("a verdict committed with its nonce's use is counted like a saved one", async () => {
      assert.ok(b.nonceVerdicts, "the backend provides its NonceVerdictStore");
      const t = await tenant();
      const nonce = randomBytes(32).toString("base64url");
      assert.equal(await b.nonceVerdicts.issue({ nonce, tenantId: t.tenantId, createdAtMs: T0, expiresAtMs: T0 + 60_000 }, 10, T0), "ok");
      assert.equal(await b.nonceVerdicts.consumeWithVerdict(nonce, t.tenantId, T0 + 1, verdict(t, T0 + 1, "No")), "ok");
      // a refused consumption stores no verdict, and counts none
      assert.equal(await b.nonceVerdicts.consumeWithVerdict(nonce, t.tenantId, T0 + 2, verdict(t, T0 + 2, "No")), "used");
      assert.deepEqual(await b.durable.verdictCounts({ tenantId: t.tenantId, fromHour: H0, bucket: "hour" }), [{ bucket: H0, verdict: "No", n: 1 }]);
    });

    it("a verdict stored with a named device's record is counted like a saved one, on the first and every later save", async () => {
      const t = await tenant();
      const deviceSave = (at: number, v: VerdictValue) =>
        b.durable.saveDeviceVerdict(t.tenantId, "phone-1", (current) => {
          const stored = verdict(t, at, v);
          const last = { objectId: stored.objectId, at: stored.createdAt, verdict: v, status: stored.record.status, pin: "none" as const };
          return {
            verdict: stored,
            device: { tenantId: t.tenantId, deviceId: "phone-1", firstSeen: current?.firstSeen ?? stored.createdAt, lastSeen: stored.createdAt, count: (current?.count ?? 0) + 1, last, latestFacts: null, pin: null, resets: 0 },
          };
        });
      await deviceSave(T0 + 1, "No"); // creates the device
      await deviceSave(T0 + 2, "No"); // updates it
      assert.deepEqual(await b.durable.verdictCounts({ tenantId: t.tenantId, fromHour: H0, bucket: "hour" }), [{ bucket: H0, verdict: "No", n: 2 }]);
    });

    it("top failures: No and Unknown only, most frequent first, the last day beside the whole window, reasons cut", async () => {
      const t = await tenant();
      const long = "x".repeat(STATS_REASON_CHARS + 50);
      const save = async (at: number, v: VerdictValue, status: string, reason: string, times: number) => {
        for (let i = 0; i < times; i++) await b.durable.saveVerdict(verdict(t, at + i, v, status, reason));
      };
      await save(T0, "Yes", "Success", "all good", 9);
      await save(T0, "No", "SignatureInvalid", "rule 3: the signature does not verify", 2);
      await save(T0 + 25 * HOUR, "No", "SignatureInvalid", "rule 3: the signature does not verify", 1);
      await save(T0 + 25 * HOUR, "Unknown", "Success", "rule 7: no reference values", 3);
      await save(T0, "No", "Success", `${long}a`, 1);
      await save(T0, "No", "Success", `${long}b`, 1);
      const top = await b.durable.topFailures({ tenantId: t.tenantId, fromHour: H0, recentFromHour: H25, limit: 10 });
      // equal totals: the one more frequent in the last day first
      assert.deepEqual(top, [
        { verdict: "Unknown", status: "Success", reason: "rule 7: no reference values", total: 3, recent: 3 },
        { verdict: "No", status: "SignatureInvalid", reason: "rule 3: the signature does not verify", total: 3, recent: 1 },
        { verdict: "No", status: "Success", reason: long.slice(0, STATS_REASON_CHARS), total: 2, recent: 0 },
      ]);
      assert.equal((await b.durable.topFailures({ tenantId: t.tenantId, fromHour: H0, recentFromHour: H25, limit: 1 })).length, 1);
      assert.deepEqual(await b.durable.topFailures({ tenantId: (await tenant()).tenantId, fromHour: H0, recentFromHour: H25, limit: 10 }), []);
    });

    it("requests per status and the most frequent refusals; requests of no tenant count for operators only", async () => {
      const t = await tenant();
      const entry = (at: number, status: number, code: string | null, o: Partial<ActivityEntry> = {}): ActivityEntry => ({
        time: iso(at),
        errorId: status >= 400 ? randomBytes(12).toString("hex") : null,
        tenantId: t.tenantId,
        clientId: null,
        method: "POST",
        route: "/v2/blobs",
        status,
        code,
        latencyMs: 1,
        remoteAddress: "127.0.0.1",
        reason: null,
        ...o,
      });
      const everyBefore = await b.durable.topRequestErrors({ fromHour: H0, recentFromHour: H25, limit: 100 });
      await b.durable.appendActivity([
        ...Array.from({ length: 5 }, (_, i) => entry(T0 + i, 200, null)),
        entry(T0 + 25 * HOUR, 200, null, { route: "/v2/nonces" }),
        entry(T0, 400, "4000004"),
        entry(T0 + 25 * HOUR, 400, "4000004"),
        entry(T0 + 25 * HOUR, 400, "4000004"),
        entry(T0, 401, "4010001", { route: "/v2/nonces" }),
        entry(T0, 500, null),
      ]);
      // a second batch adds to the same counters
      const second = [entry(T0 + 1, 401, "4010001", { route: "/v2/nonces" }), entry(T0, 401, "4010001", { tenantId: null, route: "/v2/nonces", method: "PUT" })];
      await b.durable.appendActivity(second);
      // the recorder's retry of a batch already written: its entries are skipped by error id, and not counted again
      await b.durable.appendActivity(second);

      assert.deepEqual(await b.durable.requestCounts({ tenantId: t.tenantId, fromHour: H0, recentFromHour: H25 }), [
        { status: 200, total: 6, recent: 1 },
        { status: 400, total: 3, recent: 2 },
        { status: 401, total: 2, recent: 0 },
        { status: 500, total: 1, recent: 0 },
      ]);
      assert.deepEqual(await b.durable.topRequestErrors({ tenantId: t.tenantId, fromHour: H0, recentFromHour: H25, limit: 10 }), [
        { status: 400, code: "4000004", method: "POST", route: "/v2/blobs", total: 3, recent: 2 },
        { status: 401, code: "4010001", method: "POST", route: "/v2/nonces", total: 2, recent: 0 },
        { status: 500, code: null, method: "POST", route: "/v2/blobs", total: 1, recent: 0 },
      ]);
      const everyAfter = await b.durable.topRequestErrors({ fromHour: H0, recentFromHour: H25, limit: 100 });
      const noTenant = (rows: typeof everyAfter) => rows.find((r) => r.method === "PUT" && r.route === "/v2/nonces" && r.code === "4010001")?.total ?? 0;
      assert.equal(noTenant(everyAfter) - noTenant(everyBefore), 1);
    });

    it("an API key's limits, label and restrictions change together or not at all; a revoked or unknown key refuses", async () => {
      const t = await tenant();
      const keyId = `k${randomBytes(6).toString("hex")}`;
      await b.durable.createApiKey({ keyId, tenantId: t.tenantId, secretHash: "00".repeat(32), rps: 5, burst: 10, createdAt: iso(T0), label: "shop" });
      assert.equal(await b.durable.updateApiKey(keyId, { rps: 7.5 }), true);
      let k = (await b.durable.getApiKey(keyId))!;
      assert.deepEqual([k.rps, k.burst, k.label, k.restrictions], [7.5, 10, "shop", null]);
      const restrictions = { ipAddresses: ["203.0.113.0/24"], referers: ["https://*.example.com/*"] };
      assert.equal(await b.durable.updateApiKey(keyId, { burst: 20, label: null, restrictions }), true);
      k = (await b.durable.getApiKey(keyId))!;
      assert.deepEqual([k.rps, k.burst, k.label, k.restrictions], [7.5, 20, null, restrictions]);
      assert.equal(await b.durable.updateApiKey(keyId, { restrictions: null, label: "again" }), true);
      k = (await b.durable.getApiKey(keyId))!;
      assert.deepEqual([k.restrictions, k.label], [null, "again"]);
      assert.equal(await b.durable.revokeApiKey(keyId, iso(T0 + 1)), true);
      assert.equal(await b.durable.updateApiKey(keyId, { rps: 1 }), false);
      assert.equal((await b.durable.getApiKey(keyId))!.rps, 7.5);
      assert.equal(await b.durable.updateApiKey(`k${randomBytes(6).toString("hex")}`, { rps: 1 }), false);
    });
  });
}
