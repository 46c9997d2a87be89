import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { num, pgRows, sqliteRows, type Row } from "../../src/store/rows.ts";

// The shared row mappers (src/store/rows.ts): each driver's form of the same row must give the same record. The
// conformance suites check the round trip through the real databases; this pins the dialect rules themselves.
describe("row mappers", () => {
  const restrictions = { ipAddresses: ["10.0.0.0/8"], referers: [] };
  const settings = { wifi: true, retries: 3 };

  it("decode booleans: SQLite 0/1, PostgreSQL boolean", () => {
    const tenant = { tenant_id: "t", name: "n", customer_id: "1", kind: "reseller", state: "active", created_at: "c" };
    for (const [lite, pgv, want] of [[1, true, true], [0, false, false]] as const) {
      assert.equal(sqliteRows.tenant({ ...tenant, enrollment_enabled: lite }).enrollmentEnabled, want);
      assert.equal(pgRows.tenant({ ...tenant, enrollment_enabled: pgv }).enrollmentEnabled, want);
    }
  });

  it("decode JSON: SQLite text to parse, PostgreSQL already parsed, NULL as null", () => {
    const client: Row = {
      client_id: "c", tenant_id: "t", user_id: "u", public_key: "k", identifier_hash: "h", rps: 5, burst: 10, created_at: "at",
    };
    const lite = sqliteRows.client({ ...client, read_only: 1, restrictions: JSON.stringify(restrictions) });
    const pgc = pgRows.client({ ...client, read_only: true, restrictions });
    assert.deepEqual(lite, pgc);
    assert.deepEqual(lite.restrictions, restrictions);
    assert.equal(lite.readOnly, true);

    const profile: Row = { profile_id: "p", tenant_id: "t", name: "n", description: null, mdm_url: null, created_at: "a", updated_at: "b" };
    assert.deepEqual(sqliteRows.profile({ ...profile, settings: JSON.stringify(settings) }).settings, settings);
    assert.deepEqual(pgRows.profile({ ...profile, settings }).settings, settings);
    assert.equal(sqliteRows.profile({ ...profile, settings: null }).settings, null);
    assert.equal(pgRows.profile({ ...profile, settings: null }).settings, null);
  });

  it("take BIGINTs as PostgreSQL's strings or SQLite's numbers, and order claimed items by seq", () => {
    assert.equal(num("1700000000000"), 1_700_000_000_000);
    assert.equal(num(42), 42);
    const item = (seq: unknown): Row => ({
      seq, transaction_id: "x", tenant_id: "t", device_id: `d${seq}`, profile_id: "p", user_id: null, attempts: 1,
    });
    assert.deepEqual(pgRows.claimedJobs([item("10"), item("9")]).map((j) => j.seq), [9, 10]);
    assert.deepEqual(sqliteRows.claimedJobs([item(10), item(9)]), pgRows.claimedJobs([item("9"), item("10")]));
  });

  it("pick only the record's fields from SELECT * rows", () => {
    const row: Row = { object_id: "o", tenant_id: "t", format: "vendor", reason: "r", created_at: "c", extra_column: 1 };
    const v = sqliteRows.verdict({ ...row, record: '{"b":1,"a":2}', detail: "{}" });
    assert.deepEqual(Object.keys(v), ["objectId", "tenantId", "format", "record", "reason", "detail", "createdAt"]);
    assert.deepEqual(Object.keys(v.record), ["b", "a"], "key order kept");
    assert.deepEqual(v, pgRows.verdict({ ...row, record: { b: 1, a: 2 }, detail: {} }));
  });
});
