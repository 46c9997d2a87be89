import { parseApiKey, secretMatches } from "../auth/apiKeys.ts";
import type { Clock } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { ApiKeyRecord, Tenant } from "../domain/tenants.ts";
import type { TenantStore } from "../store/types.ts";

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

interface CachedKey {
  at: number;
  key: ApiKeyRecord;
  /** key.secretHash decoded once, not per request */
  secretHash: Buffer;
  tenant: Tenant | undefined;
}

const invalidKey = () => new AppError(catalog.A_AUTHORIZATION_FAIL, "The API key is invalid");

/**
 * Part A key authentication. Key and tenant records are cached for `cacheMs` (default 2 s) so the hot path does
 * no store round trip per request; a revocation or a tenant block therefore takes effect within that time on
 * every instance. Unknown key ids are not cached, so a flood of random keys costs one indexed lookup each.
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, CachedKey>();
  /** key id → the last time it was accepted, written to the store in batches (flushLastUsed), never per request */
  private readonly lastUsed = new Map<string, number>();

  constructor(
    private readonly store: TenantStore,
    private readonly clock: Clock,
    private readonly checkRestrictions: RestrictionCheck = () => undefined,
    private readonly cacheMs = 2000,
  ) {}

  /**
   * The caller's principal, or a catalog error. Synchronous while the key is cached (the common case: no promise
   * per request); a promise when the store must be asked.
   */
  authenticate(presented: string | undefined, caller: CallerInfo): Principal | Promise<Principal> {
    if (!presented) throw new AppError(catalog.A_AUTHORIZATION_FAIL, "The x-vendor-attest-api-key header is missing");
    const parsed = parseApiKey(presented);
    if (!parsed) throw invalidKey();
    const hit = this.cache.get(parsed.keyId);
    if (hit && this.clock.nowMs() - hit.at < this.cacheMs) return this.admit(hit, parsed.secret, caller);
    return this.load(parsed.keyId).then((entry) => {
      if (!entry) throw invalidKey();
      return this.admit(entry, parsed.secret, caller);
    });
  }

  private admit({ key, secretHash, tenant }: CachedKey, secret: string, caller: CallerInfo): Principal {
    if (!secretMatches(secret, secretHash) || key.revokedAt !== null || !tenant) throw invalidKey();
    if (tenant.state !== "active") {
      throw new AppError(catalog.A_FORBIDDEN, `The tenant is ${tenant.state}`);
    }
    const refused = this.checkRestrictions(key, caller);
    if (refused) throw new AppError(catalog.A_FORBIDDEN, refused);
    this.lastUsed.set(key.keyId, this.clock.nowMs());
    return { key, tenant };
  }

  /** Writes the keys' last use gathered since the previous flush (server.ts every 30 s, and at close). */
  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const uses = [...this.lastUsed].map(([keyId, ms]) => ({ keyId, at: new Date(ms).toISOString() }));
    this.lastUsed.clear();
    await this.store.touchApiKeys(uses);
  }

  private async load(keyId: string): Promise<CachedKey | undefined> {
    const now = this.clock.nowMs();
    const key = await this.store.getApiKey(keyId);
    if (!key) return undefined;
    const tenant = await this.store.getTenant(key.tenantId);
    if (this.cache.size > 10_000) this.cache.clear();
    const entry = { at: now, key, secretHash: Buffer.from(key.secretHash, "hex"), tenant };
    this.cache.set(keyId, entry);
    return entry;
  }
}
