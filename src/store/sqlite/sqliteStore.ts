import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
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
  AppAttestSave,
  NonceAppAttestStore,
  ReferenceSetQuery,
  StatsWindow,
  StoredActivityEntry,
  TopOf,
  VerdictQuery,
  WebhookEndpointChanges,
} from "../types.ts";
import type { DevicePin, DeviceRecord } from "../../domain/devices.ts";
import type { StoredReferenceSet } from "../../domain/referenceValues.ts";
import type { StoredPlayApp } from "../../domain/playApps.ts";
import type { NewWebhookDelivery, StoredWebhookEndpoint, WebhookAttempt, WebhookAttemptOutcome, WebhookDelivery, WebhookPlan } from "../../domain/webhooks.ts";
import type { TenantPolicyVersion } from "../../domain/tenantPolicy.ts";
import type { AppAttestKeyEffect, AppAttestRefreshOutcome, StoredAppAttestKey, StoredIosApp } from "../../domain/iosApps.ts";
import { referenceSetsSql } from "../referenceSetQueries.ts";
import type { PasskeyChallenge, PortalInvite, PortalPasskey, PortalRole, PortalSession, PortalUser, PortalUserState, SsoMapping } from "../../domain/portal.ts";
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
export class SqliteStore implements DurableStore, NonceStore, NonceVerdictStore, NonceDeviceVerdictStore, NonceAppAttestStore {
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
      insertWebhookDelivery: db.prepare(
        `INSERT INTO webhook_deliveries (id, event_id, tenant_id, endpoint_id, event_type, payload, created_at, state, attempts, tries, next_attempt_ms, give_up_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, 0, ?, ?)`,
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
  async createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions" | "lastUsedAt" | "label"> & { label?: string | null }, webhooks: readonly NewWebhookDelivery[] = []) {
    if (webhooks.length === 0) {
      this.stmt.insertKey.run(k.keyId, k.tenantId, k.secretHash, k.rps, k.burst, k.createdAt, k.label ?? null);
      return;
    }
    await this.writer.run(() => {
      this.stmt.insertKey.run(k.keyId, k.tenantId, k.secretHash, k.rps, k.burst, k.createdAt, k.label ?? null);
      this.insertDeliveries(webhooks);
    });
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
  async revokeApiKey(keyId: string, at: string, webhooks: readonly NewWebhookDelivery[] = []) {
    if (webhooks.length === 0) return this.stmt.revokeKey.run(at, keyId).changes === 1;
    return this.writer.run(() => {
      if (this.stmt.revokeKey.run(at, keyId).changes !== 1) return false;
      this.insertDeliveries(webhooks);
      return true;
    });
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

  async consumeWithVerdict(nonce: string, tenantId: string, nowMs: number, v: StoredVerdict, webhooks?: WebhookPlan): Promise<NonceConsumeOutcome> {
    const row = countedVerdictRow(v);
    const deliveries = webhooks?.(v);
    // In its own savepoint (the default): should the verdict's insert fail, the consumption is undone with it.
    return this.writer.run(() => {
      const outcome = this.consumeTx(nonce, tenantId, nowMs);
      if (outcome === "ok") {
        this.insertVerdict(row);
        if (deliveries) this.insertDeliveries(deliveries);
      }
      return outcome;
    });
  }

  async consumeWithDeviceVerdict(
    nonce: string,
    tenantId: string,
    nowMs: number,
    deviceId: string,
    decide: DeviceVerdictDecision,
    webhooks?: WebhookPlan,
  ): Promise<{ outcome: NonceConsumeOutcome; verdict?: StoredVerdict }> {
    // one savepoint: the consumption, the device's record, the verdict and its outbox rows, or none of them
    return this.writer.run(() => {
      const outcome = this.consumeTx(nonce, tenantId, nowMs);
      return outcome === "ok" ? { outcome, verdict: this.deviceVerdictTx(tenantId, deviceId, decide, webhooks) } : { outcome };
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
  async saveVerdict(v: StoredVerdict, webhooks?: WebhookPlan): Promise<void> {
    // serialised now, so the row is what the caller passed even if it changes the object before the flush
    const row = countedVerdictRow(v);
    const deliveries = webhooks?.(v);
    if (deliveries && deliveries.length > 0) {
      // in a savepoint: the verdict and its outbox rows, or neither
      await this.writer.run(() => {
        this.insertVerdict(row);
        this.insertDeliveries(deliveries);
      });
      return;
    }
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

  /** Outbox rows, inside the caller's transaction (the event's own write). */
  private insertDeliveries(rows: readonly NewWebhookDelivery[]): void {
    for (const d of rows) {
      this.stmt.insertWebhookDelivery.run(d.id, d.eventId, d.tenantId, d.endpointId, d.eventType, d.payload, d.createdAt, d.nextAttemptMs, d.giveUpAtMs);
    }
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
  private readonly deviceVerdictTx = (tenantId: string, deviceId: string, decide: DeviceVerdictDecision, webhooks?: WebhookPlan): StoredVerdict => {
    const row = this.stmt.deviceById.get(tenantId, deviceId) as Row | undefined;
    const { verdict: v, device: d } = decide(row && sqliteRows.attestedDevice(row));
    const json = (x: unknown) => (x === null ? null : JSON.stringify(x));
    this.stmt.upsertDevice.run(
      tenantId, deviceId, d.firstSeen, d.lastSeen, d.count, JSON.stringify(d.last), json(d.latestFacts), json(d.pin), d.resets,
    );
    this.insertVerdict(countedVerdictRow(v));
    if (webhooks) this.insertDeliveries(webhooks(v));
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

  async saveDeviceVerdict(tenantId: string, deviceId: string, decide: DeviceVerdictDecision, webhooks?: WebhookPlan): Promise<StoredVerdict> {
    return this.writer.run(() => this.deviceVerdictTx(tenantId, deviceId, decide, webhooks));
  }

  async resetDevicePin(tenantId: string, deviceId: string, audit: (previousPin: DevicePin | null) => AuditRecord, webhooks: readonly NewWebhookDelivery[] = []): Promise<AuditRecord | undefined> {
    return transaction(this.db, "immediate", (): AuditRecord | undefined => {
      const row = this.stmt.deviceById.get(tenantId, deviceId) as Row | undefined;
      if (!row) return undefined;
      const record = audit(sqliteRows.attestedDevice(row).pin);
      this.stmt.insertAudit.run(...auditArgs(record));
      this.stmt.clearDevicePin.run(tenantId, deviceId);
      this.insertDeliveries(webhooks);
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

  // ---- Single sign-on (docs/sso.md): one statement each, autocommit ----
  async putSsoMapping(m: SsoMapping): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO sso_mappings (kind, value, tenant_id, role, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (kind, value) DO UPDATE SET tenant_id = excluded.tenant_id, role = excluded.role, created_at = excluded.created_at`,
      )
      .run(m.kind, m.value, m.tenantId, m.role, m.createdAt);
  }

  async getSsoMapping(kind: SsoMapping["kind"], value: string): Promise<SsoMapping | undefined> {
    const r = this.db.prepare("SELECT * FROM sso_mappings WHERE kind = ? AND value = ?").get(kind, value) as Row | undefined;
    return r && ssoMappingOf(r);
  }

  async deleteSsoMapping(kind: SsoMapping["kind"], value: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM sso_mappings WHERE kind = ? AND value = ?").run(kind, value).changes === 1;
  }

  async listSsoMappings(): Promise<SsoMapping[]> {
    return (this.db.prepare("SELECT * FROM sso_mappings ORDER BY kind, value").all() as Row[]).map(ssoMappingOf);
  }

  async getSsoIdentity(issuer: string, subject: string): Promise<string | undefined> {
    const r = this.db.prepare("SELECT user_id FROM sso_identities WHERE issuer = ? AND subject = ?").get(issuer, subject) as Row | undefined;
    return r ? String(r.user_id) : undefined;
  }

  async linkSsoIdentity(issuer: string, subject: string, userId: string, at: string): Promise<"ok" | "taken"> {
    const r = this.db.prepare("INSERT INTO sso_identities (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING").run(issuer, subject, userId, at);
    return r.changes === 1 ? "ok" : "taken";
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

  // ---- Tenant policies (issue 26): insert only; the primary key decides between two writers of one number ----
  async appendTenantPolicy(v: TenantPolicyVersion): Promise<"ok" | "conflict"> {
    return transaction(this.db, "immediate", () => {
      const top = this.db.prepare("SELECT MAX(version) AS top FROM tenant_policies WHERE tenant_id = ?").get(v.tenantId) as { top: number | null };
      if (v.version !== (top.top ?? 0) + 1) return "conflict";
      this.db
        .prepare("INSERT INTO tenant_policies (tenant_id, version, created_at, author, document) VALUES (?, ?, ?, ?, ?)")
        .run(v.tenantId, v.version, v.createdAt, v.author, JSON.stringify(v.document));
      return "ok";
    });
  }

  async currentTenantPolicy(tenantId: string): Promise<TenantPolicyVersion | undefined> {
    const r = this.db.prepare("SELECT * FROM tenant_policies WHERE tenant_id = ? ORDER BY version DESC LIMIT 1").get(tenantId) as Row | undefined;
    return r && sqliteRows.tenantPolicy(r);
  }

  async getTenantPolicyVersion(tenantId: string, version: number): Promise<TenantPolicyVersion | undefined> {
    const r = this.db.prepare("SELECT * FROM tenant_policies WHERE tenant_id = ? AND version = ?").get(tenantId, version) as Row | undefined;
    return r && sqliteRows.tenantPolicy(r);
  }

  async listTenantPolicyVersions(tenantId: string, q: { before?: number | undefined; limit: number }): Promise<TenantPolicyVersion[]> {
    const rows = this.db
      .prepare("SELECT * FROM tenant_policies WHERE tenant_id = ? AND version < ? ORDER BY version DESC LIMIT ?")
      .all(tenantId, q.before ?? Number.MAX_SAFE_INTEGER, q.limit) as Row[];
    return rows.map(sqliteRows.tenantPolicy);
  }

  // ---- App Attest (issue 25) ----
  async addIosApp(a: StoredIosApp): Promise<"ok" | "exists"> {
    const r = this.db
      .prepare(
        "INSERT INTO ios_apps (id, tenant_id, app_id, environment, created_at, developer_key_id, developer_key) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, app_id) DO NOTHING",
      )
      .run(a.id, a.tenantId, a.appId, a.environment, a.createdAt, a.developerKeyId, a.sealedDeveloperKey);
    return r.changes === 1 ? "ok" : "exists";
  }

  async listIosApps(tenantId: string): Promise<StoredIosApp[]> {
    return (this.db.prepare("SELECT * FROM ios_apps WHERE tenant_id = ? ORDER BY app_id").all(tenantId) as Row[]).map(sqliteRows.iosApp);
  }

  async removeIosApp(tenantId: string, id: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM ios_apps WHERE tenant_id = ? AND id = ?").run(tenantId, id).changes === 1;
  }

  /** App Attest's per-request statements, prepared once (an assertion reads its key and writes its counter) */
  private appAttestStmts?: { key: StatementSync; insertKey: StatementSync; advance: StatementSync };
  private get aaStmt() {
    return (this.appAttestStmts ??= {
      key: this.db.prepare("SELECT * FROM app_attest_keys WHERE tenant_id = ? AND key_id = ?"),
      insertKey: this.db.prepare(
        `INSERT INTO app_attest_keys (key_id, tenant_id, app_id, public_key, counter, environment, receipt, attested_at, last_asserted_at, revoked_at, refresh_due_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL,
           (SELECT ? FROM ios_apps WHERE tenant_id = ? AND app_id = ? AND developer_key IS NOT NULL)) ON CONFLICT (key_id) DO NOTHING`,
      ),
      advance: this.db.prepare("UPDATE app_attest_keys SET counter = ?, last_asserted_at = ? WHERE tenant_id = ? AND key_id = ? AND counter < ? AND revoked_at IS NULL"),
    });
  }

  async getAppAttestKey(tenantId: string, keyId: string): Promise<StoredAppAttestKey | undefined> {
    const r = this.aaStmt.key.get(tenantId, keyId) as Row | undefined;
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
      // due only when its app has a developer key (AppAttestStore.saveAppAttestVerdict): the write batch shuts out a
      // concurrent setIosAppDeveloperKey, which makes the app's other keys due
      return this.aaStmt.insertKey.run(k.keyId, k.tenantId, k.appId, k.publicKey, k.counter, k.environment, k.receipt, k.attestedAt, k.refreshDueAt, k.tenantId, k.appId).changes === 1;
    }
    return this.aaStmt.advance.run(e.counter, e.at, e.tenantId, e.keyId, e.counter).changes === 1;
  };

  async saveAppAttestVerdict(effect: AppAttestKeyEffect, verdict: StoredVerdict, refused: StoredVerdict, webhooks?: WebhookPlan): Promise<StoredVerdict> {
    // one savepoint in one IMMEDIATE write batch: every process on the file is shut out, so the compare sees the
    // counter as the batch's order left it, and the verdict commits with the effect or not at all
    const rows = { verdict: countedVerdictRow(verdict), refused: countedVerdictRow(refused) };
    return this.writer.run(() => {
      const applied = this.appAttestEffectTx(effect);
      this.insertVerdict(applied ? rows.verdict : rows.refused);
      if (webhooks) this.insertDeliveries(webhooks(applied ? verdict : refused));
      return applied ? verdict : refused;
    });
  }

  async applyAppAttestEffect(effect: AppAttestKeyEffect): Promise<boolean> {
    return this.writer.run(() => this.appAttestEffectTx(effect));
  }

  // ---- webhooks (issue 26): endpoints are operator writes (autocommit); the outbox through the writer ----
  async addWebhookEndpoint(e: StoredWebhookEndpoint): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO webhook_endpoints (id, tenant_id, url, description, events, verdicts, enabled, secret, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(e.id, e.tenantId, e.url, e.description, JSON.stringify(e.events), e.verdicts, e.enabled ? 1 : 0, e.sealedSecret, e.createdAt, e.updatedAt);
  }

  async listWebhookEndpoints(tenantId: string): Promise<StoredWebhookEndpoint[]> {
    return (this.db.prepare("SELECT * FROM webhook_endpoints WHERE tenant_id = ? ORDER BY created_at, id").all(tenantId) as Row[]).map(sqliteRows.webhookEndpoint);
  }

  async getWebhookEndpoint(tenantId: string, id: string): Promise<StoredWebhookEndpoint | undefined> {
    const r = this.db.prepare("SELECT * FROM webhook_endpoints WHERE tenant_id = ? AND id = ?").get(tenantId, id) as Row | undefined;
    return r && sqliteRows.webhookEndpoint(r);
  }

  async updateWebhookEndpoint(tenantId: string, id: string, f: WebhookEndpointChanges): Promise<boolean> {
    const set = (v: SqlArg | undefined) => [v !== undefined ? 1 : 0, v ?? null];
    return (
      this.db
        .prepare(
          `UPDATE webhook_endpoints SET url = CASE WHEN ? THEN ? ELSE url END, description = CASE WHEN ? THEN ? ELSE description END,
             events = CASE WHEN ? THEN ? ELSE events END, verdicts = CASE WHEN ? THEN ? ELSE verdicts END,
             enabled = CASE WHEN ? THEN ? ELSE enabled END, secret = CASE WHEN ? THEN ? ELSE secret END, updated_at = ?
           WHERE tenant_id = ? AND id = ?`,
        )
        .run(
          ...set(f.url),
          ...set(f.description),
          ...set(f.events && JSON.stringify(f.events)),
          ...set(f.verdicts),
          ...set(f.enabled === undefined ? undefined : f.enabled ? 1 : 0),
          ...set(f.sealedSecret),
          f.updatedAt,
          tenantId,
          id,
        ).changes === 1
    );
  }

  async removeWebhookEndpoint(tenantId: string, id: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM webhook_endpoints WHERE tenant_id = ? AND id = ?").run(tenantId, id).changes === 1;
  }

  async enqueueWebhookDeliveries(rows: readonly NewWebhookDelivery[]): Promise<void> {
    if (rows.length === 0) return;
    await this.writer.run(() => this.insertDeliveries(rows));
  }

  async claimWebhookDeliveries(owner: string, limit: number, nowMs: number, leaseMs: number): Promise<WebhookDelivery[]> {
    // one statement in the writer's IMMEDIATE batch: every process on the file is shut out while it picks and leases
    const rows = await this.writer.run(
      () =>
        this.db
          .prepare(
            `UPDATE webhook_deliveries SET lease_owner = ?, lease_until_ms = ?
             WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_ms <= ?
               AND (lease_until_ms IS NULL OR lease_until_ms <= ?) ORDER BY next_attempt_ms, id LIMIT ?)
             RETURNING *`,
          )
          .all(owner, nowMs + leaseMs, nowMs, nowMs, limit) as Row[],
      { savepoint: false },
    );
    return rows.map(sqliteRows.webhookDelivery).sort((a, b) => a.nextAttemptMs - b.nextAttemptMs || (a.id < b.id ? -1 : 1));
  }

  async recordWebhookAttempt(owner: string, a: WebhookAttempt, outcome: WebhookAttemptOutcome): Promise<boolean> {
    return this.writer.run(() => {
      const pending = outcome.state === "pending";
      const r = this.db
        .prepare(
          `UPDATE webhook_deliveries SET attempts = MAX(attempts, ?), last_status = ?, lease_owner = NULL, lease_until_ms = NULL,
             state = ?, tries = tries + ?, next_attempt_ms = CASE WHEN ? THEN ? ELSE next_attempt_ms END, finished_at = ?
           WHERE id = ? AND lease_owner = ? AND state = 'pending'`,
        )
        .run(
          a.attempt,
          a.status,
          outcome.state,
          pending ? 1 : 0,
          pending ? 1 : 0,
          pending ? outcome.nextAttemptMs : null,
          pending ? null : outcome.at,
          a.deliveryId,
          owner,
        );
      if (r.changes !== 1) return false;
      this.db
        .prepare("INSERT INTO webhook_attempts (delivery_id, attempt, at, status, duration_ms, error, response) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .run(a.deliveryId, a.attempt, a.at, a.status, a.durationMs, a.error, a.response);
      return true;
    });
  }

  async listWebhookDeliveries(tenantId: string, q: { endpointId?: string | undefined; before?: { createdAt: string; id: string } | undefined; limit: number }): Promise<WebhookDelivery[]> {
    const b = q.before;
    return (
      this.db
        .prepare(
          `SELECT * FROM webhook_deliveries WHERE tenant_id = ? AND (? IS NULL OR endpoint_id = ?)
             AND (? IS NULL OR created_at < ? OR (created_at = ? AND id < ?))
           ORDER BY created_at DESC, id DESC LIMIT ?`,
        )
        .all(tenantId, q.endpointId ?? null, q.endpointId ?? null, b?.createdAt ?? null, b?.createdAt ?? null, b?.createdAt ?? null, b?.id ?? null, q.limit) as Row[]
    ).map(sqliteRows.webhookDelivery);
  }

  async getWebhookDelivery(tenantId: string, id: string): Promise<WebhookDelivery | undefined> {
    const r = this.db.prepare("SELECT * FROM webhook_deliveries WHERE tenant_id = ? AND id = ?").get(tenantId, id) as Row | undefined;
    return r && sqliteRows.webhookDelivery(r);
  }

  async listWebhookAttempts(tenantId: string, deliveryId: string): Promise<WebhookAttempt[]> {
    return (
      this.db
        .prepare(
          `SELECT a.* FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
           WHERE d.tenant_id = ? AND a.delivery_id = ? ORDER BY a.attempt`,
        )
        .all(tenantId, deliveryId) as Row[]
    ).map(sqliteRows.webhookAttempt);
  }

  async resendWebhookDelivery(tenantId: string, id: string, nowMs: number, giveUpAtMs: number): Promise<boolean> {
    return this.writer.run(
      () =>
        this.db
          .prepare(
            `UPDATE webhook_deliveries SET state = 'pending', tries = 0, next_attempt_ms = ?, give_up_at_ms = ?, lease_owner = NULL,
               lease_until_ms = NULL, finished_at = NULL WHERE tenant_id = ? AND id = ?`,
          )
          .run(nowMs, giveUpAtMs, tenantId, id).changes === 1,
      { savepoint: false },
    );
  }

  async consumeWithAppAttestVerdict(
    nonce: string,
    tenantId: string,
    nowMs: number,
    effect: AppAttestKeyEffect,
    save: AppAttestSave,
    webhooks?: WebhookPlan,
  ): Promise<{ outcome: NonceConsumeOutcome; verdict?: StoredVerdict; applied?: boolean }> {
    const rows = "verdict" in save ? { verdict: countedVerdictRow(save.verdict), refused: countedVerdictRow(save.refused) } : undefined;
    // one savepoint in one IMMEDIATE write batch: the consumption, the effect, the verdict (or device) and the
    // verdict's webhook deliveries, or none
    return this.writer.run(() => {
      const outcome = this.consumeTx(nonce, tenantId, nowMs);
      if (outcome !== "ok") return { outcome };
      const applied = this.appAttestEffectTx(effect);
      if ("verdict" in save) {
        const verdict = applied ? save.verdict : save.refused;
        this.insertVerdict(applied ? rows!.verdict : rows!.refused);
        if (webhooks) this.insertDeliveries(webhooks(verdict));
        return { outcome, applied, verdict };
      }
      return { outcome, applied, verdict: this.deviceVerdictTx(tenantId, save.deviceId, save.decide(applied), webhooks) };
    });
  }

  async setIosAppDeveloperKey(tenantId: string, id: string, key: { keyId: string; sealed: string } | null, at: string): Promise<boolean> {
    // one savepoint: the app's key and its keys' due times, or neither
    return this.writer.run(() => {
      const app = this.db
        .prepare("UPDATE ios_apps SET developer_key_id = ?, developer_key = ? WHERE tenant_id = ? AND id = ? RETURNING app_id")
        .get(key?.keyId ?? null, key?.sealed ?? null, tenantId, id) as { app_id: string } | undefined;
      if (!app) return false;
      if (key) {
        this.db.prepare("UPDATE app_attest_keys SET refresh_due_at = ? WHERE tenant_id = ? AND app_id = ? AND refresh_due_at IS NULL AND revoked_at IS NULL").run(at, tenantId, app.app_id);
      } else {
        this.db.prepare("UPDATE app_attest_keys SET refresh_due_at = NULL WHERE tenant_id = ? AND app_id = ? AND refresh_due_at IS NOT NULL").run(tenantId, app.app_id);
      }
      return true;
    });
  }

  async purgeWebhookDeliveries(createdBefore: string, limit: number): Promise<number> {
    const pick = "SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND created_at < ? ORDER BY created_at LIMIT ?";
    // one transaction: the attempts of the rows picked, then the rows (the same pick: nothing changed them between)
    return this.writer.run(() => {
      this.db.prepare(`DELETE FROM webhook_attempts WHERE delivery_id IN (${pick})`).run(createdBefore, limit);
      return Number(this.db.prepare(`DELETE FROM webhook_deliveries WHERE id IN (${pick})`).run(createdBefore, limit).changes);
    });
  }

  async countPendingWebhookDeliveries(): Promise<number> {
    return Number((this.db.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE state = 'pending'").get() as Row).n);
  }

  async claimAppAttestRefreshes(now: string, leaseUntil: string, limit: number): Promise<StoredAppAttestKey[]> {
    // one write batch (IMMEDIATE): no other process claims between the read and the lease
    return this.writer.run(() => {
      const rows = this.db
        .prepare(
          `SELECT k.* FROM app_attest_keys k JOIN ios_apps a ON a.tenant_id = k.tenant_id AND a.app_id = k.app_id
           WHERE k.refresh_due_at IS NOT NULL AND k.refresh_due_at <= ? AND k.revoked_at IS NULL AND a.developer_key IS NOT NULL
           ORDER BY k.refresh_due_at, k.key_id LIMIT ?`,
        )
        .all(now, limit) as Row[];
      const lease = this.db.prepare("UPDATE app_attest_keys SET refresh_due_at = ? WHERE key_id = ?");
      for (const r of rows) lease.run(leaseUntil, r.key_id as string);
      return rows.map((r) => ({ ...sqliteRows.appAttestKey(r), refreshDueAt: leaseUntil })).sort((a, b) => (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0));
    });
  }

  async saveAppAttestRefresh(o: AppAttestRefreshOutcome): Promise<boolean> {
    return this.writer.run(() => {
      const r = o.refreshed;
      return (
        this.db
          .prepare(
            `UPDATE app_attest_keys SET last_refresh_result = ?, last_refresh_reason = ?, last_refresh_at = ?, refresh_due_at = ?,
               receipt = coalesce(?, receipt), risk_metric = CASE WHEN ? THEN ? ELSE risk_metric END, risk_metric_at = CASE WHEN ? THEN ? ELSE risk_metric_at END
             WHERE tenant_id = ? AND key_id = ?`,
          )
          .run(o.result, o.reason, o.at, o.refreshDueAt, r?.receipt ?? null, r ? 1 : 0, r?.riskMetric ?? null, r ? 1 : 0, o.at, o.tenantId, o.keyId).changes === 1
      );
    });
  }
}

function ssoMappingOf(r: Row): SsoMapping {
  return { kind: r.kind as SsoMapping["kind"], value: String(r.value), tenantId: String(r.tenant_id), role: r.role as SsoMapping["role"], createdAt: String(r.created_at) };
}
