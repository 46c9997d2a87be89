import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { NonceStore } from "../store/types.ts";
import { isNonceShaped, newNonce } from "./nonce.ts";
import type { NonceConsumeOutcome } from "./types.ts";

/**
 * Issuing and spending nonces over a NonceStore: the TTL, the per-tenant cap on outstanding nonces, and the
 * catalog error for every way a nonce can be refused. Single use is the store's promise (`consume` is atomic);
 * this module decides what each outcome means to a client.
 */

export interface NonceLimits {
  nonceTtlMs: number;
  maxOutstandingNonces: number;
}

const CONSUME_ERRORS = {
  unknown: [catalog.NONCE_INVALID, "The nonce is unknown to this tenant"],
  expired: [catalog.NONCE_EXPIRED, "The nonce has expired; request a new one"],
  used: [catalog.NONCE_ALREADY_USED, "The nonce was already used for a blob"],
} as const;

/** A request's nonce parameter, refused before anything is looked up when it is absent or not one we could issue. */
export function checkNonceShape(nonce: string | undefined): asserts nonce is string {
  if (nonce === undefined || nonce === "") throw new AppError(catalog.NONCE_REQUIRED, "The nonce query parameter is required");
  if (!isNonceShaped(nonce)) throw new AppError(catalog.NONCE_INVALID, "The nonce is not one this service issued");
}

/**
 * Throws the catalog error of a consumption that did not succeed. Exported for consumptions the nonce service does
 * not make itself: one committed together with a verdict (NonceVerdictStore).
 */
export function refuseUnlessConsumed(outcome: NonceConsumeOutcome): void {
  if (outcome === "ok") return;
  const [entry, reason] = CONSUME_ERRORS[outcome];
  throw new AppError(entry, reason);
}

export class NonceService {
  constructor(
    private readonly store: NonceStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly limits: NonceLimits,
  ) {}

  async issue(tenantId: string): Promise<string> {
    const nowMs = this.clock.nowMs();
    const nonce = newNonce(this.rng);
    const outcome = await this.store.issue(
      { nonce, tenantId, createdAtMs: nowMs, expiresAtMs: nowMs + this.limits.nonceTtlMs },
      this.limits.maxOutstandingNonces,
      nowMs,
    );
    if (outcome === "limit") {
      throw new AppError(
        catalog.NONCE_LIMIT_EXCEEDED,
        `The tenant has ${this.limits.maxOutstandingNonces} outstanding nonces; use or let some expire`,
      );
    }
    return nonce;
  }

  /** Spends the nonce now, or throws why it cannot be spent (another tenant's nonce is "unknown"). */
  async consume(nonce: string, tenantId: string): Promise<void> {
    refuseUnlessConsumed(await this.store.consume(nonce, tenantId, this.clock.nowMs()));
  }
}

/** What the purge reports to (pino-compatible). */
export interface PurgeLog {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Forgets, every `everyMs`, the nonces that expired more than `retainMs` ago: kept that long so a late post gets
 * NONCE_EXPIRED or NONCE_ALREADY_USED rather than NONCE_INVALID, then dropped so the store stays small. The timer
 * never keeps the process alive; the returned function stops it.
 */
export function startNoncePurge(store: NonceStore, clock: Clock, retainMs: number, log: PurgeLog, everyMs = 60_000): () => void {
  const timer = setInterval(() => {
    store
      .purgeExpired(clock.nowMs(), retainMs)
      .then((n) => n > 0 && log.debug({ purged: n }, "expired nonces purged"))
      .catch((err: unknown) => log.warn({ err }, "nonce purge failed"));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
