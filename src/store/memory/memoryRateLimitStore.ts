import type { RateDecision, RateLimitStore } from "../types.ts";

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** The token-bucket arithmetic, shared by the in-process store and mirrored by the Redis Lua script. */
export function takeToken(b: Bucket, ratePerSec: number, burst: number, nowMs: number): RateDecision {
  const elapsed = Math.max(0, nowMs - b.updatedMs);
  b.tokens = Math.min(burst, b.tokens + (elapsed * ratePerSec) / 1000);
  b.updatedMs = nowMs;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return { allowed: true, remaining: Math.floor(b.tokens), retryAfterMs: 0, resetMs: refillMs(burst - b.tokens, ratePerSec) };
  }
  return {
    allowed: false,
    remaining: 0,
    retryAfterMs: refillMs(1 - b.tokens, ratePerSec),
    resetMs: refillMs(burst - b.tokens, ratePerSec),
  };
}

// Module-level, not a closure in takeToken: it runs on every Part A request.
function refillMs(tokens: number, ratePerSec: number): number {
  return Math.ceil((tokens * 1000) / ratePerSec);
}

/**
 * In-process buckets: right for a single process (the embedded default). Several instances share buckets through
 * the Redis store instead. Idle full buckets are dropped so memory stays bounded by active keys.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, Bucket>();
  private takes = 0;

  async take(bucket: string, ratePerSec: number, burst: number, nowMs: number): Promise<RateDecision> {
    let b = this.buckets.get(bucket);
    if (!b) {
      b = { tokens: burst, updatedMs: nowMs };
      this.buckets.set(bucket, b);
    }
    if (++this.takes % 10_000 === 0) this.sweep(nowMs, ratePerSec, burst);
    return takeToken(b, ratePerSec, burst, nowMs);
  }

  private sweep(nowMs: number, ratePerSec: number, burst: number): void {
    const fullAfterMs = (burst * 1000) / ratePerSec;
    for (const [k, b] of this.buckets) if (nowMs - b.updatedMs > fullAfterMs) this.buckets.delete(k);
  }
}
