import type { NewWebhookDelivery } from "../domain/webhooks.ts";
import { generateApiKey } from "../auth/apiKeys.ts";
import { parseRestrictions } from "../auth/restrictions.ts";
import type { Clock, Rng } from "../clock.ts";
import type { ApiKeyRecord, Tenant } from "../domain/tenants.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { unsafeCharIn, unsafeTextReason } from "../domain/text.ts";
import type { ApiKeyChanges, TenantStore } from "../store/types.ts";
import type { KeyCache } from "./apiKeyAuth.ts";

/** A key as shown to people: never its secret's hash. */
export type ApiKeySummary = Omit<ApiKeyRecord, "secretHash">;

export const MAX_KEY_LABEL = 100;

/** What an edit may change; a list given replaces that list (empty: no such restriction), one not given is kept. */
export interface KeyEdit {
  label?: string | null;
  rps?: number;
  burst?: number;
  ipAddresses?: readonly string[];
  referers?: readonly string[];
}

/** Trimmed and bounded; null when empty. A control or bidi character is refused, not dropped: it may be the point. */
function cleanLabel(label: string | null | undefined): string | null {
  const unsafe = label ? unsafeCharIn(label) : undefined;
  if (unsafe) throw new AppError(catalog.PORTAL_INVALID_REQUEST, unsafeTextReason("a key's label", unsafe));
  return label?.trim() ? label.trim().slice(0, MAX_KEY_LABEL) : null;
}

/**
 * rps / burst 0 mean "the server's defaults", resolved per request so a changed --rps applies to such keys; a key
 * with its own rps and no burst gets twice its rps.
 */
function limits(rps: number, burst: number | undefined): { rps: number; burst: number } {
  if (!Number.isFinite(rps) || rps < 0) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "rps must be a number, 0 or more (0: the server's default)");
  if (burst !== undefined && (!Number.isInteger(burst) || burst < 0)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "burst must be a whole number, 0 or more");
  return { rps, burst: burst || (rps ? Math.max(1, Math.ceil(rps * 2)) : 0) };
}

/** What ApiKeyAdmin asks of the webhook planner (WebhookRegistry.keyEvent). */
export interface KeyEvents {
  keyEvent(tenantId: string, type: "key.created" | "key.revoked", data: { keyId: string; label?: string | null; at: string }): Promise<NewWebhookDelivery[]>;
}

/**
 * Part A API keys, for the CLI (`attestd key ...`) and the portal alike: one home for how a key is made (shown
 * once, only its hash kept), listed and revoked, always within one tenant.
 *
 * `cache` is the key cache of the serving process this admin runs in (the portal's): a change is written to the
 * store, then that cache forgets the key, both before the call returns, so the instance that answers the change
 * refuses a revoked key from the next request on. Other processes (instances, workers, the CLI: no cache) see it
 * within KEY_CACHE_MS.
 */
export class ApiKeyAdmin {
  constructor(
    private readonly store: TenantStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly cache: KeyCache = { forget: () => undefined },
    /** signed webhooks (WebhookRegistry): key.created / key.revoked rows, written in the key's own transaction */
    private readonly webhooks?: KeyEvents,
  ) {}

  async create(tenant: Tenant, o: { rps?: number; burst?: number; label?: string | null }, by: ChangeActor): Promise<{ key: string; record: ApiKeySummary }> {
    const { rps, burst } = limits(o.rps ?? 0, o.burst);
    const label = cleanLabel(o.label);
    const k = generateApiKey(this.rng);
    const createdAt = new Date(this.clock.nowMs()).toISOString();
    const events = (await this.webhooks?.keyEvent(tenant.tenantId, "key.created", { keyId: k.keyId, label, at: createdAt })) ?? [];
    await this.store.createApiKey({ keyId: k.keyId, tenantId: tenant.tenantId, secretHash: k.secretHash, rps, burst, createdAt, label }, events);
    // in case the id was probed (and remembered as unknown) before it existed
    this.cache.forget(k.keyId);
    const record: ApiKeySummary = { keyId: k.keyId, tenantId: tenant.tenantId, rps, burst, createdAt, revokedAt: null, restrictions: null, label, lastUsedAt: null };
    await by.record({ tenantId: tenant.tenantId, action: "key.created", target: { kind: "api-key", id: k.keyId }, before: null, after: record });
    return { key: k.key, record };
  }

  async list(tenant: Tenant): Promise<ApiKeySummary[]> {
    return (await this.store.listApiKeys(tenant.tenantId)).map(({ secretHash: _secret, ...k }) => k);
  }

  /**
   * Changes a key's label, limits and IP / referer restrictions at once (effective here from the next request, on
   * other instances within KEY_CACHE_MS). Restrictions are parsed by src/auth/restrictions.ts, as Part B's are; both lists
   * empty means none. Undefined when the tenant (any tenant: undefined, the CLI) has no active key of that id.
   */
  async update(tenant: Tenant | undefined, keyId: string, e: KeyEdit, by: ChangeActor): Promise<ApiKeySummary | undefined> {
    const k = await this.store.getApiKey(keyId);
    if (!k || k.revokedAt !== null || (tenant && k.tenantId !== tenant.tenantId)) return undefined;
    const changes: ApiKeyChanges = {};
    if (e.label !== undefined) changes.label = cleanLabel(e.label);
    if (e.rps !== undefined || e.burst !== undefined) Object.assign(changes, limits(e.rps ?? k.rps, e.rps !== undefined ? e.burst : (e.burst ?? k.burst)));
    if (e.ipAddresses !== undefined || e.referers !== undefined) {
      const ips = e.ipAddresses ?? k.restrictions?.ipAddresses ?? [];
      const refs = e.referers ?? k.restrictions?.referers ?? [];
      if (ips.length === 0 && refs.length === 0) changes.restrictions = null;
      else {
        const parsed = parseRestrictions({ ...(ips.length ? { ipAddresses: ips } : {}), ...(refs.length ? { referers: refs } : {}) });
        if (!parsed.ok) throw new AppError(catalog.PORTAL_INVALID_REQUEST, parsed.reason);
        changes.restrictions = parsed.restrictions;
      }
    }
    if (!(await this.store.updateApiKey(keyId, changes))) return undefined;
    this.cache.forget(keyId);
    const { secretHash: _secret, ...after } = (await this.store.getApiKey(keyId))!;
    const { secretHash: _hash, ...before } = k;
    await by.record({ tenantId: k.tenantId, action: "key.updated", target: { kind: "api-key", id: keyId }, before, after });
    return after;
  }

  /** false when the tenant has no active key of that id (another tenant's key is not found either) */
  async revoke(tenant: Tenant | undefined, keyId: string, by: ChangeActor): Promise<boolean> {
    const k = await this.store.getApiKey(keyId);
    if (!k || (tenant && k.tenantId !== tenant.tenantId)) return false;
    const at = new Date(this.clock.nowMs()).toISOString();
    const events = (await this.webhooks?.keyEvent(k.tenantId, "key.revoked", { keyId, label: k.label, at })) ?? [];
    const revoked = await this.store.revokeApiKey(keyId, at, events);
    this.cache.forget(keyId);
    if (revoked) {
      const { secretHash: _before, ...before } = k;
      const { secretHash: _after, ...after } = (await this.store.getApiKey(keyId))!;
      await by.record({ tenantId: k.tenantId, action: "key.revoked", target: { kind: "api-key", id: keyId }, before, after });
    }
    return revoked;
  }
}
