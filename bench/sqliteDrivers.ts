/**
 * The SQLite store's hot statements, timed through node:sqlite (the driver the store uses) and, when given one,
 * through a better-sqlite3 build, in the same process on the same schema: what the choice of binding costs per
 * operation (docs/deployment.md, "The SQLite binding"). A measurement to run by hand, not part of `npm run bench`:
 *
 *   node --import tsx bench/sqliteDrivers.ts                                         # node:sqlite alone
 *   node --import tsx bench/sqliteDrivers.ts --better-sqlite3 /path/to/node_modules/better-sqlite3
 *   ... --rounds 9 --batches 100                                                     # more or longer rounds
 *   ... --dir /dev/shm                                                               # files on tmpfs: no fsync cost
 *
 * better-sqlite3 is no dependency of attestd: install the version to compare in a scratch folder
 * (`npm install better-sqlite3@13` there) and point at it.
 *
 * The workloads are the store's statements (SqliteStore.prepare(), as of this file) driven as the store drives
 * them: the writes in group-commit batches of BATCH operations, each batch one BEGIN IMMEDIATE ... COMMIT made with
 * the driver's own transaction helper (better-sqlite3's `db.transaction().immediate()`, node:sqlite's
 * `transaction()` of src/store/sqlite/database.ts), `consumeWithVerdict` in a savepoint per operation, the others
 * without (groupCommit.ts, RunOptions); the lookups one autocommit statement each. Each driver has its own copy of
 * one file migrated by SqliteStore, with the store's pragmas (WAL, synchronous NORMAL, 64 MiB cache; SQLite's
 * automatic checkpoints, as a one-shot command has them, since the checkpoint thread is the store's). Rounds
 * alternate the drivers, so a slow patch of a shared machine hits both; each figure is the median round.
 */
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { openDatabase, transaction } from "../src/store/sqlite/database.ts";
import { SqliteStore } from "../src/store/sqlite/sqliteStore.ts";

/** what the workloads need of a driver: both bindings have this shape */
interface Statement {
  run(...args: (string | number | null)[]): unknown;
  get(...args: (string | number | null)[]): unknown;
}
interface Connection {
  prepare(sql: string): Statement;
  exec(sql: string): unknown;
  close(): unknown;
}
interface Driver {
  name: string;
  db: Connection;
  /** BEGIN IMMEDIATE ... COMMIT around fn, as the group-commit writer's batch */
  batch(fn: () => void): void;
  /** fn in a savepoint inside the batch, as an operation queued with the default `savepoint: true` */
  savepoint(fn: () => void): void;
}

const { values: flags } = parseArgs({
  options: {
    "better-sqlite3": { type: "string" },
    rounds: { type: "string", default: "7" },
    batches: { type: "string", default: "60" },
    dir: { type: "string", default: tmpdir() },
  },
});
const ROUNDS = Number(flags.rounds);
const BATCHES = Number(flags.batches);
const BATCH = 32;
const LOOKUPS = BATCHES * BATCH;

const TENANT = "t_bench";
const KEY_ID = "k_bench";
const NOW = Date.parse("2026-11-25T10:00:00.000Z");

function nodeSqlite(file: string): Driver {
  const db = openDatabase(file);
  return {
    name: `node:sqlite (SQLite ${sqliteVersion(db)})`,
    db,
    batch: (fn) => transaction(db, "immediate", fn),
    savepoint: (fn) => transaction(db, "deferred", fn),
  };
}

function betterSqlite3(dir: string, file: string): Driver {
  type Transaction = { (fn: () => void): void; immediate(fn: () => void): void };
  type Database = Connection & { transaction(fn: (inner: () => void) => void): Transaction };
  const Database = createRequire(import.meta.url)(dir) as new (file: string) => Database;
  const version = (createRequire(import.meta.url)(path.join(dir, "package.json")) as { version: string }).version;
  const db = new Database(file);
  // made once and reused, as the group-commit writer did with better-sqlite3
  const tx = db.transaction((inner) => inner());
  return {
    name: `better-sqlite3 ${version} (SQLite ${sqliteVersion(db)})`,
    db,
    batch: (fn) => tx.immediate(fn),
    savepoint: (fn) => tx(fn),
  };
}

