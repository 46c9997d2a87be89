import path from "node:path";
import { performance } from "node:perf_hooks";
import type { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { Agent, request } from "undici";
import { devTls, type DevTls } from "../lib/attestd.ts";
import { adminQuery, dbUrl, ensureServices } from "../lib/backing.ts";
import { attestdCli, CLI_PATH, freePort, spawnServer, type Server } from "../lib/processes.ts";
import { percentile } from "../lib/stats.ts";
import { openDatabase, transaction } from "../../src/store/sqlite/database.ts";

/**
 * Issue 12: the portal's verdict history stays quick for a tenant with a million verdicts. A real `attestd serve`
 * (child process, HTTPS) on a store seeded with VERDICTS rows for the tenant measured plus a fifth as many for
 * another tenant, queried through the admin API with a signed-in session exactly as the portal's pages do.
 * Requests are sequential (one person paging), so each figure is one request's latency, not a throughput.
 */

export interface HistoryQueryResult {
  name: string;
  path: string;
  requests: number;
  /** milliseconds */
  latencyMs: { p50: number; p95: number; p99: number; max: number };
  /** rows on the page (the same every time: the data does not change during the run) */
  rows: number;
}

export interface HistoryBackendResult {
  store: "sqlite" | "postgres";
  seededVerdicts: { measured: number; other: number };
  seedSeconds: number;
  queries: HistoryQueryResult[];
  /** the headline: the unfiltered first page */
  firstPageP95Ms: number;
  met: boolean;
}

export interface HistorySection {
  status: "ok";
  how: string;
  target: string;
  backends: HistoryBackendResult[];
  notes: string[];
}

export interface HistoryContext {
  tmp: string;
  quick: boolean;
  log: (line: string) => void;
}

const TARGET_P95_MS = 50;
const PASSWORD = "bench passphrase, long enough";
const THIRTY_DAYS_S = 30 * 86_400;
const DEVICES = 5000;

/**
 * The mix of a busy tenant: mostly Yes, some tampered phones, failed signatures and unknown firmware, both
 * formats, 5,000 devices, spread evenly over the last 30 days (newest first is the default order).
 */
const SQLITE_SEED = `
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < @n)
INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at)
SELECT printf('%s%010d', @prefix, i), @tenant, CASE WHEN i % 3 = 0 THEN 'android-key' ELSE 'vendor' END,
  json_object(
    'measurements', lower(hex(randomblob(32))),
    'tamperBit', CASE WHEN i % 20 = 1 THEN '1' ELSE '0' END,
    'IMEI', CASE WHEN i % 3 = 0 THEN '' ELSE printf('35%013d', i % ${DEVICES}) END,
    'status', CASE WHEN i % 20 = 0 THEN 'SignatureInvalid' WHEN i % 97 = 5 THEN 'CertificateInvalid' ELSE 'Success' END,
    'nonce', lower(hex(randomblob(16))),
    'chipId', printf('c%015d', i % ${DEVICES}),
    'verdict', CASE WHEN i % 20 IN (0, 1) OR i % 97 = 5 THEN 'No' WHEN i % 50 = 2 THEN 'Unknown' ELSE 'Yes' END,
    'MAC', '0a:1b:2c:3d:4e:5f', 'version', '2',
    'createdDate', strftime('%Y-%m-%dT%H:%M:%fZ', @now, printf('-%d seconds', i * ${THIRTY_DAYS_S} / @n)),
    'updateDate', strftime('%Y-%m-%dT%H:%M:%fZ', @now, printf('-%d seconds', i * ${THIRTY_DAYS_S} / @n))),
  CASE WHEN i % 20 = 0 THEN 'the data signature does not verify with the leaf key' WHEN i % 20 = 1 THEN 'tamper bit set' ELSE 'every rule passed' END,
  json_object('records', json_array(json_object('tag', 1, 'value', lower(hex(randomblob(48)))), json_object('tag', 2, 'value', lower(hex(randomblob(64))))),
    'chain', json_array(lower(hex(randomblob(40))), lower(hex(randomblob(40))))),
  strftime('%Y-%m-%dT%H:%M:%fZ', @now, printf('-%d seconds', i * ${THIRTY_DAYS_S} / @n))
FROM s`;

const PG_SEED = `
INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at)
SELECT $1 || lpad(i::text, 10, '0'), $2, CASE WHEN i % 3 = 0 THEN 'android-key' ELSE 'vendor' END,
  json_build_object(
    'measurements', md5(i::text) || md5((i + 1)::text),
    'tamperBit', CASE WHEN i % 20 = 1 THEN '1' ELSE '0' END,
    'IMEI', CASE WHEN i % 3 = 0 THEN '' ELSE '35' || lpad((i % ${DEVICES})::text, 13, '0') END,
    'status', CASE WHEN i % 20 = 0 THEN 'SignatureInvalid' WHEN i % 97 = 5 THEN 'CertificateInvalid' ELSE 'Success' END,
    'nonce', md5((i * 7)::text),
    'chipId', 'c' || lpad((i % ${DEVICES})::text, 15, '0'),
    'verdict', CASE WHEN i % 20 IN (0, 1) OR i % 97 = 5 THEN 'No' WHEN i % 50 = 2 THEN 'Unknown' ELSE 'Yes' END,
    'MAC', '0a:1b:2c:3d:4e:5f', 'version', '2',
    'createdDate', t.at, 'updateDate', t.at),
  CASE WHEN i % 20 = 0 THEN 'the data signature does not verify with the leaf key' WHEN i % 20 = 1 THEN 'tamper bit set' ELSE 'every rule passed' END,
  json_build_object('records', json_build_array(json_build_object('tag', 1, 'value', md5(i::text) || md5((i + 2)::text) || md5((i + 3)::text)),
    json_build_object('tag', 2, 'value', md5((i + 4)::text) || md5((i + 5)::text) || md5((i + 6)::text) || md5((i + 7)::text))),
    'chain', json_build_array(md5((i + 8)::text) || md5((i + 9)::text), md5((i + 10)::text) || md5((i + 11)::text))),
  t.at
FROM generate_series(1, $3::int) AS i,
  LATERAL (SELECT to_char(($4::timestamptz - make_interval(secs => (i::bigint * ${THIRTY_DAYS_S} / $3::int))) AT TIME ZONE 'UTC',
    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at) AS t`;

interface Seeder {
  store: "sqlite" | "postgres";
  /** flags naming the store, for `serve` and the CLI */
  storeArgs: string[];
  insert(tenantId: string, prefix: string, n: number, nowIso: string): Promise<void>;
  tenantId(name: string): Promise<string>;
  /** what a deployment's maintenance would have done by now */
  settle(): Promise<void>;
  close(): Promise<void>;
}

function sqliteSeeder(dataDir: string): Seeder {
  const storeArgs = ["--data-dir", dataDir];
  let db: DatabaseSync | undefined;
  const open = () => (db ??= openDatabase(path.join(dataDir, "attestd.sqlite")));
  return {
    store: "sqlite",
    storeArgs,
    async insert(tenantId, prefix, n, now) {
      const d = open();
      transaction(d, "deferred", () => d.prepare(SQLITE_SEED).run({ n, prefix, tenant: tenantId, now }));
    },
    async tenantId(name) {
      return (open().prepare("SELECT tenant_id FROM tenants WHERE name = ?").get(name) as { tenant_id: string }).tenant_id;
    },
    // attestd does not ANALYZE SQLite itself, so neither does the bench: the plans measured are the ones served
    async settle() {},
    async close() {
      db?.close();
    },
  };
}

function pgSeeder(dataDir: string, url: string): Seeder {
  const client = new pg.Client({ connectionString: url });
  let connected: Promise<void> | undefined;
  const c = async () => {
    await (connected ??= client.connect().then(() => undefined));
    return client;
  };
  return {
    store: "postgres",
    storeArgs: ["--data-dir", dataDir, "--store", "postgres", "--database-url", url],
    async insert(tenantId, prefix, n, now) {
      await (await c()).query(PG_SEED, [prefix, tenantId, n, now]);
    },
    async tenantId(name) {
      return (await (await c()).query<{ tenant_id: string }>("SELECT tenant_id FROM tenants WHERE name = $1", [name])).rows[0]!.tenant_id;
    },
    // autovacuum analyzes a table after a bulk load like this one within a minute; do it now rather than wait
    async settle() {
      await (await c()).query("VACUUM ANALYZE verdicts");
    },
    async close() {
      if (connected) await client.end();
    },
  };
}

interface Session {
  origin: string;
  agent: Agent;
  cookie: string;
}

async function call(s: Session, method: "GET" | "POST", p: string, body?: unknown): Promise<{ status: number; json: unknown; setCookie: string[] }> {
  const res = await request(new URL(p, s.origin), {
    method,
    dispatcher: s.agent,
    headers: {
      origin: s.origin,
      accept: "application/json",
      ...(s.cookie ? { cookie: s.cookie } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.body.text();
  const raw = res.headers["set-cookie"];
  return { status: res.statusCode, json: text ? (JSON.parse(text) as unknown) : undefined, setCookie: raw === undefined ? [] : Array.isArray(raw) ? raw : [raw] };
}

/** `attestd user invite` through the CLI, the password set through the invitation, then signed in: the portal's own path. */
async function signIn(seeder: Seeder, origin: string, tls: DevTls, who: { email: string; tenant?: string }): Promise<Session> {
  const link = await attestdCli([
    "user", "invite", "--email", who.email,
    ...(who.tenant ? ["--tenant", who.tenant] : ["--operator"]),
    "--public-url", origin, ...seeder.storeArgs, "--log-level", "warn",
  ]);
  const token = link.trim().split("#").pop()!;
  const s: Session = { origin, agent: new Agent({ connect: { ca: tls.ca }, keepAliveTimeout: 30_000 }), cookie: "" };
  const set = await call(s, "POST", "/portal/api/invite", { token, password: PASSWORD });
  if (set.status !== 200) throw new Error(`setting the password answered ${set.status}: ${JSON.stringify(set.json)}`);
  const res = await call(s, "POST", "/portal/api/session", { email: who.email, password: PASSWORD });
  const cookie = res.setCookie.map((c) => c.split(";")[0]!).find((c) => c.startsWith("__Host-attestd_session="));
  if (res.status !== 200 || !cookie) throw new Error(`signing in answered ${res.status}: ${JSON.stringify(res.json)}`);
  s.cookie = cookie;
  return s;
}

async function measure(s: Session, name: string, p: string, warmup: number, requests: number): Promise<HistoryQueryResult> {
  let rows = 0;
  const once = async () => {
    const t0 = performance.now();
    const res = await call(s, "GET", p);
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${name}: GET ${p} answered ${res.status}: ${JSON.stringify(res.json)}`);
    rows = Array.isArray((res.json as { items?: unknown[] }).items) ? (res.json as { items: unknown[] }).items.length : 0;
    return ms;
  };
  for (let i = 0; i < warmup; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < requests; i++) times.push(await once());
  times.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    name,
    path: p,
    requests,
    rows,
    latencyMs: { p50: r(percentile(times, 50)), p95: r(percentile(times, 95)), p99: r(percentile(times, 99)), max: r(times[times.length - 1]!) },
  };
}

async function runBackend(seeder: Seeder, dataDir: string, ctx: HistoryContext, n: number): Promise<HistoryBackendResult> {
  const { log, quick } = ctx;
  // the CLI migrates the store and makes the tenants, as an operator would
  await attestdCli(["tenant", "create", "acme", ...seeder.storeArgs, "--log-level", "warn"]);
  await attestdCli(["tenant", "create", "globex", ...seeder.storeArgs, "--log-level", "warn"]);
  const now = new Date().toISOString();
  const other = Math.round(n / 5);
  log(`history (${seeder.store}): seeding ${n.toLocaleString("en-US")} verdicts for acme and ${other.toLocaleString("en-US")} for globex`);
  const t0 = performance.now();
  await seeder.insert(await seeder.tenantId("acme"), "bench-a-", n, now);
  await seeder.insert(await seeder.tenantId("globex"), "bench-g-", other, now);
  await seeder.settle();
  const seedSeconds = Math.round((performance.now() - t0) / 100) / 10;
  await seeder.close();

  const tls = await devTls(dataDir);
  const port = await freePort();
  const origin = `https://127.0.0.1:${port}`;
  let server: Server | undefined;
  try {
    server = await spawnServer({
      name: `attestd (${seeder.store}, history)`,
      args: [CLI_PATH, "serve", "--host", "127.0.0.1", "--port", String(port), ...seeder.storeArgs, "--dev-tls", "--log-level", "warn"],
      origin,
      ca: tls.ca,
      timeoutMs: 90_000,
    });
    const admin = await signIn(seeder, origin, tls, { email: "history@acme.example", tenant: "acme" });
    const operator = await signIn(seeder, origin, tls, { email: "history-operator@example.org" });
    const [warmup, requests] = quick ? [3, 20] : [20, 200];
    const first = (await call(admin, "GET", "/portal/api/verdicts")).json as { next?: string };
    const dayAgo = new Date(Date.parse(now) - 86_400_000).toISOString();
    const weekAgo = new Date(Date.parse(now) - 7 * 86_400_000).toISOString();
    const plan: [string, Session, string][] = [
      ["first page", admin, "/portal/api/verdicts"],
      ["second page (cursor)", admin, `/portal/api/verdicts?after=${encodeURIComponent(first.next ?? "")}`],
      ["verdict=No", admin, "/portal/api/verdicts?verdict=No"],
      ["verdict=Unknown", admin, "/portal/api/verdicts?verdict=Unknown"],
      ["status=CertificateInvalid", admin, "/portal/api/verdicts?status=CertificateInvalid"],
      ["one device (chipId)", admin, `/portal/api/verdicts?device=c${"1234".padStart(15, "0")}`],
      ["format=android-key", admin, "/portal/api/verdicts?format=android-key"],
      ["a day, a week ago", admin, `/portal/api/verdicts?from=${encodeURIComponent(weekAgo)}&to=${encodeURIComponent(new Date(Date.parse(weekAgo) + 86_400_000).toISOString())}`],
      ["the last 24 h, No", admin, `/portal/api/verdicts?verdict=No&from=${encodeURIComponent(dayAgo)}`],
      ["operator, every tenant", operator, "/portal/api/verdicts"],
    ];
    const queries: HistoryQueryResult[] = [];
    for (const [name, session, p] of plan) {
      const q = await measure(session, name, p, warmup, requests);
      log(`history (${seeder.store}): ${name}: p50 ${q.latencyMs.p50} ms, p95 ${q.latencyMs.p95} ms (${q.rows} rows)`);
      queries.push(q);
    }
    await admin.agent.close();
    await operator.agent.close();
    const firstPageP95Ms = queries[0]!.latencyMs.p95;
    return { store: seeder.store, seededVerdicts: { measured: n, other }, seedSeconds, queries, firstPageP95Ms, met: firstPageP95Ms < TARGET_P95_MS };
  } finally {
    await server?.stop();
  }
}

/** SQLite always; PostgreSQL when it answers (or `.ci/services.sh` can start it), else recorded as not run. */
export async function runHistorySection(ctx: HistoryContext): Promise<HistorySection> {
  const n = ctx.quick ? 20_000 : 1_000_000;
  const notes: string[] = [];
  const backends: HistoryBackendResult[] = [];
  const sqliteDir = path.join(ctx.tmp, "history-sqlite");
  backends.push(await runBackend(sqliteSeeder(sqliteDir), sqliteDir, ctx, n));

  const down = await ensureServices(ctx.log);
  if (down) notes.push(`PostgreSQL not measured: ${down}`);
  else {
    const db = `attestd_bench_history_${process.pid}`;
    await adminQuery(`CREATE DATABASE ${db}`);
    try {
      const pgDir = path.join(ctx.tmp, "history-pg");
      backends.push(await runBackend(pgSeeder(pgDir, dbUrl(db)), pgDir, ctx, n));
    } finally {
      await adminQuery(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    }
  }
  if (ctx.quick) notes.push("--quick seeds 20,000 verdicts, not 1,000,000: the figures say nothing about the target");
  return {
    status: "ok",
    how: "attestd serve (child process, HTTPS, dev TLS) on a store seeded in bulk; a signed-in tenant admin (and an operator) page through GET /portal/api/verdicts one request at a time over a keep-alive connection; 20 warm-up then 200 measured requests per query",
    target: `first page p95 < ${TARGET_P95_MS} ms with 1,000,000 verdicts for the tenant`,
    backends,
    notes,
  };
}
