import { existsSync, statSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config.ts";
import { OperatorError } from "../errors/operatorError.ts";
import { MemoryRateLimitStore } from "./memory/memoryRateLimitStore.ts";
import { SqliteStore } from "./sqlite/sqliteStore.ts";
import { SqliteEnrollmentStore, SqliteJtiStore } from "./sqlite/sqliteEnrollmentStore.ts";
import { SqliteSigningKeyStore } from "./sqlite/sqliteSigningKeyStore.ts";
import { SqliteSecretsStore } from "./sqlite/sqliteSecretsStore.ts";
import type { Stores } from "./types.ts";

export type StoreConfig = Pick<
  Config,
  "store" | "dataDir" | "databaseUrl" | "redisUrl" | "pgPoolMax" | "sqliteSynchronous" | "sqliteLockWaitMs"
> &
  Partial<Pick<Config, "allowNewStore">>;

export function sqliteFile(dataDir: string): string {
  return path.resolve(dataDir, "attestd.sqlite");
}

function sizeOf(file: string): number | undefined {
  return existsSync(file) ? statSync(file).size : undefined;
}

/**
 * Why opening the data dir's SQLite file would silently start a new, empty store where one existed: SQLite takes a
 * missing or zero-length file for a new database, so a deleted, moved or truncated `attestd.sqlite` (a restore gone
 * wrong, a full disk, a copy of the wrong file) came up as a fresh install and every API key answered 401. What a
 * first start leaves beside the file says one existed: `secrets.key` (made by the first start, after the store)
 * and the Android trust cache. A zero-length file with a WAL beside it is a store whose commits are still all in
 * the WAL (SQLite recovers them), not an empty one. Undefined: nothing looks wrong.
 */
export function lostStoreProblem(dataDir: string): string | undefined {
  const db = sqliteFile(dataDir);
  const size = sizeOf(db);
  if (size !== undefined && size > 0) return undefined;
  if ((sizeOf(`${db}-wal`) ?? 0) > 0) return undefined;
  const traces = [path.resolve(dataDir, "secrets.key"), path.resolve(dataDir, "android-trust")].filter((f) => existsSync(f));
  if (traces.length === 0) return undefined;
  const what = size === undefined ? `${db} is missing` : `${db} is empty (0 bytes)`;
  return (
    `refusing to start on a new, empty store: ${what}, but this data dir was used before (${traces.join(", ")}). ` +
    "If the file was deleted, moved or truncated, stop and restore it from a backup; " +
    "to start afresh on purpose (every tenant, key and verdict gone), run once with --allow-new-store"
  );
}

/**
 * The options of a serving process (`serve`, each `--workers` worker). A failed checkpoint thread leaves the store
 * carrying on, slower, so a warning says why; a first connection tried again is logged.
 */
export function servingStoreOptions(log: { warn: (obj: object, msg: string) => void }): OpenStoresOptions {
  return {
    serving: true,
    onBackgroundError: (err) => log.warn({ err }, "SQLite checkpoint thread failed: checkpoints are back on the request path"),
    onConnectRetry: (message) => log.warn({}, message),
  };
}

/** The options of a one-shot CLI command: a first connection tried again is a line on stderr, as errors are. */
export const CLI_STORE_OPTIONS: OpenStoresOptions = {
  onConnectRetry: (message) => process.stderr.write(`attestd: ${message}\n`),
};

export interface OpenStoresOptions {
  /**
   * a serving process (not a one-shot CLI command): SQLite's WAL checkpoints move to a thread of their own
   * (`sqlite/walCheckpointer.ts`), and a lock held by another process is waited for off the event loop
   * (`sqlite/lockWait.ts`)
   */
  serving?: boolean;
  /** told when that thread fails (the store falls back to SQLite's automatic checkpoints) */
  onBackgroundError?: (err: unknown) => void;
  /**
   * told when a first connection to PostgreSQL or Redis timed out and is tried again with more time
   * (connectAttempts.ts): the CLI prints the line, `serve` logs it
   */
  onConnectRetry?: (message: string) => void;
}

/** Opens the backends the configuration names. The embedded default: one SQLite file, in-process rate limits. */
export async function openStores(c: StoreConfig, opts: OpenStoresOptions = {}): Promise<Stores> {
  if (c.store === "postgres") {
    if (!c.databaseUrl) throw new Error("--store postgres needs --database-url");
    // loaded on demand: the embedded default never loads the pg and ioredis drivers
    const { openPostgresStores } = await import("./postgres/openPostgresStores.ts");
    return openPostgresStores({ ...c, databaseUrl: c.databaseUrl, nonceRetain: (c as Partial<Config>).nonceRetain, onConnectRetry: opts.onConnectRetry });
  }
  if (c.redisUrl) {
    throw new Error(
      "--redis-url shares nonces and rate limits between instances, which also need a shared durable store: " +
        "use it with --store postgres (on one host, --workers shares the SQLite file)",
    );
  }
  if (!c.allowNewStore) {
    const problem = lostStoreProblem(c.dataDir);
    if (problem) throw new OperatorError(problem);
  }
  const sqlite = new SqliteStore({
    file: sqliteFile(c.dataDir),
    synchronous: c.sqliteSynchronous as "NORMAL" | "FULL",
    // a serving process keeps its event loop free while another process holds the file's lock
    ...(opts.serving ? { lockWaitMs: c.sqliteLockWaitMs } : {}),
  });
  if (opts.serving) {
    await sqlite.startWalCheckpointer({ onError: opts.onBackgroundError }).catch(async (err: unknown) => {
      await sqlite.close();
      throw err;
    });
  }
  return {
    durable: sqlite,
    nonces: sqlite,
    nonceVerdicts: sqlite,
    nonceAppAttest: sqlite,
    rateLimits: new MemoryRateLimitStore(),
    enrollment: new SqliteEnrollmentStore(sqlite.db),
    jti: new SqliteJtiStore(sqlite.db),
    signingKeys: new SqliteSigningKeyStore(sqlite.db),
    secrets: new SqliteSecretsStore(sqlite.db),
    health: async () => [await sqlite.writer.storage.check("sqlite", () => sqlite.ping(), () => sqlite.writeProbe())],
    close: () => sqlite.close(),
  };
}
