import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { ReferenceValue } from "../../attestation/types.ts";
import { connectPatiently, serverAddress } from "../connectAttempts.ts";
import { fromPgError } from "../errors.ts";
import { isStoreUnavailable } from "../../errors/storeUnavailable.ts";
import { loadMigrations } from "../migrations.ts";
import { pgRows, type Row } from "../rows.ts";
import { query, transaction } from "./pgQuery.ts";
import {
  activitySql,
  pgPlaceholder,
  requestCountsSql,
  statsSlot,
  STATS_REASON_CHARS,
  topFailuresSql,
  topRequestErrorsSql,
  verdictCountsSql,
  verdictHistorySql,
  verdictStatsKey,
} from "../historyQueries.ts";
import type { StoredPlayApp } from "../../domain/playApps.ts";
import type { NewWebhookDelivery, StoredWebhookEndpoint, WebhookAttempt, WebhookAttemptOutcome, WebhookDelivery, WebhookPlan } from "../../domain/webhooks.ts";
import type { TenantPolicyVersion } from "../../domain/tenantPolicy.ts";
import type { AppAttestKeyEffect, AppAttestRefreshOutcome, StoredAppAttestKey, StoredIosApp } from "../../domain/iosApps.ts";
import type { PasskeyChallenge, PortalInvite, PortalPasskey, PortalRole, PortalSession, PortalUser, PortalUserState, SsoMapping } from "../../domain/portal.ts";
import type { ActivityEntry } from "../../domain/activity.ts";
import type { AuditRecord } from "../../domain/audit.ts";
import { auditArgs, auditInsertSql, auditRow, auditSql } from "../auditQueries.ts";
import type { ApiKeyRecord, ApiKeyRestrictions, NewTenant, Tenant, TenantState } from "../../domain/tenants.ts";
import type { StoredVerdict } from "../../domain/verdicts.ts";
import type { NonceConsumeOutcome, NonceIssueOutcome, NonceRecord } from "../../nonces/types.ts";
import type {
  AppAttestSave,
  NonceAppAttestStore,
  ActivityAppendResult,
  ActivityFilter,
  AuditFilter,
  ApiKeyChanges,
  DeviceVerdictDecision,
  DurableStore,
  JtiStore,
  NonceStore,
  ReferenceSetQuery,
  StatsWindow,
  StoredActivityEntry,
  TopOf,
  VerdictQuery,
  WebhookEndpointChanges,
} from "../types.ts";
import type { DevicePin, DeviceRecord } from "../../domain/devices.ts";
import type { StoredReferenceSet } from "../../domain/referenceValues.ts";
import { referenceSetsSql } from "../referenceSetQueries.ts";

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

/** pg_advisory_xact_lock key for schema migrations: "attest" in ASCII, so it reads back in pg_locks. */
const MIGRATION_LOCK_KEY = "107083763119988";

export interface PgOptions {
  /** postgres://user:pass@host:port/db?sslmode=... */
  url: string;
  /** connections per process (--pg-pool-max); requests beyond it wait up to connectTimeoutMs for one */
  poolMax: number;
  /**
   * How long to wait for a connection, new or from the pool. Short, so an unreachable database turns into a
   * 503 within a few seconds instead of requests piling up.
   */
  connectTimeoutMs?: number;
  /** client-side cap on one statement's round trip, and the server-side statement_timeout */
  queryTimeoutMs?: number;
  /** idle pool clients broken by the server (restart, failover) are reported here and dropped */
  onIdleError?: (err: Error) => void;
  /** told when the first connection timed out and is tried again (connectAttempts.ts) */
  onConnectRetry?: ((message: string) => void) | undefined;
}

const TENANT_COLS = "tenant_id, name, customer_id, kind, state, enrollment_enabled, created_at";
const KEY_COLS = "key_id, tenant_id, secret_hash, rps, burst, created_at, revoked_at, restrictions, label, last_used_at";
const ACTIVITY_COLS = "id, time, error_id, tenant_id, client_id, method, route, status, code, latency_ms, remote_address, reason";
const VERDICT_COLS = "object_id, tenant_id, format, record, reason, detail, created_at";
const PERSON_COLS = "user_id, tenant_id, email, created_at, updated_at, portal_role, portal_state, password_hash";

const DEVICE_COLS = "tenant_id, device_id, first_seen, last_seen, seen_count, last_appraisal, latest_facts, pin, resets";
const DEVICE_FOR_UPDATE = `SELECT ${DEVICE_COLS} FROM attested_devices WHERE tenant_id = $1 AND device_id = $2 FOR UPDATE`;

const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;

/**
 * One connection made and closed before the pool opens, tried again with more time if it timed out
 * (connectAttempts.ts). A separate client, because the pool's connect timeout is also how long a request waits for
 * a pooled connection while serving, which must stay short.
 */
async function reachDatabase(opts: PgOptions): Promise<void> {
  await connectPatiently(
    `postgres at ${serverAddress(opts.url, 5432)}`,
    { firstTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, onRetry: opts.onConnectRetry },
    async (connectionTimeoutMillis) => {
      const probe = new pg.Client({ connectionString: opts.url, connectionTimeoutMillis, application_name: "attestd" });
      // a failed connect still has a socket to close; its own error is not the one to report
      probe.on("error", () => undefined);
      try {
        await probe.connect();
      } catch (err) {
        throw fromPgError(err);
      } finally {
        await probe.end().catch(() => undefined);
      }
    },
    // pg's own words for a connect that outlived connectionTimeoutMillis, and the socket's
    (err) => /timeout expired|connection timeout|ETIMEDOUT/i.test(err instanceof Error ? err.message : ""),
  );
}

/** A nullable JSON parameter: SQL NULL for null (not the JSON text "null"). */
const jsonParam = (x: unknown) => (x === null ? null : JSON.stringify(x));

/** $3..$8 of the device statements: the record's columns after the key. */
function deviceValues(d: DeviceRecord): unknown[] {
  return [d.firstSeen, d.lastSeen, d.count, JSON.stringify(d.last), jsonParam(d.latestFacts), jsonParam(d.pin)];
}

/** A verdict row's values in column order, then its overview counter's key: the twelve parameters of insertCountedVerdict. */
function countedVerdictValues(v: StoredVerdict): unknown[] {
  const k = verdictStatsKey(v);
  return [v.objectId, v.tenantId, v.format, JSON.stringify(v.record), v.reason, JSON.stringify(v.detail), v.createdAt, k.hour, k.verdict, k.status, k.reason, statsSlot(v.objectId)];
}

/**
 * The one statement that writes a verdict row (saveVerdict, and the device statements with their own CTE first):
 * the row, and its overview counter (migration 008) only if the row went in, in one round trip. The counter is one
 * of VERDICT_STATS_SLOTS rows (by the objectId), so concurrent commits of one tenant seldom wait on one row lock.
 * `first` numbers the first of countedVerdictValues' twelve parameters; `onlyIf` makes the row conditional; the
 * statement's row count is 1 when the verdict was written.
 */
function insertCountedVerdict(first: number, o: { before?: string; onlyIf?: string } = {}): string {
  const $ = (i: number) => `$${first + i}`;
  return `WITH ${o.before ? `${o.before},\n` : ""}v AS (
      INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at)
      SELECT ${$(0)}, ${$(1)}, ${$(2)}, ${$(3)}::json, ${$(4)}, ${$(5)}::json, ${$(6)}${o.onlyIf ? ` WHERE ${o.onlyIf}` : ""}
      RETURNING 1)
    INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n)
    SELECT ${$(1)}, ${$(7)}, ${$(8)}, ${$(9)}, substr(${$(10)}, 1, ${STATS_REASON_CHARS}), ${$(11)}, 1 FROM v
    ON CONFLICT (tenant_id, hour, verdict, status, reason, slot) DO UPDATE SET n = verdict_stats.n + 1`;
}

/** Outbox rows (webhooks) from one JSON parameter, in one statement, inside the caller's transaction. */
const INSERT_WEBHOOK_DELIVERIES = `INSERT INTO webhook_deliveries (id, event_id, tenant_id, endpoint_id, event_type, payload, created_at, state, attempts, tries, next_attempt_ms, give_up_at_ms)
  SELECT id, event_id, tenant_id, endpoint_id, event_type, payload, created_at, 'pending', 0, 0, next_attempt_ms, give_up_at_ms
  FROM json_to_recordset($1::json) AS x(id text, event_id text, tenant_id text, endpoint_id text, event_type text, payload text, created_at text,
    next_attempt_ms bigint, give_up_at_ms bigint)`;

