import { parseApiKey, secretMatches, UNKNOWN_SECRET_HASH } from "../auth/apiKeys.ts";
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
  /** undefined: no key of that id (remembered too, see ApiKeyAuthenticator) */
  key: ApiKeyRecord | undefined;
  /** key.secretHash decoded once, not per request; UNKNOWN_SECRET_HASH's for an unknown id */
  secretHash: Buffer;
  tenant: Tenant | undefined;
}

/**
 * How long an instance may answer from a key record it read (docs/portal.md, docs/deployment.md): the bound on a
 * revocation, edit or tenant block made elsewhere (another instance, another --workers worker, the CLI) reaching
 * it. The instance that makes the change drops its own copy at once (`forget`). At 0.5 s a busy key costs each
 * instance two indexed lookups twice a second.
 */
export const KEY_CACHE_MS = 500;
/** entries kept at most; the oldest go first */
const CACHE_ENTRIES = 10_000;
/** looked up in place of an unknown key's tenant: no tenant has an empty id */
const NO_TENANT = "";

const unknownHash = Buffer.from(UNKNOWN_SECRET_HASH, "hex");
const invalidKey = () => new AppError(catalog.A_AUTHORIZATION_FAIL, "The API key is invalid");

/** What ApiKeyAdmin tells about a key it changed, so that this instance answers the next request from the store. */
export interface KeyCache {
  forget(keyId: string): void;
}

/**
 * Part A key authentication. Key and tenant records are cached for KEY_CACHE_MS so the hot path does no store
 * round trip per request; a change made on this instance drops the cached copy before it is acknowledged.
 *
 * An unknown key id goes the way a known one with a wrong secret goes, so the answer time does not tell which
 * ids exist: the same two lookups (the key, then its tenant, an empty id for none), the same secret comparison
 * (against UNKNOWN_SECRET_HASH), and it is cached alike, so repeating a probe is answered from memory for both.
 * A flood of random ids therefore costs two indexed lookups each and pushes the oldest entries out of the cache.
 */
export class ApiKeyAuthenticator implements KeyCache {
  private readonly cache = new Map<string, CachedKey>();
  /** bumped by every forget: a read that began before it must not be cached (it may hold the old record) */
  private generation = 0;
  /** key id → the last time it was accepted, written to the store in batches (flushLastUsed), never per request */
  private readonly lastUsed = new Map<string, number>();

  constructor(
    private readonly store: TenantStore,
    private readonly clock: Clock,
    private readonly checkRestrictions: RestrictionCheck = () => undefined,
    private readonly cacheMs = KEY_CACHE_MS,
  ) {}

  /**
   * The caller's principal, or a catalog error. Synchronous while the key id is cached (the common case: no
   * promise per request); a promise when the store must be asked.
   */
  authenticate(presented: string | undefined, caller: CallerInfo): Principal | Promise<Principal> {
    if (!presented) throw new AppError(catalog.A_AUTHORIZATION_FAIL, "The x-vendor-attest-api-key header is missing");
    const parsed = parseApiKey(presented);
    if (!parsed) throw invalidKey();
    const hit = this.cache.get(parsed.keyId);
    if (hit && this.clock.nowMs() - hit.at < this.cacheMs) return this.admit(hit, parsed.secret, caller);
    return this.load(parsed.keyId).then((entry) => this.admit(entry, parsed.secret, caller));
  }

  /** Drops a key's cached record: the next request with it reads the store. */
  forget(keyId: string): void {
    this.generation++;
    this.cache.delete(keyId);
  }

  private admit({ key, secretHash, tenant }: CachedKey, secret: string, caller: CallerInfo): Principal {
    // the secret is compared first, also for an unknown id, so both refusals cost the same
    if (!secretMatches(secret, secretHash) || !key || key.revokedAt !== null || !tenant) throw invalidKey();
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

  private async load(keyId: string): Promise<CachedKey> {
    // taken before the reads: the entry never outlives KEY_CACHE_MS from a moment the store could have been older
    const now = this.clock.nowMs();
    const generation = this.generation;
    const key = await this.store.getApiKey(keyId);
    const tenant = await this.store.getTenant(key ? key.tenantId : NO_TENANT);
    const entry = { at: now, key, secretHash: key ? Buffer.from(key.secretHash, "hex") : unknownHash, tenant };
    if (generation === this.generation) {
      this.cache.delete(keyId);
      if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(keyId, entry);
    }
    return entry;
  }
}
