/**
 * The one failure that is neither a catalog error nor a bug: a backing store (PostgreSQL, Redis, the cluster
 * primary, a SQLite file another process keeps locked) could not answer — refused, timed out, dropped the
 * connection, is shutting down, or has no disk space left to write. The stores raise
 * it and the HTTP error handler (src/http/errorHandler.ts) answers it with 503 SERVICE_UNAVAILABLE, so a client
 * retries later instead of getting a 500 or, worse, an answer that skipped a check. It lives here, a leaf beside
 * the catalog, because both ends name it and neither may import the other (http never imports store/).
 *
 * Errors that mean "the request itself is wrong" (a unique violation, a Lua script bug) are NOT wrapped: they are
 * programming or data errors and stay 500s with an error id in the log.
 */
export class StoreUnavailableError extends Error {
  /** which backend: "postgres", "redis", "cluster", "sqlite" */
  readonly backend: string;
  /**
   * The backend answered but cannot write: its disk is full or failed (SQLITE_FULL, SQLITE_IOERR, PostgreSQL's
   * 53100 disk_full and 58030 io_error). Unlike a dropped connection this lasts until someone frees space, so the
   * store's readiness check goes not-ready with it (`src/store/health.ts`) and clients are told to wait longer.
   */
  readonly storage: boolean;

  constructor(backend: string, cause: unknown, opts: { storage?: boolean } = {}) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`${backend} ${opts.storage ? "cannot write" : "unavailable"}: ${detail}`, { cause });
    this.name = "StoreUnavailableError";
    this.backend = backend;
    this.storage = opts.storage ?? false;
  }
}

export function isStoreUnavailable(err: unknown): err is StoreUnavailableError {
  return err instanceof StoreUnavailableError;
}