function deliveriesJson(rows: readonly NewWebhookDelivery[]): string {
  return JSON.stringify(
    rows.map((d) => ({
      id: d.id,
      event_id: d.eventId,
      tenant_id: d.tenantId,
      endpoint_id: d.endpointId,
      event_type: d.eventType,
      payload: d.payload,
      created_at: d.createdAt,
      next_attempt_ms: d.nextAttemptMs,
      give_up_at_ms: d.giveUpAtMs,
    })),
  );
}

async function insertDeliveries(c: pg.PoolClient, rows: readonly NewWebhookDelivery[] | undefined): Promise<void> {
  if (rows && rows.length > 0) await query(c, "insertWebhookDeliveries", INSERT_WEBHOOK_DELIVERIES, [deliveriesJson(rows)]);
}

/** The overview's request counters of the activity rows a statement's `a` CTE returns (inserted ones only). */
const COUNT_REQUESTS_FROM_A = `INSERT INTO activity_stats (tenant_id, hour, method, route, status, code, n)
  SELECT COALESCE(tenant_id, ''), substr(time, 1, 13), method, route, status, COALESCE(code, ''), COUNT(*) FROM a
  GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (tenant_id, hour, method, route, status, code) DO UPDATE SET n = activity_stats.n + excluded.n`;

/**
 * PostgreSQL backend for durable records and (without --redis-url) nonces. Same semantics as SqliteStore; the
 * multi-step nonce operations are PL/pgSQL functions (migration 001) so each is one round trip and atomic across
 * instances. Every driver error passes through fromPgError: an unreachable database becomes StoreUnavailableError
 * (→ 503), a constraint violation stays what it is.
 */
const PORTAL_USER_FOR_UPDATE = "SELECT portal_state FROM enroll_users WHERE user_id = $1 FOR UPDATE";
const VOID_INVITES = "UPDATE portal_invites SET used_at_ms = $2 WHERE user_id = $1 AND used_at_ms IS NULL";

export class PgStore implements DurableStore, NonceStore, JtiStore, NonceAppAttestStore {
  readonly kind = "postgres";
  readonly pool: pg.Pool;
  private jtiCalls = 0;

