import type pg from "pg";
import type {
  AccessTokenRecord,
  DeviceError,
  DevicePage,
  EnrollmentUser,
  EnrollTransaction,
  NewApiClient,
  NewTransaction,
  Page,
  Profile,
  ProfileFields,
  ResellerAssociation,
  TenantKeyRecord,
  TransactionType,
  UserState,
} from "../../domain/enrollment.ts";
import type {
  AssignOutcome,
  EnqueueOutcome,
  EnrollmentStore,
  JobItem,
  JobResult,
  NewJobItem,
  TransactionFilter,
  UnassignOutcome,
} from "../types.ts";
import { jobFailure, num, pgRows, str } from "../rows.ts";
import type { ApiKeyRestrictions } from "../../domain/tenants.ts";
import { query, transaction, uniqueViolation, type Queryable } from "./pgQuery.ts";

const USER_COLS = "user_id, tenant_id, email, state, created_at, updated_at";
const CLIENT_COLS =
  "client_id, tenant_id, user_id, public_key, identifier_hash, read_only, rps, burst, restrictions, created_at, revoked_at";
const PROFILE_COLS = "profile_id, tenant_id, name, description, mdm_url, settings, created_at, updated_at";
const TX_COLS = "tenant_id, transaction_id, type, state, kind, profile_id, profile_name, created_at, updated_at";
/** the unique constraint PostgreSQL generates for UNIQUE (tenant_id, name) in migration 002 */
const PROFILE_NAME_CONSTRAINT = "enroll_profiles_tenant_id_name_key";

/**
 * Part B records on PostgreSQL, with SqliteEnrollmentStore's semantics. SQLite gets atomicity from one write lock
 * per transaction; here several instances write at once under READ COMMITTED, so each operation locks what its
 * decision depends on, always in the same order (transaction row, then job, then device rows by id), which keeps
 * concurrent completions from deadlocking (profile rows are taken before device rows everywhere):
 *  - completeJob locks its upload transaction's row, so of two last items finishing at once the second sees the
 *    first committed and settles the transaction (without the lock, each would see the other still pending);
 *  - enqueueDevices takes the profile FOR SHARE, so a concurrent delete waits instead of orphaning the upload;
 *  - claimJobs uses FOR UPDATE SKIP LOCKED, so concurrent workers never lease the same item;
 *  - count-and-page reads run in one REPEATABLE READ snapshot, so a total describes the page it came with.
 */
export class PgEnrollmentStore implements EnrollmentStore {
  constructor(private readonly pool: pg.Pool) {}

  private q(name: string | undefined, text: string, values: unknown[] = [], db: Queryable = this.pool) {
    return query(db, name, text, values);
  }

  // ---- users ----
  async registerUser(u: { userId: string; tenantId: string; email: string; at: string }): Promise<EnrollmentUser> {
    // one statement: a new user, or the existing one (re-)registered; concurrent calls for one email converge
    const r = await this.q(
      "registerUser",
      `INSERT INTO enroll_users AS x (user_id, tenant_id, email, state, created_at, updated_at)
       VALUES ($1, $2, $3, 'registered', $4, $4)
       ON CONFLICT (tenant_id, email) DO UPDATE SET state = 'registered', updated_at = excluded.updated_at
       RETURNING ${USER_COLS}`,
      [u.userId, u.tenantId, u.email, u.at],
    );
    return pgRows.user(r.rows[0]!);
  }
  async getUser(userId: string) {
    const r = await this.q("userById", `SELECT ${USER_COLS} FROM enroll_users WHERE user_id = $1`, [userId]);
    return r.rows[0] && pgRows.user(r.rows[0]);
  }
  async getUserByEmail(tenantId: string, email: string) {
    const r = await this.q("userByEmail", `SELECT ${USER_COLS} FROM enroll_users WHERE tenant_id = $1 AND email = $2`, [
      tenantId,
      email,
    ]);
    return r.rows[0] && pgRows.user(r.rows[0]);
  }
  async listUsers(tenantId: string) {
    const r = await this.q("usersByTenant", `SELECT ${USER_COLS} FROM enroll_users WHERE tenant_id = $1 ORDER BY email`, [tenantId]);
    return r.rows.map(pgRows.user);
  }
  async setUserState(tenantId: string, email: string, state: UserState, at: string) {
    const r = await this.q("setUserState", "UPDATE enroll_users SET state = $1, updated_at = $2 WHERE tenant_id = $3 AND email = $4", [
      state,
      at,
      tenantId,
      email,
    ]);
    return r.rowCount === 1;
  }

