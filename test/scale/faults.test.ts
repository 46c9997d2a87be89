import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, createTestRedisPrefix, type TestDatabase, type TestRedisPrefix } from "../store/backends.ts";
import { TcpProxy } from "../store/tcpProxy.ts";
import { issueNonce, KEY, postBlob, request, tenantWithKeys, type Res } from "./harness.ts";
import { startInstance, type Instance } from "../helpers/serverProcess.ts";

/** Sends the request and returns the answer with how long it took. */
async function timed(fn: () => Promise<Res>): Promise<Res & { ms: number }> {
  const t0 = performance.now();
  const r = await fn();
  return Object.assign(r, { ms: performance.now() - t0 });
}

function assertUnavailable(r: Res & { ms: number }, withinMs: number): void {
  assert.equal(r.status, 503, r.body);
  assert.equal(r.json().error.code, "5030000");
  assert.equal(r.json().error.message, "SERVICE_UNAVAILABLE");
  assert.equal(r.headers["retry-after"], "1");
  assert.ok(r.ms < withinMs, `answered in ${Math.round(r.ms)} ms`);
}

async function eventually(fn: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * An instance whose PostgreSQL and Redis are reached through TCP proxies the test controls. Cutting a proxy is a
 * real outage for the instance (refused connections, reset sockets); `hang` is a backend that stops answering.
 */
describe("backend outages: 503, /readyz, recovery", () => {
  let db: TestDatabase;
  let redis: TestRedisPrefix;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let dir: string;
  let inst: Instance;
  let key: string;

  /** /readyz status and the two store checks (other checks, e.g. trust sources, are not this test's business) */
  const ready = async () => {
    const r = await request("GET", `${inst.base}/readyz`);
    const checks = Object.fromEntries(r.json().checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok]));
    return { status: r.status, checks: { postgres: checks.postgres, redis: checks.redis } };
  };
  const recovered = () => eventually(async () => (await ready()).status === 200);

  before(async () => {
    [db, redis] = await Promise.all([createTestDatabase("fault"), createTestRedisPrefix("fault")]);
    [pgProxy, redisProxy] = await Promise.all([TcpProxy.start(db.url), TcpProxy.start(redis.url)]);
    const redisUrl = `${redisProxy.url(redis.url)}?keyPrefix=${encodeURIComponent(redis.prefix)}`;
    const storeFlags = ["--store", "postgres", "--database-url", pgProxy.url(db.url), "--redis-url", redisUrl];
    dir = mkdtempSync(path.join(tmpdir(), "attestd-fault-"));
    inst = await startInstance([...storeFlags, "--data-dir", dir]);
    key = (await tenantWithKeys(["--store", "postgres", "--database-url", db.url], "fault", [{ rps: 10_000, burst: 10_000 }]))[0]!;
  });

  after(async () => {
    if (inst && inst.proc.exitCode === null && inst.proc.signalCode === null) {
      inst.kill("SIGTERM");
      await inst.exited;
    }
    await Promise.allSettled([pgProxy?.close(), redisProxy?.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
    await Promise.allSettled([db?.drop(), redis?.clean()]);
  });

  it("Redis down: /readyz 503 naming redis, requests 503 at once, then recovery without a restart", async () => {
    const before = await issueNonce(inst.base, key);
    await redisProxy.close();
    assert.deepEqual(await ready(), { status: 503, checks: { postgres: true, redis: false } });
    assertUnavailable(await timed(() => request("POST", `${inst.base}/v2/nonces`, { [KEY]: key })), 2_000);
    assertUnavailable(await timed(() => postBlob(inst.base, key, before)), 2_000);
    await redisProxy.open();
    await recovered();
    // the failed post never reached the nonce: it is still unused
    assert.equal((await postBlob(inst.base, key, before)).status, 200);
  });

  it("Redis not answering: 503 within the command timeout, not a hang", async () => {
    redisProxy.hang();
    try {
      const r = await timed(() => request("POST", `${inst.base}/v2/nonces`, { [KEY]: key }));
      assertUnavailable(r, 5_000);
      assert.ok(r.ms >= 1_500, `answered in ${Math.round(r.ms)} ms: before the timeout?`);
    } finally {
      await redisProxy.open();
    }
    await recovered();
    assert.equal((await request("POST", `${inst.base}/v2/nonces`, { [KEY]: key })).status, 200);
  });

  it("PostgreSQL down: /readyz 503 naming postgres, verdict reads and writes 503, then recovery", async () => {
    const nonce = await issueNonce(inst.base, key);
    const stored = await postBlob(inst.base, key, nonce);
    assert.equal(stored.status, 200);
    const location = stored.headers.location!;
    const unused = await issueNonce(inst.base, key); // nonces live in Redis; issued before the cut for certainty
    await pgProxy.close();
    assert.deepEqual(await ready(), { status: 503, checks: { postgres: false, redis: true } });
    assertUnavailable(await timed(() => request("GET", `${inst.base}${location}`, { [KEY]: key })), 2_500);
    // a blob whose verdict cannot be stored is not acknowledged
    assertUnavailable(await timed(() => postBlob(inst.base, key, unused)), 2_500);
    await pgProxy.open();
    await recovered();
    const r = await request("GET", `${inst.base}${location}`, { [KEY]: key });
    assert.equal(r.status, 200);
    assert.equal(r.json().nonce, nonce);
  });

  it("logs each outage with the backend and cause", () => {
    const warnings = inst.logs().filter((r) => r.msg === "store unavailable");
    assert.ok(warnings.some((w) => w.backend === "redis"));
    assert.ok(warnings.some((w) => w.backend === "postgres"));
  });
});
