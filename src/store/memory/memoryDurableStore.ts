import type { ReferenceValue } from "../../attestation/types.ts";
import { isPortalPageRoute, type ActivityEntry } from "../../domain/activity.ts";
import type { ApiKeyRecord, ApiKeyRestrictions, NewTenant, Tenant, TenantState } from "../../domain/tenants.ts";
import type { StoredVerdict } from "../../domain/verdicts.ts";
import type { AuditRecord } from "../../domain/audit.ts";
import { auditMatches, MAX_AUDIT_PAGE } from "../auditQueries.ts";
import type {
  ActivityAppendResult,
  ActivityFilter,
  AuditFilter,
  ApiKeyChanges,
  DeviceVerdictDecision,
  DurableStore,
  FailureCount,
  ReferenceSetQuery,
  RequestErrorCount,
  StatsWindow,
  StatusCount,
  StoredActivityEntry,
  TopOf,
  VerdictCount,
  VerdictQuery,
  WebhookEndpointChanges,
} from "../types.ts";
import type { DevicePin, DeviceRecord } from "../../domain/devices.ts";
import type { StoredReferenceSet } from "../../domain/referenceValues.ts";
import type { StoredPlayApp } from "../../domain/playApps.ts";
import type { NewWebhookDelivery, StoredWebhookEndpoint, WebhookAttempt, WebhookAttemptOutcome, WebhookDelivery, WebhookPlan } from "../../domain/webhooks.ts";
import type { TenantPolicyVersion } from "../../domain/tenantPolicy.ts";
import type { AppAttestKeyEffect, AppAttestRefreshOutcome, StoredAppAttestKey, StoredIosApp } from "../../domain/iosApps.ts";
import type { PasskeyChallenge, PortalInvite, PortalPasskey, PortalRole, PortalSession, PortalUser, PortalUserState, SsoMapping } from "../../domain/portal.ts";
import { hourOf, MAX_HISTORY_PAGE, MAX_TOP, STATS_REASON_CHARS, verdictStatsKey } from "../historyQueries.ts";

/** A unique or foreign-key rule broken: the memory backend's counterpart of a SQL constraint violation. */
export class MemoryConstraintError extends Error {
  override name = "MemoryConstraintError";
}

/** a copy, so a caller changing what it got or gave changes nothing stored (as with the SQL backends) */
const copyPlayApp = (a: StoredPlayApp): StoredPlayApp => ({
  ...a,
  policy: { ...a.policy, certDigests: [...a.policy.certDigests], require: { ...a.policy.require } },
});

const deviceKey = (tenantId: string, deviceId: string) => JSON.stringify([tenantId, deviceId]);

/** Bytewise order, as SQLite compares TEXT and PostgreSQL does under COLLATE "C" (for the ASCII this holds). */
/** the activity table's NOT NULL columns (src/store/sqlite/migrations/001_part_a.sql) */
const ACTIVITY_REQUIRED = ["time", "method", "route", "status", "latencyMs", "remoteAddress"] as const satisfies readonly (keyof ActivityEntry)[];

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The counter tables' GROUP BY over the rows themselves: `key` gives a row's group (or undefined to leave it out)
 * and its hour; each group sums its rows from `fromHour` (total) and from `recentFromHour` (recent).
 */
function countBy<T, K>(rows: Iterable<T>, key: (row: T) => { group: K; hour: string } | undefined, fromHour: string, recentFromHour = fromHour) {
  const groups = new Map<string, { group: K; total: number; recent: number }>();
  for (const row of rows) {
    const k = key(row);
    if (!k || k.hour < fromHour) continue;
    const id = JSON.stringify(k.group);
    const g = groups.get(id) ?? { group: k.group, total: 0, recent: 0 };
    g.total++;
    if (k.hour >= recentFromHour) g.recent++;
    groups.set(id, g);
  }
  return [...groups.values()];
}

const top = (n: number) => Math.min(Math.max(Math.trunc(n), 1), MAX_TOP);

/**
 * Durable records in process memory: a full backend for tests and the conformance suite's reference. It enforces
 * the same constraints as the SQL schemas (unique tenant name and customer id, unique key id, keys of existing
 * tenants, unique verdict id and activity error id), orders lists as the SQL stores do, and hands out copies so a
 * caller mutating a result cannot change what is stored.
 */
export class MemoryDurableStore implements DurableStore {
  readonly kind = "memory";
  private readonly tenants = new Map<string, Tenant>();
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly verdicts = new Map<string, StoredVerdict>();
  private readonly activity: ActivityEntry[] = [];
  private readonly activityErrorIds = new Set<string>();
  private readonly refvals = new Map<string, StoredReferenceSet>();
  private readonly devices = new Map<string, DeviceRecord>();
  private closed = false;

  private check(): void {
    if (this.closed) throw new Error("memory store is closed");
  }

