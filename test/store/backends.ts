import { randomBytes } from "node:crypto";
import pg from "pg";
import { Redis } from "ioredis";

/**
 * The real PostgreSQL and Redis the backend tests run against. `.ci/services.sh` starts both; these tests FAIL
 * (never skip) when they are unreachable, naming the URL and the script, so a CI without services cannot pass.
 */
export const TEST_PG_URL = process.env.ATTESTD_TEST_PG_URL || "postgres://postgres@127.0.0.1:5432/test";
export const TEST_REDIS_URL = process.env.ATTESTD_TEST_REDIS_URL || "redis://127.0.0.1:6379";

function unreachable(what: string, url: string, err: unknown): Error {
  return new Error(
    `${what} at ${url} is unreachable (${(err as Error).message}). Start it with: bash .ci/services.sh ` +
      `(or point ATTESTD_TEST_${what === "PostgreSQL" ? "PG" : "REDIS"}_URL at one)`,
    { cause: err },
  );
}

export interface TestDatabase {
  /** URL of a fresh, empty database that only this test run uses */
  url: string;
  drop(): Promise<void>;
}

/** Creates a uniquely named database next to TEST_PG_URL's, so each run migrates from scratch and leaves no trace. */
export async function createTestDatabase(label = "t"): Promise<TestDatabase> {
  const name = `attestd_${label}_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (err) {
    throw unreachable("PostgreSQL", TEST_PG_URL, err);
  }
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_PG_URL);
  url.pathname = "/" + name;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 5_000 });
      await c.connect();
      try {
        // WITH (FORCE) ends sessions a killed test process may have left behind
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

export interface TestRedisPrefix {
  url: string;
  /** a key prefix no other run uses */
  prefix: string;
  /** deletes every key under the prefix */
  clean(): Promise<void>;
}

/** Checks Redis answers and hands out a unique key prefix for this run. */
export async function createTestRedisPrefix(label = "t"): Promise<TestRedisPrefix> {
  const prefix = `attestd-test:${label}:${process.pid}:${randomBytes(4).toString("hex")}:`;
  const probe = new Redis(TEST_REDIS_URL, { lazyConnect: true, connectTimeout: 5_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => undefined);
  try {
    await probe.connect();
    await probe.ping();
  } catch (err) {
    probe.disconnect();
    throw unreachable("Redis", TEST_REDIS_URL, err);
  }
  await probe.quit();
  return {
    url: TEST_REDIS_URL,
    prefix,
    clean: async () => {
      const r = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        let cursor = "0";
        do {
          const [next, keys] = await r.scan(cursor, "MATCH", prefix + "*", "COUNT", 1000);
          cursor = next;
          if (keys.length > 0) await r.del(...keys);
        } while (cursor !== "0");
      } finally {
        await r.quit();
      }
    },
  };
}
