import { StoreUnavailableError } from "../errors/storeUnavailable.ts";

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
 * Wraps what node-postgres throws. A server error (it has a 5-character SQLSTATE and a severity) is unavailable
 * only in the classes above; anything without one is client-side: refused, timed out, connection terminated,
 * pool closed. All of those mean "could not reach the database".
 */
export function fromPgError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return err;
  const e = err as { code?: unknown; severity?: unknown };
  const sqlstate = typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && typeof e.severity === "string";
  if (sqlstate) return PG_UNAVAILABLE_CLASSES.has((e.code as string).slice(0, 2)) ? new StoreUnavailableError("postgres", err) : err;
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
