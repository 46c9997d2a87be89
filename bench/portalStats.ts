/**
 * The portal overview's aggregation for a tenant with 1,000,000 verdicts: what the same numbers cost read from the
 * verdicts themselves (index scans) and from the counters kept beside them (migration portal_stats), and what
 * keeping the counters costs a verdict's write. A measurement to run by hand when the schema or the queries
 * change, not part of `npm run bench` (it spends a minute or two building the data):
 *
 *   node --import tsx bench/portalStats.ts            # SQLite, in a temporary directory
 *   node --import tsx bench/portalStats.ts --pg       # and PostgreSQL (ATTESTD_BENCH_PG, a database made and dropped)
 *   node --import tsx bench/portalStats.ts --pg-writes  # PostgreSQL's write comparison alone (no million rows)
 *
 * Results of the last run are in bench/README.md ("Portal overview counts").
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import {
  hourOf,
  pgPlaceholder,
  sqlitePlaceholder,
  statsSlot,
  topFailuresSql,
  verdictCountsSql,
  type Placeholder,
  type SqlArg,
} from "../src/store/historyQueries.ts";
import { PgStore } from "../src/store/postgres/pgStore.ts";
import { pluck, transaction } from "../src/store/sqlite/database.ts";
import { SqliteStore } from "../src/store/sqlite/sqliteStore.ts";

const N = 1_000_000;
const NOW = Date.parse("2026-11-22T12:30:00.000Z");
const DAY = 86_400_000;
const TENANT = "t_big";
const FAILURES: [string, string, string][] = [
  ["SignatureInvalid", "No", "rule 3 (SignatureInvalid/No): the signature does not verify with the leaf's key"],
  ["CertificateInvalid", "No", "rule 2 (CertificateInvalid/No): the chain does not lead to a configured vendor root"],
  ["Success", "No", "rule 6 (Success/No): the tamper bit is set"],
  ["NonceMismatch", "No", "rule 4 (NonceMismatch/No): the blob's nonce is not the one issued"],
  ["Success", "Unknown", "rule 7 (Success/Unknown): no reference values for this model and firmware"],
  ["DeviceError", "Unknown", 'rule 1 (DeviceError/Unknown): the device reported exitCode 3 ("Error")'],
];

/** verdict i of n: spread evenly over the last 30 days, 7 % of them failures */
function verdictRow(i: number, n: number, tenant: string) {
  const at = new Date(NOW - Math.floor((i / n) * 30 * DAY)).toISOString();
  const failed = i % 100 < 7 ? FAILURES[i % FAILURES.length]! : undefined;
  const [status, verdict, reason] = failed ?? ["Success", "Yes", "rule 8 (Success/Yes): every check passed"];
  const record = JSON.stringify({ measurements: "ab".repeat(32), tamperBit: "0", IMEI: `3512345678${String(i % 100000).padStart(5, "0")}`, status, nonce: "n".repeat(43), chipId: `c0ffee${i}`, verdict, MAC: "", version: "2", createdDate: at, updateDate: at });
  return { objectId: `${tenant}_${i}_${Math.random().toString(36).slice(2, 10)}`, record, reason, at, verdict, status };
}

/** The queries the overview needs, answered from the verdicts themselves: the cheapest form (covering index where one exists). */
function rawQueries(ph: Placeholder) {
  const p = (i: number) => ph(i);
  return {
    "24 h by hour (rows)": `SELECT substr(created_at, 1, 13) AS b, verdict, COUNT(*) FROM verdicts WHERE tenant_id = ${p(1)} AND created_at >= ${p(2)} GROUP BY 1, 2`,
    "30 d by day (rows)": `SELECT substr(created_at, 1, 10) AS b, verdict, COUNT(*) FROM verdicts WHERE tenant_id = ${p(1)} AND created_at >= ${p(2)} GROUP BY 1, 2`,
    "30 d top failures (rows)": `SELECT status, reason, COUNT(*) AS n FROM verdicts WHERE tenant_id = ${p(1)} AND created_at >= ${p(2)} AND verdict IN ('No', 'Unknown') GROUP BY 1, 2 ORDER BY n DESC LIMIT 10`,
  };
}

