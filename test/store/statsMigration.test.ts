import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { PgStore } from "../../src/store/postgres/pgStore.ts";
import type { DurableStore } from "../../src/store/types.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { createTestDatabase } from "./backends.ts";
import { postgresBefore, sqliteBefore } from "./olderSchema.ts";

/** The migration that adds the overview's counters counts what was stored before it, on both SQL backends. */
const STATS_MIGRATION = "portal_stats";

const record = (verdict: string, status: string) =>
  JSON.stringify({ measurements: "", tamperBit: "0", IMEI: "", status, nonce: "n", chipId: "", verdict, MAC: "", version: "2", createdDate: "", updateDate: "" });

/**
 * verdicts and activity rows as an older attestd wrote them: two Yes and a No in one hour, a request of no tenant;
 * and, of another tenant, a record without verdict or status (none is made so, but the migration must not stop on one)
 */
const OLD_VERDICTS = [
  ["v1", record("Yes", "Success"), "fine", "2026-11-01T10:05:00.000Z"],
  ["v2", record("Yes", "Success"), "fine", "2026-11-01T10:45:00.000Z"],
  ["v3", record("No", "SignatureInvalid"), "rule 3: bad signature", "2026-11-01T10:50:00.000Z"],
] as const;
const OLD_ACTIVITY = [
  ["2026-11-01T10:05:00.000Z", "t_acme", "POST", "/v2/blobs", 200, null],
  ["2026-11-01T10:06:00.000Z", "t_acme", "POST", "/v2/blobs", 400, "4000004"],
  ["2026-11-01T10:07:00.000Z", null, "POST", "/v2/nonces", 401, "4010001"],
] as const;

async function assertCounted(store: DurableStore): Promise<void> {
  const window = { fromHour: "2026-11-01T00", recentFromHour: "2026-11-01T00" };
  assert.deepEqual(await store.verdictCounts({ tenantId: "t_odd", fromHour: window.fromHour, bucket: "day" }), [{ bucket: "2026-11-01", verdict: "", n: 1 }]);
  assert.deepEqual(await store.verdictCounts({ tenantId: "t_acme", fromHour: window.fromHour, bucket: "hour" }), [
    { bucket: "2026-11-01T10", verdict: "No", n: 1 },
    { bucket: "2026-11-01T10", verdict: "Yes", n: 2 },
  ]);
  assert.deepEqual(await store.topFailures({ tenantId: "t_acme", ...window, limit: 5 }), [
    { verdict: "No", status: "SignatureInvalid", reason: "rule 3: bad signature", total: 1, recent: 1 },
  ]);
  assert.deepEqual(await store.topRequestErrors({ ...window, limit: 5 }), [
    { status: 400, code: "4000004", method: "POST", route: "/v2/blobs", total: 1, recent: 1 },
    { status: 401, code: "4010001", method: "POST", route: "/v2/nonces", total: 1, recent: 1 },
  ]);
  assert.deepEqual(await store.topRequestErrors({ tenantId: "t_acme", ...window, limit: 5 }), [
    { status: 400, code: "4000004", method: "POST", route: "/v2/blobs", total: 1, recent: 1 },
  ]);
}

describe("the overview counters' migration counts the rows stored before it", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-statsmig-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("SQLite", async () => {
    const file = path.join(dir, "old.sqlite");
    sqliteBefore(file, STATS_MIGRATION, (old) => {
      const verdict = old.prepare("INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES (?, 't_acme', 'vendor', ?, ?, '{}', ?)");
      for (const v of OLD_VERDICTS) verdict.run(...v);
      old.prepare("INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES ('v_odd', 't_odd', 'vendor', '{}', '', '{}', '2026-11-01T11:00:00.000Z')").run();
      const activity = old.prepare("INSERT INTO activity (time, error_id, tenant_id, client_id, method, route, status, code, latency_ms, remote_address) VALUES (?, NULL, ?, NULL, ?, ?, ?, ?, 1, '::1')");
      for (const a of OLD_ACTIVITY) activity.run(...a);
    });
    const store = new SqliteStore({ file });
    try {
      await assertCounted(store);
    } finally {
      await store.close();
    }
  });

  it("PostgreSQL", async () => {
    const db = await createTestDatabase("statsmig");
    try {
      await postgresBefore(db.url, STATS_MIGRATION, async (c) => {
        for (const v of OLD_VERDICTS) {
          await c.query("INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES ($1, 't_acme', 'vendor', $2::json, $3, '{}', $4)", [...v]);
        }
        await c.query("INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES ('v_odd', 't_odd', 'vendor', '{}', '', '{}', '2026-11-01T11:00:00.000Z')");
        for (const a of OLD_ACTIVITY) {
          await c.query(
            "INSERT INTO activity (time, error_id, tenant_id, client_id, method, route, status, code, latency_ms, remote_address) VALUES ($1, NULL, $2, NULL, $3, $4, $5, $6, 1, '::1')",
            [...a],
          );
        }
      });
      const store = await PgStore.open({ url: db.url, poolMax: 2 });
      try {
        await assertCounted(store);
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });
});