  // ---- clients and tokens ----
  async createClient(c: NewApiClient) {
    await this.q(
      "insertClient",
      `INSERT INTO enroll_clients (client_id, tenant_id, user_id, public_key, identifier_hash, read_only, rps, burst, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [c.clientId, c.tenantId, c.userId, c.publicKey, c.identifierHash, c.readOnly, c.rps, c.burst, c.createdAt],
    );
  }
  async getClient(clientId: string) {
    const r = await this.q("clientById", `SELECT ${CLIENT_COLS} FROM enroll_clients WHERE client_id = $1`, [clientId]);
    return r.rows[0] && pgRows.client(r.rows[0]);
  }
  async listClients(tenantId: string) {
    const r = await this.q(
      "clientsByTenant",
      `SELECT ${CLIENT_COLS} FROM enroll_clients WHERE tenant_id = $1 ORDER BY created_at, client_id`,
      [tenantId],
    );
    return r.rows.map(pgRows.client);
  }
  async deleteClient(clientId: string) {
    // ON DELETE CASCADE takes the client's access tokens in the same statement
    return (await this.q("deleteClient", "DELETE FROM enroll_clients WHERE client_id = $1", [clientId])).rowCount === 1;
  }
  async revokeClient(clientId: string, at: string) {
    // one statement: the client marked and its tokens gone together (a data-modifying CTE runs in the same snapshot)
    const r = await this.q(
      "revokeClient",
      `WITH revoked AS (UPDATE enroll_clients SET revoked_at = $1 WHERE client_id = $2 AND revoked_at IS NULL RETURNING client_id),
            tokens AS (DELETE FROM enroll_access_tokens WHERE client_id IN (SELECT client_id FROM revoked))
       SELECT count(*)::int AS n FROM revoked`,
      [at, clientId],
    );
    return r.rows[0]!.n === 1;
  }
  async setClientReadOnly(clientId: string, readOnly: boolean) {
    return (await this.q("setClientReadOnly", "UPDATE enroll_clients SET read_only = $1 WHERE client_id = $2", [readOnly, clientId])).rowCount === 1;
  }
  async setClientRestrictions(clientId: string, r: ApiKeyRestrictions | null) {
    const res = await this.q("setClientRestrictions", "UPDATE enroll_clients SET restrictions = $1::json WHERE client_id = $2", [
      r ? JSON.stringify(r) : null,
      clientId,
    ]);
    return res.rowCount === 1;
  }
  async createAccessToken(t: AccessTokenRecord) {
    await this.q(
      "insertToken",
      "INSERT INTO enroll_access_tokens (token_id, client_id, token_hash, expires_at_ms, created_at) VALUES ($1, $2, $3, $4, $5)",
      [t.tokenId, t.clientId, t.tokenHash, t.expiresAtMs, t.createdAt],
    );
  }
  async getAccessToken(tokenId: string): Promise<AccessTokenRecord | undefined> {
    const r = await this.q(
      "tokenById",
      "SELECT token_id, client_id, token_hash, expires_at_ms, created_at FROM enroll_access_tokens WHERE token_id = $1",
      [tokenId],
    );
    return r.rows[0] && pgRows.accessToken(r.rows[0]);
  }
  async purgeExpiredAccessTokens(nowMs: number) {
    return (await this.q("purgeTokens", "DELETE FROM enroll_access_tokens WHERE expires_at_ms <= $1", [nowMs])).rowCount ?? 0;
  }

  // ---- resellers ----
  async associateReseller(a: ResellerAssociation): Promise<"ok" | "exists"> {
    const r = await this.q(
      "insertAssociation",
      "INSERT INTO reseller_associations (tenant_id, reseller_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
      [a.tenantId, a.resellerId, a.createdAt],
    );
    return r.rowCount === 1 ? "ok" : "exists";
  }
  async listResellerAssociations(tenantId: string): Promise<ResellerAssociation[]> {
    const r = await this.q(
      "associations",
      "SELECT tenant_id, reseller_id, created_at FROM reseller_associations WHERE tenant_id = $1 ORDER BY created_at, reseller_id",
      [tenantId],
    );
    return r.rows.map(pgRows.resellerAssociation);
  }

  // ---- profiles and transactions ----
  private recordTransaction(
    c: pg.PoolClient,
    tx: NewTransaction,
    type: TransactionType,
    p: { profileId: string; name: string },
    state: EnrollTransaction["state"],
    kind: EnrollTransaction["kind"],
  ) {
    return this.q(
      "insertTransaction",
      `INSERT INTO enroll_transactions (transaction_id, tenant_id, type, state, kind, profile_id, profile_name, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [tx.transactionId, tx.tenantId, type, state, kind, p.profileId, p.name, tx.at],
      c,
    );
  }

  async createProfile(p: Profile, tx: NewTransaction): Promise<"ok" | "name_conflict"> {
    try {
      await transaction(this.pool, async (c) => {
        await this.q(
          "insertProfile",
          `INSERT INTO enroll_profiles (profile_id, tenant_id, name, description, mdm_url, settings, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8)`,
          [p.profileId, p.tenantId, p.name, p.description, p.mdmUrl, p.settings ? JSON.stringify(p.settings) : null, p.createdAt, p.updatedAt],
          c,
        );
        await this.recordTransaction(c, tx, "Post", p, "Complete", "profile");
      });
      return "ok";
    } catch (e) {
      if (uniqueViolation(e) === PROFILE_NAME_CONSTRAINT) return "name_conflict";
      throw e;
    }
  }

  async updateProfile(tenantId: string, profileId: string, f: ProfileFields, tx: NewTransaction) {
    try {
      return await transaction(this.pool, async (c): Promise<"ok" | "not_found"> => {
        const changed = await this.q(
          "updateProfile",
          `UPDATE enroll_profiles SET name = $1, description = $2, mdm_url = $3, settings = $4::json, updated_at = $5
           WHERE tenant_id = $6 AND profile_id = $7`,
          [f.name, f.description, f.mdmUrl, f.settings ? JSON.stringify(f.settings) : null, tx.at, tenantId, profileId],
          c,
        );
        if (changed.rowCount === 0) return "not_found";
        await this.recordTransaction(c, tx, "Put", { profileId, name: f.name }, "Complete", "profile");
        return "ok";
      });
    } catch (e) {
      if (uniqueViolation(e) === PROFILE_NAME_CONSTRAINT) return "name_conflict" as const;
      throw e;
    }
  }

  async deleteProfile(tenantId: string, profileId: string, tx: NewTransaction): Promise<"ok" | "not_found"> {
    return transaction(this.pool, async (c): Promise<"ok" | "not_found"> => {
      const r = await this.q(
        "deleteProfileReturning",
        "DELETE FROM enroll_profiles WHERE tenant_id = $1 AND profile_id = $2 RETURNING name",
        [tenantId, profileId],
        c,
      );
      const row = r.rows[0];
      if (!row) return "not_found";
      await this.q(
        "unassignProfileDevices",
        "UPDATE enroll_devices SET profile_id = NULL, updated_at = $1 WHERE tenant_id = $2 AND profile_id = $3",
        [tx.at, tenantId, profileId],
        c,
      );
      await this.recordTransaction(c, tx, "Delete", { profileId, name: row.name as string }, "Complete", "profile");
      return "ok";
    });
  }

  async getProfile(tenantId: string, profileId: string) {
    const r = await this.q("profileById", `SELECT ${PROFILE_COLS} FROM enroll_profiles WHERE tenant_id = $1 AND profile_id = $2`, [
      tenantId,
      profileId,
    ]);
    return r.rows[0] && pgRows.profile(r.rows[0]);
  }

  /** count and page from one snapshot, as SQLite's read transaction gives them */
  private snapshot<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return transaction(this.pool, fn, { isolation: "REPEATABLE READ", readOnly: true });
  }

