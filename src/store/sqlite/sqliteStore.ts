import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ReferenceValue } from "../../attestation/types.ts";
import { ensurePrivateFile } from "../../secrets/privateFiles.ts";
import { loadMigrations } from "../migrations.ts";
import { sqliteRows, type Row } from "../rows.ts";
import { openDatabase, pluck, pragma, transaction } from "./database.ts";
import { GroupCommit, groupCommitFor } from "./groupCommit.ts";
import { waitOutLocks } from "./lockWait.ts";
import { WalCheckpointer, type WalCheckpointerOptions } from "./walCheckpointer.ts";
import type { ActivityEntry } from "../../domain/activity.ts";
import type { AuditRecord } from "../../domain/audit.ts";
import { auditArgs, auditInsertSql, auditRow, auditSql } from "../auditQueries.ts";
import type { ApiKeyRecord, ApiKeyRestrictions, NewTenant, Tenant, TenantState } from "../../domain/tenants.ts";
import type { StoredVerdict } from "../../domain/verdicts.ts";
import type { NonceConsumeOutcome, NonceIssueOutcome, NonceRecord } from "../../nonces/types.ts";
import type {
  ActivityAppendResult,
  ActivityFilter,
  AuditFilter,
  ApiKeyChanges,
  DeviceVerdictDecision,
  DurableStore,
  NonceDeviceVerdictStore,
  NonceStore,
  NonceVerdictStore,
  ReferenceSetQuery,
  StatsWindow,
  StoredActivityEntry,
  TopOf,
  VerdictQuery,
} from "../types.ts";
import type { DevicePin, DeviceRecord } from "../../domain/devices.ts";
import type { StoredReferenceSet } from "../../domain/referenceValues.ts";
import type { StoredPlayApp } from "../../domain/playApps.ts";
import type { AppAttestKeyEffect, StoredAppAttestKey, StoredIosApp } from "../../domain/iosApps.ts";
import { referenceSetsSql } from "../referenceSetQueries.ts";
import type { PasskeyChallenge, PortalInvite, PortalPasskey, PortalRole, PortalSession, PortalUser, PortalUserState } from "../../domain/portal.ts";
import {
  activitySql,
  hourOf,
  requestCountsSql,
  sqlitePlaceholder,
  type SqlArg,
  STATS_REASON_CHARS,
  topFailuresSql,
  topRequestErrorsSql,
  verdictCountsSql,
  verdictHistorySql,
  verdictStatsKey,
} from "../historyQueries.ts";

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

/** The verdicts row's values in insertVerdict's column order. */
interface CountedVerdictRow {
  row: SQLInputValue[];
  stats: ReturnType<typeof verdictStatsKey>;
}

/** Taken when the write is asked for, so what is stored is what the caller passed even if it changes the object before the flush. */
function countedVerdictRow(v: StoredVerdict): CountedVerdictRow {
  return {
    row: [v.objectId, v.tenantId, v.format, JSON.stringify(v.record), v.reason, JSON.stringify(v.detail), v.createdAt],
    stats: verdictStatsKey(v),
  };
}

export interface SqliteOptions {
  /** file path, or ":memory:" */
  file: string;
  /**
   * NORMAL (default) survives a process crash or SIGKILL with every acknowledged commit (WAL); FULL also
   * survives power loss at the cost of an fsync per commit.
   */
  synchronous?: "NORMAL" | "FULL";
  /**
   * For a serving process: the connection never waits for another process's lock synchronously (`busy_timeout`
   * 0, after the migrations); its calls wait asynchronously, up to this many ms, then fail with
   * StoreUnavailableError (`lockWait.ts`). Undefined (one-shot CLI commands, which have no event loop to keep free):
   * SQLite's own busy wait, up to 10 s.
   */
  lockWaitMs?: number;
}

/**
 * The embedded default: one SQLite file (WAL) holding durable records and nonces. node:sqlite is synchronous.
 * The request-path writes (nonce issue and consume, verdicts, activity) go through the connection's group-commit
 * writer (`groupCommit.ts`): those queued within two event-loop turns run one after another, most in their own
 * savepoint, inside one IMMEDIATE transaction, and are acknowledged after its COMMIT. IMMEDIATE transactions take
 * the write lock up front, which also serialises concurrent CLI processes and `--workers` siblings on the same
 * file. Reads and operator writes run directly (autocommit). A serving process checkpoints the WAL from a thread
 * (`walCheckpointer.ts`), and waits for another process's lock on the file off the event loop (`lockWait.ts`).
 */
export class SqliteStore implements DurableStore, NonceStore, NonceVerdictStore, NonceDeviceVerdictStore {
  readonly kind = "sqlite";
  readonly db: DatabaseSync;
  /** the connection's group-commit writer, shared with the Part B stores on `db` */
  readonly writer: GroupCommit;
  private readonly stmt: ReturnType<SqliteStore["prepare"]>;
  private readonly file: string;
  private checkpointer: WalCheckpointer | undefined;

  constructor(opts: SqliteOptions) {
    this.file = opts.file;
    // 0600 before SQLite opens it, so its -wal and -shm (made with the database file's mode) are private too
    if (opts.file !== ":memory:") ensurePrivateFile(opts.file);
    // the busy timeout first: switching a new file to WAL and the migrations wait for a concurrent first start's lock
    // (synchronously, before there is anything to serve); a serving connection sets 0 once they are done
    this.db = openDatabase(opts.file, { busyTimeoutMs: 10_000 });
    this.db.exec("PRAGMA journal_mode = WAL");
    this.db.exec(`PRAGMA synchronous = ${opts.synchronous ?? "NORMAL"}`);
    this.db.exec("PRAGMA foreign_keys = ON");
    // Nonce keys are random, so issuing and consuming touch pages all over the nonce table; with SQLite's 2 MiB
    // default, a table of a few hundred thousand nonces no longer fits and each write first reads its page back.
    // The cache only grows as pages are used.
    this.db.exec("PRAGMA cache_size = -65536");
    this.migrate();
    this.stmt = this.prepare();
    if (opts.lockWaitMs !== undefined) this.db.exec("PRAGMA busy_timeout = 0");
    this.writer = groupCommitFor(this.db, { lockWaitMs: opts.lockWaitMs ?? 0 });
    waitOutLocks(this, this.writer.lockWaitMs, this.writer.storage);
  }