  private constructor(opts: PgOptions) {
    const queryTimeoutMs = opts.queryTimeoutMs ?? 5_000;
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolMax,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      query_timeout: queryTimeoutMs,
      statement_timeout: queryTimeoutMs,
      // a connection stuck in a transaction (a crashed client) must not hold row locks for long
      idle_in_transaction_session_timeout: 60_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: "attestd",
    });
    // Without a listener, an idle client dropped by the server (restart, failover, proxy timeout) is an uncaught
    // 'error' event that kills the process. The pool has already discarded the client; the next query reconnects.
    this.pool.on("error", (err) => opts.onIdleError?.(err));
  }

  /** Connects, applies pending migrations (serialised across instances by an advisory lock) and returns the store. */
  static async open(opts: PgOptions): Promise<PgStore> {
    await reachDatabase(opts);
    const store = new PgStore(opts);
    try {
      await store.migrate();
    } catch (err) {
      await store.pool.end().catch(() => undefined);
      throw fromPgError(err);
    }
    return store;
  }

  /**
   * Applies numbered migrations in one transaction holding a transaction-level advisory lock: instances starting
   * together queue on the lock, and each sees the versions the previous one committed. PostgreSQL DDL is
   * transactional, so a failed migration leaves nothing half-applied.
   */
  private async migrate(): Promise<void> {
    const client = await this.pool.connect();
    // Waiting for another instance's migration may take longer than a normal statement.
    const long = (text: string, values?: unknown[]) => client.query({ text, values, query_timeout: 300_000 } as pg.QueryConfig);
    try {
      await client.query("BEGIN");
      await client.query("SET LOCAL statement_timeout = 0");
      await long("SELECT pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
      );
      const done = new Set((await client.query("SELECT version FROM schema_migrations")).rows.map((r) => r.version as number));
      for (const m of loadMigrations(MIGRATIONS_DIR)) {
        if (done.has(m.version)) continue;
        await long(m.sql);
        await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
          m.version,
          m.name,
          new Date().toISOString(),
        ]);
      }
      await client.query("COMMIT");
      client.release();
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(err as Error);
      throw err;
    }
  }

  private q(name: string | undefined, text: string, values: unknown[] = []): Promise<pg.QueryResult<Row>> {
    return query(this.pool, name, text, values);
  }

  async ping(): Promise<void> {
    await this.q(undefined, "SELECT 1");
  }

  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }

  // ---- tenants and keys ----
  async createTenant(t: NewTenant): Promise<Tenant> {
    const r = await this.q(
      "createTenant",
      `INSERT INTO tenants (tenant_id, name, customer_id, kind, state, enrollment_enabled, created_at)
       VALUES ($1, $2, $3, $4, 'active', $5, $6) RETURNING ${TENANT_COLS}`,
      [t.tenantId, t.name, t.customerId, t.kind, t.kind === "customer", t.createdAt],
    );
    return pgRows.tenant(r.rows[0]!);
  }
  async getTenant(id: string) {
    const r = await this.q("tenantById", `SELECT ${TENANT_COLS} FROM tenants WHERE tenant_id = $1`, [id]);
    return r.rows[0] && pgRows.tenant(r.rows[0]);
  }
  async getTenantByName(name: string) {
    const r = await this.q("tenantByName", `SELECT ${TENANT_COLS} FROM tenants WHERE name = $1`, [name]);
    return r.rows[0] && pgRows.tenant(r.rows[0]);
  }
  async getTenantByCustomerId(customerId: string) {
    const r = await this.q("tenantByCustomerId", `SELECT ${TENANT_COLS} FROM tenants WHERE customer_id = $1`, [customerId]);
    return r.rows[0] && pgRows.tenant(r.rows[0]);
  }
  async listTenants() {
    const r = await this.q("tenants", `SELECT ${TENANT_COLS} FROM tenants ORDER BY created_at, name`);
    return r.rows.map(pgRows.tenant);
  }
  async setTenantState(name: string, state: TenantState) {
    return (await this.q("setTenantState", "UPDATE tenants SET state = $1 WHERE name = $2", [state, name])).rowCount === 1;
  }
  async setEnrollmentEnabled(name: string, enabled: boolean) {
    const r = await this.q("setEnrollment", "UPDATE tenants SET enrollment_enabled = $1 WHERE name = $2", [enabled, name]);
    return r.rowCount === 1;
  }
  async createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions" | "lastUsedAt" | "label"> & { label?: string | null }, webhooks: readonly NewWebhookDelivery[] = []) {
    const insert = (c: pg.Pool | pg.PoolClient) =>
      query(
        c,
        "insertKey",
        "INSERT INTO api_keys (key_id, tenant_id, secret_hash, rps, burst, created_at, label) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [k.keyId, k.tenantId, k.secretHash, k.rps, k.burst, k.createdAt, k.label ?? null],
      );
    if (webhooks.length === 0) {
      await insert(this.pool);
      return;
    }
    await transaction(this.pool, async (c) => {
      await insert(c);
      await insertDeliveries(c, webhooks);
    });
  }
  async touchApiKeys(uses: readonly { keyId: string; at: string }[]): Promise<void> {
    if (uses.length === 0) return;
    // one statement for the batch; a later time never goes backwards
    await this.q(
      "touchKeys",
      `UPDATE api_keys AS k SET last_used_at = u.at FROM unnest($1::text[], $2::text[]) AS u(key_id, at)
       WHERE k.key_id = u.key_id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`,
      [uses.map((u) => u.keyId), uses.map((u) => u.at)],
    );
  }
  async getApiKey(keyId: string) {
    const r = await this.q("keyById", `SELECT ${KEY_COLS} FROM api_keys WHERE key_id = $1`, [keyId]);
    return r.rows[0] && pgRows.apiKey(r.rows[0]);
  }
  async listApiKeys(tenantId: string) {
    const r = await this.q("keysByTenant", `SELECT ${KEY_COLS} FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, seq`, [
      tenantId,
    ]);
    return r.rows.map(pgRows.apiKey);
  }
  async revokeApiKey(keyId: string, at: string, webhooks: readonly NewWebhookDelivery[] = []) {
    const revoke = async (c: pg.Pool | pg.PoolClient) =>
      (await query(c, "revokeKey", "UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2 AND revoked_at IS NULL", [at, keyId])).rowCount === 1;
    if (webhooks.length === 0) return revoke(this.pool);
    return transaction(this.pool, async (c) => {
      if (!(await revoke(c))) return false;
      await insertDeliveries(c, webhooks);
      return true;
    });
  }
  async setApiKeyRestrictions(keyId: string, r: ApiKeyRestrictions | null) {
    const res = await this.q("setRestrictions", "UPDATE api_keys SET restrictions = $1::json WHERE key_id = $2", [
      r ? JSON.stringify(r) : null,
      keyId,
    ]);
    return res.rowCount === 1;
  }
  async updateApiKey(keyId: string, f: ApiKeyChanges) {
    const res = await this.q(
      "updateKey",
      `UPDATE api_keys SET rps = CASE WHEN $1 THEN $2::float8 ELSE rps END, burst = CASE WHEN $3 THEN $4::int ELSE burst END,
         label = CASE WHEN $5 THEN $6::text ELSE label END, restrictions = CASE WHEN $7 THEN $8::json ELSE restrictions END
       WHERE key_id = $9 AND revoked_at IS NULL`,
      [
        f.rps !== undefined, f.rps ?? null,
        f.burst !== undefined, f.burst ?? null,
        f.label !== undefined, f.label ?? null,
        f.restrictions !== undefined, f.restrictions ? JSON.stringify(f.restrictions) : null,
        keyId,
      ],
    );
    return res.rowCount === 1;
  }

  // ---- nonces ----
  async issue(n: NonceRecord, maxOutstanding: number, nowMs: number): Promise<NonceIssueOutcome> {
    const r = await this.q("issueNonce", "SELECT attestd_issue_nonce($1, $2, $3, $4, $5, $6) AS outcome", [
      n.nonce,
      n.tenantId,
      n.createdAtMs,
      n.expiresAtMs,
      maxOutstanding,
      nowMs,
    ]);
    return r.rows[0]!.outcome as NonceIssueOutcome;
  }

  async consume(nonce: string, tenantId: string, nowMs: number): Promise<NonceConsumeOutcome> {
    const r = await this.q("consumeNonce", "SELECT attestd_consume_nonce($1, $2, $3) AS outcome", [nonce, tenantId, nowMs]);
    return r.rows[0]!.outcome as NonceConsumeOutcome;
  }

  /**
   * Deletes in batches so one purge never holds many row locks or outlives the statement timeout; SKIP LOCKED
   * lets several instances purge at once without queueing behind each other (or behind a consume).
   */
  async purgeExpired(nowMs: number, retainMs: number): Promise<number> {
    const batch = 5_000;
    let total = 0;
    for (;;) {
      const r = await this.q(
        "purgeNonces",
        `DELETE FROM nonces WHERE nonce IN (
           SELECT nonce FROM nonces WHERE expires_at_ms <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [nowMs - retainMs, batch],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < batch) return total;
    }
  }

  // ---- verdicts ----
  async saveVerdict(v: StoredVerdict, webhooks?: WebhookPlan): Promise<void> {
    const deliveries = webhooks?.(v);
    if (deliveries && deliveries.length > 0) {
      // the verdict and its outbox rows in one transaction: both or neither
      await transaction(this.pool, async (c) => {
        await query(c, "insertVerdict", insertCountedVerdict(1), countedVerdictValues(v));
        await insertDeliveries(c, deliveries);
      });
      return;
    }
    // synchronous_commit (on by default) makes the INSERT durable before the caller acknowledges the verdict; one
    // statement, one round trip, the counter with it (insertCountedVerdict)
    await this.q("insertVerdict", insertCountedVerdict(1), countedVerdictValues(v));
  }

  async getVerdict(objectId: string): Promise<StoredVerdict | undefined> {
    const r = await this.q(
      "verdictById",
      "SELECT object_id, tenant_id, format, record, reason, detail, created_at FROM verdicts WHERE object_id = $1",
      [objectId],
    );
    return r.rows[0] && pgRows.verdict(r.rows[0]);
  }

  async listVerdicts(q: VerdictQuery): Promise<StoredVerdict[]> {
    const { sql, args } = verdictHistorySql(q, pgPlaceholder, VERDICT_COLS);
    return (await this.q(undefined, sql, args)).rows.map(pgRows.verdict);
  }

  // ---- per-device memory ----
  async getDevice(tenantId: string, deviceId: string): Promise<DeviceRecord | undefined> {
    const r = await this.q("deviceById", `SELECT ${DEVICE_COLS} FROM attested_devices WHERE tenant_id = $1 AND device_id = $2`, [
      tenantId,
      deviceId,
    ]);
    return r.rows[0] && pgRows.attestedDevice(r.rows[0]);
  }

  async listDevices(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<DeviceRecord[]> {
    // device_id is COLLATE "C": bytewise, the order SQLite keeps, served by the primary key
    const r = await this.q(
      "devicesAfter",
      `SELECT ${DEVICE_COLS} FROM attested_devices WHERE tenant_id = $1 AND device_id > $2 ORDER BY device_id LIMIT $3`,
      [tenantId, q.after ?? "", q.limit],
    );
    return r.rows.map(pgRows.attestedDevice);
  }

  /**
   * The row lock decides: an existing device is read FOR UPDATE, so concurrent appraisals of it (on any instance)
   * take turns. A new one is created with INSERT ... ON CONFLICT DO NOTHING, in the statement that also stores the
   * verdict: of concurrent creators one inserts, the others wait for its commit, insert nothing, then read the
   * winner's record (locked) and decide again against it. Two round trips inside the transaction either way.
   */
  async saveDeviceVerdict(tenantId: string, deviceId: string, decide: DeviceVerdictDecision, webhooks?: WebhookPlan): Promise<StoredVerdict> {
    const saved = await transaction(this.pool, async (c) => {
      const v = await this.deviceVerdictTx(c, tenantId, deviceId, decide);
      await insertDeliveries(c, webhooks?.(v));
      return v;
    });
    return saved;
  }

  private async deviceVerdictTx(c: pg.PoolClient, tenantId: string, deviceId: string, decide: DeviceVerdictDecision): Promise<StoredVerdict> {
    {
      const update = async (row: Row) => {
        const out = decide(pgRows.attestedDevice(row));
        await query(
          c,
          "updateDeviceVerdict",
          insertCountedVerdict(9, {
            before: `d AS (
               UPDATE attested_devices SET first_seen = $3, last_seen = $4, seen_count = $5, last_appraisal = $6::json,
                 latest_facts = $7::json, pin = $8::json
               WHERE tenant_id = $1 AND device_id = $2
             )`,
          }),
          [tenantId, deviceId, ...deviceValues(out.device), ...countedVerdictValues(out.verdict)],
        );
        return out.verdict;
      };
      const existing = await query(c, "deviceForUpdate", DEVICE_FOR_UPDATE, [tenantId, deviceId]);
      if (existing.rows[0]) return update(existing.rows[0]);
      const first = decide(undefined);
      const created = await query(
        c,
        "insertDeviceVerdict",
        insertCountedVerdict(9, {
          before: `d AS (
             INSERT INTO attested_devices (tenant_id, device_id, first_seen, last_seen, seen_count, last_appraisal, latest_facts, pin, resets)
             VALUES ($1, $2, $3, $4, $5, $6::json, $7::json, $8::json, 0)
             ON CONFLICT (tenant_id, device_id) DO NOTHING
             RETURNING 1
           )`,
          onlyIf: "EXISTS (SELECT 1 FROM d)",
        }),
        [tenantId, deviceId, ...deviceValues(first.device), ...countedVerdictValues(first.verdict)],
      );
      if (created.rowCount === 1) return first.verdict;
      const winner = await query(c, "deviceForUpdate", DEVICE_FOR_UPDATE, [tenantId, deviceId]);
      return update(winner.rows[0]!);
    }
  }

  async resetDevicePin(tenantId: string, deviceId: string, audit: (previousPin: DevicePin | null) => AuditRecord, webhooks: readonly NewWebhookDelivery[] = []): Promise<AuditRecord | undefined> {
    return transaction(this.pool, async (c) => {
      const r = await query(c, "deviceForUpdate", DEVICE_FOR_UPDATE, [tenantId, deviceId]);
      if (!r.rows[0]) return undefined;
      const record = audit(pgRows.attestedDevice(r.rows[0]).pin);
      await query(c, "insertAudit", auditInsertSql(pgPlaceholder), auditArgs(record));
      await query(c, "resetDevicePin", "UPDATE attested_devices SET pin = NULL, resets = resets + 1 WHERE tenant_id = $1 AND device_id = $2", [tenantId, deviceId]);
      await insertDeliveries(c, webhooks);
      return record;
    });
  }

  // ---- reference values ----
  async upsertReferenceValues(values: readonly ReferenceValue[], at: string, tenantId: string | null = null): Promise<number> {
    // One statement cannot touch a row twice, so repeats within the batch collapse to the last (as the SQLite
    // loop would leave them); the count is of values given, as SQLite reports it.
    const last = new Map<string, ReferenceValue>();
    for (const v of values) last.set(JSON.stringify([v.model, v.firmwareVersion]), v);
    const rows = [...last.values()];
    if (rows.length > 0) {
      const columns = [rows.map((v) => v.model), rows.map((v) => v.firmwareVersion), rows.map((v) => JSON.stringify(v.measurements)), at];
      await this.q(
        undefined,
        tenantId === null
          ? `INSERT INTO reference_values (model, firmware_version, measurements, updated_at)
             SELECT m, f, j::json, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u (m, f, j)
             ON CONFLICT (model, firmware_version) DO UPDATE SET measurements = excluded.measurements, updated_at = excluded.updated_at`
          : `INSERT INTO tenant_reference_values (tenant_id, model, firmware_version, measurements, updated_at)
             SELECT $5, m, f, j::json, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u (m, f, j)
             ON CONFLICT (tenant_id, model, firmware_version) DO UPDATE SET measurements = excluded.measurements, updated_at = excluded.updated_at`,
        tenantId === null ? columns : [...columns, tenantId],
      );
    }
    return values.length;
  }

  async listReferenceSets(q: ReferenceSetQuery): Promise<StoredReferenceSet[]> {
    const { sql, args } = referenceSetsSql(q, pgPlaceholder);
    return (await this.q(undefined, sql, args)).rows.map(pgRows.referenceSet);
  }

  async deleteReferenceSet(tenantId: string | null, model: string, firmwareVersion: string): Promise<boolean> {
    const r =
      tenantId === null
        ? await this.q("deleteRefval", "DELETE FROM reference_values WHERE model = $1 AND firmware_version = $2", [model, firmwareVersion])
        : await this.q("deleteTenantRefval", "DELETE FROM tenant_reference_values WHERE tenant_id = $1 AND model = $2 AND firmware_version = $3", [
            tenantId,
            model,
            firmwareVersion,
          ]);
    return r.rowCount === 1;
  }

  async listReferenceValues(): Promise<ReferenceValue[]> {
    const r = await this.q(
      "refvals",
      "SELECT model, firmware_version, measurements FROM reference_values ORDER BY model, firmware_version",
    );
    return r.rows.map(pgRows.referenceValue);
  }

  // ---- activity ----
  async appendActivity(entries: readonly ActivityEntry[]): Promise<ActivityAppendResult> {
    if (entries.length === 0) return { refused: [] };
    // One round trip for the whole batch; unnest keeps array order, so ids (the tiebreak of equal times) follow it.
    const col = <K extends keyof ActivityEntry>(k: K) => entries.map((e) => e[k]);
    // The rows and their overview counters in one statement, counted only if they went in (an entry already
    // logged under its error id is skipped, not counted twice). Batches of several instances may add to the same
    // counters at once: the ORDER BY takes their row locks in one order, so two batches never deadlock.
    try {
      await this.q(
        "insertActivity",
        `WITH a AS (
           INSERT INTO activity (time, error_id, tenant_id, client_id, method, route, status, code, latency_ms, remote_address, reason)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[],
                                $8::text[], $9::float8[], $10::text[], $11::text[])
           ON CONFLICT (error_id) WHERE error_id IS NOT NULL DO NOTHING
           RETURNING tenant_id, time, method, route, status, code)
         ${COUNT_REQUESTS_FROM_A}`,
        [
          col("time"),
          col("errorId"),
          col("tenantId"),
          col("clientId"),
          col("method"),
          col("route"),
          col("status"),
          col("code"),
          col("latencyMs"),
          col("remoteAddress"),
          col("reason"),
        ],
      );
      return { refused: [] };
    } catch (err) {
      if (isStoreUnavailable(err)) throw err;
      // One entry broke a constraint and the statement wrote nothing: write them one by one, each in a savepoint
      // of one transaction, so the others are kept and only the offenders come back. Rare, so not optimised.
      return transaction(this.pool, async (c) => {
        const refused: ActivityAppendResult["refused"] = [];
        for (const e of entries) {
          await query(c, undefined, "SAVEPOINT activity_entry");
          try {
            await query(
              c,
              "insertActivityOne",
              `WITH a AS (
                 INSERT INTO activity (time, error_id, tenant_id, client_id, method, route, status, code, latency_ms, remote_address, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (error_id) WHERE error_id IS NOT NULL DO NOTHING
                 RETURNING tenant_id, time, method, route, status, code)
               ${COUNT_REQUESTS_FROM_A}`,
              [e.time, e.errorId, e.tenantId, e.clientId, e.method, e.route, e.status, e.code, e.latencyMs, e.remoteAddress, e.reason],
            );
            await query(c, undefined, "RELEASE SAVEPOINT activity_entry");
          } catch (error) {
            if (isStoreUnavailable(error)) throw error;
            await query(c, undefined, "ROLLBACK TO SAVEPOINT activity_entry");
            refused.push({ entry: e, error });
          }
        }
        return { refused };
      });
    }
  }

  async queryActivity(f: ActivityFilter): Promise<StoredActivityEntry[]> {
    const { sql, args } = activitySql(f, pgPlaceholder);
    return (await this.q(undefined, sql.replace("SELECT *", `SELECT ${ACTIVITY_COLS}`), args)).rows.map(pgRows.activity);
  }

  // ---- audit trail ----
  async appendAudit(r: AuditRecord): Promise<void> {
    await this.q(undefined, auditInsertSql(pgPlaceholder), auditArgs(r));
  }
  async queryAudit(f: AuditFilter): Promise<AuditRecord[]> {
    const { sql, args } = auditSql(f, pgPlaceholder);
    return (await this.q(undefined, sql, args)).rows.map(auditRow);
  }

  // ---- the overview's counts ----
  private async rowsOf({ sql, args }: { sql: string; args: unknown[] }): Promise<Row[]> {
    return (await this.q(undefined, sql, args)).rows;
  }
  async verdictCounts(q: StatsWindow & { bucket: "hour" | "day" }) {
    return (await this.rowsOf(verdictCountsSql(q, pgPlaceholder))).map(pgRows.verdictCount);
  }
  async topFailures(q: StatsWindow & TopOf) {
    return (await this.rowsOf(topFailuresSql(q, pgPlaceholder))).map(pgRows.failureCount);
  }
  async requestCounts(q: StatsWindow & { recentFromHour: string }) {
    return (await this.rowsOf(requestCountsSql(q, pgPlaceholder))).map(pgRows.statusCount);
  }
  async topRequestErrors(q: StatsWindow & TopOf) {
    return (await this.rowsOf(topRequestErrorsSql(q, pgPlaceholder))).map(pgRows.requestErrorCount);
  }

  // ---- portal accounts: people are enroll_users rows with a portal_role ----
  async createPortalUser(u: { userId: string; email: string; tenantId: string | null; role: PortalRole; at: string }) {
    try {
      return await transaction(this.pool, async (c) => {
        // the Part B user of this tenant and email, if there is one, becomes the portal user: one person, one record
        const partB =
          u.tenantId === null
            ? undefined
            : (await query(c, undefined, "SELECT user_id FROM enroll_users WHERE tenant_id = $1 AND lower(email) = lower($2) FOR UPDATE", [u.tenantId, u.email])).rows[0];
        const r = partB
          ? await query(
              c,
              undefined,
              `UPDATE enroll_users SET portal_role = $1, portal_state = 'invited', updated_at = $2 WHERE user_id = $3 AND portal_role IS NULL RETURNING ${PERSON_COLS}`,
              [u.role, u.at, partB.user_id],
            )
          : await query(
              c,
              undefined,
              `INSERT INTO enroll_users (user_id, tenant_id, email, state, created_at, updated_at, portal_role, portal_state)
               VALUES ($1, $2, $3, 'registered', $4, $4, $5, 'invited') RETURNING ${PERSON_COLS}`,
              [u.userId, u.tenantId, u.email.toLowerCase(), u.at, u.role],
            );
        if (!r.rows[0]) return { outcome: "email_taken" as const };
        return { outcome: "ok" as const, user: pgRows.portalUser(r.rows[0]) };
      });
    } catch (err) {
      // the partial unique index on lower(email): another portal user has it
      if ((err as { cause?: { code?: string } }).cause?.code === "23505" || (err as { code?: string }).code === "23505") {
        return { outcome: "email_taken" as const };
      }
      throw err;
    }
  }

  async getPortalUser(userId: string): Promise<PortalUser | undefined> {
    const r = await this.q("portalUserById", `SELECT ${PERSON_COLS} FROM enroll_users WHERE user_id = $1 AND portal_role IS NOT NULL`, [userId]);
    return r.rows[0] && pgRows.portalUser(r.rows[0]);
  }

  async getPortalUserByEmail(email: string): Promise<PortalUser | undefined> {
    const r = await this.q(
      "portalUserByEmail",
      `SELECT ${PERSON_COLS} FROM enroll_users WHERE lower(email) = lower($1) AND portal_role IS NOT NULL`,
      [email],
    );
    return r.rows[0] && pgRows.portalUser(r.rows[0]);
  }

  async listPortalUsers(tenantId?: string | null): Promise<PortalUser[]> {
    const r =
      tenantId === undefined
        ? await this.q("portalUsers", `SELECT ${PERSON_COLS} FROM enroll_users WHERE portal_role IS NOT NULL ORDER BY email`)
        : tenantId === null
          ? await this.q("portalOperators", `SELECT ${PERSON_COLS} FROM enroll_users WHERE portal_role = 'operator' ORDER BY email`)
          : await this.q(
              "portalUsersOfTenant",
              `SELECT ${PERSON_COLS} FROM enroll_users WHERE portal_role IS NOT NULL AND tenant_id = $1 ORDER BY email`,
              [tenantId],
            );
    return r.rows.map(pgRows.portalUser);
  }

  async updatePortalUser(userId: string, f: { role?: PortalRole; state?: PortalUserState; passwordHash?: string | null }, at: string) {
    const r = await this.q(
      "updatePortalUser",
      `UPDATE enroll_users SET portal_role = COALESCE($1, portal_role), portal_state = COALESCE($2, portal_state),
         password_hash = CASE WHEN $3 THEN $4 ELSE password_hash END, updated_at = $5
       WHERE user_id = $6 AND portal_role IS NOT NULL`,
      [f.role ?? null, f.state ?? null, f.passwordHash !== undefined, f.passwordHash ?? null, at, userId],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Every change to a user's links first locks the user's row, so they take turns: a link made while another is
   * used, or while the user is disabled, is voided or refused, never left live beside it.
   */
  async createInvite(i: PortalInvite): Promise<boolean> {
    return transaction(this.pool, async (c) => {
      const u = await query(c, "portalUserForUpdate", PORTAL_USER_FOR_UPDATE, [i.userId]);
      if (u.rows[0]?.portal_state === "disabled") return false;
      await query(c, "voidInvites", VOID_INVITES, [i.userId, i.createdAtMs]);
      await query(
        c,
        "insertInvite",
        "INSERT INTO portal_invites (token_hash, user_id, created_at_ms, expires_at_ms, used_at_ms) VALUES ($1, $2, $3, $4, NULL)",
        [i.tokenHash, i.userId, i.createdAtMs, i.expiresAtMs],
      );
      return true;
    });
  }

  async peekInvite(tokenHash: string, nowMs: number): Promise<string | undefined> {
    const r = await this.q(
      "peekInvite",
      "SELECT user_id FROM portal_invites WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2",
      [tokenHash, nowMs],
    );
    return r.rows[0]?.user_id as string | undefined;
  }

  async useInvite(tokenHash: string, nowMs: number): Promise<PortalInvite | "unknown" | "expired" | "used"> {
    return transaction(this.pool, async (c) => {
      const found = await query(c, "inviteUserByHash", "SELECT user_id FROM portal_invites WHERE token_hash = $1", [tokenHash]);
      if (!found.rows[0]) return "unknown";
      const userId = found.rows[0].user_id as string;
      await query(c, "portalUserForUpdate", PORTAL_USER_FOR_UPDATE, [userId]);
      // read under the lock: a concurrent use of this link or another of the user's has committed by now
      const r = await query(c, "inviteByHash", "SELECT * FROM portal_invites WHERE token_hash = $1", [tokenHash]);
      const invite = pgRows.invite(r.rows[0]!);
      if (invite.usedAtMs !== null) return "used";
      if (invite.expiresAtMs <= nowMs) return "expired";
      await query(c, "voidInvites", VOID_INVITES, [userId, nowMs]);
      return { ...invite, usedAtMs: nowMs };
    });
  }

  async voidInvites(userId: string, nowMs: number): Promise<number> {
    return transaction(this.pool, async (c) => {
      await query(c, "portalUserForUpdate", PORTAL_USER_FOR_UPDATE, [userId]);
      return (await query(c, "voidInvites", VOID_INVITES, [userId, nowMs])).rowCount ?? 0;
    });
  }

  async setPassword(userId: string, passwordHash: string, at: string, nowMs: number): Promise<number | undefined> {
    return transaction(this.pool, async (c) => {
      const set = await query(
        c,
        "setPassword",
        `UPDATE enroll_users SET password_hash = $2, portal_state = 'active', updated_at = $3
         WHERE user_id = $1 AND portal_role IS NOT NULL AND portal_state <> 'disabled'`,
        [userId, passwordHash, at],
      );
      if (!set.rowCount) return undefined;
      await query(c, "voidInvites", VOID_INVITES, [userId, nowMs]);
      return (await query(c, "deleteUserSessions", "DELETE FROM portal_sessions WHERE user_id = $1", [userId])).rowCount ?? 0;
    });
  }

  async replacePasswordHash(userId: string, from: string, to: string, at: string): Promise<boolean> {
    const r = await this.q("replacePasswordHash", "UPDATE enroll_users SET password_hash = $3, updated_at = $4 WHERE user_id = $1 AND password_hash = $2", [
      userId,
      from,
      to,
      at,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  async createSession(x: PortalSession): Promise<void> {
    await this.q(
      "insertSession",
      "INSERT INTO portal_sessions (session_hash, user_id, csrf_token, created_at_ms, last_seen_at_ms, expires_at_ms, method) VALUES ($1, $2, $3, $4, $5, $6, $7)",
      [x.sessionHash, x.userId, x.csrfToken, x.createdAtMs, x.lastSeenAtMs, x.expiresAtMs, x.method],
    );
  }

  async getSession(sessionHash: string): Promise<PortalSession | undefined> {
    const r = await this.q("sessionByHash", "SELECT * FROM portal_sessions WHERE session_hash = $1", [sessionHash]);
    return r.rows[0] && pgRows.session(r.rows[0]);
  }

  async touchSession(sessionHash: string, nowMs: number): Promise<void> {
    await this.q("touchSession", "UPDATE portal_sessions SET last_seen_at_ms = GREATEST(last_seen_at_ms, $2) WHERE session_hash = $1", [
      sessionHash,
      nowMs,
    ]);
  }

  async deleteSession(sessionHash: string): Promise<void> {
    await this.q("deleteSession", "DELETE FROM portal_sessions WHERE session_hash = $1", [sessionHash]);
  }

  async deleteUserSessions(userId: string): Promise<number> {
    return (await this.q("deleteUserSessions", "DELETE FROM portal_sessions WHERE user_id = $1", [userId])).rowCount ?? 0;
  }

  async purgeSessions(nowMs: number, idleMs: number): Promise<number> {
    return (
      (await this.q("purgeSessions", "DELETE FROM portal_sessions WHERE expires_at_ms <= $1 OR last_seen_at_ms <= $2", [nowMs, nowMs - idleMs]))
        .rowCount ?? 0
    );
  }

  // ---- passkeys and their ceremonies' challenges ----
  async createPasskey(p: PortalPasskey): Promise<"ok" | "exists"> {
    const r = await this.q(
      "insertPasskey",
      `INSERT INTO portal_passkeys (credential_id, user_id, public_key, counter, transports, backed_up, name, created_at, last_used_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (credential_id) DO NOTHING`,
      [p.credentialId, p.userId, p.publicKey, p.counter, JSON.stringify(p.transports), p.backedUp, p.name, p.createdAt, p.lastUsedAt],
    );
    return r.rowCount === 1 ? "ok" : "exists";
  }

  async getPasskey(credentialId: string): Promise<PortalPasskey | undefined> {
    const r = await this.q("passkeyById", "SELECT * FROM portal_passkeys WHERE credential_id = $1", [credentialId]);
    return r.rows[0] && pgRows.passkey(r.rows[0]);
  }

  async listPasskeys(userId: string): Promise<PortalPasskey[]> {
    const r = await this.q("passkeysOfUser", "SELECT * FROM portal_passkeys WHERE user_id = $1 ORDER BY created_at, credential_id", [userId]);
    return r.rows.map(pgRows.passkey);
  }

  async recordPasskeyUse(credentialId: string, counter: number, at: string): Promise<boolean> {
    const r = await this.q(
      "recordPasskeyUse",
      "UPDATE portal_passkeys SET counter = $2, last_used_at = $3 WHERE credential_id = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))",
      [credentialId, counter, at],
    );
    return r.rowCount === 1;
  }

  async renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean> {
    const r = await this.q("renamePasskey", "UPDATE portal_passkeys SET name = $3 WHERE credential_id = $1 AND user_id = $2", [credentialId, userId, name]);
    return r.rowCount === 1;
  }

  async deletePasskey(userId: string, credentialId: string): Promise<boolean> {
    const r = await this.q("deletePasskey", "DELETE FROM portal_passkeys WHERE credential_id = $1 AND user_id = $2", [credentialId, userId]);
    return r.rowCount === 1;
  }

  async createPasskeyChallenge(c: PasskeyChallenge): Promise<void> {
    await this.q(
      "insertPasskeyChallenge",
      "INSERT INTO portal_passkey_challenges (challenge_hash, purpose, user_id, expires_at_ms) VALUES ($1, $2, $3, $4)",
      [c.challengeHash, c.purpose, c.userId, c.expiresAtMs],
    );
  }

  async takePasskeyChallenge(challengeHash: string, nowMs: number): Promise<PasskeyChallenge | undefined> {
    const r = await this.q("takePasskeyChallenge", "DELETE FROM portal_passkey_challenges WHERE challenge_hash = $1 RETURNING *", [challengeHash]);
    const c = r.rows[0] && pgRows.passkeyChallenge(r.rows[0]);
    return c && c.expiresAtMs > nowMs ? c : undefined;
  }

  async purgePasskeyChallenges(nowMs: number): Promise<number> {
    return (await this.q("purgePasskeyChallenges", "DELETE FROM portal_passkey_challenges WHERE expires_at_ms <= $1", [nowMs])).rowCount ?? 0;
  }

  // ---- Single sign-on (docs/sso.md) ----
  async putSsoMapping(m: SsoMapping): Promise<void> {
    await this.q(
      "putSsoMapping",
      `INSERT INTO sso_mappings (kind, value, tenant_id, role, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (kind, value) DO UPDATE SET tenant_id = excluded.tenant_id, role = excluded.role, created_at = excluded.created_at`,
      [m.kind, m.value, m.tenantId, m.role, m.createdAt],
    );
  }

  async getSsoMapping(kind: SsoMapping["kind"], value: string): Promise<SsoMapping | undefined> {
    const r = await this.q("getSsoMapping", "SELECT * FROM sso_mappings WHERE kind = $1 AND value = $2", [kind, value]);
    return r.rows[0] && pgSsoMappingOf(r.rows[0]);
  }

  async deleteSsoMapping(kind: SsoMapping["kind"], value: string): Promise<boolean> {
    return (await this.q("deleteSsoMapping", "DELETE FROM sso_mappings WHERE kind = $1 AND value = $2", [kind, value])).rowCount === 1;
  }

  async listSsoMappings(): Promise<SsoMapping[]> {
    return (await this.q("listSsoMappings", "SELECT * FROM sso_mappings ORDER BY kind, value", [])).rows.map(pgSsoMappingOf);
  }

  async getSsoIdentity(issuer: string, subject: string): Promise<string | undefined> {
    const r = await this.q("getSsoIdentity", "SELECT user_id FROM sso_identities WHERE issuer = $1 AND subject = $2", [issuer, subject]);
    return r.rows[0] ? String(r.rows[0].user_id) : undefined;
  }

  async linkSsoIdentity(issuer: string, subject: string, userId: string, at: string): Promise<"ok" | "taken"> {
    const r = await this.q(
      "linkSsoIdentity",
      "INSERT INTO sso_identities (issuer, subject, user_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
      [issuer, subject, userId, at],
    );
    return r.rowCount === 1 ? "ok" : "taken";
  }

  // ---- Play apps (issue 23) ----
  async addPlayApp(a: StoredPlayApp): Promise<"ok" | "exists"> {
    const p = a.policy;
    const r = await this.q(
      "insertPlayApp",
      `INSERT INTO play_apps (id, tenant_id, package_name, cert_digests, device_floor, max_age_seconds, require_licensed, require_play_protect,
         require_app_access_risk, opens_with, service_account_email, secret, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (tenant_id, package_name) DO NOTHING`,
      [
        a.id,
        a.tenantId,
        p.packageName,
        JSON.stringify(p.certDigests),
        p.deviceFloor,
        p.maxAgeSeconds,
        p.require.licensed,
        p.require.playProtect,
        p.require.appAccessRisk,
        a.opensWith,
        a.serviceAccountEmail ?? null,
        a.sealedSecret,
        a.createdAt,
      ],
    );
    return r.rowCount === 1 ? "ok" : "exists";
  }

  async listPlayApps(tenantId: string): Promise<StoredPlayApp[]> {
    return (await this.q("playAppsOfTenant", "SELECT * FROM play_apps WHERE tenant_id = $1 ORDER BY package_name", [tenantId])).rows.map(pgRows.playApp);
  }

  async getPlayApp(tenantId: string, id: string): Promise<StoredPlayApp | undefined> {
    const r = await this.q("playAppById", "SELECT * FROM play_apps WHERE tenant_id = $1 AND id = $2", [tenantId, id]);
    return r.rows[0] && pgRows.playApp(r.rows[0]);
  }

  async removePlayApp(tenantId: string, id: string): Promise<boolean> {
    return ((await this.q("removePlayApp", "DELETE FROM play_apps WHERE tenant_id = $1 AND id = $2", [tenantId, id])).rowCount ?? 0) === 1;
  }


  // ---- Tenant policies (issue 26): insert only; the primary key decides between two writers of one number ----
  async appendTenantPolicy(v: TenantPolicyVersion): Promise<"ok" | "conflict"> {
    // one statement: inserted only when the number follows the tenant's highest; a concurrent insert of the same
    // number loses on the primary key (ON CONFLICT), so of two writers exactly one gets it
    const r = await this.q(
      "appendTenantPolicy",
      `INSERT INTO tenant_policies (tenant_id, version, created_at, author, document)
       SELECT $1::text, $2::integer, $3::text, $4::text, $5::text
       WHERE $2::integer = COALESCE((SELECT MAX(version) FROM tenant_policies WHERE tenant_id = $1), 0) + 1
       ON CONFLICT (tenant_id, version) DO NOTHING`,
      [v.tenantId, v.version, v.createdAt, v.author, JSON.stringify(v.document)],
    );
    return r.rowCount === 1 ? "ok" : "conflict";
  }

  async currentTenantPolicy(tenantId: string): Promise<TenantPolicyVersion | undefined> {
    const r = await this.q("currentTenantPolicy", "SELECT * FROM tenant_policies WHERE tenant_id = $1 ORDER BY version DESC LIMIT 1", [tenantId]);
    return r.rows[0] && pgRows.tenantPolicy(r.rows[0]);
  }

  async getTenantPolicyVersion(tenantId: string, version: number): Promise<TenantPolicyVersion | undefined> {
    const r = await this.q("tenantPolicyVersion", "SELECT * FROM tenant_policies WHERE tenant_id = $1 AND version = $2", [tenantId, version]);
    return r.rows[0] && pgRows.tenantPolicy(r.rows[0]);
  }

  async listTenantPolicyVersions(tenantId: string, q: { before?: number | undefined; limit: number }): Promise<TenantPolicyVersion[]> {
    const r = await this.q(
      "tenantPolicyVersions",
      "SELECT * FROM tenant_policies WHERE tenant_id = $1 AND version < $2 ORDER BY version DESC LIMIT $3",
      [tenantId, q.before ?? 2147483647, q.limit],
    );
    return r.rows.map(pgRows.tenantPolicy);
  }

  // ---- App Attest (issue 25) ----
  async addIosApp(a: StoredIosApp): Promise<"ok" | "exists"> {
    const r = await this.q(
      "insertIosApp",
      "INSERT INTO ios_apps (id, tenant_id, app_id, environment, created_at, developer_key_id, developer_key) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, app_id) DO NOTHING",
      [a.id, a.tenantId, a.appId, a.environment, a.createdAt, a.developerKeyId, a.sealedDeveloperKey],
    );
    return r.rowCount === 1 ? "ok" : "exists";
  }

  async listIosApps(tenantId: string): Promise<StoredIosApp[]> {
    return (await this.q("iosAppsOfTenant", "SELECT * FROM ios_apps WHERE tenant_id = $1 ORDER BY app_id", [tenantId])).rows.map(pgRows.iosApp);
  }

  async removeIosApp(tenantId: string, id: string): Promise<boolean> {
    return ((await this.q("removeIosApp", "DELETE FROM ios_apps WHERE tenant_id = $1 AND id = $2", [tenantId, id])).rowCount ?? 0) === 1;
  }

  async getAppAttestKey(tenantId: string, keyId: string): Promise<StoredAppAttestKey | undefined> {
    const r = await this.q("appAttestKey", "SELECT * FROM app_attest_keys WHERE tenant_id = $1 AND key_id = $2", [tenantId, keyId]);
    return r.rows[0] && pgRows.appAttestKey(r.rows[0]);
  }

  async listAppAttestKeys(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<StoredAppAttestKey[]> {
    const r = await this.q("appAttestKeysAfter", "SELECT * FROM app_attest_keys WHERE tenant_id = $1 AND key_id > $2 ORDER BY key_id LIMIT $3", [
      tenantId,
      q.after ?? "",
      q.limit,
    ]);
    return r.rows.map(pgRows.appAttestKey);
  }

  async revokeAppAttestKey(tenantId: string, keyId: string, at: string): Promise<boolean> {
    const r = await this.q("revokeAppAttestKey", "UPDATE app_attest_keys SET revoked_at = $1 WHERE tenant_id = $2 AND key_id = $3 AND revoked_at IS NULL", [
      at,
      tenantId,
      keyId,
    ]);
    return (r.rowCount ?? 0) === 1;
  }

  /**
   * One statement decides. The counter's UPDATE takes the row lock: a concurrent one waits for its commit, then
   * re-reads the row (READ COMMITTED) and finds `counter < $1` false, so of two assertions with one counter exactly
   * one applies. The insert's ON CONFLICT does the same for one key attested twice.
   */
  private async appAttestEffect(c: pg.PoolClient, e: AppAttestKeyEffect): Promise<boolean> {
    if (e.kind === "attested") {
      const k = e.key;
      const r = await query(
        c,
        "insertAppAttestKey",
        `INSERT INTO app_attest_keys (key_id, tenant_id, app_id, public_key, counter, environment, receipt, attested_at, last_asserted_at, revoked_at, refresh_due_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL,
           (SELECT CASE WHEN developer_key IS NOT NULL THEN $9 END FROM ios_apps WHERE tenant_id = $2 AND app_id = $3 FOR SHARE))
         ON CONFLICT (key_id) DO NOTHING`,
        [k.keyId, k.tenantId, k.appId, k.publicKey, k.counter, k.environment, k.receipt, k.attestedAt, k.refreshDueAt],
      );
      return r.rowCount === 1;
    }
    const r = await query(
      c,
      "advanceAppAttestCounter",
      "UPDATE app_attest_keys SET counter = $1, last_asserted_at = $2 WHERE tenant_id = $3 AND key_id = $4 AND counter < $1 AND revoked_at IS NULL",
      [e.counter, e.at, e.tenantId, e.keyId],
    );
    return r.rowCount === 1;
  }

  async saveAppAttestVerdict(effect: AppAttestKeyEffect, verdict: StoredVerdict, refused: StoredVerdict, webhooks?: WebhookPlan): Promise<StoredVerdict> {
    return transaction(this.pool, async (c) => {
      const v = (await this.appAttestEffect(c, effect)) ? verdict : refused;
      await query(c, "insertVerdict", insertCountedVerdict(1), countedVerdictValues(v));
      await insertDeliveries(c, webhooks?.(v));
      return v;
    });
  }

  async applyAppAttestEffect(effect: AppAttestKeyEffect): Promise<boolean> {
    return transaction(this.pool, (c) => this.appAttestEffect(c, effect));
  }

  // ---- webhooks (issue 26) ----
  async addWebhookEndpoint(e: StoredWebhookEndpoint): Promise<void> {
    await this.q(
      "insertWebhookEndpoint",
      `INSERT INTO webhook_endpoints (id, tenant_id, url, description, events, verdicts, enabled, secret, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::json, $6, $7, $8, $9, $10)`,
      [e.id, e.tenantId, e.url, e.description, JSON.stringify(e.events), e.verdicts, e.enabled, e.sealedSecret, e.createdAt, e.updatedAt],
    );
  }

  async listWebhookEndpoints(tenantId: string): Promise<StoredWebhookEndpoint[]> {
    const r = await this.q("webhookEndpoints", "SELECT * FROM webhook_endpoints WHERE tenant_id = $1 ORDER BY created_at, id", [tenantId]);
    return r.rows.map(pgRows.webhookEndpoint);
  }

  async getWebhookEndpoint(tenantId: string, id: string): Promise<StoredWebhookEndpoint | undefined> {
    const r = await this.q("webhookEndpoint", "SELECT * FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2", [tenantId, id]);
    return r.rows[0] && pgRows.webhookEndpoint(r.rows[0]);
  }

  async updateWebhookEndpoint(tenantId: string, id: string, f: WebhookEndpointChanges): Promise<boolean> {
    const r = await this.q(
      "updateWebhookEndpoint",
      `UPDATE webhook_endpoints SET url = CASE WHEN $1 THEN $2::text ELSE url END, description = CASE WHEN $3 THEN $4::text ELSE description END,
         events = CASE WHEN $5 THEN $6::json ELSE events END, verdicts = CASE WHEN $7 THEN $8::text ELSE verdicts END,
         enabled = CASE WHEN $9 THEN $10::boolean ELSE enabled END, secret = CASE WHEN $11 THEN $12::text ELSE secret END, updated_at = $13
       WHERE tenant_id = $14 AND id = $15`,
      [
        f.url !== undefined, f.url ?? null,
        f.description !== undefined, f.description ?? null,
        f.events !== undefined, f.events ? JSON.stringify(f.events) : null,
        f.verdicts !== undefined, f.verdicts ?? null,
        f.enabled !== undefined, f.enabled ?? null,
        f.sealedSecret !== undefined, f.sealedSecret ?? null,
        f.updatedAt, tenantId, id,
      ],
    );
    return r.rowCount === 1;
  }

  async removeWebhookEndpoint(tenantId: string, id: string): Promise<boolean> {
    return ((await this.q("removeWebhookEndpoint", "DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2", [tenantId, id])).rowCount ?? 0) === 1;
  }

  async enqueueWebhookDeliveries(rows: readonly NewWebhookDelivery[]): Promise<void> {
    if (rows.length === 0) return;
    await this.q("insertWebhookDeliveries", INSERT_WEBHOOK_DELIVERIES, [deliveriesJson(rows)]);
  }

  /**
   * FOR UPDATE SKIP LOCKED: instances claiming together pass over each other's rows instead of waiting, and the
   * lease written in the same statement keeps a row from every other claim until it expires.
   */
  async claimWebhookDeliveries(owner: string, limit: number, nowMs: number, leaseMs: number): Promise<WebhookDelivery[]> {
    const r = await this.q(
      "claimWebhookDeliveries",
      `UPDATE webhook_deliveries SET lease_owner = $1, lease_until_ms = $2
       WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_ms <= $3
         AND (lease_until_ms IS NULL OR lease_until_ms <= $3) ORDER BY next_attempt_ms, id LIMIT $4 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [owner, nowMs + leaseMs, nowMs, limit],
    );
    return r.rows.map(pgRows.webhookDelivery).sort((a, b) => a.nextAttemptMs - b.nextAttemptMs || (a.id < b.id ? -1 : 1));
  }

  async recordWebhookAttempt(owner: string, a: WebhookAttempt, outcome: WebhookAttemptOutcome): Promise<boolean> {
    const pending = outcome.state === "pending";
    // one statement: the attempt is inserted only if the update found the lease still ours
    const r = await this.q(
      "recordWebhookAttempt",
      `WITH d AS (
         UPDATE webhook_deliveries SET attempts = GREATEST(attempts, $1), last_status = $2, lease_owner = NULL, lease_until_ms = NULL,
           state = $3, tries = tries + $4, next_attempt_ms = CASE WHEN $5 THEN $6::bigint ELSE next_attempt_ms END, finished_at = $7
         WHERE id = $8 AND lease_owner = $9 AND state = 'pending'
         RETURNING id
       )
       INSERT INTO webhook_attempts (delivery_id, attempt, at, status, duration_ms, error, response)
       SELECT id, $1, $10, $2, $11, $12, $13 FROM d`,
      [a.attempt, a.status, outcome.state, pending ? 1 : 0, pending, pending ? outcome.nextAttemptMs : null, pending ? null : outcome.at, a.deliveryId, owner, a.at, a.durationMs, a.error, a.response],
    );
    return r.rowCount === 1;
  }

  async listWebhookDeliveries(tenantId: string, q: { endpointId?: string | undefined; before?: { createdAt: string; id: string } | undefined; limit: number }): Promise<WebhookDelivery[]> {
    const b = q.before;
    const r = await this.q(
      "webhookDeliveries",
      `SELECT * FROM webhook_deliveries WHERE tenant_id = $1 AND ($2::text IS NULL OR endpoint_id = $2)
         AND ($3::text IS NULL OR (created_at, id) < ($3, $4::text))
       ORDER BY created_at DESC, id DESC LIMIT $5`,
      [tenantId, q.endpointId ?? null, b?.createdAt ?? null, b?.id ?? null, q.limit],
    );
    return r.rows.map(pgRows.webhookDelivery);
  }

  async getWebhookDelivery(tenantId: string, id: string): Promise<WebhookDelivery | undefined> {
    const r = await this.q("webhookDelivery", "SELECT * FROM webhook_deliveries WHERE tenant_id = $1 AND id = $2", [tenantId, id]);
    return r.rows[0] && pgRows.webhookDelivery(r.rows[0]);
  }

  async listWebhookAttempts(tenantId: string, deliveryId: string): Promise<WebhookAttempt[]> {
    const r = await this.q(
      "webhookAttempts",
      `SELECT a.* FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
       WHERE d.tenant_id = $1 AND a.delivery_id = $2 ORDER BY a.attempt`,
      [tenantId, deliveryId],
    );
    return r.rows.map(pgRows.webhookAttempt);
  }

  async resendWebhookDelivery(tenantId: string, id: string, nowMs: number, giveUpAtMs: number): Promise<boolean> {
    const r = await this.q(
      "resendWebhookDelivery",
      `UPDATE webhook_deliveries SET state = 'pending', tries = 0, next_attempt_ms = $1, give_up_at_ms = $2, lease_owner = NULL,
         lease_until_ms = NULL, finished_at = NULL WHERE tenant_id = $3 AND id = $4`,
      [nowMs, giveUpAtMs, tenantId, id],
    );
    return r.rowCount === 1;
  }

  async purgeWebhookDeliveries(createdBefore: string, limit: number): Promise<number> {
    // SKIP LOCKED: instances purging together take different rows
    const r = await this.q(
      "purgeWebhookDeliveries",
      `WITH d AS (
         DELETE FROM webhook_deliveries WHERE id IN (
           SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING id
       ), a AS (DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM d))
       SELECT COUNT(*) AS n FROM d`,
      [createdBefore, limit],
    );
    return Number(r.rows[0]!.n);
  }

  async countPendingWebhookDeliveries(): Promise<number> {
    const r = await this.q("pendingWebhookDeliveries", "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE state = 'pending'");
    return Number(r.rows[0]!.n);
  }

  /**
   * Nonces in PostgreSQL (no Redis): the consumption (its row locked by attestd_consume_nonce), the effect and the
   * verdict in one transaction. A refused nonce rolls back nothing: nothing else was written.
   */
  async consumeWithAppAttestVerdict(
    nonce: string,
    tenantId: string,
    nowMs: number,
    effect: AppAttestKeyEffect,
    save: AppAttestSave,
    webhooks?: WebhookPlan,
  ): Promise<{ outcome: NonceConsumeOutcome; verdict?: StoredVerdict; applied?: boolean }> {
    return transaction(this.pool, async (c) => {
      const r = await query(c, "consumeNonce", "SELECT attestd_consume_nonce($1, $2, $3) AS outcome", [nonce, tenantId, nowMs]);
      const outcome = r.rows[0]!.outcome as NonceConsumeOutcome;
      if (outcome !== "ok") return { outcome };
      const applied = await this.appAttestEffect(c, effect);
      const v =
        "verdict" in save
          ? applied ? save.verdict : save.refused
          : await this.deviceVerdictTx(c, tenantId, save.deviceId, save.decide(applied));
      if ("verdict" in save) await query(c, "insertVerdict", insertCountedVerdict(1), countedVerdictValues(v));
      // the verdict's webhook deliveries in the same transaction (docs/events.md)
      await insertDeliveries(c, webhooks?.(v));
      return { outcome, applied, verdict: v };
    });
  }

  /**
   * The app's row lock orders this against a key being attested for the app: that insert reads the app's developer
   * key FOR SHARE (appAttestEffect), so it either commits first (and its key is made due here) or waits and sees the
   * key set here.
   */
  async setIosAppDeveloperKey(tenantId: string, id: string, key: { keyId: string; sealed: string } | null, at: string): Promise<boolean> {
    return transaction(this.pool, async (c) => {
      const app = await query(c, "setIosAppDeveloperKey", "UPDATE ios_apps SET developer_key_id = $1, developer_key = $2 WHERE tenant_id = $3 AND id = $4 RETURNING app_id", [
        key?.keyId ?? null,
        key?.sealed ?? null,
        tenantId,
        id,
      ]);
      const appId = app.rows[0]?.app_id as string | undefined;
      if (appId === undefined) return false;
      if (key) {
        await query(c, "dueAppAttestKeys", "UPDATE app_attest_keys SET refresh_due_at = $1 WHERE tenant_id = $2 AND app_id = $3 AND refresh_due_at IS NULL AND revoked_at IS NULL", [at, tenantId, appId]);
      } else {
        await query(c, "undueAppAttestKeys", "UPDATE app_attest_keys SET refresh_due_at = NULL WHERE tenant_id = $1 AND app_id = $2 AND refresh_due_at IS NOT NULL", [tenantId, appId]);
      }
      return true;
    });
  }

  /** SKIP LOCKED: instances claiming at once take different keys; the lease moves the claimed keys' due time on. */
  async claimAppAttestRefreshes(now: string, leaseUntil: string, limit: number): Promise<StoredAppAttestKey[]> {
    const r = await this.q(
      "claimAppAttestRefreshes",
      `UPDATE app_attest_keys SET refresh_due_at = $2 WHERE key_id IN (
         SELECT k.key_id FROM app_attest_keys k JOIN ios_apps a ON a.tenant_id = k.tenant_id AND a.app_id = k.app_id
         WHERE k.refresh_due_at IS NOT NULL AND k.refresh_due_at <= $1 AND k.revoked_at IS NULL AND a.developer_key IS NOT NULL
         ORDER BY k.refresh_due_at, k.key_id LIMIT $3 FOR UPDATE OF k SKIP LOCKED)
       RETURNING *`,
      [now, leaseUntil, limit],
    );
    return r.rows.map(pgRows.appAttestKey).sort((a, b) => (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0));
  }

  async saveAppAttestRefresh(o: AppAttestRefreshOutcome): Promise<boolean> {
    const r = o.refreshed;
    const res = await this.q(
      "saveAppAttestRefresh",
      `UPDATE app_attest_keys SET last_refresh_result = $1, last_refresh_reason = $2, last_refresh_at = $3, refresh_due_at = $4,
         receipt = coalesce($5, receipt), risk_metric = CASE WHEN $6::boolean THEN $7::bigint ELSE risk_metric END,
         risk_metric_at = CASE WHEN $6::boolean THEN $3 ELSE risk_metric_at END
       WHERE tenant_id = $8 AND key_id = $9`,
      [o.result, o.reason, o.at, o.refreshDueAt, r?.receipt ?? null, r !== undefined, r?.riskMetric ?? null, o.tenantId, o.keyId],
    );
    return (res.rowCount ?? 0) === 1;
  }

  // ---- jti replay set (used without --redis-url) ----
  /**
   * One statement decides: the insert wins, or the conflicting row is replaced only if it had expired at nowMs.
   * Concurrent calls for one jti serialise on the row, so exactly one answers true.
   */
  async remember(jti: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    // Expired entries cannot matter any more; clearing a bounded batch every 1000 calls keeps the table small
    // without a separate timer (several instances may do it at once: SKIP LOCKED keeps them apart).
    if (++this.jtiCalls % 1000 === 0) {
      await this.q(
        "purgeJti",
        "DELETE FROM jti_seen WHERE jti IN (SELECT jti FROM jti_seen WHERE expires_at_ms <= $1 LIMIT 5000 FOR UPDATE SKIP LOCKED)",
        [nowMs],
      );
    }
    const r = await this.q(
      "rememberJti",
      `INSERT INTO jti_seen AS s (jti, expires_at_ms) VALUES ($1, $2)
       ON CONFLICT (jti) DO UPDATE SET expires_at_ms = excluded.expires_at_ms WHERE s.expires_at_ms <= $3`,
      [jti, expiresAtMs, nowMs],
    );
    return r.rowCount === 1;
  }
}

function pgSsoMappingOf(r: Record<string, unknown>): SsoMapping {
  return { kind: r.kind as SsoMapping["kind"], value: String(r.value), tenantId: String(r.tenant_id), role: r.role as SsoMapping["role"], createdAt: String(r.created_at) };
}
