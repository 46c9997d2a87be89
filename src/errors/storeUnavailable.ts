/**
 * The one failure that is neither a catalog error nor a bug: a backing store (PostgreSQL, Redis, the cluster
 * primary, a SQLite file another process keeps locked) could not answer — refused, timed out, dropped the
 * connection, or is shutting down. The stores raise
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

  constructor(backend: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`${backend} unavailable: ${detail}`, { cause });
    this.name = "StoreUnavailableError";
    this.backend = backend;
  }
}

export function isStoreUnavailable(err: unknown): err is StoreUnavailableError {
  return err instanceof StoreUnavailableError;
}
