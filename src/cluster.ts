import cluster, { type Worker } from "node:cluster";
import type { FastifyBaseLogger } from "fastify";
import type { Config } from "./config.ts";
import type { RuntimeOptions } from "./server.ts";
import { IpcRateLimitPrimary, IpcRateLimitStore } from "./store/ipc/ipcRateLimitStore.ts";
import { openStores, servingStoreOptions } from "./store/openStores.ts";

/**
 * `attestd serve --workers N` on node:cluster.
 *
 * The primary runs no HTTP: it forks N workers that share the listening port (the primary accepts and hands
 * connections round-robin), restarts a worker that dies, and on SIGTERM/SIGINT asks every worker to drain
 * (each closes its server, lets in-flight requests finish, flushes its activity log) before exiting itself.
 *
 * What the workers share:
 *  - SQLite: the one database file (WAL; IMMEDIATE transactions serialise writers), so nonces, verdicts and the
 *    jti set are already common to all workers.
 *  - Rate limits: without --redis-url, every token bucket lives in the primary and workers take tokens over IPC
 *    (src/store/ipc/ipcRateLimitStore.ts), so a key's limit is per key, not per worker. With --redis-url the
 *    buckets are in Redis and shared with other hosts too.
 *  - If the primary dies, node:cluster makes every worker exit at once (IPC disconnect), so no worker ever runs
 *    without its buckets.
 */

/**
 * In a cluster worker: the stores the runtime should use, i.e. the configured ones with rate limits taken from
 * the primary, unless Redis already shares them. Outside a cluster worker: nothing (the runtime opens its own).
 */
export async function workerRuntimeOptions(config: Config, log: FastifyBaseLogger): Promise<Pick<RuntimeOptions, "stores">> {
  if (!cluster.isWorker || config.redisUrl) return {};
  const stores = await openStores(config, servingStoreOptions(log));
  return { stores: { ...stores, rateLimits: new IpcRateLimitStore() } };
}

export interface PrimaryOptions {
  /** how long a draining worker may take before it is killed */
  drainTimeoutMs?: number;
}

/**
 * Runs the cluster primary until SIGTERM/SIGINT, then exits the process (0 when every worker drained). Never
 * returns. If the first workers cannot start (bad database URL, port in use) the primary exits 1 with them, as
 * a single process would; after that, a dying worker is replaced, with a back-off if replacements keep dying.
 */
export async function runPrimary(config: Config, log: FastifyBaseLogger, opts: PrimaryOptions = {}): Promise<never> {
  const drainTimeoutMs = opts.drainTimeoutMs ?? 30_000;
  const rateLimits = new IpcRateLimitPrimary();
  const recentCrashes: number[] = [];
  const restartTimers = new Set<NodeJS.Timeout>();
  let serving = false; // some worker has listened: from then on, deaths are restarted
  let stopping = false;

  const fork = () => {
    const w = cluster.fork();
    rateLimits.serve(w);
    return w;
  };

  const exitAll = (code: number): never => {
    log.info({ code }, "cluster primary exiting");
    process.exit(code);
  };

  const stop = (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    for (const t of restartTimers) clearTimeout(t);
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    log.info({ signal, workers: workers.length }, "draining workers");
    if (workers.length === 0) exitAll(code);
    // each worker's own SIGTERM handler closes its runtime gracefully (src/main.ts)
    for (const w of workers) w.process.kill("SIGTERM");
    const deadline = setTimeout(() => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGKILL");
      log.error({ drainTimeoutMs }, "workers did not drain in time; killed");
      exitAll(1);
    }, drainTimeoutMs);
    deadline.unref();
    let failed = false;
    cluster.on("exit", (_w, exitCode) => {
      if (exitCode !== 0) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) exitAll(failed ? 1 : code);
    });
  };

  cluster.on("listening", (w, address) => {
    serving = true;
    log.info({ worker: w.id, workerPid: w.process.pid, port: address.port }, "worker listening");
  });

  cluster.on("exit", (w, exitCode, signal) => {
    if (stopping) return;
    if (!serving) {
      // the first start failed (the worker printed why): fail like a single process would
      log.error({ worker: w.id, code: exitCode, signal }, "worker failed to start");
      stop("startup-failure", 1);
      return;
    }
    const now = Date.now();
    recentCrashes.push(now);
    while (recentCrashes.length > 0 && recentCrashes[0]! < now - 60_000) recentCrashes.shift();
    // immediate for an occasional crash; doubling up to 30 s while replacements keep dying (e.g. database down)
    const delay = recentCrashes.length <= 1 ? 0 : Math.min(30_000, 250 * 2 ** (recentCrashes.length - 2));
    log.error({ worker: w.id, workerPid: w.process.pid, code: exitCode, signal, restartInMs: delay }, "worker died; restarting");
    const t = setTimeout(() => {
      restartTimers.delete(t);
      if (!stopping) fork();
    }, delay);
    restartTimers.add(t);
  });

  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));

  log.info({ workers: config.workers, store: config.store }, "cluster primary starting workers");
  for (let i = 0; i < config.workers; i++) fork();
  return new Promise<never>(() => {
    // settled only by process.exit: the primary lives as long as its workers
  });
}
