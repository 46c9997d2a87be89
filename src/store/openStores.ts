import path from "node:path";
import type { Config } from "../config.ts";
import { MemoryRateLimitStore } from "./memory/memoryRateLimitStore.ts";
import { SqliteStore } from "./sqlite/sqliteStore.ts";
import type { Stores } from "./types.ts";

export type StoreConfig = Pick<
  Config,
  "store" | "dataDir" | "databaseUrl" | "redisUrl" | "pgPoolMax" | "sqliteSynchronous"
>;

export function sqliteFile(dataDir: string): string {
  return path.resolve(dataDir, "attestd.sqlite");
}

async function health(name: string, ping: () => Promise<unknown>) {
  try {
    await ping();
    return { name, ok: true };
  } catch (e) {
    return { name, ok: false, error: (e as Error).message };
  }
}

/** Opens the backends the configuration names. The embedded default: one SQLite file, in-process rate limits. */
export async function openStores(c: StoreConfig): Promise<Stores> {
  if (c.store !== "sqlite" || c.redisUrl) {
    throw new Error(`store "${c.store}"${c.redisUrl ? " with --redis-url" : ""} is not available in this build`);
  }
  const sqlite = new SqliteStore({
    file: sqliteFile(c.dataDir),
    synchronous: c.sqliteSynchronous as "NORMAL" | "FULL",
  });
  return {
    durable: sqlite,
    nonces: sqlite,
    rateLimits: new MemoryRateLimitStore(),
    health: async () => [await health("sqlite", () => sqlite.ping())],
    close: () => sqlite.close(),
  };
}
