import assert from "node:assert/strict";
import { it } from "node:test";
import { PooledCryptoRng } from "../src/clock.ts";
import { newVerdictObjectId } from "../src/domain/verdicts.ts";

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

it("verdict object ids: 22 base64url characters, the time first (ids of one moment share their start), then 80 random bits", () => {
  const rng = new PooledCryptoRng(256);
  const at = Date.parse("2026-11-26T21:30:00.000Z");
  const ids = Array.from({ length: 100 }, (_, i) => newVerdictObjectId(at + i, rng));
  for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{22}$/);
  assert.equal(new Set(ids).size, ids.length, "no repeats");
  assert.equal(Buffer.from(ids[7]!, "base64url").readUIntBE(0, 6), at + 7, "the time, in ms, big-endian");
  assert.equal(new Set(ids.map((id) => id.slice(0, 6))).size, 1, "100 ms apart at most: one common start");
  const sameMs = Array.from({ length: 50 }, () => newVerdictObjectId(at, rng));
  assert.equal(new Set(sameMs).size, 50, "within one millisecond the random part tells them apart");
  assert.equal(Buffer.from(newVerdictObjectId(-5, rng), "base64url").readUIntBE(0, 6), 0, "a clock before 1970 is clamped, not thrown");
});
