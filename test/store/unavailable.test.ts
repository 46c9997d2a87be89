import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { StoreUnavailableError } from "../../src/errors/storeUnavailable.ts";
import { fromPgError, fromRedisError, fromSqliteError } from "../../src/store/errors.ts";
import { STORAGE_HOLD_MS, STORAGE_SETTLE_MS, StorageHealth } from "../../src/store/health.ts";
import { openPostgresStores } from "../../src/store/postgres/openPostgresStores.ts";
import { PgStore } from "../../src/store/postgres/pgStore.ts";
import { CONNECT_ATTEMPTS } from "../../src/store/connectAttempts.ts";
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

/** What node-postgres throws for a server error: an Error with the SQLSTATE as `code` and a severity. */
const pgServerError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: "ERROR" });
/** What node:sqlite throws: ERR_SQLITE_ERROR with SQLite's extended result code as `errcode`. */
const sqliteError = (errcode: number, message: string) => Object.assign(new Error(message), { code: "ERR_SQLITE_ERROR", errcode });

describe("a full or failing disk is a storage failure (503, readiness not-ready)", () => {
  it("postgres: 53100 disk_full and 58030 io_error are storage failures; the rest of class 53 is unavailability only", () => {
    for (const code of ["53100", "58030"]) {
      const e = fromPgError(pgServerError(code, 'could not extend file "base/16384/2619": No space left on device'));
      assert.ok(e instanceof StoreUnavailableError && e.storage, code);
    }
    for (const code of ["53300", "53200", "57P01", "08006"]) {
      const e = fromPgError(pgServerError(code, code));
      assert.ok(e instanceof StoreUnavailableError && !e.storage, code);
    }
  });

  it("sqlite: SQLITE_FULL and every SQLITE_IOERR are storage failures; a constraint or a bug stays as it is", () => {
    // 13 SQLITE_FULL, 10 SQLITE_IOERR, 778 SQLITE_IOERR_WRITE, 1290 SQLITE_IOERR_FSYNC, 4874 SQLITE_IOERR_SHMSIZE
    for (const errcode of [13, 10, 778, 1290, 4874]) {
      const e = fromSqliteError(sqliteError(errcode, "database or disk is full"));
      assert.ok(e instanceof StoreUnavailableError && e.storage && e.backend === "sqlite", String(errcode));
    }
    const unique = sqliteError(2067, "UNIQUE constraint failed");
    assert.equal(fromSqliteError(unique), unique);
    const bug = new TypeError("x is not a function");
    assert.equal(fromSqliteError(bug), bug);
  });

  it("StorageHealth: not-ready from a storage failure until a write works, or (without a probe) for the hold", async () => {
    let now = 1_000;
    const health = new StorageHealth(() => now);
    const ping = async () => undefined;
    assert.deepEqual(await health.check("postgres", ping), { name: "postgres", ok: true });
    health.failed(fromPgError(pgServerError("53300", "too many connections")));
    assert.equal((await health.check("postgres", ping)).ok, true, "a passing overload leaves readiness alone");
    health.failed(fromPgError(pgServerError("53100", "No space left on device")));
    const down = await health.check("postgres", ping);
    assert.equal(down.ok, false);
    assert.match(down.error!, /^writes failing: /);
    now += STORAGE_HOLD_MS - 1;
    assert.equal((await health.check("postgres", ping)).ok, false);
    now += 1;
    assert.equal((await health.check("postgres", ping)).ok, true, "let back in to find out");

    // with a probe: not-ready while it fails, ready once it succeeds, whatever the time
    health.failed(fromSqliteError(sqliteError(13, "database or disk is full")));
    let full = true;
    const probe = async () => {
      if (full) throw fromSqliteError(sqliteError(13, "database or disk is full"));
    };
    now += 10 * STORAGE_HOLD_MS;
    assert.equal((await health.check("sqlite", ping, probe)).ok, false);
    full = false;
    assert.equal((await health.check("sqlite", ping, probe)).ok, false, "the probe failed a moment ago: not yet");
    now += STORAGE_SETTLE_MS;
    assert.equal((await health.check("sqlite", ping, probe)).ok, true);
    // a committed write ends it too, once no write has failed for the settle time: on a full disk some still fit
    health.failed(fromSqliteError(sqliteError(13, "database or disk is full")));
    health.recovered();
    assert.equal((await health.check("sqlite", ping)).ok, false, "a commit right after a refused write proves nothing");
    now += STORAGE_SETTLE_MS;
    health.recovered();
    assert.equal((await health.check("sqlite", ping)).ok, true);
    // and a probe that succeeds right after a refused write does not end it either
    health.failed(fromSqliteError(sqliteError(13, "database or disk is full")));
    assert.equal((await health.check("sqlite", ping, async () => undefined)).ok, false);
    now += STORAGE_SETTLE_MS;
    assert.equal((await health.check("sqlite", ping, async () => undefined)).ok, true);
  });
});

