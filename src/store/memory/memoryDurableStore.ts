import type { ReferenceValue } from "../../attestation/types.ts";
import type { ActivityEntry } from "../../domain/activity.ts";
import type { ApiKeyRecord, ApiKeyRestrictions, NewTenant, Tenant, TenantState } from "../../domain/tenants.ts";
import type { StoredVerdict } from "../../domain/verdicts.ts";
import type { ActivityFilter, DurableStore } from "../types.ts";

/** A unique or foreign-key rule broken: the memory backend's counterpart of a SQL constraint violation. */
export class MemoryConstraintError extends Error {
  override name = "MemoryConstraintError";
}

/** Bytewise order, as SQLite compares TEXT and PostgreSQL does under COLLATE "C" (for the ASCII this holds). */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

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
  private readonly refvals = new Map<string, ReferenceValue>();
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

  async createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions">) {
    this.check();
    if (this.keys.has(k.keyId)) throw new MemoryConstraintError(`api key ${k.keyId} already exists`);
    if (!this.tenants.has(k.tenantId)) throw new MemoryConstraintError(`api key ${k.keyId}: no tenant ${k.tenantId}`);
    this.keys.set(k.keyId, { ...k, revokedAt: null, restrictions: null });
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
  async revokeApiKey(keyId: string, at: string) {
    const k = this.keys.get(keyId);
    if (!k || k.revokedAt !== null) return false;
    k.revokedAt = at;
    return true;
  }
  async setApiKeyRestrictions(keyId: string, r: ApiKeyRestrictions | null) {
    const k = this.keys.get(keyId);
    if (!k) return false;
    k.restrictions = r && structuredClone(r);
    return true;
  }

  // ---- verdicts ----
  async saveVerdict(v: StoredVerdict): Promise<void> {
    this.check();
    if (this.verdicts.has(v.objectId)) throw new MemoryConstraintError(`verdict ${v.objectId} already exists`);
    this.verdicts.set(v.objectId, structuredClone(v));
  }
  async getVerdict(objectId: string): Promise<StoredVerdict | undefined> {
    const v = this.verdicts.get(objectId);
    return v && structuredClone(v);
  }

  // ---- reference values ----
  async upsertReferenceValues(values: readonly ReferenceValue[], _at: string): Promise<number> {
    this.check();
    for (const v of values) this.refvals.set(JSON.stringify([v.model, v.firmwareVersion]), structuredClone(v));
    return values.length;
  }
  async listReferenceValues(): Promise<ReferenceValue[]> {
    return [...this.refvals.values()]
      .sort((a, b) => cmp(a.model, b.model) || cmp(a.firmwareVersion, b.firmwareVersion))
      .map((v) => structuredClone(v));
  }

  // ---- activity ----
  async appendActivity(entries: readonly ActivityEntry[]): Promise<void> {
    this.check();
    // all or nothing, as the SQL stores' single transaction / statement
    const batch = new Set<string>();
    for (const e of entries) {
      if (e.errorId === null) continue;
      if (this.activityErrorIds.has(e.errorId) || batch.has(e.errorId)) {
        throw new MemoryConstraintError(`activity error id ${e.errorId} already exists`);
      }
      batch.add(e.errorId);
    }
    for (const id of batch) this.activityErrorIds.add(id);
    for (const e of entries) this.activity.push({ ...e });
  }
  async queryActivity(f: ActivityFilter): Promise<ActivityEntry[]> {
    const limit = Math.min(Math.max(f.limit ?? 1000, 1), 100_000);
    const out: ActivityEntry[] = [];
    // the array is in id order; newest time first, later id first on equal times
    const matching = this.activity
      .map((e, id) => [e, id] as const)
      .filter(
        ([e]) =>
          (!f.tenantId || e.tenantId === f.tenantId) && (!f.errorId || e.errorId === f.errorId) && (!f.since || e.time >= f.since),
      )
      .sort(([a, i], [b, j]) => cmp(b.time, a.time) || j - i);
    for (const [e] of matching.slice(0, limit)) out.push({ ...e });
    return out;
  }
}
