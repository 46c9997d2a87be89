import type { Clock } from "../clock.ts";
import type { ApiClient } from "../domain/enrollment.ts";
import type { ApiKeyRecord } from "../domain/tenants.ts";
import type { RateDecision, RateLimitStore } from "../store/types.ts";

/**
 * Per-caller token buckets over a RateLimitStore, for both parts: which bucket a caller takes from (a Part A key's
 * or a Part B client's, named so the two can never share one), with what refill and capacity, and what came of
 * the take. Refusing and the RateLimit headers are the HTTP layer's (src/http/routes/guards.ts), built from the
 * decision alone.
 */

export interface RateLimitDecision extends RateDecision {
  /** the bucket's refill, requests per second */
  rps: number;
  /** the bucket's capacity */
  burst: number;
}

/** the bucket of a Part A key that sets no limits of its own */
export interface DefaultRateLimit {
  rps: number;
  burst: number;
}

export class RateLimiter {
  constructor(
    private readonly store: RateLimitStore,
    private readonly clock: Clock,
    private readonly defaults: DefaultRateLimit,
  ) {}

  /** One request of a Part A key: its own rps / burst where set (> 0), the service's defaults otherwise. */
  forApiKey(key: ApiKeyRecord): Promise<RateLimitDecision> {
    const rps = key.rps > 0 ? key.rps : this.defaults.rps;
    const burst = key.burst > 0 ? key.burst : this.defaults.burst;
    return this.take(`key:${key.keyId}`, rps, burst);
  }

  /** One request of a Part B client, at the client's rps / burst. */
  forClient(client: ApiClient): Promise<RateLimitDecision> {
    return this.take(`client:${client.clientId}`, client.rps, client.burst);
  }

  /**
   * One portal sign-in attempt, counted per account and per address: 10 in a row, then one every 6 s per
   * account (a person mistyping is never stopped; a guesser gets ~600 an hour per account), and 30 then one a
   * second per address. Both are taken so neither can be drained through the other. The account's bucket is
   * named by a hash of its email, so an unknown email costs the same as a known one.
   */
  async forSignIn(emailHash: string, remoteAddress: string): Promise<RateLimitDecision> {
    const perAccount = await this.take(`signin:acct:${emailHash}`, 1 / 6, 10);
    const perAddress = await this.forSignInAddress(remoteAddress);
    return perAccount.allowed ? perAddress : perAccount;
  }

  /** A sign-in attempt that names no account yet (a passkey's): the address's bucket of forSignIn alone. */
  forSignInAddress(remoteAddress: string): Promise<RateLimitDecision> {
    return this.take(`signin:addr:${remoteAddress}`, 1, 30);
  }

  private async take(bucket: string, rps: number, burst: number): Promise<RateLimitDecision> {
    const d = await this.store.take(bucket, rps, burst, this.clock.nowMs());
    return { ...d, rps, burst };
  }
}