describe("PostgreSQL disk full (53100), through the stores openPostgresStores builds", () => {
  let db: TestDatabase;
  let stores: Awaited<ReturnType<typeof openPostgresStores>>;
  before(async () => {
    db = await createTestDatabase("full");
    stores = await openPostgresStores({ databaseUrl: db.url, pgPoolMax: 2 });
  });
  after(async () => {
    await stores?.close();
    await db?.drop();
  });

  it("a write refused for disk space is a storage StoreUnavailableError and /readyz's postgres line goes not-ready", async () => {
    assert.deepEqual(await stores.health(), [{ name: "postgres", ok: true }]);
    const pool = (stores.durable as PgStore).pool;
    const query = pool.query.bind(pool);
    // the server's answer to an INSERT that needs a new page on a full disk; reads still answer
    (pool as { query: unknown }).query = async () => {
      throw pgServerError("53100", 'could not extend file "base/16384/16390": No space left on device');
    };
    try {
      await assert.rejects(
        () => stores.durable.createTenant({ tenantId: "t_full", name: "full", customerId: "535353", kind: "customer", createdAt: new Date(T0).toISOString() }),
        (e: unknown) => e instanceof StoreUnavailableError && e.storage && e.backend === "postgres",
      );
    } finally {
      (pool as { query: unknown }).query = query;
    }
    const [line] = await stores.health();
    assert.equal(line!.name, "postgres");
    assert.equal(line!.ok, false, "the ping answers, but writes fail");
    assert.match(line!.error!, /^writes failing: postgres cannot write: /);
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

  it("opens once a database that did not answer in time answers, saying it tried again", async () => {
    const slow = await TcpProxy.start(db.url);
    // the first attempt gives up after 300 ms; the second is answered
    slow.hangUntilConnection(2);
    const said: string[] = [];
    try {
      const opened = await PgStore.open({ url: slow.url(db.url), poolMax: 1, connectTimeoutMs: 300, onConnectRetry: (m) => said.push(m) });
      try {
        assert.equal(await opened.ping(), undefined);
      } finally {
        await opened.close();
      }
      assert.equal(said.length, 1, said.join("\n"));
      assert.match(said[0]!, new RegExp(`^postgres at 127\\.0\\.0\\.1:${slow.port} did not answer in 0\\.[3-5] s; trying again \\(attempt 2 of 3\\)$`));
    } finally {
      await slow.close();
    }
  });

  it("gives up after CONNECT_ATTEMPTS connections that all timed out, each allowed twice the time of the last", async () => {
    const dead = await TcpProxy.start(db.url);
    dead.hang();
    const said: string[] = [];
    const t0 = performance.now();
    try {
      await assert.rejects(
        PgStore.open({ url: dead.url(db.url), poolMax: 1, connectTimeoutMs: 200, onConnectRetry: (m) => said.push(m) }),
        (e: unknown) => e instanceof StoreUnavailableError && /timeout expired/.test(e.message),
      );
      const ms = performance.now() - t0;
      assert.deepEqual(said.map((m) => /in ([\d.]+) s/.exec(m)?.[1]), ["0.2", "0.4"]);
      assert.ok(ms >= 1_200 && ms < 3_000, `${ms} ms: 200 + 400 + 800 ms`);
    } finally {
      await dead.open();
      await dead.close();
    }
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

  it("opens once a Redis that did not answer in time answers: a connection that timed out is tried again", async () => {
    const slow = await TcpProxy.start(r.url);
    // the first attempt gives up after about a second (its ready check gets no answer); the second is answered
    slow.hangUntilConnection(2);
    const said: string[] = [];
    try {
      const opened = await RedisStore.open({ url: slow.url(r.url), prefix: r.prefix, timeoutMs: 500, onConnectRetry: (m) => said.push(m) });
      try {
        assert.equal(await opened.ping(), undefined);
      } finally {
        await opened.close();
      }
      assert.equal(said.length, 1, said.join("\n"));
      assert.match(said[0]!, new RegExp(`^redis at 127\\.0\\.0\\.1:${slow.port} did not answer in [\\d.]+ s; trying again \\(attempt 2 of 3\\)$`));
    } finally {
      await slow.close();
    }
  });

  it("gives up after CONNECT_ATTEMPTS connections that all timed out, saying so", async () => {
    const dead = await TcpProxy.start(r.url);
    try {
      dead.hang();
      const t0 = performance.now();
      const said: string[] = [];
      await assert.rejects(
        RedisStore.open({ url: dead.url(r.url), prefix: r.prefix, timeoutMs: 300, onConnectRetry: (m) => said.push(m) }),
        (e: unknown) => e instanceof StoreUnavailableError && /timed out|ETIMEDOUT/i.test(e.message),
      );
      const ms = performance.now() - t0;
      assert.equal(said.length, CONNECT_ATTEMPTS - 1, "each new attempt announced, none after the last");
      // the connection is accepted and then never answered, so each attempt ends on the ready check's command
      // timeout (twice the 300 ms, the connect limit's doubling not mattering): a bounded wait, never open-ended
      assert.ok(ms >= (CONNECT_ATTEMPTS - 1) * 2 * 300 && ms < CONNECT_ATTEMPTS * 4 * 300 + 2_000, `${ms} ms`);
    } finally {
      await dead.open();
      await dead.close();
    }
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
    // the script loaded first: a held EVALSHA of a script this Redis has never seen (a fresh server, SCRIPT FLUSH)
    // would be answered NOSCRIPT and not run, which is not what this test is about
    await store.take("key:load-the-script", 1, 5, T0);
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
