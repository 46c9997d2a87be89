/** src/nonces/: the shape and its generation and decoding, and issue / consume with their catalog codes. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock, type Rng } from "../../src/clock.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { challengeMatches, decodeNonce, isNonceShaped, NONCE_BYTES, NONCE_PATTERN, newNonce } from "../../src/nonces/nonce.ts";
import { checkNonceShape, NonceService } from "../../src/nonces/nonceService.ts";
import { MemoryNonceStore } from "../../src/store/memory/memoryNonceStore.ts";
import { T0 } from "../helpers/clock.ts";


/** Counts up from 1 in every byte, so each nonce differs and a test can say which bytes it stands for. */
function countingRng(): Rng {
  let n = 0;
  return { bytes: (len) => Buffer.alloc(len, ++n) };
}

/** The catalog code a call refuses with. */
async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string | undefined> {
  try {
    await (typeof p === "function" ? p() : p);
    return undefined;
  } catch (e) {
    assert.ok(isAppError(e), String(e));
    return e.entry.code;
  }
}

describe("nonces", () => {
  it("a generated nonce has the shape, and decodes to the bytes it was made of", () => {
    const bytes = Buffer.alloc(NONCE_BYTES, 7);
    const nonce = newNonce({ bytes: () => bytes });
    assert.ok(isNonceShaped(nonce));
    assert.match(nonce, new RegExp(NONCE_PATTERN));
    assert.deepEqual(decodeNonce(nonce), bytes);
    assert.ok(challengeMatches(nonce, bytes) && challengeMatches(nonce, Buffer.from(nonce, "ascii")));
    for (const s of ["", nonce.slice(1), `${nonce}A`, `${nonce.slice(1)}=`, `${nonce.slice(1)}+`]) {
      assert.equal(isNonceShaped(s), false, s);
      assert.equal(decodeNonce(s), undefined, s);
    }
  });

  it("a request's nonce: absent → 4000001, not one we could issue → 4000002", async () => {
    assert.equal(await codeOf(() => checkNonceShape(undefined)), "4000001");
    assert.equal(await codeOf(() => checkNonceShape("")), "4000001");
    assert.equal(await codeOf(() => checkNonceShape("short")), "4000002");
    assert.equal(await codeOf(() => checkNonceShape("A".repeat(43))), undefined);
  });

  it("issue stores the TTL and refuses past the cap; consume answers each outcome with its code", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryNonceStore();
    const nonces = new NonceService(store, clock, countingRng(), { nonceTtlMs: 1000, maxOutstandingNonces: 2 });
    const a = await nonces.issue("t1");
    const b = await nonces.issue("t1");
    assert.ok(isNonceShaped(a) && isNonceShaped(b) && a !== b);
    assert.equal(await codeOf(nonces.issue("t1")), "4220003", "the cap");
    assert.equal(await codeOf(nonces.consume(a, "t2")), "4000002", "another tenant's nonce is unknown");
    assert.equal(await codeOf(nonces.consume(a, "t1")), undefined);
    assert.equal(await codeOf(nonces.consume(a, "t1")), "4000004", "single use");
    clock.advance(1000);
    assert.equal(await codeOf(nonces.consume(b, "t1")), "4000003", "expired at its TTL");
  });
});
