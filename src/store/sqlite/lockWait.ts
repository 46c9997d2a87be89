import { setTimeout as sleep } from "node:timers/promises";
import { StoreUnavailableError } from "../../errors/storeUnavailable.ts";
import { fromSqliteError } from "../errors.ts";
import type { StorageHealth } from "../health.ts";
import { onRejection } from "../methodRejections.ts";
import { isSqliteBusy } from "./database.ts";

/**
 * Waiting for another process's lock on the SQLite file without blocking the event loop.
 *
 * SQLite's own answer to a lock held elsewhere (`busy_timeout`) is to sleep and retry inside the call, and
 * node:sqlite is synchronous: on a serving connection that sleep is the event loop's, so while an `attestd`
 * command (or a `--workers` sibling, or anything else) held the write lock, nothing was answered, not even
 * /healthz. A serving connection therefore has `busy_timeout` 0: a statement that meets the lock fails at once
 * with SQLITE_BUSY, having written nothing, and is tried again from a timer, the pause doubling from 1 ms to
 * 50 ms, until the caller's wait is used up. Then it fails with StoreUnavailableError("sqlite"): 503 with
 * Retry-After, never a 500.
 */

/** What a caller that waited `waitMs` for the lock gets. */
export function lockedOut(err: unknown): StoreUnavailableError {
  return new StoreUnavailableError("sqlite", err);
}

/** the pause before try number `tries` + 1 */
export function lockRetryDelayMs(tries: number): number {
  return Math.min(50, 2 ** Math.min(tries, 6));
}

/** Runs `attempt` until it stops failing SQLITE_BUSY or `waitMs` is spent, pausing on timers in between. */
export async function retryWhileLocked<T>(attempt: () => Promise<T>, waitMs: number, firstError: unknown): Promise<T> {
  const deadline = performance.now() + waitMs;
  let err = firstError;
  for (let tries = 0; ; tries++) {
    const pause = lockRetryDelayMs(tries);
    if (performance.now() + pause > deadline) throw lockedOut(err);
    await sleep(pause);
    try {
      return await attempt();
    } catch (e) {
      if (!isSqliteBusy(e)) throw e;
      err = e;
    }
  }
}

/**
 * Makes every method of `store`'s class that answers with a promise wait out a lock held elsewhere: a call that
 * rejects with SQLITE_BUSY is made again, as above. Safe because each method of the SQLite stores writes with one
 * statement or inside one transaction, and SQLITE_BUSY comes from the statement or the BEGIN that met the lock,
 * before anything was written (or with the transaction rolled back); the group-commit writer's operations never
 * reject with it (the writer waits for the lock itself). Methods answering synchronously are left as they are.
 *
 * Their other failures leave through fromSqliteError: a full or failing disk is a StoreUnavailableError (→ 503,
 * like a lock held too long), and `storage` hears of it, so the connection's /readyz line goes not-ready.
 */
export function waitOutLocks(store: object, waitMs: number, storage: StorageHealth): void {
  onRejection(store, async (err, again) => {
    try {
      if (!isSqliteBusy(err)) throw err;
      return await retryWhileLocked(again, waitMs, err);
    } catch (e) {
      const mapped = fromSqliteError(e);
      storage.failed(mapped);
      throw mapped;
    }
  });
}
