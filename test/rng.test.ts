import assert from "node:assert/strict";
import { it } from "node:test";
import { PooledCryptoRng } from "../src/clock.ts";

it("pooled CSPRNG: right lengths, no repeats across refills, copies rather than views, consumed bytes wiped", () => {
  const rng = new PooledCryptoRng(256);
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const b = rng.bytes(32);
    assert.equal(b.length, 32);
    const hex = b.toString("hex");
    assert.ok(!seen.has(hex), "no 32-byte value repeats");
    seen.add(hex);
    const pool = rng as unknown as { pool: Buffer };
    assert.notEqual(b.buffer, pool.pool.buffer, "a copy, not a view into the pool");
  }
  const pool = rng as unknown as { pool: Buffer; offset: number };
  assert.ok(pool.pool.subarray(0, pool.offset).every((x) => x === 0), "handed-out bytes are zeroed in the pool");
  assert.equal(rng.bytes(1000).length, 1000, "large draws bypass the pool");
});