function sqliteVersion(db: Connection): string {
  return (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
}

/** The store's pragmas on a connection it did not open (the file's WAL mode is already set). */
function asTheStore(db: Connection): void {
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA cache_size = -65536");
  db.exec("PRAGMA busy_timeout = 0");
}

/** A vendor verdict as the store keeps it: the record and detail JSON at their usual size. */
function verdictRow(i: number) {
  const at = new Date(NOW + i).toISOString();
  const record = JSON.stringify({
    measurements: randomBytes(32).toString("hex"), tamperBit: "0", IMEI: `3512345678${String(i % 100000).padStart(5, "0")}`,
    status: "Success", nonce: randomBytes(32).toString("base64url"), chipId: `c0ffee${i}`, verdict: "Yes", MAC: "0a:1b:2c:3d:4e:5f",
    version: "2", createdDate: at, updateDate: at,
  });
  const detail = JSON.stringify({ records: [{ tag: 1, value: randomBytes(48).toString("hex") }, { tag: 2, value: randomBytes(64).toString("hex") }] });
  return { objectId: `v_${randomBytes(12).toString("base64url")}`, record, detail, at };
}

/** One driver's workloads, over its own file; issued nonces are handed to the consume workloads in order. */
function workloads(d: Driver) {
  const s = {
    bumpUnderCap: d.db.prepare("UPDATE nonce_unused_counts SET n = n + 1 WHERE tenant_id = ? AND n < ?"),
    insertNonce: d.db.prepare("INSERT INTO nonces (nonce, tenant_id, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?)"),
    useNonce: d.db.prepare("UPDATE nonces SET used_at_ms = ? WHERE nonce = ? AND tenant_id = ? AND used_at_ms IS NULL AND expires_at_ms > ?"),
    bumpUnused: d.db.prepare(
      "INSERT INTO nonce_unused_counts (tenant_id, n) VALUES (?, ?) ON CONFLICT (tenant_id) DO UPDATE SET n = MAX(0, n + excluded.n)",
    ),
    insertVerdict: d.db.prepare(
      "INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    countVerdict: d.db.prepare(
      `INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n) VALUES (?, ?, ?, ?, substr(?, 1, 200), 0, 1)
       ON CONFLICT (tenant_id, hour, verdict, status, reason, slot) DO UPDATE SET n = n + 1`,
    ),
    keyById: d.db.prepare("SELECT * FROM api_keys WHERE key_id = ?"),
    tenantById: d.db.prepare("SELECT * FROM tenants WHERE tenant_id = ?"),
    verdictById: d.db.prepare("SELECT * FROM verdicts WHERE object_id = ?"),
  };
  d.db.prepare("INSERT INTO tenants (tenant_id, name, customer_id, kind, state, enrollment_enabled, created_at) VALUES (?, ?, ?, 'customer', 'active', 1, ?)")
    .run(TENANT, TENANT, "1000000001", new Date(NOW).toISOString());
  d.db.prepare("INSERT INTO api_keys (key_id, tenant_id, secret_hash, rps, burst, created_at, label) VALUES (?, ?, ?, 100, 200, ?, NULL)")
    .run(KEY_ID, TENANT, randomBytes(32).toString("hex"), new Date(NOW).toISOString());
  s.bumpUnused.run(TENANT, 0);

  const issued: string[] = [];
  let consumed = 0;
  const issue = () => {
    const nonce = randomBytes(32).toString("base64url");
    s.bumpUnderCap.run(TENANT, 1e9);
    s.insertNonce.run(nonce, TENANT, NOW, NOW + 300_000);
    issued.push(nonce);
  };
  // two workloads consume what one issues: a stock for every round, issued untimed
  for (let b = 0; b <= ROUNDS; b++) d.batch(() => { for (let i = 0; i < BATCHES * BATCH; i++) issue(); });
  const verdictIds: string[] = [];
  let seq = 0;
  const saveVerdict = (v: ReturnType<typeof verdictRow>) => {
    s.insertVerdict.run(v.objectId, TENANT, "vendor", v.record, "every rule passed", v.detail, v.at);
    s.countVerdict.run(TENANT, v.at.slice(0, 13), "Yes", "Success", "");
    verdictIds.push(v.objectId);
  };
  const consume = (nonce: string) => {
    if ((s.useNonce.run(NOW + 1, nonce, TENANT, NOW + 1) as { changes: number }).changes !== 1) throw new Error("a nonce was not consumed");
    s.bumpUnused.run(TENANT, -1);
  };
  const batches = (op: () => void) => {
    for (let b = 0; b < BATCHES; b++) d.batch(() => { for (let i = 0; i < BATCH; i++) op(); });
  };
  return {
    "nonce issue (POST /v2/nonces)": () => batches(issue),
    "nonce consume": () => batches(() => consume(issued[consumed++]!)),
    "verdict insert (saveVerdict)": () => batches(() => saveVerdict(verdictRow(seq++))),
    "consume + verdict in a savepoint (POST /v2/blobs)": () =>
      batches(() => {
        const v = verdictRow(seq++);
        d.savepoint(() => {
          consume(issued[consumed++]!);
          saveVerdict(v);
        });
      }),
    "lookup: API key by id": () => {
      for (let i = 0; i < LOOKUPS; i++) s.keyById.get(KEY_ID);
    },
    "lookup: tenant by id": () => {
      for (let i = 0; i < LOOKUPS; i++) s.tenantById.get(TENANT);
    },
    "lookup: verdict by id (GET /v2/verdicts/:id)": () => {
      for (let i = 0; i < LOOKUPS; i++) s.verdictById.get(verdictIds[i % verdictIds.length]!);
    },
  };
}

const dir = mkdtempSync(path.join(flags.dir, "attestd-sqlite-drivers-"));
try {
  const schema = path.join(dir, "schema.sqlite");
  await new SqliteStore({ file: schema }).close();
  const drivers: Driver[] = [];
  const open = (name: string, make: (file: string) => Driver) => {
    const file = path.join(dir, `${name}.sqlite`);
    copyFileSync(schema, file);
    const d = make(file);
    asTheStore(d.db);
    drivers.push(d);
  };
  open("node-sqlite", nodeSqlite);
  if (flags["better-sqlite3"]) open("better-sqlite3", (file) => betterSqlite3(path.resolve(flags["better-sqlite3"]!), file));

  const loads = drivers.map(workloads);
  const names = Object.keys(loads[0]!);
  // µs per operation, by workload and driver, one figure per round
  const times = names.map(() => drivers.map((): number[] => []));
  const opsOf = (w: number) => (names[w]!.startsWith("lookup") ? LOOKUPS : BATCHES * BATCH);
  for (let r = -1; r < ROUNDS; r++) {
    // round -1 warms up: statements prepared, pages cached, JIT done
    for (let w = 0; w < names.length; w++) {
      const order = r % 2 === 0 ? drivers.map((_, i) => i) : drivers.map((_, i) => drivers.length - 1 - i);
      for (const i of order) {
        const t = process.hrtime.bigint();
        loads[i]![names[w]! as keyof (typeof loads)[number]]();
        if (r >= 0) times[w]![i]!.push(Number(process.hrtime.bigint() - t) / 1e3 / opsOf(w));
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`Node ${process.version}, files in ${flags.dir}, ${ROUNDS} rounds of ${BATCHES} batches of ${BATCH} (lookups: ${LOOKUPS}); µs per operation, median round (min–max)`);
  for (const d of drivers) console.log(`  ${drivers.indexOf(d) + 1}: ${d.name}`);
  for (let w = 0; w < names.length; w++) {
    const cells = drivers.map((_, i) => {
      const xs = times[w]![i]!;
      return `${median(xs).toFixed(2).padStart(6)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
    });
    const ratio = drivers.length === 2 ? `   node:sqlite / better-sqlite3 ${(median(times[w]![0]!) / median(times[w]![1]!)).toFixed(2)}` : "";
    console.log(`  ${names[w]!.padEnd(50)} ${cells.join("   ")}${ratio}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