  async listProfiles(tenantId: string, offset: number, limit: number): Promise<Page<Profile>> {
    return this.snapshot(async (c) => {
      const total = await this.q("profileCount", "SELECT count(*)::int AS n FROM enroll_profiles WHERE tenant_id = $1", [tenantId], c);
      const page = await this.q(
        "profilesPage",
        `SELECT ${PROFILE_COLS} FROM enroll_profiles WHERE tenant_id = $1
         ORDER BY created_at DESC, profile_id DESC LIMIT $2 OFFSET $3`,
        [tenantId, limit, offset],
        c,
      );
      return { total: total.rows[0]!.n as number, items: page.rows.map(pgRows.profile) };
    });
  }

  async getTransaction(tenantId: string, transactionId: string) {
    const r = await this.q(
      "transactionById",
      `SELECT ${TX_COLS} FROM enroll_transactions WHERE tenant_id = $1 AND transaction_id = $2`,
      [tenantId, transactionId],
    );
    return r.rows[0] && pgRows.transaction(r.rows[0]);
  }

  async listTransactions(f: TransactionFilter): Promise<Page<EnrollTransaction>> {
    const args: unknown[] = [f.tenantId];
    const where = ["tenant_id = $1"];
    const param = (v: unknown) => (args.push(v), `$${args.length}`);
    if (f.type) where.push(`type = ${param(f.type)}`);
    if (f.state) where.push(`state = ${param(f.state)}`);
    if (f.profileId) where.push(`profile_id = ${param(f.profileId)}`);
    const cond = where.join(" AND ");
    return this.snapshot(async (c) => {
      const total = await this.q(undefined, `SELECT count(*)::int AS n FROM enroll_transactions WHERE ${cond}`, args, c);
      const n = args.length;
      const page = await this.q(
        undefined,
        `SELECT ${TX_COLS} FROM enroll_transactions WHERE ${cond} ORDER BY seq DESC LIMIT $${n + 1} OFFSET $${n + 2}`,
        [...args, f.limit, f.offset],
        c,
      );
      return { total: total.rows[0]!.n as number, items: page.rows.map(pgRows.transaction) };
    });
  }