function counterQueries(ph: Placeholder) {
  const h24 = hourOf(new Date(NOW - DAY).toISOString());
  const d30 = hourOf(new Date(NOW - 30 * DAY).toISOString());
  return {
    "24 h by hour (counters)": verdictCountsSql({ tenantId: TENANT, fromHour: h24, bucket: "hour" }, ph),
    "30 d by day (counters)": verdictCountsSql({ tenantId: TENANT, fromHour: d30, bucket: "day" }, ph),
    "30 d top failures (counters)": topFailuresSql({ tenantId: TENANT, fromHour: d30, recentFromHour: h24, limit: 10 }, ph),
    "30 d by day, every tenant (counters)": verdictCountsSql({ fromHour: d30, bucket: "day" }, ph),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const line = (label: string, ms: number[], extra = "") => console.log(`  ${label.padEnd(40)} median ${median(ms).toFixed(2).padStart(8)} ms  (${ms.map((x) => x.toFixed(1)).join(" / ")})${extra}`);

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-portalstats-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  const db = store.db;
  try {
    console.log(`SQLite: ${N} verdicts of one tenant over 30 days, and 10 tenants of 10,000`);
    const t0 = performance.now();
    const insert = db.prepare("INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES (?, ?, 'vendor', ?, ?, '{}', ?)");
    const load = (from: number, to: number, n: number, tenant: string) =>
      transaction(db, "deferred", () => {
        for (let i = from; i < to; i++) {
          const v = verdictRow(i, n, tenant);
          insert.run(v.objectId, tenant, v.record, v.reason, v.at);
        }
      });
    for (let i = 0; i < N; i += 50_000) load(i, i + 50_000, N, TENANT);
    for (let k = 0; k < 10; k++) load(0, 10_000, 10_000, `t_small${k}`);
    // the counters as the migration builds them for rows stored before it (the write path is measured below)
    const backfill = performance.now();
    db.exec("DELETE FROM verdict_stats");
    db.exec(`INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n)
      SELECT tenant_id, substr(created_at, 1, 13), verdict, status, CASE WHEN verdict = 'Yes' THEN '' ELSE substr(reason, 1, 200) END, 0, COUNT(*)
      FROM verdicts GROUP BY 1, 2, 3, 4, 5`);
    console.log(`  built in ${((performance.now() - t0) / 1000).toFixed(0)} s; counting them as the migration does: ${((performance.now() - backfill) / 1000).toFixed(1)} s, ${pluck(db.prepare("SELECT COUNT(*) FROM verdict_stats")).get()} counter rows`);
    db.exec("ANALYZE");
    const time = (label: string, sql: string, args: SqlArg[]) => {
      const st = db.prepare(sql);
      st.all(...args);
      const runs = Array.from({ length: 5 }, () => {
        const t = performance.now();
        st.all(...args);
        return performance.now() - t;
      });
      line(label, runs);
    };
    const since = [TENANT, new Date(NOW - DAY).toISOString()];
    const since30 = [TENANT, new Date(NOW - 30 * DAY).toISOString()];
    const raw = rawQueries(sqlitePlaceholder);
    time("24 h by hour (rows)", raw["24 h by hour (rows)"], since);
    time("30 d by day (rows)", raw["30 d by day (rows)"], since30);
    time("30 d top failures (rows)", raw["30 d top failures (rows)"], since30);
    for (const [label, q] of Object.entries(counterQueries(sqlitePlaceholder))) time(label, q.sql, q.args);

    // What the counter adds to a verdict's write: the row alone, then the row and its counter (the store's two
    // statements), in transactions of 100 as group commit batches them, interleaved so drift hits both alike.
    const count = db.prepare(
      `INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n) VALUES (?, ?, ?, ?, substr(?, 1, 200), 0, 1)
       ON CONFLICT (tenant_id, hour, verdict, status, reason, slot) DO UPDATE SET n = n + 1`,
    );
    let seq = 0;
    const write = (withCounter: boolean, n: number) => {
      const batch = () =>
        transaction(db, "deferred", () => {
          for (let i = 0; i < 100; i++) {
            const v = verdictRow(seq++, N, TENANT);
            const at = new Date(NOW).toISOString();
            insert.run(`w${v.objectId}`, TENANT, v.record, v.reason, at);
            if (withCounter) count.run(TENANT, hourOf(at), v.verdict, v.status, v.verdict === "Yes" ? "" : v.reason);
          }
        });
      const t = performance.now();
      for (let i = 0; i < n; i += 100) batch();
      return ((performance.now() - t) * 1000) / n;
    };
    const alone: number[] = [];
    const counted: number[] = [];
    for (let r = 0; r < 5; r++) {
      alone.push(write(false, 10_000));
      counted.push(write(true, 10_000));
    }
    console.log(`  write, row alone          median ${median(alone).toFixed(1)} µs/verdict (${alone.map((x) => x.toFixed(0)).join(" / ")})`);
    console.log(`  write, row + counter      median ${median(counted).toFixed(1)} µs/verdict (${counted.map((x) => x.toFixed(0)).join(" / ")})`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(): Promise<void> {
  // (the reads need the million rows; the writes only a table to write to)
  const adminUrl = process.env.ATTESTD_BENCH_PG ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `attestd_portalstats_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const store = await PgStore.open({ url: url.toString(), poolMax: 20, queryTimeoutMs: 600_000 });
  try {
    if (!writesOnly) await postgresReads(store);
    await postgresWrites(store);
  } finally {
    await store.close();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
}

async function postgresReads(store: PgStore): Promise<void> {
  console.log(`PostgreSQL: ${N} verdicts of one tenant over 30 days, and 10 tenants of 10,000`);
  const t0 = performance.now();
  for (const [tenant, n] of [[TENANT, N], ...Array.from({ length: 10 }, (_, k) => [`t_small${k}`, 10_000] as const)] as const) {
    for (let from = 0; from < n; from += 20_000) {
      const rows = Array.from({ length: Math.min(20_000, n - from) }, (_, j) => verdictRow(from + j, n, tenant));
      await store.pool.query(
        `INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at)
         SELECT o, $1, 'vendor', r::json, e, '{}', a FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS u (o, r, e, a)`,
        [tenant, rows.map((r) => r.objectId), rows.map((r) => r.record), rows.map((r) => r.reason), rows.map((r) => r.at)],
      );
    }
  }
  const backfill = performance.now();
  await store.pool.query(`INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n)
    SELECT tenant_id, substr(created_at, 1, 13), verdict, status, CASE WHEN verdict = 'Yes' THEN '' ELSE substr(reason, 1, 200) END, 0, COUNT(*)
    FROM verdicts GROUP BY 1, 2, 3, 4, 5`);
  await store.pool.query("VACUUM ANALYZE verdicts");
  await store.pool.query("VACUUM ANALYZE verdict_stats");
  console.log(`  built in ${((performance.now() - t0) / 1000).toFixed(0)} s; counting them as the migration does: ${((performance.now() - backfill) / 1000).toFixed(1)} s`);
  const time = async (label: string, sql: string, args: unknown[]) => {
    await store.pool.query(sql, args);
    const runs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      await store.pool.query(sql, args);
      runs.push(performance.now() - t);
    }
    line(label, runs);
  };
  const raw = rawQueries(pgPlaceholder);
  await time("24 h by hour (rows)", raw["24 h by hour (rows)"], [TENANT, new Date(NOW - DAY).toISOString()]);
  await time("30 d by day (rows)", raw["30 d by day (rows)"], [TENANT, new Date(NOW - 30 * DAY).toISOString()]);
  await time("30 d top failures (rows)", raw["30 d top failures (rows)"], [TENANT, new Date(NOW - 30 * DAY).toISOString()]);
  for (const [label, q] of Object.entries(counterQueries(pgPlaceholder))) await time(label, q.sql, q.args);
}

async function postgresWrites(store: PgStore): Promise<void> {
  // Writes from 16 concurrent connections, all to one tenant and hour (the worst case for a counter row): the
  // row alone, the store's statement (row + counter, slot by objectId), and the same with every write on one slot.
  const plain = "INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES ($1, $2, 'vendor', $3::json, $4, '{}', $5)";
  const counted = `WITH v AS (INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES ($1, $2, 'vendor', $3::json, $4, '{}', $5) RETURNING 1)
    INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n) SELECT $2, $6, $7, $8, substr($9, 1, 200), $10, 1 FROM v
    ON CONFLICT (tenant_id, hour, verdict, status, reason, slot) DO UPDATE SET n = verdict_stats.n + 1`;
  let seq = 0;
  const run = async (mode: "row alone" | "row + counter (8 slots)" | "row + counter (1 slot)", per: number) => {
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let k = 0; k < per; k++) {
          const v = verdictRow(seq++, N, TENANT);
          // random as a real objectId (16 CSPRNG bytes, base64url): its first character picks the counter's slot
          const id = randomBytes(16).toString("base64url");
          const at = new Date(NOW).toISOString();
          const args = [id, TENANT, v.record, v.reason, at];
          if (mode === "row alone") await store.pool.query(plain, args);
          else await store.pool.query(counted, [...args, hourOf(at), v.verdict, v.status, v.verdict === "Yes" ? "" : v.reason, mode === "row + counter (1 slot)" ? 0 : statsSlot(id)]);
        }
      }),
    );
    return (16 * per) / ((performance.now() - t) / 1000);
  };
  const results: Record<string, number[]> = { "row alone": [], "row + counter (8 slots)": [], "row + counter (1 slot)": [] };
  for (let r = 0; r < 5; r++) for (const mode of Object.keys(results) as (keyof typeof results & string)[]) results[mode]!.push(await run(mode as never, 200));
  for (const [mode, xs] of Object.entries(results)) console.log(`  write, 16 connections, ${mode.padEnd(24)} median ${median(xs).toFixed(0)} verdicts/s (${xs.map((x) => x.toFixed(0)).join(" / ")})`);
}

const writesOnly = process.argv.includes("--pg-writes");
if (!writesOnly) await sqlite();
if (writesOnly || process.argv.includes("--pg")) await postgres();
