import { pingHealth, reportStorageFailures, StorageHealth } from "../health.ts";
import { MemoryRateLimitStore } from "../memory/memoryRateLimitStore.ts";
import { RedisStore } from "../redis/redisStore.ts";
import type { Stores } from "../types.ts";
import { PgEnrollmentStore } from "./pgEnrollmentStore.ts";
import { PgSigningKeyStore } from "./pgSigningKeyStore.ts";
import { PgSecretsStore } from "./pgSecretsStore.ts";
import { PgStore } from "./pgStore.ts";

export interface NetworkStoreConfig {
  databaseUrl: string;
  pgPoolMax: number;
  redisUrl?: string | undefined;
  /** --nonce-retain in seconds: how long Redis keeps used/expired nonces (default one day) */
  nonceRetain?: number | undefined;
  /** key prefix in Redis (tests give each run its own) */
  redisPrefix?: string | undefined;
  /** told when a first connection timed out and is tried again (connectAttempts.ts) */
  onConnectRetry?: ((message: string) => void) | undefined;
}

/**
 * `--store postgres [--redis-url URL]`: durable records, enrollment and (without Redis) nonces and jti in
 * PostgreSQL; with Redis, nonces, rate limits and jti move there so every instance shares them. Without Redis the
 * rate-limit buckets stay in process: per instance (or per cluster primary with --workers), which
 * docs/deployment.md calls out. Opening fails if a backend is unreachable at start; after that an outage is a 503
 * per request and the service recovers when the backend returns.
 */
export async function openPostgresStores(c: NetworkStoreConfig): Promise<Stores> {
  // Redis first: it is quick to reach, and a start that fails on it then leaves the database unmigrated
  const redis = c.redisUrl
    ? await RedisStore.open({
        url: c.redisUrl,
        ...(c.redisPrefix ? { prefix: c.redisPrefix } : {}),
        nonceRetainMs: (c.nonceRetain ?? 86_400) * 1000,
        onConnectRetry: c.onConnectRetry,
      })
    : undefined;
  let pgStore: PgStore;
  try {
    pgStore = await PgStore.open({ url: c.databaseUrl, poolMax: c.pgPoolMax, onConnectRetry: c.onConnectRetry });
  } catch (err) {
    await redis?.close();
    throw err;
  }
  // PostgreSQL answers reads on a full disk: readiness learns of it from the writes that fail (health.ts)
  const storage = new StorageHealth();
  const enrollment = new PgEnrollmentStore(pgStore.pool);
  const signingKeys = new PgSigningKeyStore(pgStore.pool);
  const secrets = new PgSecretsStore(pgStore.pool);
  for (const store of [pgStore, enrollment, signingKeys, secrets]) reportStorageFailures(store, storage);
  return {
    durable: pgStore,
    enrollment,
    nonces: redis ?? pgStore,
    // nonces in PostgreSQL: an App Attest verdict commits with its nonce and key (without Redis only)
    ...(redis ? {} : { nonceAppAttest: pgStore }),
    rateLimits: redis ?? new MemoryRateLimitStore(),
    jti: redis ?? pgStore,
    signingKeys,
    secrets,
    health: async () => {
      const checks = [storage.check("postgres", () => pgStore.ping())];
      if (redis) checks.push(pingHealth("redis", () => redis.ping()));
      return Promise.all(checks);
    },
    close: async () => {
      await Promise.allSettled([pgStore.close(), redis?.close()]);
    },
  };
}
