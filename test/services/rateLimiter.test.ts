/** RateLimiter: which bucket each caller takes from, at what rate, and the decision it returns. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import type { ApiClient } from "../../src/domain/enrollment.ts";
import type { ApiKeyRecord } from "../../src/domain/tenants.ts";
import { RateLimiter } from "../../src/services/rateLimiter.ts";
import { MemoryRateLimitStore } from "../../src/store/memory/memoryRateLimitStore.ts";
import type { RateDecision, RateLimitStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";


/** A store that answers from a real one and remembers what it was asked. */
function recording(): { store: RateLimitStore; takes: { bucket: string; rps: number; burst: number; nowMs: number }[] } {
  const inner = new MemoryRateLimitStore();
  const takes: { bucket: string; rps: number; burst: number; nowMs: number }[] = [];
  return {
    takes,
    store: {
      take(bucket, rps, burst, nowMs): Promise<RateDecision> {
        takes.push({ bucket, rps, burst, nowMs });
        return inner.take(bucket, rps, burst, nowMs);
      },
    },
  };
}

const key = (keyId: string, rps: number, burst: number): ApiKeyRecord => ({
  keyId,
  tenantId: "t1",
  secretHash: "",
  rps,
  burst,
  createdAt: new Date(T0).toISOString(),
  revokedAt: null,
  restrictions: null,
  label: null,
  lastUsedAt: null,
});

const client = (clientId: string, rps: number, burst: number) => ({ clientId, rps, burst }) as ApiClient;

describe("RateLimiter", () => {
  it("a Part A key takes from its own bucket at its own limits, or at the defaults when it sets none", async () => {
    const { store, takes } = recording();
    const clock = new ManualClock(T0);
    const limiter = new RateLimiter(store, clock, { rps: 50, burst: 100 });
    const own = await limiter.forApiKey(key("k1", 2, 3));
    const dflt = await limiter.forApiKey(key("k2", 0, 0));
    assert.deepEqual(takes, [
      { bucket: "key:k1", rps: 2, burst: 3, nowMs: T0 },
      { bucket: "key:k2", rps: 50, burst: 100, nowMs: T0 },
    ]);
    assert.deepEqual([own.rps, own.burst, own.allowed, own.remaining], [2, 3, true, 2]);
    assert.deepEqual([dflt.rps, dflt.burst, dflt.allowed, dflt.remaining], [50, 100, true, 99]);
  });

  it("a Part B client has a bucket of its own, never a key's of the same id", async () => {
    const { store, takes } = recording();
    const limiter = new RateLimiter(store, new ManualClock(T0), { rps: 50, burst: 100 });
    await limiter.forApiKey(key("same", 1, 1));
    const d = await limiter.forClient(client("same", 1, 1));
    assert.deepEqual(takes.map((t) => t.bucket), ["key:same", "client:same"]);
    assert.equal(d.allowed, true, "the key's empty bucket is not the client's");
  });

  it("an empty bucket is refused with the wait for one token, and refills with the clock", async () => {
    const clock = new ManualClock(T0);
    const limiter = new RateLimiter(new MemoryRateLimitStore(), clock, { rps: 50, burst: 100 });
    const c = client("c1", 2, 1);
    assert.equal((await limiter.forClient(c)).allowed, true);
    const refused = await limiter.forClient(c);
    assert.deepEqual([refused.allowed, refused.remaining, refused.retryAfterMs], [false, 0, 500]);
    clock.advance(500);
    assert.equal((await limiter.forClient(c)).allowed, true);
  });
});