  async ping(): Promise<void> {
    this.check();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  // ---- tenants and keys ----
  async createTenant(t: NewTenant): Promise<Tenant> {
    this.check();
    for (const x of this.tenants.values()) {
      if (x.tenantId === t.tenantId || x.name === t.name || x.customerId === t.customerId) {
        throw new MemoryConstraintError(`tenant ${t.name}: id, name or customer id already exists`);
      }
    }
    const tenant: Tenant = { ...t, state: "active", enrollmentEnabled: t.kind === "customer" };
    this.tenants.set(t.tenantId, tenant);
    return { ...tenant };
  }

  private findTenant(pred: (t: Tenant) => boolean): Tenant | undefined {
    for (const t of this.tenants.values()) if (pred(t)) return { ...t };
    return undefined;
  }

  async getTenant(id: string) {
    return this.findTenant((t) => t.tenantId === id);
  }
  async getTenantByName(name: string) {
    return this.findTenant((t) => t.name === name);
  }
  async getTenantByCustomerId(customerId: string) {
    return this.findTenant((t) => t.customerId === customerId);
  }
  async listTenants() {
    return [...this.tenants.values()].sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.name, b.name)).map((t) => ({ ...t }));
  }
  async setTenantState(name: string, state: TenantState) {
    for (const t of this.tenants.values()) if (t.name === name) return (t.state = state), true;
    return false;
  }
  async setEnrollmentEnabled(name: string, enabled: boolean) {
    for (const t of this.tenants.values()) if (t.name === name) return (t.enrollmentEnabled = enabled), true;
    return false;
  }

  async createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions" | "lastUsedAt" | "label"> & { label?: string | null }, webhooks: readonly NewWebhookDelivery[] = []) {
    this.check();
    if (this.keys.has(k.keyId)) throw new MemoryConstraintError(`api key ${k.keyId} already exists`);
    if (!this.tenants.has(k.tenantId)) throw new MemoryConstraintError(`api key ${k.keyId}: no tenant ${k.tenantId}`);
    this.checkDeliveries(webhooks);
    this.keys.set(k.keyId, { ...k, label: k.label ?? null, revokedAt: null, restrictions: null, lastUsedAt: null });
    this.putDeliveries(webhooks);
  }
  async touchApiKeys(uses: readonly { keyId: string; at: string }[]) {
    for (const u of uses) {
      const k = this.keys.get(u.keyId);
      if (k && (k.lastUsedAt === null || k.lastUsedAt < u.at)) k.lastUsedAt = u.at;
    }
  }
  private copyKey(k: ApiKeyRecord): ApiKeyRecord {
    return { ...k, restrictions: k.restrictions && structuredClone(k.restrictions) };
  }
  async getApiKey(keyId: string) {
    const k = this.keys.get(keyId);
    return k && this.copyKey(k);
  }
  async listApiKeys(tenantId: string) {
    // insertion order breaks ties, as SQLite's rowid and the PostgreSQL seq column do
    return [...this.keys.values()]
      .filter((k) => k.tenantId === tenantId)
      .map((k, i) => [k, i] as const)
      .sort(([a, i], [b, j]) => cmp(a.createdAt, b.createdAt) || i - j)
      .map(([k]) => this.copyKey(k));
  }
  async revokeApiKey(keyId: string, at: string, webhooks: readonly NewWebhookDelivery[] = []) {
    const k = this.keys.get(keyId);
    if (!k || k.revokedAt !== null) return false;
    this.checkDeliveries(webhooks);
    k.revokedAt = at;
    this.putDeliveries(webhooks);
    return true;
  }
  async setApiKeyRestrictions(keyId: string, r: ApiKeyRestrictions | null) {
    const k = this.keys.get(keyId);
    if (!k) return false;
    k.restrictions = r && structuredClone(r);
    return true;
  }
  async updateApiKey(keyId: string, f: ApiKeyChanges) {
    const k = this.keys.get(keyId);
    if (!k || k.revokedAt !== null) return false;
    if (f.rps !== undefined) k.rps = f.rps;
    if (f.burst !== undefined) k.burst = f.burst;
    if (f.label !== undefined) k.label = f.label;
    if (f.restrictions !== undefined) k.restrictions = f.restrictions && structuredClone(f.restrictions);
    return true;
  }

  // ---- verdicts ----
  async saveVerdict(v: StoredVerdict, webhooks?: WebhookPlan): Promise<void> {
    this.check();
    if (this.verdicts.has(v.objectId)) throw new MemoryConstraintError(`verdict ${v.objectId} already exists`);
    const rows = webhooks?.(v) ?? [];
    this.checkDeliveries(rows);
    this.verdicts.set(v.objectId, structuredClone(v));
    this.putDeliveries(rows);
  }
  // ---- per-device memory: synchronous between awaits, so each save sees the one before it ----
  async getDevice(tenantId: string, deviceId: string): Promise<DeviceRecord | undefined> {
    this.check();
    const d = this.devices.get(deviceKey(tenantId, deviceId));
    return d && structuredClone(d);
  }
  async listDevices(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<DeviceRecord[]> {
    this.check();
    const after = q.after ?? "";
    return [...this.devices.values()]
      .filter((d) => d.tenantId === tenantId && d.deviceId > after)
      .sort((a, b) => (a.deviceId < b.deviceId ? -1 : 1))
      .slice(0, q.limit)
      .map((d) => structuredClone(d));
  }
  async saveDeviceVerdict(tenantId: string, deviceId: string, decide: DeviceVerdictDecision, webhooks?: WebhookPlan): Promise<StoredVerdict> {
    this.check();
    const key = deviceKey(tenantId, deviceId);
    const current = this.devices.get(key);
    const { verdict, device } = decide(current && structuredClone(current));
    if (this.verdicts.has(verdict.objectId)) throw new MemoryConstraintError(`verdict ${verdict.objectId} already exists`);
    const rows = webhooks?.(verdict) ?? [];
    this.checkDeliveries(rows);
    this.devices.set(key, { ...structuredClone(device), tenantId, deviceId, resets: current?.resets ?? 0 });
    this.verdicts.set(verdict.objectId, structuredClone(verdict));
    this.putDeliveries(rows);
    return verdict;
  }
  async resetDevicePin(tenantId: string, deviceId: string, audit: (previousPin: DevicePin | null) => AuditRecord, webhooks: readonly NewWebhookDelivery[] = []): Promise<AuditRecord | undefined> {
    this.check();
    const d = this.devices.get(deviceKey(tenantId, deviceId));
    if (!d) return undefined;
    this.checkDeliveries(webhooks);
    const record = audit(structuredClone(d.pin));
    await this.appendAudit(record);
    this.putDeliveries(webhooks);
    d.pin = null;
    d.resets += 1;
    return record;
  }

  async getVerdict(objectId: string): Promise<StoredVerdict | undefined> {
    const v = this.verdicts.get(objectId);
    return v && structuredClone(v);
  }
  async listVerdicts(q: VerdictQuery): Promise<StoredVerdict[]> {
    const newestFirst = (a: StoredVerdict, b: StoredVerdict) => cmp(b.createdAt, a.createdAt) || cmp(b.objectId, a.objectId);
    const after = q.before;
    const newer = q.after;
    return [...this.verdicts.values()]
      .filter(
        (v) =>
          (q.tenantId === undefined || v.tenantId === q.tenantId) &&
          (q.verdict === undefined || v.record.verdict === q.verdict) &&
          (q.status === undefined || v.record.status === q.status) &&
          (q.format === undefined || v.format === q.format) &&
          (q.from === undefined || v.createdAt >= q.from) &&
          (q.to === undefined || v.createdAt < q.to) &&
          (!q.device || v.record.chipId === q.device || v.record.IMEI === q.device) &&
          (!after || cmp(v.createdAt, after.createdAt) < 0 || (v.createdAt === after.createdAt && cmp(v.objectId, after.objectId) < 0)) &&
          (!newer || cmp(v.createdAt, newer.createdAt) > 0 || (v.createdAt === newer.createdAt && cmp(v.objectId, newer.objectId) > 0)),
      )
      .sort(newer ? (a, b) => newestFirst(b, a) : newestFirst)
      .slice(0, Math.min(Math.max(Math.trunc(q.limit), 1), MAX_HISTORY_PAGE))
      .map((v) => structuredClone(v));
  }

  // ---- the overview's counts: computed from the rows (the SQL stores keep counters beside them) ----
  async verdictCounts(q: StatsWindow & { bucket: "hour" | "day" }): Promise<VerdictCount[]> {
    const len = q.bucket === "hour" ? 13 : 10;
    return countBy(
      this.verdicts.values(),
      (v) => (q.tenantId === undefined || v.tenantId === q.tenantId ? { group: [v.createdAt.slice(0, len), v.record.verdict] as const, hour: hourOf(v.createdAt) } : undefined),
      q.fromHour,
    )
      .map((g) => ({ bucket: g.group[0], verdict: g.group[1], n: g.total }))
      .sort((a, b) => cmp(a.bucket, b.bucket) || cmp(a.verdict, b.verdict));
  }
  async topFailures(q: StatsWindow & TopOf): Promise<FailureCount[]> {
    return countBy(
      this.verdicts.values(),
      (v) => {
        if ((q.tenantId !== undefined && v.tenantId !== q.tenantId) || v.record.verdict === "Yes") return undefined;
        const k = verdictStatsKey(v);
        return { group: [k.verdict, k.status, [...k.reason].slice(0, STATS_REASON_CHARS).join("")] as const, hour: k.hour };
      },
      q.fromHour,
      q.recentFromHour,
    )
      .map((g) => ({ verdict: g.group[0] as FailureCount["verdict"], status: g.group[1], reason: g.group[2], total: g.total, recent: g.recent }))
      .sort((a, b) => b.total - a.total || b.recent - a.recent || cmp(a.verdict, b.verdict) || cmp(a.status, b.status) || cmp(a.reason, b.reason))
      .slice(0, top(q.limit));
  }
  async requestCounts(q: StatsWindow & { recentFromHour: string }): Promise<StatusCount[]> {
    return countBy(
      this.activity,
      (e) => (q.tenantId === undefined || e.tenantId === q.tenantId ? { group: e.status, hour: hourOf(e.time) } : undefined),
      q.fromHour,
      q.recentFromHour,
    )
      .map((g) => ({ status: g.group, total: g.total, recent: g.recent }))
      .sort((a, b) => a.status - b.status);
  }
  async topRequestErrors(q: StatsWindow & TopOf): Promise<RequestErrorCount[]> {
    return countBy(
      this.activity,
      (e) =>
        (q.tenantId === undefined || e.tenantId === q.tenantId) && e.status >= 400
          ? { group: [e.status, e.code ?? "", e.method, e.route] as const, hour: hourOf(e.time) }
          : undefined,
      q.fromHour,
      q.recentFromHour,
    )
      .map((g) => ({ status: g.group[0], code: g.group[1] || null, method: g.group[2], route: g.group[3], total: g.total, recent: g.recent }))
      .sort(
        (a, b) =>
          b.total - a.total || b.recent - a.recent || a.status - b.status || cmp(a.code ?? "", b.code ?? "") || cmp(a.method, b.method) || cmp(a.route, b.route),
      )
      .slice(0, top(q.limit));
  }

  // ---- reference values ----
  async upsertReferenceValues(values: readonly ReferenceValue[], at: string, tenantId: string | null = null): Promise<number> {
    this.check();
    if (tenantId !== null && !this.tenants.has(tenantId)) throw new MemoryConstraintError(`no tenant ${tenantId}`);
    for (const v of values) {
      const set: StoredReferenceSet = { tenantId, ...structuredClone(v), updatedAt: at };
      this.refvals.set(JSON.stringify([tenantId, v.model, v.firmwareVersion]), set);
    }
    return values.length;
  }
  async listReferenceValues(): Promise<ReferenceValue[]> {
    return (await this.listReferenceSets({ tenantId: null })).map(({ model, firmwareVersion, measurements }) => ({ model, firmwareVersion, measurements }));
  }
  async listReferenceSets(q: ReferenceSetQuery): Promise<StoredReferenceSet[]> {
    this.check();
    const byPair = (a: StoredReferenceSet, b: StoredReferenceSet) => cmp(a.model, b.model) || cmp(a.firmwareVersion, b.firmwareVersion);
    const all = [...this.refvals.values()];
    if (q.tenantId === undefined) {
      return all.sort((a, b) => (a.tenantId === b.tenantId ? 0 : a.tenantId === null ? -1 : b.tenantId === null ? 1 : cmp(a.tenantId, b.tenantId)) || byPair(a, b)).map((v) => structuredClone(v));
    }
    const after = q.after;
    const found = all
      .filter((v) => v.tenantId === q.tenantId && (q.model === undefined || v.model === q.model))
      .filter((v) => !after || cmp(v.model, after.model) > 0 || (v.model === after.model && cmp(v.firmwareVersion, after.firmwareVersion) > 0))
      .sort(byPair);
    const limit = q.limit === undefined ? found.length : Math.min(Math.max(Math.trunc(q.limit), 1), MAX_HISTORY_PAGE);
    return found.slice(0, limit).map((v) => structuredClone(v));
  }
  async deleteReferenceSet(tenantId: string | null, model: string, firmwareVersion: string): Promise<boolean> {
    this.check();
    return this.refvals.delete(JSON.stringify([tenantId, model, firmwareVersion]));
  }

  // ---- activity ----
  async appendActivity(entries: readonly ActivityEntry[]): Promise<ActivityAppendResult> {
    this.check();
    // as the SQL stores: each entry on its own, refused when it breaks the table's NOT NULL columns, skipped when
    // its error id is already logged
    const refused: ActivityAppendResult["refused"] = [];
    for (const e of entries) {
      const missing = ACTIVITY_REQUIRED.find((k) => e[k] === null || e[k] === undefined);
      if (missing) {
        refused.push({ entry: e, error: new MemoryConstraintError(`NOT NULL constraint failed: activity.${missing}`) });
        continue;
      }
      if (e.errorId !== null) {
        if (this.activityErrorIds.has(e.errorId)) continue;
        this.activityErrorIds.add(e.errorId);
      }
      this.activity.push({ ...e });
    }
    return { refused };
  }
  async queryActivity(f: ActivityFilter): Promise<StoredActivityEntry[]> {
    const limit = Math.min(Math.max(f.limit ?? 1000, 1), 100_000);
    // the array is in id order (seq = index + 1, as the SQL ids); newest time first, later id first on equal times
    return this.activity
      .map((e, i) => ({ ...e, seq: i + 1 }))
      .filter(
        (e) =>
          (f.tenantId === undefined || e.tenantId === f.tenantId) &&
          (f.errorId === undefined || e.errorId === f.errorId) &&
          (f.since === undefined || e.time >= f.since) &&
          (f.until === undefined || e.time < f.until) &&
          (f.status === undefined || e.status === f.status) &&
          (f.code === undefined || e.code === f.code) &&
          (f.route === undefined || e.route === f.route) &&
          (f.clientId === undefined || e.clientId === f.clientId) &&
          (f.kind === undefined || isPortalPageRoute(e.route) === (f.kind === "portal")) &&
          (!f.before || cmp(e.time, f.before.time) < 0 || (e.time === f.before.time && e.seq < f.before.seq)) &&
          (!f.after || cmp(e.time, f.after.time) > 0 || (e.time === f.after.time && e.seq > f.after.seq)),
      )
      .sort((a, b) => (f.after ? cmp(a.time, b.time) || a.seq - b.seq : cmp(b.time, a.time) || b.seq - a.seq))
      .slice(0, limit);
  }

  // ---- portal accounts ----
  private readonly people = new Map<string, PortalUser>();
  private readonly invites = new Map<string, PortalInvite>();
  private readonly sessions = new Map<string, PortalSession>();

  async createPortalUser(u: { userId: string; email: string; tenantId: string | null; role: PortalRole; at: string }) {
    this.check();
    if (this.findPortalUser(u.email)) return { outcome: "email_taken" as const };
    const user: PortalUser = {
      userId: u.userId,
      email: u.email.toLowerCase(),
      tenantId: u.tenantId,
      role: u.role,
      state: "invited",
      passwordHash: null,
      createdAt: u.at,
      updatedAt: u.at,
    };
    this.people.set(user.userId, user);
    return { outcome: "ok" as const, user: { ...user } };
  }
  private findPortalUser(email: string): PortalUser | undefined {
    for (const p of this.people.values()) if (p.email === email.toLowerCase()) return p;
    return undefined;
  }
  async getPortalUser(userId: string) {
    const p = this.people.get(userId);
    return p && { ...p };
  }
  async getPortalUserByEmail(email: string) {
    const p = this.findPortalUser(email);
    return p && { ...p };
  }
  async listPortalUsers(tenantId?: string | null) {
    return [...this.people.values()]
      .filter((p) => tenantId === undefined || p.tenantId === tenantId)
      .sort((a, b) => cmp(a.email, b.email))
      .map((p) => ({ ...p }));
  }
  async updatePortalUser(userId: string, f: { role?: PortalRole; state?: PortalUserState; passwordHash?: string | null }, at: string) {
    const p = this.people.get(userId);
    if (!p) return false;
    if (f.role !== undefined) p.role = f.role;
    if (f.state !== undefined) p.state = f.state;
    if (f.passwordHash !== undefined) p.passwordHash = f.passwordHash;
    p.updatedAt = at;
    return true;
  }
  async createInvite(i: PortalInvite) {
    const p = this.people.get(i.userId);
    if (!p) throw new MemoryConstraintError(`invite: no user ${i.userId}`);
    if (p.state === "disabled") return false;
    this.voidLinks(i.userId, i.createdAtMs);
    this.invites.set(i.tokenHash, { ...i });
    return true;
  }
  private voidLinks(userId: string, nowMs: number): number {
    let n = 0;
    for (const i of this.invites.values()) if (i.userId === userId && i.usedAtMs === null) (i.usedAtMs = nowMs), n++;
    return n;
  }
  async peekInvite(tokenHash: string, nowMs: number) {
    const i = this.invites.get(tokenHash);
    return i && i.usedAtMs === null && i.expiresAtMs > nowMs ? i.userId : undefined;
  }
  async useInvite(tokenHash: string, nowMs: number) {
    const i = this.invites.get(tokenHash);
    if (!i) return "unknown" as const;
    if (i.usedAtMs !== null) return "used" as const;
    if (i.expiresAtMs <= nowMs) return "expired" as const;
    this.voidLinks(i.userId, nowMs);
    return { ...i };
  }
  async voidInvites(userId: string, nowMs: number) {
    return this.voidLinks(userId, nowMs);
  }
  async setPassword(userId: string, passwordHash: string, at: string, nowMs: number) {
    const p = this.people.get(userId);
    if (!p || p.state === "disabled") return undefined;
    Object.assign(p, { passwordHash, state: "active", updatedAt: at });
    this.voidLinks(userId, nowMs);
    return this.deleteUserSessions(userId);
  }
  async replacePasswordHash(userId: string, from: string, to: string, at: string) {
    const p = this.people.get(userId);
    if (!p || p.passwordHash !== from) return false;
    Object.assign(p, { passwordHash: to, updatedAt: at });
    return true;
  }
  async createSession(x: PortalSession) {
    if (!this.people.has(x.userId)) throw new MemoryConstraintError(`session: no user ${x.userId}`);
    this.sessions.set(x.sessionHash, { ...x });
  }
  async getSession(sessionHash: string) {
    const x = this.sessions.get(sessionHash);
    return x && { ...x };
  }
  async touchSession(sessionHash: string, nowMs: number) {
    const x = this.sessions.get(sessionHash);
    if (x) x.lastSeenAtMs = Math.max(x.lastSeenAtMs, nowMs);
  }
  async deleteSession(sessionHash: string) {
    this.sessions.delete(sessionHash);
  }
  async deleteUserSessions(userId: string) {
    let n = 0;
    for (const [h, x] of this.sessions) if (x.userId === userId) (this.sessions.delete(h), n++);
    return n;
  }
  async purgeSessions(nowMs: number, idleMs: number) {
    let n = 0;
    for (const [h, x] of this.sessions) if (x.expiresAtMs <= nowMs || x.lastSeenAtMs <= nowMs - idleMs) (this.sessions.delete(h), n++);
    return n;
  }

  // ---- passkeys and their ceremonies' challenges ----
  // ---- Single sign-on ----
  private readonly ssoMappings = new Map<string, SsoMapping>();
  /** issuer NUL subject → userId */
  private readonly ssoIdentities = new Map<string, string>();
  async putSsoMapping(m: SsoMapping) {
    this.check();
    if (!this.tenants.has(m.tenantId)) throw new MemoryConstraintError(`sso mapping: no tenant ${m.tenantId}`);
    this.ssoMappings.set(`${m.kind}\0${m.value}`, { ...m });
  }
  async getSsoMapping(kind: SsoMapping["kind"], value: string) {
    const m = this.ssoMappings.get(`${kind}\0${value}`);
    return m && { ...m };
  }
  async deleteSsoMapping(kind: SsoMapping["kind"], value: string) {
    return this.ssoMappings.delete(`${kind}\0${value}`);
  }
  async listSsoMappings() {
    return [...this.ssoMappings.values()].map((m) => ({ ...m })).sort((a, b) => (a.kind === b.kind ? (a.value < b.value ? -1 : a.value > b.value ? 1 : 0) : a.kind < b.kind ? -1 : 1));
  }
  async getSsoIdentity(issuer: string, subject: string) {
    return this.ssoIdentities.get(`${issuer}\0${subject}`);
  }
  async linkSsoIdentity(issuer: string, subject: string, userId: string, _at: string): Promise<"ok" | "taken"> {
    if (!this.people.has(userId)) throw new MemoryConstraintError(`sso identity: no user ${userId}`);
    const key = `${issuer}\0${subject}`;
    if (this.ssoIdentities.has(key)) return "taken";
    for (const [k, u] of this.ssoIdentities) if (u === userId && k.startsWith(`${issuer}\0`)) return "taken";
    this.ssoIdentities.set(key, userId);
    return "ok";
  }

  private readonly passkeys = new Map<string, PortalPasskey>();
  private readonly challenges = new Map<string, PasskeyChallenge>();

  async createPasskey(p: PortalPasskey) {
    if (!this.people.has(p.userId)) throw new MemoryConstraintError(`passkey: no user ${p.userId}`);
    if (this.passkeys.has(p.credentialId)) return "exists" as const;
    this.passkeys.set(p.credentialId, { ...p, transports: [...p.transports] });
    return "ok" as const;
  }
  async getPasskey(credentialId: string) {
    const p = this.passkeys.get(credentialId);
    return p && { ...p, transports: [...p.transports] };
  }
  async listPasskeys(userId: string) {
    return [...this.passkeys.values()]
      .filter((p) => p.userId === userId)
      .sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.credentialId, b.credentialId))
      .map((p) => ({ ...p, transports: [...p.transports] }));
  }
  async recordPasskeyUse(credentialId: string, counter: number, at: string) {
    const p = this.passkeys.get(credentialId);
    if (!p || !(p.counter < counter || (p.counter === 0 && counter === 0))) return false;
    p.counter = counter;
    p.lastUsedAt = at;
    return true;
  }
  async renamePasskey(userId: string, credentialId: string, name: string) {
    const p = this.passkeys.get(credentialId);
    if (!p || p.userId !== userId) return false;
    p.name = name;
    return true;
  }
  async deletePasskey(userId: string, credentialId: string) {
    const p = this.passkeys.get(credentialId);
    return Boolean(p && p.userId === userId && this.passkeys.delete(credentialId));
  }
  async createPasskeyChallenge(c: PasskeyChallenge) {
    if (c.userId !== null && !this.people.has(c.userId)) throw new MemoryConstraintError(`challenge: no user ${c.userId}`);
    if (this.challenges.has(c.challengeHash)) throw new MemoryConstraintError("challenge exists");
    this.challenges.set(c.challengeHash, { ...c });
  }
  async takePasskeyChallenge(challengeHash: string, nowMs: number) {
    const c = this.challenges.get(challengeHash);
    this.challenges.delete(challengeHash);
    return c && c.expiresAtMs > nowMs ? { ...c } : undefined;
  }
  async purgePasskeyChallenges(nowMs: number) {
    let n = 0;
    for (const [h, c] of this.challenges) if (c.expiresAtMs <= nowMs) (this.challenges.delete(h), n++);
    return n;
  }

  // ---- Play apps (issue 23) ----
  private readonly playApps = new Map<string, StoredPlayApp>();

  async addPlayApp(a: StoredPlayApp) {
    if (!this.tenants.has(a.tenantId)) throw new MemoryConstraintError(`play app: no tenant ${a.tenantId}`);
    if (this.playApps.has(a.id)) throw new MemoryConstraintError("play app id exists");
    for (const x of this.playApps.values()) if (x.tenantId === a.tenantId && x.policy.packageName === a.policy.packageName) return "exists" as const;
    this.playApps.set(a.id, copyPlayApp(a));
    return "ok" as const;
  }
  async listPlayApps(tenantId: string) {
    return [...this.playApps.values()]
      .filter((a) => a.tenantId === tenantId)
      .sort((a, b) => cmp(a.policy.packageName, b.policy.packageName))
      .map(copyPlayApp);
  }
  async getPlayApp(tenantId: string, id: string) {
    const a = this.playApps.get(id);
    return a && a.tenantId === tenantId ? copyPlayApp(a) : undefined;
  }
  async removePlayApp(tenantId: string, id: string) {
    const a = this.playApps.get(id);
    return Boolean(a && a.tenantId === tenantId && this.playApps.delete(id));
  }

  // ---- Tenant policies (issue 26): versions per tenant, insert only ----
  private readonly tenantPolicies = new Map<string, TenantPolicyVersion[]>();

  async appendTenantPolicy(v: TenantPolicyVersion) {
    if (!this.tenants.has(v.tenantId)) throw new MemoryConstraintError(`tenant policy: no tenant ${v.tenantId}`);
    const versions = this.tenantPolicies.get(v.tenantId) ?? [];
    if (v.version !== versions.length + 1) {
      if (v.version < 1 || v.version <= versions.length) return "conflict" as const;
      throw new MemoryConstraintError(`tenant policy: version ${v.version} after ${versions.length}`);
    }
    versions.push(structuredClone(v));
    this.tenantPolicies.set(v.tenantId, versions);
    return "ok" as const;
  }
  async currentTenantPolicy(tenantId: string) {
    const versions = this.tenantPolicies.get(tenantId);
    return versions?.length ? structuredClone(versions[versions.length - 1]!) : undefined;
  }
  async getTenantPolicyVersion(tenantId: string, version: number) {
    const v = this.tenantPolicies.get(tenantId)?.[version - 1];
    return v ? structuredClone(v) : undefined;
  }
  async listTenantPolicyVersions(tenantId: string, q: { before?: number | undefined; limit: number }) {
    const versions = this.tenantPolicies.get(tenantId) ?? [];
    return versions
      .filter((v) => q.before === undefined || v.version < q.before)
      .reverse()
      .slice(0, q.limit)
      .map((v) => structuredClone(v));
  }

  // ---- App Attest (issue 25): synchronous between awaits, so each effect sees the one before it ----
  private readonly iosApps = new Map<string, StoredIosApp>();
  private readonly appAttestKeys = new Map<string, StoredAppAttestKey>();

  async addIosApp(a: StoredIosApp) {
    if (!this.tenants.has(a.tenantId)) throw new MemoryConstraintError(`ios app: no tenant ${a.tenantId}`);
    if (this.iosApps.has(a.id)) throw new MemoryConstraintError("ios app id exists");
    for (const x of this.iosApps.values()) if (x.tenantId === a.tenantId && x.appId === a.appId) return "exists" as const;
    this.iosApps.set(a.id, { ...a });
    return "ok" as const;
  }
  async listIosApps(tenantId: string) {
    return [...this.iosApps.values()].filter((a) => a.tenantId === tenantId).sort((a, b) => cmp(a.appId, b.appId)).map((a) => ({ ...a }));
  }
  async removeIosApp(tenantId: string, id: string) {
    const a = this.iosApps.get(id);
    return Boolean(a && a.tenantId === tenantId && this.iosApps.delete(id));
  }
  async getAppAttestKey(tenantId: string, keyId: string) {
    const k = this.appAttestKeys.get(keyId);
    return k && k.tenantId === tenantId ? { ...k } : undefined;
  }
  async listAppAttestKeys(tenantId: string, q: { after?: string | undefined; limit: number }) {
    const after = q.after ?? "";
    return [...this.appAttestKeys.values()]
      .filter((k) => k.tenantId === tenantId && k.keyId > after)
      .sort((a, b) => cmp(a.keyId, b.keyId))
      .slice(0, q.limit)
      .map((k) => ({ ...k }));
  }
  async revokeAppAttestKey(tenantId: string, keyId: string, at: string) {
    const k = this.appAttestKeys.get(keyId);
    if (!k || k.tenantId !== tenantId || k.revokedAt !== null) return false;
    k.revokedAt = at;
    return true;
  }
  private appAttestEffect(e: AppAttestKeyEffect): boolean {
    if (e.kind === "attested") {
      if (this.appAttestKeys.has(e.key.keyId)) return false;
      if (!this.tenants.has(e.key.tenantId)) throw new MemoryConstraintError(`app attest key: no tenant ${e.key.tenantId}`);
      const refreshable = [...this.iosApps.values()].some((a) => a.tenantId === e.key.tenantId && a.appId === e.key.appId && a.sealedDeveloperKey !== null);
      const blank = { lastAssertedAt: null, revokedAt: null, riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null };
      this.appAttestKeys.set(e.key.keyId, { ...e.key, ...blank, refreshDueAt: refreshable ? e.key.refreshDueAt : null });
      return true;
    }
    const k = this.appAttestKeys.get(e.keyId);
    if (!k || k.tenantId !== e.tenantId || k.revokedAt !== null || !(k.counter < e.counter)) return false;
    k.counter = e.counter;
    k.lastAssertedAt = e.at;
    return true;
  }
  async saveAppAttestVerdict(effect: AppAttestKeyEffect, verdict: StoredVerdict, refused: StoredVerdict, webhooks?: WebhookPlan) {
    this.check();
    if (this.verdicts.has(verdict.objectId) || this.verdicts.has(refused.objectId)) throw new MemoryConstraintError("verdict already exists");
    const v = this.appAttestEffect(effect) ? verdict : refused;
    const rows = webhooks?.(v) ?? [];
    this.checkDeliveries(rows);
    this.verdicts.set(v.objectId, structuredClone(v));
    this.putDeliveries(rows);
    return v;
  }

  // ---- webhooks (issue 26) ----
  private readonly webhookEndpoints = new Map<string, StoredWebhookEndpoint>();
  private readonly webhookDeliveries = new Map<string, WebhookDelivery & { leaseOwner: string | null; leaseUntilMs: number | null }>();
  private readonly webhookAttempts: WebhookAttempt[] = [];

  private checkDeliveries(rows: readonly NewWebhookDelivery[]): void {
    const ids = new Set<string>();
    for (const r of rows) {
      if (this.webhookDeliveries.has(r.id) || ids.has(r.id)) throw new MemoryConstraintError(`webhook delivery ${r.id} already exists`);
      ids.add(r.id);
    }
  }
  private putDeliveries(rows: readonly NewWebhookDelivery[]): void {
    for (const r of rows) {
      this.webhookDeliveries.set(r.id, { ...r, state: "pending", attempts: 0, tries: 0, lastStatus: null, finishedAt: null, leaseOwner: null, leaseUntilMs: null });
    }
  }
  private static publicDelivery(d: WebhookDelivery & { leaseOwner: string | null; leaseUntilMs: number | null }): WebhookDelivery {
    const { leaseOwner: _o, leaseUntilMs: _u, ...rest } = d;
    return { ...rest };
  }
  async addWebhookEndpoint(e: StoredWebhookEndpoint) {
    this.check();
    if (!this.tenants.has(e.tenantId)) throw new MemoryConstraintError(`webhook endpoint: no tenant ${e.tenantId}`);
    if (this.webhookEndpoints.has(e.id)) throw new MemoryConstraintError("webhook endpoint id exists");
    this.webhookEndpoints.set(e.id, { ...e, events: [...e.events] });
  }
  async listWebhookEndpoints(tenantId: string) {
    return [...this.webhookEndpoints.values()]
      .filter((e) => e.tenantId === tenantId)
      .sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id))
      .map((e) => ({ ...e, events: [...e.events] }));
  }
  async getWebhookEndpoint(tenantId: string, id: string) {
    const e = this.webhookEndpoints.get(id);
    return e && e.tenantId === tenantId ? { ...e, events: [...e.events] } : undefined;
  }
  async updateWebhookEndpoint(tenantId: string, id: string, f: WebhookEndpointChanges) {
    const e = this.webhookEndpoints.get(id);
    if (!e || e.tenantId !== tenantId) return false;
    if (f.url !== undefined) e.url = f.url;
    if (f.description !== undefined) e.description = f.description;
    if (f.events !== undefined) e.events = [...f.events];
    if (f.verdicts !== undefined) e.verdicts = f.verdicts;
    if (f.enabled !== undefined) e.enabled = f.enabled;
    if (f.sealedSecret !== undefined) e.sealedSecret = f.sealedSecret;
    e.updatedAt = f.updatedAt;
    return true;
  }
  async removeWebhookEndpoint(tenantId: string, id: string) {
    const e = this.webhookEndpoints.get(id);
    return Boolean(e && e.tenantId === tenantId && this.webhookEndpoints.delete(id));
  }
  async enqueueWebhookDeliveries(rows: readonly NewWebhookDelivery[]) {
    this.check();
    this.checkDeliveries(rows);
    this.putDeliveries(rows);
  }
  async claimWebhookDeliveries(owner: string, limit: number, nowMs: number, leaseMs: number) {
    this.check();
    const due = [...this.webhookDeliveries.values()]
      .filter((d) => d.state === "pending" && d.nextAttemptMs <= nowMs && (d.leaseUntilMs === null || d.leaseUntilMs <= nowMs))
      .sort((a, b) => a.nextAttemptMs - b.nextAttemptMs || cmp(a.id, b.id))
      .slice(0, limit);
    for (const d of due) (d.leaseOwner = owner), (d.leaseUntilMs = nowMs + leaseMs);
    return due.map(MemoryDurableStore.publicDelivery);
  }
  async recordWebhookAttempt(owner: string, a: WebhookAttempt, outcome: WebhookAttemptOutcome) {
    this.check();
    const d = this.webhookDeliveries.get(a.deliveryId);
    if (!d || d.leaseOwner !== owner || d.state !== "pending") return false;
    if (this.webhookAttempts.some((x) => x.deliveryId === a.deliveryId && x.attempt === a.attempt)) throw new MemoryConstraintError("attempt exists");
    this.webhookAttempts.push({ ...a });
    d.attempts = Math.max(d.attempts, a.attempt);
    d.lastStatus = a.status;
    d.leaseOwner = null;
    d.leaseUntilMs = null;
    if (outcome.state === "pending") {
      d.tries += 1;
      d.nextAttemptMs = outcome.nextAttemptMs;
    } else {
      d.state = outcome.state;
      d.finishedAt = outcome.at;
    }
    return true;
  }
  async listWebhookDeliveries(tenantId: string, q: { endpointId?: string | undefined; before?: { createdAt: string; id: string } | undefined; limit: number }) {
    const b = q.before;
    return [...this.webhookDeliveries.values()]
      .filter((d) => d.tenantId === tenantId && (q.endpointId === undefined || d.endpointId === q.endpointId))
      .filter((d) => !b || cmp(d.createdAt, b.createdAt) < 0 || (d.createdAt === b.createdAt && cmp(d.id, b.id) < 0))
      .sort((x, y) => cmp(y.createdAt, x.createdAt) || cmp(y.id, x.id))
      .slice(0, q.limit)
      .map(MemoryDurableStore.publicDelivery);
  }
  async getWebhookDelivery(tenantId: string, id: string) {
    const d = this.webhookDeliveries.get(id);
    return d && d.tenantId === tenantId ? MemoryDurableStore.publicDelivery(d) : undefined;
  }
  async listWebhookAttempts(tenantId: string, deliveryId: string) {
    const d = this.webhookDeliveries.get(deliveryId);
    if (!d || d.tenantId !== tenantId) return [];
    return this.webhookAttempts.filter((a) => a.deliveryId === deliveryId).sort((x, y) => x.attempt - y.attempt).map((a) => ({ ...a }));
  }
  async resendWebhookDelivery(tenantId: string, id: string, nowMs: number, giveUpAtMs: number) {
    const d = this.webhookDeliveries.get(id);
    if (!d || d.tenantId !== tenantId) return false;
    Object.assign(d, { state: "pending", tries: 0, nextAttemptMs: nowMs, giveUpAtMs, leaseOwner: null, leaseUntilMs: null, finishedAt: null });
    return true;
  }
  async purgeWebhookDeliveries(createdBefore: string, limit: number) {
    const old = [...this.webhookDeliveries.values()]
      .filter((d) => d.state !== "pending" && d.createdAt < createdBefore)
      .sort((a, b) => cmp(a.createdAt, b.createdAt))
      .slice(0, limit);
    for (const d of old) this.webhookDeliveries.delete(d.id);
    const gone = new Set(old.map((d) => d.id));
    for (let i = this.webhookAttempts.length - 1; i >= 0; i--) if (gone.has(this.webhookAttempts[i]!.deliveryId)) this.webhookAttempts.splice(i, 1);
    return old.length;
  }
  async countPendingWebhookDeliveries() {
    let n = 0;
    for (const d of this.webhookDeliveries.values()) if (d.state === "pending") n++;
    return n;
  }
  async applyAppAttestEffect(effect: AppAttestKeyEffect) {
    this.check();
    return this.appAttestEffect(effect);
  }
  async setIosAppDeveloperKey(tenantId: string, id: string, key: { keyId: string; sealed: string } | null, at: string) {
    const a = this.iosApps.get(id);
    if (!a || a.tenantId !== tenantId) return false;
    a.developerKeyId = key?.keyId ?? null;
    a.sealedDeveloperKey = key?.sealed ?? null;
    for (const k of this.appAttestKeys.values()) {
      if (k.tenantId !== tenantId || k.appId !== a.appId) continue;
      if (!key) k.refreshDueAt = null;
      else if (k.refreshDueAt === null && k.revokedAt === null) k.refreshDueAt = at;
    }
    return true;
  }
  async claimAppAttestRefreshes(now: string, leaseUntil: string, limit: number) {
    const withKey = new Set([...this.iosApps.values()].filter((a) => a.sealedDeveloperKey !== null).map((a) => `${a.tenantId}\n${a.appId}`));
    const due = [...this.appAttestKeys.values()]
      .filter((k) => k.refreshDueAt !== null && k.refreshDueAt <= now && k.revokedAt === null && withKey.has(`${k.tenantId}\n${k.appId}`))
      .sort((a, b) => cmp(a.refreshDueAt!, b.refreshDueAt!) || cmp(a.keyId, b.keyId))
      .slice(0, limit);
    for (const k of due) k.refreshDueAt = leaseUntil;
    return due.map((k) => ({ ...k })).sort((a, b) => cmp(a.keyId, b.keyId));
  }
  async saveAppAttestRefresh(o: AppAttestRefreshOutcome) {
    const k = this.appAttestKeys.get(o.keyId);
    if (!k || k.tenantId !== o.tenantId) return false;
    k.lastRefreshResult = o.result;
    k.lastRefreshReason = o.reason;
    k.lastRefreshAt = o.at;
    k.refreshDueAt = o.refreshDueAt;
    if (o.refreshed) {
      k.receipt = o.refreshed.receipt;
      k.riskMetric = o.refreshed.riskMetric;
      k.riskMetricAt = o.at;
    }
    return true;
  }

  // ---- audit trail ----
  private readonly audit = new Map<string, AuditRecord>();
  async appendAudit(r: AuditRecord): Promise<void> {
    this.check();
    if (this.audit.has(r.id)) throw new MemoryConstraintError("UNIQUE constraint failed: audit.id");
    this.audit.set(r.id, structuredClone(r));
  }
  async queryAudit(f: AuditFilter): Promise<AuditRecord[]> {
    this.check();
    const limit = Math.min(Math.max(Math.trunc(f.limit ?? 100), 1), MAX_AUDIT_PAGE);
    return [...this.audit.values()]
      .filter((r) => auditMatches(f, r))
      .sort((a, b) => (a.time === b.time ? (a.id < b.id ? 1 : -1) : a.time < b.time ? 1 : -1))
      .slice(0, limit)
      .map((r) => structuredClone(r));
  }
}