  // ---- devices and the job queue ----
  async enqueueDevices(tx: NewTransaction & { profileId: string }, items: readonly NewJobItem[]): Promise<EnqueueOutcome> {
    return transaction(this.pool, async (c): Promise<EnqueueOutcome> => {
      const p = await this.q(
        "profileForShare",
        "SELECT name FROM enroll_profiles WHERE tenant_id = $1 AND profile_id = $2 FOR SHARE",
        [tx.tenantId, tx.profileId],
        c,
      );
      if (!p.rows[0]) return "profile_not_found";
      await this.recordTransaction(c, tx, "Post", { profileId: tx.profileId, name: p.rows[0].name as string }, "Processing", "devices");
      if (items.length === 0) return "ok";
      const devices = items.map((i) => i.deviceId);
      // ORDER BY ordinality: job seq follows request order, as the SQLite loop inserts them
      await this.q(
        "insertJobs",
        `INSERT INTO enroll_jobs (transaction_id, tenant_id, device_id, profile_id, user_id, user_password, state, updated_at)
         SELECT $1, $2, d, $3, u, pw, 'pending', $4
         FROM unnest($5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS i (d, u, pw, ord) ORDER BY ord`,
        [tx.transactionId, tx.tenantId, tx.profileId, tx.at, devices, items.map((i) => i.userId), items.map((i) => i.userPassword)],
        c,
      );
      await this.q(
        "insertNewDevices",
        `INSERT INTO enroll_devices (tenant_id, device_id, profile_id, state, transaction_id, applied_seq, updated_at)
         SELECT $1, d, $2, 'Processing', $3, 0, $4 FROM unnest($5::text[]) AS i (d)
         ON CONFLICT DO NOTHING`,
        [tx.tenantId, tx.profileId, tx.transactionId, tx.at, devices],
        c,
      );
      return "ok";
    });
  }