  private migrate(): void {
    this.db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    // SQLite's procedure for schema changes it cannot make in place (rebuilding a table others reference):
    // foreign keys off while the migrations run (the pragma is a no-op inside a transaction), every reference
    // checked before the commit, on again after.
    this.db.exec("PRAGMA foreign_keys = OFF");
    try {
      transaction(this.db, "immediate", () => {
        const done = new Set(
          (this.db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version),
        );
        for (const m of loadMigrations(MIGRATIONS_DIR)) {
          if (done.has(m.version)) continue;
          this.db.exec(m.sql);
          this.db
            .prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
            .run(m.version, m.name, new Date().toISOString());
        }
        const broken = this.db.prepare("PRAGMA foreign_key_check").all();
        if (broken.length > 0) throw new Error(`migrations left ${broken.length} broken foreign key references: ${JSON.stringify(broken.slice(0, 3))}`);
      });
    } finally {
      this.db.exec("PRAGMA foreign_keys = ON");
    }
  }

  private prepare() {
    const db = this.db;
    return {
      insertTenant: db.prepare(
        "INSERT INTO tenants (tenant_id, name, customer_id, kind, state, enrollment_enabled, created_at) VALUES (?, ?, ?, ?, 'active', ?, ?)",
      ),
      tenantById: db.prepare("SELECT * FROM tenants WHERE tenant_id = ?"),
      tenantByName: db.prepare("SELECT * FROM tenants WHERE name = ?"),
      tenantByCustomerId: db.prepare("SELECT * FROM tenants WHERE customer_id = ?"),
      tenants: db.prepare("SELECT * FROM tenants ORDER BY created_at, name"),
      setTenantState: db.prepare("UPDATE tenants SET state = ? WHERE name = ?"),
      setEnrollment: db.prepare("UPDATE tenants SET enrollment_enabled = ? WHERE name = ?"),
      insertKey: db.prepare(
        "INSERT INTO api_keys (key_id, tenant_id, secret_hash, rps, burst, created_at, label) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      touchKey: db.prepare("UPDATE api_keys SET last_used_at = ? WHERE key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)"),
      keyById: db.prepare("SELECT * FROM api_keys WHERE key_id = ?"),
      keysByTenant: db.prepare("SELECT * FROM api_keys WHERE tenant_id = ? ORDER BY created_at"),
      revokeKey: db.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL"),
      setRestrictions: db.prepare("UPDATE api_keys SET restrictions = ? WHERE key_id = ?"),
      // each field: (whether to set it, its value)
      updateKey: db.prepare(
        `UPDATE api_keys SET rps = CASE WHEN ? THEN ? ELSE rps END, burst = CASE WHEN ? THEN ? ELSE burst END,
           label = CASE WHEN ? THEN ? ELSE label END, restrictions = CASE WHEN ? THEN ? ELSE restrictions END
         WHERE key_id = ? AND revoked_at IS NULL`,
      ),
      bumpUnderCap: db.prepare("UPDATE nonce_unused_counts SET n = n + 1 WHERE tenant_id = ? AND n < ?"),
      exactOutstanding: pluck(db.prepare("SELECT COUNT(*) FROM nonces WHERE tenant_id = ? AND used_at_ms IS NULL AND expires_at_ms > ?")),
      bumpUnused: db.prepare(
        "INSERT INTO nonce_unused_counts (tenant_id, n) VALUES (?, ?) ON CONFLICT (tenant_id) DO UPDATE SET n = MAX(0, n + excluded.n)",
      ),
      insertNonce: db.prepare("INSERT INTO nonces (nonce, tenant_id, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?)"),
      useNonce: db.prepare(
        "UPDATE nonces SET used_at_ms = ? WHERE nonce = ? AND tenant_id = ? AND used_at_ms IS NULL AND expires_at_ms > ?",
      ),
      nonceState: db.prepare("SELECT tenant_id, expires_at_ms, used_at_ms FROM nonces WHERE nonce = ?"),
      purgeCounts: db.prepare(
        "SELECT tenant_id, COUNT(*) AS n FROM nonces WHERE expires_at_ms <= ? AND used_at_ms IS NULL GROUP BY tenant_id",
      ),
      purgeNonces: db.prepare("DELETE FROM nonces WHERE expires_at_ms <= ?"),
      insertVerdict: db.prepare(
        "INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      // one writer: every verdict adds to slot 0 (the slots are PostgreSQL's, against row-lock queues)
      countVerdict: db.prepare(
        `INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n) VALUES (?, ?, ?, ?, substr(?, 1, ${STATS_REASON_CHARS}), 0, 1)
         ON CONFLICT (tenant_id, hour, verdict, status, reason, slot) DO UPDATE SET n = n + 1`,
      ),
      verdictById: db.prepare("SELECT * FROM verdicts WHERE object_id = ?"),
      deviceById: db.prepare("SELECT * FROM attested_devices WHERE tenant_id = ? AND device_id = ?"),
      devicesAfter: db.prepare("SELECT * FROM attested_devices WHERE tenant_id = ? AND device_id > ? ORDER BY device_id LIMIT ?"),
      upsertDevice: db.prepare(
        `INSERT INTO attested_devices (tenant_id, device_id, first_seen, last_seen, seen_count, last_appraisal, latest_facts, pin, resets)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (tenant_id, device_id) DO UPDATE SET first_seen = excluded.first_seen, last_seen = excluded.last_seen,
           seen_count = excluded.seen_count, last_appraisal = excluded.last_appraisal, latest_facts = excluded.latest_facts,
           pin = excluded.pin`,
      ),
      insertAudit: db.prepare(auditInsertSql(sqlitePlaceholder)),
      clearDevicePin: db.prepare("UPDATE attested_devices SET pin = NULL, resets = resets + 1 WHERE tenant_id = ? AND device_id = ?"),
      upsertRefval: db.prepare(
        "INSERT INTO reference_values (model, firmware_version, measurements, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (model, firmware_version) DO UPDATE SET measurements = excluded.measurements, updated_at = excluded.updated_at",
      ),
      upsertTenantRefval: db.prepare(
        "INSERT INTO tenant_reference_values (tenant_id, model, firmware_version, measurements, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, model, firmware_version) DO UPDATE SET measurements = excluded.measurements, updated_at = excluded.updated_at",
      ),
      refvals: db.prepare("SELECT model, firmware_version, measurements FROM reference_values ORDER BY model, firmware_version"),
      deleteRefval: db.prepare("DELETE FROM reference_values WHERE model = ? AND firmware_version = ?"),
      deleteTenantRefval: db.prepare("DELETE FROM tenant_reference_values WHERE tenant_id = ? AND model = ? AND firmware_version = ?"),
      insertActivity: db.prepare(
        "INSERT INTO activity (time, error_id, tenant_id, client_id, method, route, status, code, latency_ms, remote_address, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (error_id) WHERE error_id IS NOT NULL DO NOTHING",
      ),
      countRequest: db.prepare(
        `INSERT INTO activity_stats (tenant_id, hour, method, route, status, code, n) VALUES (?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (tenant_id, hour, method, route, status, code) DO UPDATE SET n = n + 1`,
      ),
    };
  }

  /**
   * Moves WAL checkpoints off this thread (`walCheckpointer.ts`): for a serving process, whose event loop would
   * otherwise pay for them inside request-path commits. One-shot CLI commands keep SQLite's automatic ones.
   */
  async startWalCheckpointer(opts: WalCheckpointerOptions = {}): Promise<void> {
    if (this.checkpointer || this.file === ":memory:") return;
    // the rewind holds this connection's commits while the thread takes the write lock (walCheckpointer.ts)
    this.checkpointer = await WalCheckpointer.start(this.db, this.file, { holdWrites: () => this.writer.hold(), ...opts });
  }

  /** the checkpoint thread's counters, when it runs */
  get walCheckpoints() {
    return this.checkpointer?.running ? this.checkpointer.stats : undefined;
  }

  async ping(): Promise<void> {
    this.db.prepare("SELECT 1").get();
  }

  /**
   * The smallest real write, for readiness while writes fail for want of disk: it rewrites the file header's
   * user_version with its own value, which SQLite commits as a page like any other (a no-op UPDATE writes nothing).
   * Through the group-commit writer, so its COMMIT tells the writer the disk takes writes again.
   */
  async writeProbe(): Promise<void> {
    await this.writer.run(() => {
      const version = Number(pragma(this.db, "user_version"));
      this.db.exec(`PRAGMA user_version = ${version}`);
    });
  }

  /** Commits what the writer has queued (its callers are answered), then closes the connection. */
  async close(): Promise<void> {
    this.writer.close();
    await this.checkpointer?.stop();
    if (this.db.isOpen) this.db.close();
  }

  // ---- tenants and keys ----
  async createTenant(t: NewTenant): Promise<Tenant> {
    this.stmt.insertTenant.run(t.tenantId, t.name, t.customerId, t.kind, t.kind === "customer" ? 1 : 0, t.createdAt);
    return sqliteRows.tenant(this.stmt.tenantById.get(t.tenantId) as Row);
  }
  async getTenant(id: string) {
    const r = this.stmt.tenantById.get(id) as Row | undefined;
    return r && sqliteRows.tenant(r);
  }
  async getTenantByName(name: string) {
    const r = this.stmt.tenantByName.get(name) as Row | undefined;
    return r && sqliteRows.tenant(r);
  }
  async getTenantByCustomerId(customerId: string) {
    const r = this.stmt.tenantByCustomerId.get(customerId) as Row | undefined;
    return r && sqliteRows.tenant(r);
  }
  async listTenants() {
    return (this.stmt.tenants.all() as Row[]).map(sqliteRows.tenant);
  }
  async setTenantState(name: string, state: TenantState) {
    return this.stmt.setTenantState.run(state, name).changes === 1;
  }
  async setEnrollmentEnabled(name: string, enabled: boolean) {
    return this.stmt.setEnrollment.run(enabled ? 1 : 0, name).changes === 1;
  }
  async createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions" | "lastUsedAt" | "label"> & { label?: string | null }) {
    this.stmt.insertKey.run(k.keyId, k.tenantId, k.secretHash, k.rps, k.burst, k.createdAt, k.label ?? null);
  }
  async touchApiKeys(uses: readonly { keyId: string; at: string }[]): Promise<void> {
    if (uses.length === 0) return;
    const rows = uses.slice();
    await this.writer.run(() => {
      for (const u of rows) this.stmt.touchKey.run(u.at, u.keyId, u.at);
    });
  }
  async getApiKey(keyId: string) {
    const r = this.stmt.keyById.get(keyId) as Row | undefined;
    return r && sqliteRows.apiKey(r);
  }
  async listApiKeys(tenantId: string) {
    return (this.stmt.keysByTenant.all(tenantId) as Row[]).map(sqliteRows.apiKey);
  }
  async revokeApiKey(keyId: string, at: string) {
    return this.stmt.revokeKey.run(at, keyId).changes === 1;
  }
  async setApiKeyRestrictions(keyId: string, r: ApiKeyRestrictions | null) {
    return this.stmt.setRestrictions.run(r ? JSON.stringify(r) : null, keyId).changes === 1;
  }
  async updateApiKey(keyId: string, f: ApiKeyChanges) {
    const set = (v: SqlArg | undefined) => [v !== undefined ? 1 : 0, v ?? null];
    return (
      this.stmt.updateKey.run(...set(f.rps), ...set(f.burst), ...set(f.label), ...set(f.restrictions === undefined ? undefined : f.restrictions && JSON.stringify(f.restrictions)), keyId)
        .changes === 1
    );
  }

