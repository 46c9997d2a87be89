import { generateApiKey } from "../auth/apiKeys.ts";
import type { Clock, Rng } from "../clock.ts";
import type { ApiKeyRecord, Tenant } from "../domain/tenants.ts";
import type { TenantStore } from "../store/types.ts";

/** A key as shown to people: never its secret's hash. */
export type ApiKeySummary = Omit<ApiKeyRecord, "secretHash">;

export const MAX_KEY_LABEL = 100;

/**
 * Part A API keys, for the CLI (`attestd key ...`) and the portal alike: one home for how a key is made (shown
 * once, only its hash kept), listed and revoked, always within one tenant.
 */
export class ApiKeyAdmin {
  constructor(
    private readonly store: TenantStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
  ) {}

  /**
   * rps / burst 0 mean "the server's defaults", resolved per request so a changed --rps applies to such keys;
   * a key with its own rps and no burst gets twice its rps.
   */
  async create(tenant: Tenant, o: { rps?: number; burst?: number; label?: string | null } = {}): Promise<{ key: string; record: ApiKeySummary }> {
    const rps = o.rps ?? 0;
    const burst = o.burst || (rps ? Math.max(1, Math.ceil(rps * 2)) : 0);
    const label = o.label?.trim() ? o.label.trim().slice(0, MAX_KEY_LABEL) : null;
    const k = generateApiKey(this.rng);
    const createdAt = new Date(this.clock.nowMs()).toISOString();
    await this.store.createApiKey({ keyId: k.keyId, tenantId: tenant.tenantId, secretHash: k.secretHash, rps, burst, createdAt, label });
    return { key: k.key, record: { keyId: k.keyId, tenantId: tenant.tenantId, rps, burst, createdAt, revokedAt: null, restrictions: null, label, lastUsedAt: null } };
  }

  async list(tenant: Tenant): Promise<ApiKeySummary[]> {
    return (await this.store.listApiKeys(tenant.tenantId)).map(({ secretHash: _secret, ...k }) => k);
  }

  /** false when the tenant has no active key of that id (another tenant's key is not found either) */
  async revoke(tenant: Tenant | undefined, keyId: string): Promise<boolean> {
    const k = await this.store.getApiKey(keyId);
    if (!k || (tenant && k.tenantId !== tenant.tenantId)) return false;
    return this.store.revokeApiKey(keyId, new Date(this.clock.nowMs()).toISOString());
  }
}