  async claimJobs(owner: string, limit: number, nowMs: number, leaseMs: number): Promise<JobItem[]> {
    const r = await this.q(
      "claimJobs",
      `UPDATE enroll_jobs SET lease_owner = $1, lease_until_ms = $2, attempts = attempts + 1
       WHERE seq IN (SELECT seq FROM enroll_jobs WHERE state = 'pending' AND lease_until_ms <= $3
                     ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
       RETURNING seq, transaction_id, tenant_id, device_id, profile_id, user_id, attempts`,
      [owner, nowMs + leaseMs, nowMs, limit],
    );
    return pgRows.claimedJobs(r.rows);
  }

  async renewJobLeases(owner: string, nowMs: number, leaseMs: number) {
    const r = await this.q("renewLeases", "UPDATE enroll_jobs SET lease_until_ms = $1 WHERE state = 'pending' AND lease_owner = $2", [
      nowMs + leaseMs,
      owner,
    ]);
    return r.rowCount ?? 0;
  }

  async releaseJobs(owner: string) {
    const r = await this.q(
      "releaseJobs",
      "UPDATE enroll_jobs SET lease_owner = NULL, lease_until_ms = 0 WHERE state = 'pending' AND lease_owner = $1",
      [owner],
    );
    return r.rowCount ?? 0;
  }