  // ---- nonces ----
  // Both run without a savepoint of their own (groupCommit.ts, RunOptions): their statements are ordered so that a
  // throw part-way leaves at most an over-estimate in nonce_unused_counts, which the cap check tolerates by design
  // (it is an upper bound; the exact count decides at the boundary).

  private readonly issueTx = (n: NonceRecord, max: number, nowMs: number): NonceIssueOutcome => {
    // One statement on the common path: count the nonce in if the counter is below the cap. The counter includes
    // expired-but-unpurged nonces, so when it says "at the cap" (or has no row yet) the exact count decides.
    if (this.stmt.bumpUnderCap.run(n.tenantId, max).changes === 0) {
      if ((this.stmt.exactOutstanding.get(n.tenantId, nowMs) as number) >= max) return "limit";
      this.stmt.bumpUnused.run(n.tenantId, 1);
    }
    this.stmt.insertNonce.run(n.nonce, n.tenantId, n.createdAtMs, n.expiresAtMs);
    return "ok";
  };

  async issue(n: NonceRecord, maxOutstanding: number, nowMs: number): Promise<NonceIssueOutcome> {
    return this.writer.run(() => this.issueTx(n, maxOutstanding, nowMs), { savepoint: false });
  }

  private readonly consumeTx = (nonce: string, tenantId: string, nowMs: number): NonceConsumeOutcome => {
    if (this.stmt.useNonce.run(nowMs, nonce, tenantId, nowMs).changes === 1) {
      this.stmt.bumpUnused.run(tenantId, -1);
      return "ok";
    }
    const r = this.stmt.nonceState.get(nonce) as Row | undefined;
    if (!r || r.tenant_id !== tenantId) return "unknown";
    return r.used_at_ms !== null ? "used" : "expired";
  };

