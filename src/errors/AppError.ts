import type { CatalogEntry } from "./catalog.ts";

/**
 * The only error type a route lets reach the client: a catalog entry plus a reason for this occurrence.
 * `headers` lets an error carry what its status requires (Allow for 405, Retry-After for 429).
 */
export class AppError extends Error {
  readonly entry: CatalogEntry;
  readonly reason: string;
  readonly headers: Readonly<Record<string, string>>;

  constructor(entry: CatalogEntry, reason: string = entry.meaning, headers: Record<string, string> = {}) {
    super(`${entry.message}: ${reason}`);
    this.name = "AppError";
    this.entry = entry;
    this.reason = reason;
    this.headers = headers;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
