import type { CatalogEntry } from "./catalog.ts";

/**
 * The only error type a route lets reach the client: a catalog entry plus a reason for this occurrence.
 * `headers` lets an error carry what its status requires (Allow for 405, Retry-After for 429).
 * `privateReason` is the real reason where the client must get a vaguer one (identity failures answer alike, so a
 * stolen part of a credential cannot be tested piecemeal): it goes to the activity log, for the operator only.
 */
export class AppError extends Error {
  readonly entry: CatalogEntry;
  readonly reason: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly privateReason: string | undefined;

  constructor(entry: CatalogEntry, reason: string = entry.meaning, headers: Record<string, string> = {}, privateReason?: string) {
    super(`${entry.message}: ${reason}`);
    this.name = "AppError";
    this.entry = entry;
    this.reason = reason;
    this.headers = headers;
    this.privateReason = privateReason;
  }

  /** what the operator reads in the activity log */
  get loggedReason(): string {
    return this.privateReason ?? this.reason;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