  async consume(nonce: string, tenantId: string, nowMs: number): Promise<NonceConsumeOutcome> {
    return this.writer.run(() => this.consumeTx(nonce, tenantId, nowMs), { savepoint: false });
  }

  async consumeWithVerdict(nonce: string, tenantId: string, nowMs: number, v: StoredVerdict): Promise<NonceConsumeOutcome> {
    const row = countedVerdictRow(v);
    // In its own savepoint (the default): should the verdict's insert fail, the consumption is undone with it.
    return this.writer.run(() => {
      const outcome = this.consumeTx(nonce, tenantId, nowMs);
      if (outcome === "ok") this.insertVerdict(row);
      return outcome;
    });
  }

  async consumeWithDeviceVerdict(
    nonce: string,
    tenantId: string,
    nowMs: number,
    deviceId: string,
    decide: DeviceVerdictDecision,
  ): Promise<{ outcome: NonceConsumeOutcome; verdict?: StoredVerdict }> {
    // one savepoint: the consumption, the device's record and the verdict, or none of them
    return this.writer.run(() => {
      const outcome = this.consumeTx(nonce, tenantId, nowMs);
      return outcome === "ok" ? { outcome, verdict: this.deviceVerdictTx(tenantId, deviceId, decide) } : { outcome };
    });
  }

  async purgeExpired(nowMs: number, retainMs: number): Promise<number> {
    const cutoff = nowMs - retainMs;
    return transaction(this.db, "immediate", () => {
      for (const r of this.stmt.purgeCounts.all(cutoff) as { tenant_id: string; n: number }[]) {
        this.stmt.bumpUnused.run(r.tenant_id, -r.n);
      }
      return Number(this.stmt.purgeNonces.run(cutoff).changes);
    });
  }

  // ---- verdicts ----
  async saveVerdict(v: StoredVerdict): Promise<void> {
    // serialised now, so the row is what the caller passed even if it changes the object before the flush
    const row = countedVerdictRow(v);
    // No savepoint of its own (groupCommit.ts, RunOptions): the row first, so a failed insert writes nothing, and a
    // counter upsert failing after it (nothing in it can: no constraint it could break) would only under-count.
    await this.writer.run(() => this.insertVerdict(row), { savepoint: false });
  }

  /**
   * The one way a verdict row is written: with its overview counter (migration 008), inside the caller's
   * transaction (about 4 µs more per verdict), whichever path stored it (alone, with its nonce, with its device).
   */
  private insertVerdict({ row, stats: k }: CountedVerdictRow): void {
    this.stmt.insertVerdict.run(...row);
    this.stmt.countVerdict.run(k.tenantId, k.hour, k.verdict, k.status, k.reason);
  }

  async getVerdict(objectId: string): Promise<StoredVerdict | undefined> {
    const r = this.stmt.verdictById.get(objectId) as Row | undefined;
    return r && sqliteRows.verdict(r);
  }

  async listVerdicts(q: VerdictQuery): Promise<StoredVerdict[]> {
    const { sql, args } = verdictHistorySql(q, sqlitePlaceholder, "*");
    return (this.db.prepare(sql).all(...args) as Row[]).map(sqliteRows.verdict);
  }