  async completeJob(seq: number, owner: string, at: string): Promise<JobResult | undefined> {
    return transaction(this.pool, async (c): Promise<JobResult | undefined> => {
      const peek = await this.q("jobTransaction", "SELECT transaction_id FROM enroll_jobs WHERE seq = $1", [seq], c);
      if (!peek.rows[0]) return undefined;
      const transactionId = peek.rows[0].transaction_id as string;
      // lock order: transaction row, job row, profile (shared), device row (see the class comment)
      await this.q("lockTransaction", "SELECT 1 FROM enroll_transactions WHERE transaction_id = $1 FOR UPDATE", [transactionId], c);
      const held = await this.q(
        "heldJob",
        // the owner alone decides, as in SQLite: a reclaim after the lease expired hands the item to another owner
        `SELECT tenant_id, device_id, profile_id, user_id, user_password FROM enroll_jobs
         WHERE seq = $1 AND state = 'pending' AND lease_owner = $2 FOR UPDATE`,
        [seq, owner],
        c,
      );
      const job = held.rows[0];
      if (!job) return undefined;
      const tenantId = job.tenant_id as string;
      const deviceId = job.device_id as string;
      const profileId = job.profile_id as string;
      const userId = str(job.user_id);

      let error: DeviceError | null = null;
      // FOR SHARE: a concurrent deleteProfile waits for this commit (and then unassigns the device), or has
      // already committed and the profile is gone here; either way no device ends up in a deleted profile
      const profile = await this.q(
        "profileForShare",
        "SELECT name FROM enroll_profiles WHERE tenant_id = $1 AND profile_id = $2 FOR SHARE",
        [tenantId, profileId],
        c,
      );
      if (profile.rowCount === 0) {
        error = jobFailure.profileDeleted();
      } else if (userId) {
        const user = await this.q("registeredUser", "SELECT 1 FROM enroll_users WHERE user_id = $1 AND state = 'registered'", [userId], c);
        if (user.rowCount === 0) error = jobFailure.userDeregistered();
      }

      const dev = await this.q(
        "deviceForUpdate",
        "SELECT state, applied_seq FROM enroll_devices WHERE tenant_id = $1 AND device_id = $2 FOR UPDATE",
        [tenantId, deviceId],
        c,
      );
      const device = dev.rows[0];
      // >=: an assignment records the queue head as its rank, outranking the items queued up to and including it
      const newer = device !== undefined && num(device.applied_seq) >= seq;
      let applied = false;
      if (!error && !newer) {
        await this.q(
          "upsertEnrolled",
          `INSERT INTO enroll_devices (tenant_id, device_id, profile_id, state, user_id, user_password, transaction_id, applied_seq, updated_at)
           VALUES ($1, $2, $3, 'Enrolled', $4, $5, $6, $7, $8)
           ON CONFLICT (tenant_id, device_id) DO UPDATE SET profile_id = excluded.profile_id, state = 'Enrolled',
             user_id = excluded.user_id, user_password = excluded.user_password, transaction_id = excluded.transaction_id,
             applied_seq = excluded.applied_seq, error_code = NULL, error_message = NULL, error_reason = NULL,
             updated_at = excluded.updated_at`,
          [tenantId, deviceId, profileId, userId, job.user_password, transactionId, seq, at],
          c,
        );
        applied = true;
      } else if (error && !newer && device && device.state !== "Enrolled") {
        // a failure never takes an enrolled device away; it only settles a device that was never enrolled
        await this.q(
          "markDeviceFailed",
          `UPDATE enroll_devices SET state = 'Failed', transaction_id = $1, applied_seq = $2, error_code = $3, error_message = $4,
             error_reason = $5, updated_at = $6 WHERE tenant_id = $7 AND device_id = $8`,
          [transactionId, seq, error.code, error.message, error.reason, at, tenantId, deviceId],
          c,
        );
        applied = true;
      }
      const state = error ? "Failed" : "Enrolled";
      await this.q(
        "finishJob",
        `UPDATE enroll_jobs SET state = 'done', outcome = $1, error_code = $2, error_message = $3, error_reason = $4,
           lease_owner = NULL, updated_at = $5 WHERE seq = $6`,
        [state, error?.code ?? null, error?.message ?? null, error?.reason ?? null, at, seq],
        c,
      );
      await this.q(
        "insertHistory",
        `INSERT INTO enroll_device_history (item_seq, tenant_id, device_id, transaction_id, outcome, applied, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [seq, tenantId, deviceId, transactionId, state, applied, at],
        c,
      );
      const pending = await this.q(
        "pendingInTransaction",
        "SELECT 1 FROM enroll_jobs WHERE transaction_id = $1 AND state = 'pending' LIMIT 1",
        [transactionId],
        c,
      );
      if (pending.rowCount === 0) {
        const failed = await this.q(
          "failedInTransaction",
          "SELECT 1 FROM enroll_jobs WHERE transaction_id = $1 AND outcome = 'Failed' LIMIT 1",
          [transactionId],
          c,
        );
        await this.q(
          "settleTransaction",
          "UPDATE enroll_transactions SET state = $1, updated_at = $2 WHERE transaction_id = $3",
          [failed.rowCount ? "Failed" : "Complete", at, transactionId],
          c,
        );
      }
      return { state, error, applied };
    });
  }

  async listTransactionDevices(tenantId: string, transactionId: string, offset: number, limit: number): Promise<DevicePage> {
    return this.snapshot(async (c) => {
      const counts = await this.q(
        "txDevicesCounts",
        `SELECT count(*)::int AS total, (count(*) FILTER (WHERE state = 'pending'))::int AS processing
         FROM enroll_jobs WHERE tenant_id = $1 AND transaction_id = $2`,
        [tenantId, transactionId],
        c,
      );
      const page = await this.q(
        "txDevicesPage",
        `SELECT device_id, profile_id, state, outcome, updated_at, error_code, error_message, error_reason
         FROM enroll_jobs WHERE tenant_id = $1 AND transaction_id = $2 ORDER BY seq LIMIT $3 OFFSET $4`,
        [tenantId, transactionId, limit, offset],
        c,
      );
      const items = page.rows.map(pgRows.jobDevice);
      return { total: counts.rows[0]!.total as number, processing: counts.rows[0]!.processing as number, items };
    });
  }

  async listDevices(tenantId: string, profileId: string | undefined, offset: number, limit: number): Promise<DevicePage> {
    const args: unknown[] = profileId === undefined ? [tenantId] : [tenantId, profileId];
    const cond = profileId === undefined ? "d.tenant_id = $1" : "d.tenant_id = $1 AND d.profile_id = $2";
    const pending =
      "EXISTS (SELECT 1 FROM enroll_jobs j WHERE j.tenant_id = d.tenant_id AND j.device_id = d.device_id AND j.state = 'pending')";
    const n = args.length;
    return this.snapshot(async (c) => {
      const counts = await this.q(
        undefined,
        `SELECT count(*)::int AS total, (count(*) FILTER (WHERE ${pending}))::int AS processing FROM enroll_devices d WHERE ${cond}`,
        args,
        c,
      );
      const rows = await this.q(
        undefined,
        `SELECT d.device_id, d.profile_id, d.state, d.updated_at, d.error_code, d.error_message, d.error_reason, ${pending} AS pending
         FROM enroll_devices d WHERE ${cond} ORDER BY d.device_id LIMIT $${n + 1} OFFSET $${n + 2}`,
        [...args, limit, offset],
        c,
      );
      const items = rows.rows.map(pgRows.device);
      return { total: counts.rows[0]!.total as number, processing: counts.rows[0]!.processing as number, items };
    });
  }

  /** the ids that are enrolled devices of the tenant, read under row locks so the answer holds until commit */
  private async lockEnrolled(c: pg.PoolClient, tenantId: string, deviceIds: readonly string[]): Promise<Set<string>> {
    // sorted, so two assignments over overlapping devices lock in the same order and cannot deadlock
    const r = await this.q(
      "lockEnrolled",
      `SELECT device_id FROM enroll_devices WHERE tenant_id = $1 AND device_id = ANY($2::text[]) AND state = 'Enrolled'
       ORDER BY device_id FOR UPDATE`,
      [tenantId, [...deviceIds]],
      c,
    );
    return new Set(r.rows.map((row) => row.device_id as string));
  }

  async assignDevices(tenantId: string, profileId: string, deviceIds: readonly string[], at: string): Promise<AssignOutcome> {
    return transaction(this.pool, async (c): Promise<AssignOutcome> => {
      const p = await this.q(
        "profileForShare",
        "SELECT name FROM enroll_profiles WHERE tenant_id = $1 AND profile_id = $2 FOR SHARE",
        [tenantId, profileId],
        c,
      );
      if (!p.rows[0]) return { ok: false, reason: "profile_not_found" };
      const enrolled = await this.lockEnrolled(c, tenantId, deviceIds);
      const missing = deviceIds.filter((d) => !enrolled.has(d));
      if (missing.length > 0) return { ok: false, reason: "devices_not_found", missing };
      await this.applyAssignment(c, tenantId, profileId, deviceIds, at);
      return { ok: true, count: deviceIds.length };
    });
  }

  async unassignDevices(tenantId: string, deviceIds: readonly string[], at: string): Promise<UnassignOutcome> {
    return transaction(this.pool, async (c): Promise<UnassignOutcome> => {
      const enrolled = await this.lockEnrolled(c, tenantId, deviceIds);
      const missing = deviceIds.filter((d) => !enrolled.has(d));
      if (missing.length > 0) return { ok: false, missing };
      await this.applyAssignment(c, tenantId, null, deviceIds, at);
      return { ok: true, count: deviceIds.length };
    });
  }

  /** An assignment outranks every upload queued before it, so an older queued item cannot undo it later. */
  private async applyAssignment(c: pg.PoolClient, tenantId: string, profileId: string | null, deviceIds: readonly string[], at: string) {
    await this.q(
      "assignDevices",
      `UPDATE enroll_devices SET profile_id = $1,
         applied_seq = GREATEST(applied_seq, (SELECT COALESCE(MAX(seq), 0) FROM enroll_jobs)), updated_at = $2
       WHERE tenant_id = $3 AND device_id = ANY($4::text[])`,
      [profileId, at, tenantId, [...deviceIds]],
      c,
    );
  }

  // ---- tenant keys ----
  async getTenantKey(tenantId: string): Promise<TenantKeyRecord | undefined> {
    const r = await this.q(
      "tenantKey",
      "SELECT tenant_id, public_key, private_key, created_at FROM tenant_encryption_keys WHERE tenant_id = $1",
      [tenantId],
    );
    return r.rows[0] && pgRows.tenantKey(r.rows[0]);
  }

  async putTenantKeyIfAbsent(k: TenantKeyRecord): Promise<TenantKeyRecord> {
    // of concurrent first uses on several instances, one key wins and every caller gets that one
    await this.q(
      "insertTenantKey",
      "INSERT INTO tenant_encryption_keys (tenant_id, public_key, private_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
      [k.tenantId, k.publicKey, k.privateKey, k.createdAt],
    );
    return (await this.getTenantKey(k.tenantId))!;
  }
}
