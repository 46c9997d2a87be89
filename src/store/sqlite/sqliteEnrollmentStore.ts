import type { DatabaseSync, StatementSync } from "node:sqlite";
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
  JtiStore,
  NewJobItem,
  TransactionFilter,
  UnassignOutcome,
} from "../types.ts";
import { jobFailure, sqliteRows, str, type Row } from "../rows.ts";
import type { ApiKeyRestrictions } from "../../domain/tenants.ts";
import type { SqlArg } from "../historyQueries.ts";
import { SqliteConnectionStore } from "./connectionStore.ts";
import { isConstraintViolation, pluck, transaction } from "./database.ts";

/**
 * Part B records on the same SQLite database as the Part A store (its `.db`), so tenants and enrollment records
 * share transactions and foreign keys. Every multi-statement operation, and the access-token insert every token
 * request makes, goes through the connection's group-commit writer (`groupCommit.ts`, shared with the Part A
 * store): it runs in its own savepoint inside an IMMEDIATE transaction, which takes the write lock up front and so
 * serialises concurrent processes on the file instead of failing them mid-way, and it is answered after COMMIT.
 * Single-statement operator writes and reads run directly.
 */
export class SqliteEnrollmentStore extends SqliteConnectionStore implements EnrollmentStore {
  private readonly s: ReturnType<SqliteEnrollmentStore["prepare"]>;

  constructor(db: DatabaseSync) {
    super(db);
    this.s = this.prepare();
  }

