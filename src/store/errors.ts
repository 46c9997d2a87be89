import { StoreUnavailableError } from "../errors/storeUnavailable.ts";
import { isSqliteStorageFailure } from "./sqlite/database.ts";

/**
 * How each driver's errors become StoreUnavailableError (src/errors/storeUnavailable.ts, → 503): what counts as
 * "could not reach the backend" is a fact about the driver, so it is decided here, beside the backends.
 */

/**
 * PostgreSQL SQLSTATE classes that mean the server cannot serve right now, not that the statement is wrong:
 * 08 connection exception, 53 insufficient resources (too many connections, disk full), 57 operator intervention
 * (admin shutdown, cannot connect now, statement timeout / query canceled), 58 system error (I/O).
 */
const PG_UNAVAILABLE_CLASSES = new Set(["08", "53", "57", "58"]);

/**
 * The SQLSTATEs among those that mean the disk cannot take writes (53100 disk_full, 58030 io_error): they last
 * until someone acts, so readiness goes not-ready with them. The rest of class 53 (too many connections, out of
 * memory) passes in moments and is shared by every instance: a 503 per request, readiness unchanged.
 */
const PG_STORAGE_STATES = new Set(["53100", "58030"]);

/**
 * Wraps what node-postgres throws. A server error (it has a 5-character SQLSTATE and a severity) is unavailable
 * only in the classes above; anything without one is client-side: refused, timed out, connection terminated,
 * pool closed. All of those mean "could not reach the database".
 */
export function fromPgError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return err;
  const e = err as { code?: unknown; severity?: unknown };
  const sqlstate = typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && typeof e.severity === "string";
  if (sqlstate) {
    const code = e.code as string;
    if (!PG_UNAVAILABLE_CLASSES.has(code.slice(0, 2))) return err;
    return new StoreUnavailableError("postgres", err, { storage: PG_STORAGE_STATES.has(code) });
  }
  if (err instanceof TypeError || err instanceof RangeError) return err; // our bug (bad parameter), not the network
  return new StoreUnavailableError("postgres", err);
}

/** Redis error replies that are transient server states rather than a bad command or script. */
const REDIS_TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|OOM)\b/;

/**
 * Wraps what ioredis throws. A ReplyError is Redis answering "no" to this command: a bug unless it is one of the
 * transient states above. Everything else (connection closed, offline queue disabled, command timeout, max
 * retries) means Redis could not be reached.
 */
export function fromRedisError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return err;
  const e = err as { name?: unknown; message?: unknown };
  if (e.name === "ReplyError" && typeof e.message === "string" && !REDIS_TRANSIENT_REPLY.test(e.message)) return err;
  if (err instanceof TypeError || err instanceof RangeError) return err;
  return new StoreUnavailableError("redis", err);
}

/**
 * Wraps what node:sqlite throws when the disk refuses (SQLITE_FULL, SQLITE_IOERR*): the request was fine and can
 * succeed once space is back, so it is a StoreUnavailableError (→ 503), not a 500. Constraint violations and bugs
 * stay as they are; SQLITE_BUSY is lockWait.ts's.
 */
export function fromSqliteError(err: unknown): unknown {
  return isSqliteStorageFailure(err) ? new StoreUnavailableError("sqlite", err, { storage: true }) : err;
}
