import { parseApiKey, secretMatches } from "../auth/apiKeys.ts";
import type { Clock } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { ApiKeyRecord, Tenant, TenantStore } from "../store/types.ts";

export interface Principal {
  tenant: Tenant;
  key: ApiKeyRecord;
}

export interface CallerInfo {
  ip: string;
  referer: string | undefined;
}

/** Decides whether a key's IP / referer restrictions admit a caller; undefined = admitted, else the reason. */
export type RestrictionCheck = (key: ApiKeyRecord, caller: CallerInfo) => string | undefined;

/**
 * Part A key authentication. Key and tenant records are cached for `cacheMs` (default 2 s) so the hot path does
 * no store round trip per request; a revocation or a tenant block therefore takes effect within that time on
 * every instance. Unknown key ids are not cached, so a flood of random keys costs one indexed lookup each.
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, { at: number; key: ApiKeyRecord; tenant: Tenant | undefined }>();

  constructor(
    private readonly store: TenantStore,
    private readonly clock: Clock,
    private readonly checkRestrictions: RestrictionCheck = () => undefined,
    private readonly cacheMs = 2000,
  ) {}

  async authenticate(presented: string | undefined, caller: CallerInfo): Promise<Principal> {
    if (!presented) throw new AppError(catalog.A_AUTHORIZATION_FAIL, "The x-vendor-attest-api-key header is missing");
    const parsed = parseApiKey(presented);
    const invalid = () => new AppError(catalog.A_AUTHORIZATION_FAIL, "The API key is invalid");
    if (!parsed) throw invalid();
    const { key, tenant } = await this.lookup(parsed.keyId);
    if (!key || !secretMatches(parsed.secret, key.secretHash) || key.revokedAt !== null || !tenant) throw invalid();
    if (tenant.state !== "active") {
      throw new AppError(catalog.A_FORBIDDEN, `The tenant is ${tenant.state}`);
    }
    const refused = this.checkRestrictions(key, caller);
    if (refused) throw new AppError(catalog.A_FORBIDDEN, refused);
    return { key, tenant };
  }

  private async lookup(keyId: string): Promise<{ key?: ApiKeyRecord; tenant?: Tenant }> {
    const now = this.clock.nowMs();
    const hit = this.cache.get(keyId);
    if (hit && now - hit.at < this.cacheMs) return hit;
    const key = await this.store.getApiKey(keyId);
    if (!key) return {};
    const tenant = await this.store.getTenant(key.tenantId);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(keyId, { at: now, key, tenant });
    return { key, tenant };
  }
}
