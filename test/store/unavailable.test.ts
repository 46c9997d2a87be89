import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { StoreUnavailableError } from "../../src/errors/storeUnavailable.ts";
import { fromPgError, fromRedisError } from "../../src/store/errors.ts";
import { PgStore } from "../../src/store/postgres/pgStore.ts";
import { RedisStore } from "../../src/store/redis/redisStore.ts";
import { createTestDatabase, createTestRedisPrefix, type TestDatabase, type TestRedisPrefix } from "./backends.ts";
import { TcpProxy } from "./tcpProxy.ts";
import { T0 } from "../helpers/clock.ts";

/** A port nothing listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Runs `fn` and returns how long it took to reject with a StoreUnavailableError. */
async function unavailableWithin(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await assert.rejects(fn, (e: unknown) => e instanceof StoreUnavailableError);
  return performance.now() - t0;
}

/** Polls `fn` until it resolves, for up to `ms`. */
async function eventually<T>(fn: () => Promise<T>, ms = 8_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}


describe("backend errors are classified", () => {
  it("postgres: constraint and syntax errors stay as they are; connection trouble is unavailability", () => {
    const unique = Object.assign(new Error("duplicate key"), { code: "23505", severity: "ERROR" });
    assert.equal(fromPgError(unique), unique);
    const syntax = Object.assign(new Error("syntax error"), { code: "42601", severity: "ERROR" });
    assert.equal(fromPgError(syntax), syntax);
    for (const code of ["57P01", "57P03", "53300", "08006", "57014"]) {
      assert.ok(fromPgError(Object.assign(new Error(code), { code, severity: "FATAL" })) instanceof StoreUnavailableError, code);
    }
    assert.ok(fromPgError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })) instanceof StoreUnavailableError);
    assert.ok(fromPgError(new Error("Connection terminated unexpectedly")) instanceof StoreUnavailableError);
    const bug = new TypeError("x is not a function");
    assert.equal(fromPgError(bug), bug);
  });

  it("redis: error replies stay (a script bug) unless they are transient server states", () => {
    const reply = Object.assign(new Error("ERR wrong number of arguments"), { name: "ReplyError" });
    assert.equal(fromRedisError(reply), reply);
    for (const msg of ["LOADING Redis is loading", "READONLY You can't write", "BUSY script running", "MASTERDOWN link down"]) {
      assert.ok(fromRedisError(Object.assign(new Error(msg), { name: "ReplyError" })) instanceof StoreUnavailableError, msg);
    }
    assert.ok(fromRedisError(new Error("Stream isn't writeable and enableOfflineQueue options is false")) instanceof StoreUnavailableError);
    assert.ok(fromRedisError(Object.assign(new Error("Command timed out"), { name: "Error" })) instanceof StoreUnavailableError);
  });
});

describe("PostgreSQL unreachable", () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let store: PgStore;
  before(async () => {
    db = await createTestDatabase("down");
    proxy = await TcpProxy.start(db.url);
    store = await PgStore.open({ url: proxy.url(db.url), poolMax: 4, connectTimeoutMs: 1_000, queryTimeoutMs: 1_000 });
  });
  after(async () => {
    await store?.close();
    await proxy?.close();
    await db?.drop();
  });

  it("fails to open, quickly, when nothing listens", async () => {
    const url = new URL(db.url);
    url.port = String(await deadPort());
    const ms = await unavailableWithin(() => PgStore.open({ url: url.toString(), poolMax: 1, connectTimeoutMs: 1_000 }));
    assert.ok(ms < 3_000, `${ms} ms`);
  });

  it("answers StoreUnavailableError while down and recovers by itself", async () => {
    await store.createTenant({ tenantId: "t_down", name: "down", customerId: "424242", kind: "customer", createdAt: new Date(T0).toISOString() });
    await proxy.close();
    for (const op of [() => store.ping(), () => store.getTenant("t_down"), () => store.consume("x".repeat(43), "t_down", T0)]) {
      const ms = await unavailableWithin(op);
      assert.ok(ms < 2_500, `${ms} ms`);
    }
    await proxy.open();
    assert.equal((await eventually(() => store.getTenant("t_down")))?.name, "down");
  });

  it("times out a database that stops answering", async () => {
    await store.ping();
    proxy.hang();
    try {
      const ms = await unavailableWithin(() => store.getTenant("t_down"));
      assert.ok(ms >= 900 && ms < 4_000, `${ms} ms: the 1 s statement timeout bounds it`);
    } finally {
      await proxy.open();
    }
    await eventually(() => store.ping());
  });
});

describe("Redis unreachable", () => {
  let r: TestRedisPrefix;
  let proxy: TcpProxy;
  let store: RedisStore;
  before(async () => {
    r = await createTestRedisPrefix("down");
    proxy = await TcpProxy.start(r.url);
    store = await RedisStore.open({ url: proxy.url(r.url), prefix: r.prefix, timeoutMs: 500 });
  });
  after(async () => {
    await store?.close();
    await proxy?.close();
    await r?.clean();
  });

  it("fails to open, quickly, when nothing listens", async () => {
    const port = await deadPort();
    const ms = await unavailableWithin(() => RedisStore.open({ url: `redis://127.0.0.1:${port}`, timeoutMs: 500 }).then((s) => s.close()));
    assert.ok(ms < 2_500, `${ms} ms`);
  });

  it("answers StoreUnavailableError while down and recovers by itself", async () => {
    const nonce = "n".repeat(43);
    assert.equal(await store.issue({ nonce, tenantId: "t1", createdAtMs: T0, expiresAtMs: T0 + 60_000 }, 10, T0), "ok");
    await proxy.close();
    for (const op of [() => store.ping(), () => store.consume(nonce, "t1", T0 + 1), () => store.take("key:x", 1, 1, T0)]) {
      const ms = await unavailableWithin(op);
      assert.ok(ms < 2_000, `${ms} ms`);
    }
    await proxy.open();
    // the nonce was not consumed by the failed attempt: exactly one consume succeeds after recovery
    assert.equal(await eventually(() => store.consume(nonce, "t1", T0 + 2)), "ok");
    assert.equal(await store.consume(nonce, "t1", T0 + 3), "used");
  });

  it("times out a Redis that stops answering, without resending", async () => {
    await store.ping();
    proxy.hang();
    try {
      const ms = await unavailableWithin(() => store.take("key:y", 1, 5, T0));
      assert.ok(ms >= 400 && ms < 3_000, `${ms} ms: the 500 ms command timeout bounds it`);
    } finally {
      await proxy.open();
    }
    // the held command reaches Redis late and runs once; the bucket shows exactly one more token taken
    const d = await eventually(() => store.take("key:y", 1, 5, T0));
    assert.equal(d.remaining, 3);
  });
});