  // ---- per-device memory ----
  // Inside a write batch (IMMEDIATE, so every process on the file is shut out): the read, the decision and both
  // writes see and leave the device exactly as the batch's order has it, so concurrent appraisals of one device
  // take turns and only the first can find it unpinned.
  private readonly deviceVerdictTx = (tenantId: string, deviceId: string, decide: DeviceVerdictDecision): StoredVerdict => {
    const row = this.stmt.deviceById.get(tenantId, deviceId) as Row | undefined;
    const { verdict: v, device: d } = decide(row && sqliteRows.attestedDevice(row));
    const json = (x: unknown) => (x === null ? null : JSON.stringify(x));
    this.stmt.upsertDevice.run(
      tenantId, deviceId, d.firstSeen, d.lastSeen, d.count, JSON.stringify(d.last), json(d.latestFacts), json(d.pin), d.resets,
    );
    this.insertVerdict(countedVerdictRow(v));
    return v;
  };

  async getDevice(tenantId: string, deviceId: string): Promise<DeviceRecord | undefined> {
    const r = this.stmt.deviceById.get(tenantId, deviceId) as Row | undefined;
    return r && sqliteRows.attestedDevice(r);
  }

  async listDevices(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<DeviceRecord[]> {
    // "" sorts before every deviceId (1-128 characters), so no cursor is the first page
    return (this.stmt.devicesAfter.all(tenantId, q.after ?? "", q.limit) as Row[]).map(sqliteRows.attestedDevice);
  }

  async saveDeviceVerdict(tenantId: string, deviceId: string, decide: DeviceVerdictDecision): Promise<StoredVerdict> {
    return this.writer.run(() => this.deviceVerdictTx(tenantId, deviceId, decide));
  }

  async resetDevicePin(tenantId: string, deviceId: string, audit: (previousPin: DevicePin | null) => AuditRecord): Promise<AuditRecord | undefined> {
    return transaction(this.db, "immediate", (): AuditRecord | undefined => {
      const row = this.stmt.deviceById.get(tenantId, deviceId) as Row | undefined;
      if (!row) return undefined;
      const record = audit(sqliteRows.attestedDevice(row).pin);
      this.stmt.insertAudit.run(...auditArgs(record));
      this.stmt.clearDevicePin.run(tenantId, deviceId);
      return record;
    });
  }

  // ---- reference values ----
  async upsertReferenceValues(values: readonly ReferenceValue[], at: string, tenantId: string | null = null): Promise<number> {
    return transaction(this.db, "deferred", () => {
      for (const v of values) {
        const measurements = JSON.stringify(v.measurements);
        if (tenantId === null) this.stmt.upsertRefval.run(v.model, v.firmwareVersion, measurements, at);
        else this.stmt.upsertTenantRefval.run(tenantId, v.model, v.firmwareVersion, measurements, at);
      }
      return values.length;
    });
  }

  async listReferenceValues(): Promise<ReferenceValue[]> {
    return (this.stmt.refvals.all() as Row[]).map(sqliteRows.referenceValue);
  }

  async listReferenceSets(q: ReferenceSetQuery): Promise<StoredReferenceSet[]> {
    const { sql, args } = referenceSetsSql(q, sqlitePlaceholder);
    return (this.db.prepare(sql).all(...args) as Row[]).map(sqliteRows.referenceSet);
  }

  async deleteReferenceSet(tenantId: string | null, model: string, firmwareVersion: string): Promise<boolean> {
    const r = tenantId === null ? this.stmt.deleteRefval.run(model, firmwareVersion) : this.stmt.deleteTenantRefval.run(tenantId, model, firmwareVersion);
    return r.changes === 1;
  }

  // ---- activity ----
  async appendActivity(entries: readonly ActivityEntry[]): Promise<ActivityAppendResult> {
    if (entries.length === 0) return { refused: [] };
    const rows = entries.slice(); // the caller may reuse its array before the flush
    // Each entry is one INSERT, which SQLite undoes by itself when it fails: a refused entry costs the others nothing,
    // and no savepoint is needed. An entry is counted for the overview only if it went in (a retried batch's entries
    // already logged are skipped by their error id, and not counted twice).
    return this.writer.run(
      () => {
        const refused: ActivityAppendResult["refused"] = [];
        for (const e of rows) {
          try {
            const written = this.stmt.insertActivity.run(
              e.time, e.errorId, e.tenantId, e.clientId, e.method, e.route, e.status, e.code, e.latencyMs, e.remoteAddress, e.reason,
            ).changes;
            if (written === 1) this.stmt.countRequest.run(e.tenantId ?? "", hourOf(e.time), e.method, e.route, e.status, e.code ?? "");
          } catch (error) {
            // SQLite ended the whole transaction (SQLITE_FULL, SQLITE_IOERR): the batch is lost, the writer says so
            if (!this.db.isTransaction) throw error;
            refused.push({ entry: e, error });
          }
        }
        return { refused };
      },
      { savepoint: false },
    );
  }

  async queryActivity(f: ActivityFilter): Promise<StoredActivityEntry[]> {
    const { sql, args } = activitySql(f, sqlitePlaceholder);
    return (this.db.prepare(sql).all(...args) as Row[]).map(sqliteRows.activity);
  }

  // ---- audit trail ----
  async appendAudit(r: AuditRecord): Promise<void> {
    this.stmt.insertAudit.run(...auditArgs(r));
  }
  async queryAudit(f: AuditFilter): Promise<AuditRecord[]> {
    const { sql, args } = auditSql(f, sqlitePlaceholder);
    return (this.db.prepare(sql).all(...args) as Row[]).map(auditRow);
  }

  // ---- the overview's counts ----
  private rowsOf({ sql, args }: { sql: string; args: SqlArg[] }): Row[] {
    return this.db.prepare(sql).all(...args) as Row[];
  }
  async verdictCounts(q: StatsWindow & { bucket: "hour" | "day" }) {
    return this.rowsOf(verdictCountsSql(q, sqlitePlaceholder)).map(sqliteRows.verdictCount);
  }
  async topFailures(q: StatsWindow & TopOf) {
    return this.rowsOf(topFailuresSql(q, sqlitePlaceholder)).map(sqliteRows.failureCount);
  }
  async requestCounts(q: StatsWindow & { recentFromHour: string }) {
    return this.rowsOf(requestCountsSql(q, sqlitePlaceholder)).map(sqliteRows.statusCount);
  }
  async topRequestErrors(q: StatsWindow & TopOf) {
    return this.rowsOf(topRequestErrorsSql(q, sqlitePlaceholder)).map(sqliteRows.requestErrorCount);
  }

  // ---- portal accounts: people are enroll_users rows with a portal_role ----
  async createPortalUser(u: { userId: string; email: string; tenantId: string | null; role: PortalRole; at: string }) {
    return transaction(this.db, "immediate", (): { outcome: "ok"; user: PortalUser } | { outcome: "email_taken" } => {
      if (this.db.prepare("SELECT 1 FROM enroll_users WHERE lower(email) = lower(?) AND portal_role IS NOT NULL").get(u.email)) {
        return { outcome: "email_taken" };
      }
      // the Part B user of this tenant and email, if there is one, becomes the portal user: one person, one record
      const partB =
        u.tenantId === null
          ? undefined
          : (this.db.prepare("SELECT user_id FROM enroll_users WHERE tenant_id = ? AND lower(email) = lower(?)").get(u.tenantId, u.email) as
              | { user_id: string }
              | undefined);
      if (partB) {
        this.db
          .prepare("UPDATE enroll_users SET portal_role = ?, portal_state = 'invited', updated_at = ? WHERE user_id = ?")
          .run(u.role, u.at, partB.user_id);
      } else {
        this.db
          .prepare(
            "INSERT INTO enroll_users (user_id, tenant_id, email, state, created_at, updated_at, portal_role, portal_state) VALUES (?, ?, ?, 'registered', ?, ?, ?, 'invited')",
          )
          .run(u.userId, u.tenantId, u.email.toLowerCase(), u.at, u.at, u.role);
      }
      const row = this.db.prepare("SELECT * FROM enroll_users WHERE user_id = ?").get(partB?.user_id ?? u.userId) as Row;
      return { outcome: "ok", user: sqliteRows.portalUser(row) };
    });
  }

  async getPortalUser(userId: string): Promise<PortalUser | undefined> {
    const r = this.db.prepare("SELECT * FROM enroll_users WHERE user_id = ? AND portal_role IS NOT NULL").get(userId) as Row | undefined;
    return r && sqliteRows.portalUser(r);
  }

  async getPortalUserByEmail(email: string): Promise<PortalUser | undefined> {
    const r = this.db.prepare("SELECT * FROM enroll_users WHERE lower(email) = lower(?) AND portal_role IS NOT NULL").get(email) as
      | Row
      | undefined;
    return r && sqliteRows.portalUser(r);
  }

  async listPortalUsers(tenantId?: string | null): Promise<PortalUser[]> {
    const rows =
      tenantId === undefined
        ? this.db.prepare("SELECT * FROM enroll_users WHERE portal_role IS NOT NULL ORDER BY email").all()
        : tenantId === null
          ? this.db.prepare("SELECT * FROM enroll_users WHERE portal_role = 'operator' ORDER BY email").all()
          : this.db.prepare("SELECT * FROM enroll_users WHERE portal_role IS NOT NULL AND tenant_id = ? ORDER BY email").all(tenantId);
    return (rows as Row[]).map(sqliteRows.portalUser);
  }

  async updatePortalUser(userId: string, f: { role?: PortalRole; state?: PortalUserState; passwordHash?: string | null }, at: string) {
    const r = this.db
      .prepare(
        `UPDATE enroll_users SET portal_role = COALESCE(?, portal_role), portal_state = COALESCE(?, portal_state),
           password_hash = CASE WHEN ? THEN ? ELSE password_hash END, updated_at = ?
         WHERE user_id = ? AND portal_role IS NOT NULL`,
      )
      .run(f.role ?? null, f.state ?? null, f.passwordHash !== undefined ? 1 : 0, f.passwordHash ?? null, at, userId);
    return r.changes > 0;
  }

  async createInvite(i: PortalInvite): Promise<boolean> {
    return transaction(this.db, "immediate", () => {
      const state = pluck(this.db.prepare("SELECT portal_state FROM enroll_users WHERE user_id = ?")).get(i.userId);
      if (state === "disabled") return false;
      this.voidLinks(i.userId, i.createdAtMs);
      this.db
        .prepare("INSERT INTO portal_invites (token_hash, user_id, created_at_ms, expires_at_ms, used_at_ms) VALUES (?, ?, ?, ?, NULL)")
        .run(i.tokenHash, i.userId, i.createdAtMs, i.expiresAtMs);
      return true;
    });
  }

  private voidLinks(userId: string, nowMs: number): number {
    return Number(this.db.prepare("UPDATE portal_invites SET used_at_ms = ? WHERE user_id = ? AND used_at_ms IS NULL").run(nowMs, userId).changes);
  }

  async peekInvite(tokenHash: string, nowMs: number): Promise<string | undefined> {
    return pluck(this.db.prepare("SELECT user_id FROM portal_invites WHERE token_hash = ? AND used_at_ms IS NULL AND expires_at_ms > ?")).get(
      tokenHash,
      nowMs,
    ) as string | undefined;
  }

  async useInvite(tokenHash: string, nowMs: number): Promise<PortalInvite | "unknown" | "expired" | "used"> {
    return transaction(this.db, "immediate", (): PortalInvite | "unknown" | "expired" | "used" => {
      const r = this.db.prepare("SELECT * FROM portal_invites WHERE token_hash = ?").get(tokenHash) as Row | undefined;
      if (!r) return "unknown";
      const invite = sqliteRows.invite(r);
      if (invite.usedAtMs !== null) return "used";
      if (invite.expiresAtMs <= nowMs) return "expired";
      this.voidLinks(invite.userId, nowMs);
      return { ...invite, usedAtMs: nowMs };
    });
  }

  async voidInvites(userId: string, nowMs: number): Promise<number> {
    return this.voidLinks(userId, nowMs);
  }

  async setPassword(userId: string, passwordHash: string, at: string, nowMs: number): Promise<number | undefined> {
    return transaction(this.db, "immediate", () => {
      const set = this.db
        .prepare(
          `UPDATE enroll_users SET password_hash = ?, portal_state = 'active', updated_at = ?
           WHERE user_id = ? AND portal_role IS NOT NULL AND portal_state <> 'disabled'`,
        )
        .run(passwordHash, at, userId);
      if (set.changes === 0) return undefined;
      this.voidLinks(userId, nowMs);
      return Number(this.db.prepare("DELETE FROM portal_sessions WHERE user_id = ?").run(userId).changes);
    });
  }

  async replacePasswordHash(userId: string, from: string, to: string, at: string): Promise<boolean> {
    const r = this.db.prepare("UPDATE enroll_users SET password_hash = ?, updated_at = ? WHERE user_id = ? AND password_hash = ?").run(to, at, userId, from);
    return r.changes > 0;
  }

  async createSession(x: PortalSession): Promise<void> {
    this.db
      .prepare(
        "INSERT INTO portal_sessions (session_hash, user_id, csrf_token, created_at_ms, last_seen_at_ms, expires_at_ms, method) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run(x.sessionHash, x.userId, x.csrfToken, x.createdAtMs, x.lastSeenAtMs, x.expiresAtMs, x.method);
  }

  async getSession(sessionHash: string): Promise<PortalSession | undefined> {
    const r = this.db.prepare("SELECT * FROM portal_sessions WHERE session_hash = ?").get(sessionHash) as Row | undefined;
    return r && sqliteRows.session(r);
  }

  async touchSession(sessionHash: string, nowMs: number): Promise<void> {
    this.db.prepare("UPDATE portal_sessions SET last_seen_at_ms = MAX(last_seen_at_ms, ?) WHERE session_hash = ?").run(nowMs, sessionHash);
  }

  async deleteSession(sessionHash: string): Promise<void> {
    this.db.prepare("DELETE FROM portal_sessions WHERE session_hash = ?").run(sessionHash);
  }

  async deleteUserSessions(userId: string): Promise<number> {
    return Number(this.db.prepare("DELETE FROM portal_sessions WHERE user_id = ?").run(userId).changes);
  }

  async purgeSessions(nowMs: number, idleMs: number): Promise<number> {
    return Number(this.db.prepare("DELETE FROM portal_sessions WHERE expires_at_ms <= ? OR last_seen_at_ms <= ?").run(nowMs, nowMs - idleMs).changes);
  }

  // ---- passkeys and their ceremonies' challenges ----
  async createPasskey(p: PortalPasskey): Promise<"ok" | "exists"> {
    const r = this.db
      .prepare(
        `INSERT INTO portal_passkeys (credential_id, user_id, public_key, counter, transports, backed_up, name, created_at, last_used_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (credential_id) DO NOTHING`,
      )
      .run(p.credentialId, p.userId, p.publicKey, p.counter, JSON.stringify(p.transports), p.backedUp ? 1 : 0, p.name, p.createdAt, p.lastUsedAt);
    return r.changes === 1 ? "ok" : "exists";
  }

  async getPasskey(credentialId: string): Promise<PortalPasskey | undefined> {
    const r = this.db.prepare("SELECT * FROM portal_passkeys WHERE credential_id = ?").get(credentialId) as Row | undefined;
    return r && sqliteRows.passkey(r);
  }

  async listPasskeys(userId: string): Promise<PortalPasskey[]> {
    const rows = this.db.prepare("SELECT * FROM portal_passkeys WHERE user_id = ? ORDER BY created_at, credential_id").all(userId) as Row[];
    return rows.map(sqliteRows.passkey);
  }

  async recordPasskeyUse(credentialId: string, counter: number, at: string): Promise<boolean> {
    const r = this.db
      .prepare("UPDATE portal_passkeys SET counter = ?, last_used_at = ? WHERE credential_id = ? AND (counter < ? OR (counter = 0 AND ? = 0))")
      .run(counter, at, credentialId, counter, counter);
    return r.changes === 1;
  }

  async renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean> {
    return this.db.prepare("UPDATE portal_passkeys SET name = ? WHERE credential_id = ? AND user_id = ?").run(name, credentialId, userId).changes === 1;
  }

  async deletePasskey(userId: string, credentialId: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM portal_passkeys WHERE credential_id = ? AND user_id = ?").run(credentialId, userId).changes === 1;
  }

  async createPasskeyChallenge(c: PasskeyChallenge): Promise<void> {
    this.db
      .prepare("INSERT INTO portal_passkey_challenges (challenge_hash, purpose, user_id, expires_at_ms) VALUES (?, ?, ?, ?)")
      .run(c.challengeHash, c.purpose, c.userId, c.expiresAtMs);
  }

  async takePasskeyChallenge(challengeHash: string, nowMs: number): Promise<PasskeyChallenge | undefined> {
    const r = this.db.prepare("DELETE FROM portal_passkey_challenges WHERE challenge_hash = ? RETURNING *").get(challengeHash) as Row | undefined;
    const c = r && sqliteRows.passkeyChallenge(r);
    return c && c.expiresAtMs > nowMs ? c : undefined;
  }

  async purgePasskeyChallenges(nowMs: number): Promise<number> {
    return Number(this.db.prepare("DELETE FROM portal_passkey_challenges WHERE expires_at_ms <= ?").run(nowMs).changes);
  }

  // ---- Play apps (issue 23): operator writes, one statement each, autocommit ----
  async addPlayApp(a: StoredPlayApp): Promise<"ok" | "exists"> {
    const p = a.policy;
    const r = this.db
      .prepare(
        `INSERT INTO play_apps (id, tenant_id, package_name, cert_digests, device_floor, max_age_seconds, require_licensed, require_play_protect,
           require_app_access_risk, opens_with, service_account_email, secret, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, package_name) DO NOTHING`,
      )
      .run(
        a.id,
        a.tenantId,
        p.packageName,
        JSON.stringify(p.certDigests),
        p.deviceFloor,
        p.maxAgeSeconds,
        p.require.licensed ? 1 : 0,
        p.require.playProtect ? 1 : 0,
        p.require.appAccessRisk ? 1 : 0,
        a.opensWith,
        a.serviceAccountEmail ?? null,
        a.sealedSecret,
        a.createdAt,
      );
    return r.changes === 1 ? "ok" : "exists";
  }

  async listPlayApps(tenantId: string): Promise<StoredPlayApp[]> {
    return (this.db.prepare("SELECT * FROM play_apps WHERE tenant_id = ? ORDER BY package_name").all(tenantId) as Row[]).map(sqliteRows.playApp);
  }

  async getPlayApp(tenantId: string, id: string): Promise<StoredPlayApp | undefined> {
    const r = this.db.prepare("SELECT * FROM play_apps WHERE tenant_id = ? AND id = ?").get(tenantId, id) as Row | undefined;
    return r && sqliteRows.playApp(r);
  }

  async removePlayApp(tenantId: string, id: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM play_apps WHERE tenant_id = ? AND id = ?").run(tenantId, id).changes === 1;
  }

  // ---- App Attest (issue 25) ----
  async addIosApp(a: StoredIosApp): Promise<"ok" | "exists"> {
    const r = this.db
      .prepare("INSERT INTO ios_apps (id, tenant_id, app_id, environment, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, app_id) DO NOTHING")
      .run(a.id, a.tenantId, a.appId, a.environment, a.createdAt);
    return r.changes === 1 ? "ok" : "exists";
  }

  async listIosApps(tenantId: string): Promise<StoredIosApp[]> {
    return (this.db.prepare("SELECT * FROM ios_apps WHERE tenant_id = ? ORDER BY app_id").all(tenantId) as Row[]).map(sqliteRows.iosApp);
  }

  async removeIosApp(tenantId: string, id: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM ios_apps WHERE tenant_id = ? AND id = ?").run(tenantId, id).changes === 1;
  }

  async getAppAttestKey(tenantId: string, keyId: string): Promise<StoredAppAttestKey | undefined> {
    const r = this.db.prepare("SELECT * FROM app_attest_keys WHERE tenant_id = ? AND key_id = ?").get(tenantId, keyId) as Row | undefined;
    return r && sqliteRows.appAttestKey(r);
  }

  async listAppAttestKeys(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<StoredAppAttestKey[]> {
    return (
      this.db.prepare("SELECT * FROM app_attest_keys WHERE tenant_id = ? AND key_id > ? ORDER BY key_id LIMIT ?").all(tenantId, q.after ?? "", q.limit) as Row[]
    ).map(sqliteRows.appAttestKey);
  }

  async revokeAppAttestKey(tenantId: string, keyId: string, at: string): Promise<boolean> {
    return this.db.prepare("UPDATE app_attest_keys SET revoked_at = ? WHERE tenant_id = ? AND key_id = ? AND revoked_at IS NULL").run(at, tenantId, keyId).changes === 1;
  }

  /** One statement decides (inside the caller's write batch): the insert or the forward-only counter update. */
  private readonly appAttestEffectTx = (e: AppAttestKeyEffect): boolean => {
    if (e.kind === "attested") {
      const k = e.key;
      return (
        this.db
          .prepare(
            `INSERT INTO app_attest_keys (key_id, tenant_id, app_id, public_key, counter, environment, receipt, attested_at, last_asserted_at, revoked_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL) ON CONFLICT (key_id) DO NOTHING`,
          )
          .run(k.keyId, k.tenantId, k.appId, k.publicKey, k.counter, k.environment, k.receipt, k.attestedAt).changes === 1
      );
    }
    return (
      this.db
        .prepare("UPDATE app_attest_keys SET counter = ?, last_asserted_at = ? WHERE tenant_id = ? AND key_id = ? AND counter < ? AND revoked_at IS NULL")
        .run(e.counter, e.at, e.tenantId, e.keyId, e.counter).changes === 1
    );
  };

  async saveAppAttestVerdict(effect: AppAttestKeyEffect, verdict: StoredVerdict, refused: StoredVerdict): Promise<StoredVerdict> {
    // one savepoint in one IMMEDIATE write batch: every process on the file is shut out, so the compare sees the
    // counter as the batch's order left it, and the verdict commits with the effect or not at all
    const rows = { verdict: countedVerdictRow(verdict), refused: countedVerdictRow(refused) };
    return this.writer.run(() => {
      const applied = this.appAttestEffectTx(effect);
      this.insertVerdict(applied ? rows.verdict : rows.refused);
      return applied ? verdict : refused;
    });
  }

  async applyAppAttestEffect(effect: AppAttestKeyEffect): Promise<boolean> {
    return this.writer.run(() => this.appAttestEffectTx(effect));
  }
}
