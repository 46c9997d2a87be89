import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { openTokenWithKeys, PlayOpenError, PlayResponseKeyError, PlayTokenError } from "../../src/attestation/encoding/playIntegrityToken.ts";
import { autoPlayThreads, CryptoThreads } from "../../src/services/cryptoThreads.ts";
import { loadConfig } from "../../src/config.ts";
import { joseToken, makeApp, payload } from "./fixtures.ts";

/**
 * CryptoThreads (--play-threads), for Play Integrity tokens: the same answers as opening on the event loop, the same error classes, and no
 * request lost to a thread that dies or to close().
 */

const app = makeApp();
const other = makeApp();
const keys = app.registered.responseKeys!;

describe("play-integrity: opening tokens on threads", () => {
  const pool = new CryptoThreads(2);
  after(() => pool.close());

  it("answers what opening inline answers: the payload, and the token's header and ciphertext size", async () => {
    const token = await joseToken(payload(), app);
    const opened = await pool.open(token, keys);
    assert.deepEqual(opened, await openTokenWithKeys(token, keys));
    assert.deepEqual(opened.token.header, { alg: "A256KW", enc: "A256GCM" });
    assert.ok(opened.token.ciphertextBytes > 100);
    assert.equal((opened.payload as { requestDetails: { requestHash: string } }).requestDetails.requestHash, payload().requestDetails && (payload().requestDetails as { requestHash: string }).requestHash);
  });

  it("rebuilds the error classes the caller tells apart: another app's token, a malformed one, unusable keys", async () => {
    const token = await joseToken(payload(), other);
    await assert.rejects(pool.open(token, keys), (e: unknown) => e instanceof PlayOpenError && /does not decrypt/.test(e.message));
    const parts = token.split(".");
    await assert.rejects(pool.open(parts.slice(0, 4).join("."), keys), PlayTokenError);
    const badKeys = { decryptionKey: new Uint8Array(16), verificationKeySpki: keys.verificationKeySpki };
    await assert.rejects(pool.open(await joseToken(payload(), app), badKeys), PlayResponseKeyError);
  });

  it("answers concurrent tokens, each with its own payload", async () => {
    const nonces = Array.from({ length: 24 }, (_, i) => `nonce-${i}`);
    const tokens = await Promise.all(nonces.map((n) => joseToken(payload({ requestDetails: { requestHash: n } }), app)));
    const opened = (await Promise.all(tokens.map((t) => pool.open(t, keys)))).map((o) => o.payload as { requestDetails: { requestHash: string } });
    assert.deepEqual(opened.map((p) => p.requestDetails.requestHash), nonces);
  });

  it("opens inline what a thread had in hand when it died, and replaces the thread", async () => {
    const tokens = await Promise.all(Array.from({ length: 16 }, (_, i) => joseToken(payload({ requestDetails: { requestHash: `n${i}` } }), app)));
    const answers = tokens.map((t) => pool.open(t, keys));
    // the threads are started by the opens above; end them while their tokens are in flight
    const threads = (pool as unknown as { threads: ({ worker: { terminate(): Promise<number> } } | undefined)[] }).threads;
    await Promise.all(threads.map((t) => t?.worker.terminate()));
    const opened = (await Promise.all(answers)).map((o) => o.payload as { requestDetails: { requestHash: string } });
    assert.deepEqual(opened.map((p) => p.requestDetails.requestHash), tokens.map((_, i) => `n${i}`));
    assert.ok(pool.replaced >= 1, `replaced ${pool.replaced}`);
    // and the next token is opened by a new thread
    assert.deepEqual(await pool.open(tokens[0]!, keys), await openTokenWithKeys(tokens[0]!, keys));
  });

  it("opens inline after close(), and with 0 threads", async () => {
    const token = await joseToken(payload(), app);
    const closed = new CryptoThreads(1);
    await closed.open(token, keys);
    await closed.close();
    assert.deepEqual(await closed.open(token, keys), await openTokenWithKeys(token, keys));
    const none = new CryptoThreads(0);
    assert.equal(none.size, 0);
    assert.deepEqual(await none.open(token, keys), await openTokenWithKeys(token, keys));
  });
});

describe("--play-threads", () => {
  it("auto is one thread per core beyond the first, at most 4, of each worker process's share of the cores", () => {
    assert.deepEqual([1, 2, 4, 8, 64].map((c) => autoPlayThreads(c)), [0, 1, 3, 4, 4]);
    assert.deepEqual([[2, 2], [4, 2], [8, 3], [16, 2]].map(([c, w]) => autoPlayThreads(c, w)), [0, 1, 1, 4]);
  });

  it("takes auto or 0..16, and refuses anything else naming the flag", () => {
    assert.equal(loadConfig({ playThreads: "3" }, {}).playThreads, "3");
    assert.equal(loadConfig({}, {}).playThreads, "auto");
    for (const bad of ["-1", "17", "two", "1.5"]) {
      assert.throws(() => loadConfig({ playThreads: bad }, {}), /--play-threads/);
    }
  });
});
