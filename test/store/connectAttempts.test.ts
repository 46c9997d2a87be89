import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CONNECT_ATTEMPTS, connectPatiently, serverAddress } from "../../src/store/connectAttempts.ts";

const timedOut = (err: unknown) => (err as Error).message === "timed out";

/** A connect that fails with the given errors in turn, then succeeds; it records the time limit of each call. */
function scripted(failures: Error[]) {
  const limits: number[] = [];
  return {
    limits,
    connect: async (timeoutMs: number) => {
      limits.push(timeoutMs);
      const failure = failures[limits.length - 1];
      if (failure) throw failure;
      return "connected";
    },
  };
}

describe("connectPatiently: a first connection that timed out is tried again with more time", () => {
  it("doubles the time limit on each attempt and tells the operator before each new one", async () => {
    const s = scripted([new Error("timed out"), new Error("timed out")]);
    const said: string[] = [];
    assert.equal(await connectPatiently("redis at h:6379", { firstTimeoutMs: 100, onRetry: (m) => said.push(m) }, s.connect, timedOut), "connected");
    assert.deepEqual(s.limits, [100, 200, 400]);
    assert.equal(said.length, 2);
    assert.match(said[0]!, /^redis at h:6379 did not answer in \d+(\.\d)? s; trying again \(attempt 2 of 3\)$/);
    assert.match(said[1]!, /\(attempt 3 of 3\)$/);
  });

  it(`gives up after ${CONNECT_ATTEMPTS} attempts that all timed out, with the last one's error`, async () => {
    const errors = Array.from({ length: CONNECT_ATTEMPTS }, () => new Error("timed out"));
    const s = scripted(errors);
    await assert.rejects(connectPatiently("postgres at db:5432", { firstTimeoutMs: 10 }, s.connect, timedOut), (e) => e === errors.at(-1));
    assert.equal(s.limits.length, CONNECT_ATTEMPTS);
  });

  it("a refusal, an unknown host or a wrong password is final at once: one attempt, nothing said", async () => {
    const refused = new Error("connect ECONNREFUSED");
    const s = scripted([refused]);
    const said: string[] = [];
    await assert.rejects(connectPatiently("redis at h:6379", { firstTimeoutMs: 10, onRetry: (m) => said.push(m) }, s.connect, timedOut), (e) => e === refused);
    assert.deepEqual([s.limits, said], [[10], []]);
  });

  it("names a server by host and port only: never the URL's credentials or options", () => {
    assert.equal(serverAddress("redis://user:s3cret@cache.internal:6380/0?keyPrefix=x", 6379), "cache.internal:6380");
    assert.equal(serverAddress("postgres://attestd:pw@db/attestd?sslmode=require", 5432), "db:5432");
    assert.equal(serverAddress("postgres:///attestd?host=/run/postgresql", 5432), "its socket");
    assert.equal(serverAddress("not a url s3cret", 5432), "the configured URL");
  });
});