  private prepare() {
    const db = this.db;
    return {
      userById: db.prepare("SELECT * FROM enroll_users WHERE user_id = ?"),
      userByEmail: db.prepare("SELECT * FROM enroll_users WHERE tenant_id = ? AND email = ?"),
      usersByTenant: db.prepare("SELECT * FROM enroll_users WHERE tenant_id = ? ORDER BY email"),
      insertUser: db.prepare(
        "INSERT INTO enroll_users (user_id, tenant_id, email, state, created_at, updated_at) VALUES (?, ?, ?, 'registered', ?, ?)",
      ),
      setUserState: db.prepare("UPDATE enroll_users SET state = ?, updated_at = ? WHERE tenant_id = ? AND email = ?"),
      insertClient: db.prepare(
        "INSERT INTO enroll_clients (client_id, tenant_id, user_id, public_key, identifier_hash, read_only, rps, burst, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      clientById: db.prepare("SELECT * FROM enroll_clients WHERE client_id = ?"),
      clientsByTenant: db.prepare("SELECT * FROM enroll_clients WHERE tenant_id = ? ORDER BY created_at, client_id"),
      deleteClient: db.prepare("DELETE FROM enroll_clients WHERE client_id = ?"),
      setClientRestrictions: db.prepare("UPDATE enroll_clients SET restrictions = ? WHERE client_id = ?"),
      revokeClient: db.prepare("UPDATE enroll_clients SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL"),
      deleteClientTokens: db.prepare("DELETE FROM enroll_access_tokens WHERE client_id = ?"),
      setClientReadOnly: db.prepare("UPDATE enroll_clients SET read_only = ? WHERE client_id = ?"),
      insertToken: db.prepare(
        "INSERT INTO enroll_access_tokens (token_id, client_id, token_hash, expires_at_ms, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
      tokenById: db.prepare("SELECT * FROM enroll_access_tokens WHERE token_id = ?"),
      purgeTokens: db.prepare("DELETE FROM enroll_access_tokens WHERE expires_at_ms <= ?"),
      insertAssociation: db.prepare(
        "INSERT INTO reseller_associations (tenant_id, reseller_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
      ),
      associations: db.prepare("SELECT * FROM reseller_associations WHERE tenant_id = ? ORDER BY created_at, reseller_id"),
      insertProfile: db.prepare(
        "INSERT INTO enroll_profiles (profile_id, tenant_id, name, description, mdm_url, settings, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      updateProfile: db.prepare(
        "UPDATE enroll_profiles SET name = ?, description = ?, mdm_url = ?, settings = ?, updated_at = ? WHERE tenant_id = ? AND profile_id = ?",
      ),
      deleteProfile: db.prepare("DELETE FROM enroll_profiles WHERE tenant_id = ? AND profile_id = ?"),
      unassignProfileDevices: db.prepare(
        "UPDATE enroll_devices SET profile_id = NULL, updated_at = ? WHERE tenant_id = ? AND profile_id = ?",
      ),
      profileById: db.prepare("SELECT * FROM enroll_profiles WHERE tenant_id = ? AND profile_id = ?"),
      profilesPage: db.prepare(
        "SELECT * FROM enroll_profiles WHERE tenant_id = ? ORDER BY created_at DESC, profile_id DESC LIMIT ? OFFSET ?",
      ),
      profileCount: pluck(db.prepare("SELECT COUNT(*) FROM enroll_profiles WHERE tenant_id = ?")),
      insertTransaction: db.prepare(
        "INSERT INTO enroll_transactions (transaction_id, tenant_id, type, state, kind, profile_id, profile_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      transactionById: db.prepare("SELECT * FROM enroll_transactions WHERE tenant_id = ? AND transaction_id = ?"),
      insertJob: db.prepare(
        "INSERT INTO enroll_jobs (transaction_id, tenant_id, device_id, profile_id, user_id, user_password, state, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
      ),
      insertNewDevice: db.prepare(
        "INSERT INTO enroll_devices (tenant_id, device_id, profile_id, state, transaction_id, applied_seq, updated_at) VALUES (?, ?, ?, 'Processing', ?, 0, ?) ON CONFLICT DO NOTHING",
      ),
      claim: db.prepare(
        `UPDATE enroll_jobs SET lease_owner = ?, lease_until_ms = ?, attempts = attempts + 1
         WHERE seq IN (SELECT seq FROM enroll_jobs WHERE state = 'pending' AND lease_until_ms <= ? ORDER BY seq LIMIT ?)
         RETURNING seq, transaction_id, tenant_id, device_id, profile_id, user_id, attempts`,
      ),
      anyClaimable: pluck(db.prepare("SELECT 1 FROM enroll_jobs WHERE state = 'pending' AND lease_until_ms <= ? LIMIT 1")),
      renew: db.prepare("UPDATE enroll_jobs SET lease_until_ms = ? WHERE state = 'pending' AND lease_owner = ?"),
      release: db.prepare(
        "UPDATE enroll_jobs SET lease_owner = NULL, lease_until_ms = 0 WHERE state = 'pending' AND lease_owner = ?",
      ),
      // owner alone decides: a reclaim (after the lease expired) hands the item to another owner atomically
      heldJob: db.prepare("SELECT * FROM enroll_jobs WHERE seq = ? AND state = 'pending' AND lease_owner = ?"),
      registeredUser: pluck(db.prepare("SELECT 1 FROM enroll_users WHERE user_id = ? AND state = 'registered'")),
      deviceRow: db.prepare("SELECT state, applied_seq FROM enroll_devices WHERE tenant_id = ? AND device_id = ?"),
      upsertEnrolled: db.prepare(
        `INSERT INTO enroll_devices (tenant_id, device_id, profile_id, state, user_id, user_password, transaction_id, applied_seq, updated_at)
         VALUES (?, ?, ?, 'Enrolled', ?, ?, ?, ?, ?)
         ON CONFLICT (tenant_id, device_id) DO UPDATE SET profile_id = excluded.profile_id, state = 'Enrolled',
           user_id = excluded.user_id, user_password = excluded.user_password, transaction_id = excluded.transaction_id,
           applied_seq = excluded.applied_seq, error_code = NULL, error_message = NULL, error_reason = NULL,
           updated_at = excluded.updated_at`,
      ),
      markDeviceFailed: db.prepare(
        `UPDATE enroll_devices SET state = 'Failed', transaction_id = ?, applied_seq = ?, error_code = ?, error_message = ?,
           error_reason = ?, updated_at = ? WHERE tenant_id = ? AND device_id = ?`,
      ),
      finishJob: db.prepare(
        `UPDATE enroll_jobs SET state = 'done', outcome = ?, error_code = ?, error_message = ?, error_reason = ?,
           lease_owner = NULL, updated_at = ? WHERE seq = ?`,
      ),
      insertHistory: db.prepare(
        "INSERT INTO enroll_device_history (item_seq, tenant_id, device_id, transaction_id, outcome, applied, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      pendingInTransaction: pluck(db.prepare("SELECT 1 FROM enroll_jobs WHERE transaction_id = ? AND state = 'pending' LIMIT 1")),
      failedInTransaction: pluck(db.prepare("SELECT 1 FROM enroll_jobs WHERE transaction_id = ? AND outcome = 'Failed' LIMIT 1")),
      settleTransaction: db.prepare("UPDATE enroll_transactions SET state = ?, updated_at = ? WHERE transaction_id = ?"),
      txDevicesPage: db.prepare(
        "SELECT * FROM enroll_jobs WHERE tenant_id = ? AND transaction_id = ? ORDER BY seq LIMIT ? OFFSET ?",
      ),
      txDevicesCounts: db.prepare(
        "SELECT COUNT(*) AS total, COALESCE(SUM(state = 'pending'), 0) AS processing FROM enroll_jobs WHERE tenant_id = ? AND transaction_id = ?",
      ),
      enrolledDevice: pluck(db.prepare("SELECT 1 FROM enroll_devices WHERE tenant_id = ? AND device_id = ? AND state = 'Enrolled'")),
      queueHead: pluck(db.prepare("SELECT COALESCE(MAX(seq), 0) FROM enroll_jobs")),
      assignDevice: db.prepare(
        "UPDATE enroll_devices SET profile_id = ?, applied_seq = MAX(applied_seq, ?), updated_at = ? WHERE tenant_id = ? AND device_id = ?",
      ),
      tenantKey: db.prepare("SELECT * FROM tenant_encryption_keys WHERE tenant_id = ?"),
      insertTenantKey: db.prepare(
        "INSERT INTO tenant_encryption_keys (tenant_id, public_key, private_key, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
      ),
    };
  }

  // ---- users ----
  async registerUser(u: { userId: string; tenantId: string; email: string; at: string }): Promise<EnrollmentUser> {
    return this.writer.run(() => {
      const existing = this.s.userByEmail.get(u.tenantId, u.email) as Row | undefined;
      if (existing) this.s.setUserState.run("registered", u.at, u.tenantId, u.email);
      else this.s.insertUser.run(u.userId, u.tenantId, u.email, u.at, u.at);
      return sqliteRows.user(this.s.userByEmail.get(u.tenantId, u.email) as Row);
    });
  }
  async getUser(userId: string) {
    const r = this.s.userById.get(userId) as Row | undefined;
    return r && sqliteRows.user(r);
  }
  async getUserByEmail(tenantId: string, email: string) {
    const r = this.s.userByEmail.get(tenantId, email) as Row | undefined;
    return r && sqliteRows.user(r);
  }
  async listUsers(tenantId: string) {
    return (this.s.usersByTenant.all(tenantId) as Row[]).map(sqliteRows.user);
  }
  async setUserState(tenantId: string, email: string, state: UserState, at: string) {
    return this.s.setUserState.run(state, at, tenantId, email).changes === 1;
  }

  // ---- clients and tokens ----
  async createClient(c: NewApiClient) {
    this.s.insertClient.run(
      c.clientId, c.tenantId, c.userId, c.publicKey, c.identifierHash, c.readOnly ? 1 : 0, c.rps, c.burst, c.createdAt,
    );
  }
  async getClient(clientId: string) {
    const r = this.s.clientById.get(clientId) as Row | undefined;
    return r && sqliteRows.client(r);
  }
  async listClients(tenantId: string) {
    return (this.s.clientsByTenant.all(tenantId) as Row[]).map(sqliteRows.client);
  }
  async deleteClient(clientId: string) {
    return this.s.deleteClient.run(clientId).changes === 1;
  }
  async setClientRestrictions(clientId: string, r: ApiKeyRestrictions | null) {
    return this.s.setClientRestrictions.run(r ? JSON.stringify(r) : null, clientId).changes === 1;
  }
  async revokeClient(clientId: string, at: string) {
    return this.writer.run(() => {
      if (this.s.revokeClient.run(at, clientId).changes !== 1) return false;
      this.s.deleteClientTokens.run(clientId);
      return true;
    });
  }
  async setClientReadOnly(clientId: string, readOnly: boolean) {
    return this.s.setClientReadOnly.run(readOnly ? 1 : 0, clientId).changes === 1;
  }
  async createAccessToken(t: AccessTokenRecord) {
    const { tokenId, clientId, tokenHash, expiresAtMs, createdAt } = t;
    await this.writer.run(() => {
      this.s.insertToken.run(tokenId, clientId, tokenHash, expiresAtMs, createdAt);
    });
  }
  async getAccessToken(tokenId: string): Promise<AccessTokenRecord | undefined> {
    const r = this.s.tokenById.get(tokenId) as Row | undefined;
    return r && sqliteRows.accessToken(r);
  }
  async purgeExpiredAccessTokens(nowMs: number) {
    return Number(this.s.purgeTokens.run(nowMs).changes);
  }

  // ---- resellers ----
  async associateReseller(a: ResellerAssociation): Promise<"ok" | "exists"> {
    return this.s.insertAssociation.run(a.tenantId, a.resellerId, a.createdAt).changes === 1 ? "ok" : "exists";
  }
  async listResellerAssociations(tenantId: string): Promise<ResellerAssociation[]> {
    return (this.s.associations.all(tenantId) as Row[]).map(sqliteRows.resellerAssociation);
  }

  // ---- profiles and transactions ----
  private recordTransaction(tx: NewTransaction, type: TransactionType, p: { profileId: string; name: string }, state: string, kind: string) {
    this.s.insertTransaction.run(tx.transactionId, tx.tenantId, type, state, kind, p.profileId, p.name, tx.at, tx.at);
  }

  async createProfile(p: Profile, tx: NewTransaction): Promise<"ok" | "name_conflict"> {
    try {
      const settings = p.settings ? JSON.stringify(p.settings) : null;
      await this.writer.run(() => {
        this.s.insertProfile.run(p.profileId, p.tenantId, p.name, p.description, p.mdmUrl, settings, p.createdAt, p.updatedAt);
        this.recordTransaction(tx, "Post", p, "Complete", "profile");
      });
      return "ok";
    } catch (e) {
      if (isConstraintViolation(e, "unique")) return "name_conflict";
      throw e;
    }
  }

  async updateProfile(tenantId: string, profileId: string, f: ProfileFields, tx: NewTransaction) {
    try {
      const settings = f.settings ? JSON.stringify(f.settings) : null;
      return await this.writer.run((): "ok" | "not_found" => {
        const changed = this.s.updateProfile.run(f.name, f.description, f.mdmUrl, settings, tx.at, tenantId, profileId).changes;
        if (changed === 0) return "not_found";
        this.recordTransaction(tx, "Put", { profileId, name: f.name }, "Complete", "profile");
        return "ok";
      });
    } catch (e) {
      if (isConstraintViolation(e, "unique")) return "name_conflict" as const;
      throw e;
    }
  }

  async deleteProfile(tenantId: string, profileId: string, tx: NewTransaction): Promise<"ok" | "not_found"> {
    return this.writer.run((): "ok" | "not_found" => {
      const r = this.s.profileById.get(tenantId, profileId) as Row | undefined;
      if (!r) return "not_found";
      this.s.deleteProfile.run(tenantId, profileId);
      this.s.unassignProfileDevices.run(tx.at, tenantId, profileId);
      this.recordTransaction(tx, "Delete", { profileId, name: r.name as string }, "Complete", "profile");
      return "ok";
    });
  }

  async getProfile(tenantId: string, profileId: string) {
    const r = this.s.profileById.get(tenantId, profileId) as Row | undefined;
    return r && sqliteRows.profile(r);
  }

  async listProfiles(tenantId: string, offset: number, limit: number): Promise<Page<Profile>> {
    return transaction(this.db, "deferred", () => ({
      total: this.s.profileCount.get(tenantId) as number,
      items: (this.s.profilesPage.all(tenantId, limit, offset) as Row[]).map(sqliteRows.profile),
    }));
  }

  async getTransaction(tenantId: string, transactionId: string) {
    const r = this.s.transactionById.get(tenantId, transactionId) as Row | undefined;
    return r && sqliteRows.transaction(r);
  }

  async listTransactions(f: TransactionFilter): Promise<Page<EnrollTransaction>> {
    const where = ["tenant_id = ?"];
    const args: SqlArg[] = [f.tenantId];
    if (f.type) (where.push("type = ?"), args.push(f.type));
    if (f.state) (where.push("state = ?"), args.push(f.state));
    if (f.profileId) (where.push("profile_id = ?"), args.push(f.profileId));
    const cond = where.join(" AND ");
    // count and page in one read transaction, so totalCount describes the page it came with
    return transaction(this.db, "deferred", () => ({
      total: pluck(this.db.prepare(`SELECT COUNT(*) FROM enroll_transactions WHERE ${cond}`)).get(...args) as number,
      items: (
        this.db
          .prepare(`SELECT * FROM enroll_transactions WHERE ${cond} ORDER BY seq DESC LIMIT ? OFFSET ?`)
          .all(...args, f.limit, f.offset) as Row[]
      ).map(sqliteRows.transaction),
    }));
  }

  // ---- devices and the job queue ----
  async enqueueDevices(tx: NewTransaction & { profileId: string }, items: readonly NewJobItem[]): Promise<EnqueueOutcome> {
    return this.writer.run((): EnqueueOutcome => {
      const p = this.s.profileById.get(tx.tenantId, tx.profileId) as Row | undefined;
      if (!p) return "profile_not_found";
      this.recordTransaction(tx, "Post", { profileId: tx.profileId, name: p.name as string }, "Processing", "devices");
      for (const it of items) {
        this.s.insertJob.run(tx.transactionId, tx.tenantId, it.deviceId, tx.profileId, it.userId, it.userPassword, tx.at);
        this.s.insertNewDevice.run(tx.tenantId, it.deviceId, tx.profileId, tx.transactionId, tx.at);
      }
      return "ok";
    });
  }

  async claimJobs(owner: string, limit: number, nowMs: number, leaseMs: number): Promise<JobItem[]> {
    // an idle queue is the common case: a plain read answers it without taking the write lock every poll
    if (!this.s.anyClaimable.get(nowMs)) return [];
    const rows = await this.writer.run(() => this.s.claim.all(owner, nowMs + leaseMs, nowMs, limit) as Row[]);
    return sqliteRows.claimedJobs(rows);
  }

  async renewJobLeases(owner: string, nowMs: number, leaseMs: number) {
    return Number(this.s.renew.run(nowMs + leaseMs, owner).changes);
  }

  async releaseJobs(owner: string) {
    return Number(this.s.release.run(owner).changes);
  }

  async completeJob(seq: number, owner: string, at: string): Promise<JobResult | undefined> {
    return this.writer.run((): JobResult | undefined => {
      const job = this.s.heldJob.get(seq, owner) as Row | undefined;
      if (!job) return undefined;
      const tenantId = job.tenant_id as string;
      const deviceId = job.device_id as string;
      const transactionId = job.transaction_id as string;
      const profileId = job.profile_id as string;
      const userId = str(job.user_id);

      let error: DeviceError | null = null;
      if (!this.s.profileById.get(tenantId, profileId)) {
        error = jobFailure.profileDeleted();
      } else if (userId && !this.s.registeredUser.get(userId)) {
        error = jobFailure.userDeregistered();
      }

      const device = this.s.deviceRow.get(tenantId, deviceId) as Row | undefined;
      // >=: an assignment records the queue head as its rank, outranking the items queued up to and including it
      const newer = device !== undefined && (device.applied_seq as number) >= seq;
      let applied = false;
      if (!error && !newer) {
        this.s.upsertEnrolled.run(tenantId, deviceId, profileId, userId, str(job.user_password), transactionId, seq, at);
        applied = true;
      } else if (error && !newer && device && device.state !== "Enrolled") {
        // a failure never takes an enrolled device away; it only settles a device that was never enrolled
        this.s.markDeviceFailed.run(transactionId, seq, error.code, error.message, error.reason, at, tenantId, deviceId);
        applied = true;
      }
      const state = error ? "Failed" : "Enrolled";
      this.s.finishJob.run(state, error?.code ?? null, error?.message ?? null, error?.reason ?? null, at, seq);
      this.s.insertHistory.run(seq, tenantId, deviceId, transactionId, state, applied ? 1 : 0, at);
      if (!this.s.pendingInTransaction.get(transactionId)) {
        this.s.settleTransaction.run(this.s.failedInTransaction.get(transactionId) ? "Failed" : "Complete", at, transactionId);
      }
      return { state, error, applied };
    });
  }

  async listTransactionDevices(tenantId: string, transactionId: string, offset: number, limit: number): Promise<DevicePage> {
    return transaction(this.db, "deferred", () => {
      const counts = this.s.txDevicesCounts.get(tenantId, transactionId) as { total: number; processing: number };
      const items = (this.s.txDevicesPage.all(tenantId, transactionId, limit, offset) as Row[]).map(sqliteRows.jobDevice);
      return { total: counts.total, processing: counts.processing, items };
    });
  }

  async listDevices(tenantId: string, profileId: string | undefined, offset: number, limit: number): Promise<DevicePage> {
    const cond = profileId === undefined ? "d.tenant_id = ?" : "d.tenant_id = ? AND d.profile_id = ?";
    const args: SqlArg[] = profileId === undefined ? [tenantId] : [tenantId, profileId];
    const pending =
      "EXISTS (SELECT 1 FROM enroll_jobs j WHERE j.tenant_id = d.tenant_id AND j.device_id = d.device_id AND j.state = 'pending')";
    return transaction(this.db, "deferred", () => {
      const counts = this.db
        .prepare(`SELECT COUNT(*) AS total, COALESCE(SUM(${pending}), 0) AS processing FROM enroll_devices d WHERE ${cond}`)
        .get(...args) as { total: number; processing: number };
      const rows = this.db
        .prepare(`SELECT d.*, ${pending} AS pending FROM enroll_devices d WHERE ${cond} ORDER BY d.device_id LIMIT ? OFFSET ?`)
        .all(...args, limit, offset) as Row[];
      const items = rows.map(sqliteRows.device);
      return { total: counts.total, processing: counts.processing, items };
    });
  }

  async assignDevices(tenantId: string, profileId: string, deviceIds: readonly string[], at: string): Promise<AssignOutcome> {
    return this.writer.run((): AssignOutcome => {
      if (!this.s.profileById.get(tenantId, profileId)) return { ok: false, reason: "profile_not_found" };
      const missing = deviceIds.filter((d) => !this.s.enrolledDevice.get(tenantId, d));
      if (missing.length > 0) return { ok: false, reason: "devices_not_found", missing };
      this.applyAssignment(tenantId, profileId, deviceIds, at);
      return { ok: true, count: deviceIds.length };
    });
  }

  async unassignDevices(tenantId: string, deviceIds: readonly string[], at: string): Promise<UnassignOutcome> {
    return this.writer.run((): UnassignOutcome => {
      const missing = deviceIds.filter((d) => !this.s.enrolledDevice.get(tenantId, d));
      if (missing.length > 0) return { ok: false, missing };
      this.applyAssignment(tenantId, null, deviceIds, at);
      return { ok: true, count: deviceIds.length };
    });
  }

  /** An assignment outranks every upload queued before it, so an older queued item cannot undo it later. */
  private applyAssignment(tenantId: string, profileId: string | null, deviceIds: readonly string[], at: string) {
    const head = this.s.queueHead.get() as number;
    for (const d of deviceIds) this.s.assignDevice.run(profileId, head, at, tenantId, d);
  }

  // ---- tenant keys ----
  async getTenantKey(tenantId: string): Promise<TenantKeyRecord | undefined> {
    const r = this.s.tenantKey.get(tenantId) as Row | undefined;
    return r && sqliteRows.tenantKey(r);
  }

  async putTenantKeyIfAbsent(k: TenantKeyRecord): Promise<TenantKeyRecord> {
    this.s.insertTenantKey.run(k.tenantId, k.publicKey, k.privateKey, k.createdAt);
    return (await this.getTenantKey(k.tenantId))!;
  }
}

/**
 * Seen JWT ids in the SQLite file, so every process on it (`--workers`, CLI) refuses a replay. Expired ids are
 * deleted every `purgeEvery` insertions rather than on a timer: the table's size then follows its write rate.
 * Writes go through the connection's group-commit writer: "fresh" is answered only once the id is committed.
 */
export class SqliteJtiStore extends SqliteConnectionStore implements JtiStore {
  private readonly upsert: StatementSync;
  private readonly purge: StatementSync;
  private inserts = 0;

  constructor(
    db: DatabaseSync,
    private readonly purgeEvery = 1000,
  ) {
    super(db);
    // an expired entry for the same jti is replaced (a reuse after expiry is no replay: the JWT itself is stale)
    this.upsert = db.prepare(
      "INSERT INTO jti_seen (jti, expires_at_ms) VALUES (?, ?) ON CONFLICT (jti) DO UPDATE SET expires_at_ms = excluded.expires_at_ms WHERE jti_seen.expires_at_ms <= ?",
    );
    this.purge = db.prepare("DELETE FROM jti_seen WHERE expires_at_ms <= ?");
  }

  async remember(jti: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    return this.writer.run(() => {
      const fresh = this.upsert.run(jti, expiresAtMs, nowMs).changes === 1;
      if (fresh && ++this.inserts % this.purgeEvery === 0) this.purge.run(nowMs);
      return fresh;
    });
  }
}
