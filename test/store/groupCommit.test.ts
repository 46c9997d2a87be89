import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { DatabaseSync } from "node:sqlite";
import { StoreUnavailableError } from "../../src/errors/storeUnavailable.ts";
import { isConstraintViolation, isSqliteBusy, openDatabase, pluck, pragma } from "../../src/store/sqlite/database.ts";
import { GroupCommit } from "../../src/store/sqlite/groupCommit.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The SQLite group-commit writer (src/store/sqlite/groupCommit.ts): concurrent writes share one IMMEDIATE
 * transaction, each in its own savepoint, and are answered only after that transaction's COMMIT. The store
 * conformance suite (sqlite.test.ts) checks that the store's answers did not change; this checks the batching.
 */

const uid = (p = "") => p + randomBytes(9).toString("base64url");

function verdict(objectId: string, tenantId: string): StoredVerdict {
  return {
    objectId,
    tenantId,
    format: "vendor",
    record: { verdict: "Yes" } as unknown as StoredVerdict["record"],
    reason: "reference values match",
    detail: { n: 1 },
    createdAt: new Date(T0).toISOString(),
  };
}

function settled<T>(ps: Promise<T>[]) {
  return Promise.allSettled(ps);
}

describe("sqlite group commit", () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  /** a second connection to the same file: what another process (`--workers`, the CLI) sees */
  let other: DatabaseSync;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-gc-"));
    file = path.join(dir, "attestd.sqlite");
    store = new SqliteStore({ file });
    other = openDatabase(file, { busyTimeoutMs: 10_000 });
  });
  after(async () => {
    other.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const nonce = (tenantId: string, n = uid("n-")) => ({ nonce: n, tenantId, createdAtMs: T0, expiresAtMs: T0 + 60_000 });
  /** a bare verdict INSERT on the store's connection, for operations made by hand */
  const rawVerdictInsert = () =>
    store.db.prepare(
      "INSERT INTO verdicts (object_id, tenant_id, format, record, reason, detail, created_at) VALUES (?, ?, 'vendor', '{}', '', '{}', '')",
    );
  const verdictCount = (tenantId: string) =>
    pluck(other.prepare("SELECT COUNT(*) FROM verdicts WHERE tenant_id = ?")).get(tenantId) as number;

  it("runs many concurrent writes in one transaction, answering each after the COMMIT", async () => {
    const tenantId = uid("t-");
    const before = { ...store.writer.stats };
    const issued = Array.from({ length: 100 }, () => nonce(tenantId));
    const issues = issued.map((n) => store.issue(n, 1_000, T0));
    // queued, not yet run: nothing is in the file before the flush
    assert.equal(store.writer.pending, 100);
    assert.equal(pluck(other.prepare("SELECT COUNT(*) FROM nonces WHERE tenant_id = ?")).get(tenantId), 0);
    // the first answer already sees every batch-mate committed, from another connection
    const firstSeen = issues[0]!.then(() => pluck(other.prepare("SELECT COUNT(*) FROM nonces WHERE tenant_id = ?")).get(tenantId));
    assert.deepEqual(new Set(await Promise.all(issues)), new Set(["ok"]));
    assert.equal(await firstSeen, 100);
    assert.equal(store.writer.stats.commits - before.commits, 1, "one COMMIT for 100 issues");

    const consumes = issued.map((n) => store.consume(n.nonce, tenantId, T0 + 1));
    const saves = issued.map((n) => store.saveVerdict(verdict(n.nonce, tenantId)));
    assert.deepEqual(new Set(await Promise.all(consumes)), new Set(["ok"]));
    await Promise.all(saves);
    assert.equal(store.writer.stats.commits - before.commits, 2, "one more COMMIT for 100 consumes and 100 verdicts");
    assert.equal(verdictCount(tenantId), 100);
    // a read after the answer sees the write (resolution follows COMMIT)
    assert.equal((await store.getVerdict(issued[7]!.nonce))?.objectId, issued[7]!.nonce);
  });

  it("keeps the per-tenant cap exact within a batch", async () => {
    const tenantId = uid("t-");
    const before = store.writer.stats.commits;
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => store.issue(nonce(tenantId), 7, T0)));
    assert.equal(store.writer.stats.commits - before, 1);
    assert.equal(outcomes.filter((o) => o === "ok").length, 7);
    assert.deepEqual(outcomes.slice(0, 7), Array(7).fill("ok"), "in the order they were queued");
    assert.equal(outcomes.filter((o) => o === "limit").length, 33);
  });

  it("answers exactly one 'ok' to concurrent consumes of one nonce, in one batch and across connections", async () => {
    const tenantId = uid("t-");
    const n = nonce(tenantId);
    assert.equal(await store.issue(n, 10, T0), "ok");
    const sibling = new SqliteStore({ file }); // another process on the same file, with its own writer
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? sibling : store).consume(n.nonce, tenantId, T0 + 1)),
      );
      assert.equal(outcomes.filter((o) => o === "ok").length, 1);
      assert.equal(outcomes.filter((o) => o === "used").length, 19);
    } finally {
      await sibling.close();
    }
  });

  it("rejects a failing write alone: its batch-mates commit", async () => {
    const tenantId = uid("t-");
    const dup = uid("v-");
    await store.saveVerdict(verdict(dup, tenantId));
    const before = { ...store.writer.stats };
    const ids = Array.from({ length: 10 }, () => uid("v-"));
    const results = await settled([
      ...ids.slice(0, 5).map((id) => store.saveVerdict(verdict(id, tenantId))),
      store.saveVerdict(verdict(dup, tenantId)), // PRIMARY KEY violation
      ...ids.slice(5).map((id) => store.saveVerdict(verdict(id, tenantId))),
    ]);
    assert.equal(store.writer.stats.commits - before.commits, 1);
    assert.equal(store.writer.stats.failedOps - before.failedOps, 1);
    assert.deepEqual(
      results.map((r) => r.status),
      [...Array(5).fill("fulfilled"), "rejected", ...Array(5).fill("fulfilled")],
    );
    assert.ok(isConstraintViolation((results[5] as PromiseRejectedResult).reason), String((results[5] as PromiseRejectedResult).reason));
    assert.equal(verdictCount(tenantId), 11);
  });

  it("rolls back every statement of the failing operation, not only the one that threw", async () => {
    const tenantId = uid("t-");
    const taken = uid("v-");
    await store.saveVerdict(verdict(taken, tenantId));
    const fresh = uid("v-");
    const insert = rawVerdictInsert();
    const mate = store.saveVerdict(verdict(uid("v-"), tenantId));
    const failing = store.writer.run(() => {
      insert.run(fresh, tenantId); // succeeds ...
      insert.run(taken, tenantId); // ... then this throws
    });
    await assert.rejects(failing, (e) => isConstraintViolation(e));
    await mate;
    assert.equal(await store.getVerdict(fresh), undefined, "the op's first insert was rolled back with it");
    assert.equal(verdictCount(tenantId), 2);
  });

  it("without a savepoint, a failing operation is still rejected alone but keeps what it wrote before the throw", async () => {
    const tenantId = uid("t-");
    const taken = uid("v-");
    await store.saveVerdict(verdict(taken, tenantId));
    const fresh = uid("v-");
    const insert = rawVerdictInsert();
    const before = { ...store.writer.stats };
    const mate = store.saveVerdict(verdict(uid("v-"), tenantId));
    const failing = store.writer.run(
      () => {
        insert.run(fresh, tenantId); // succeeds and stays: the documented contract of { savepoint: false }
        insert.run(taken, tenantId); // throws; SQLite undoes this statement alone
      },
      { savepoint: false },
    );
    await assert.rejects(failing, (e) => isConstraintViolation(e));
    await mate;
    assert.equal(store.writer.stats.commits - before.commits, 1, "one batch");
    assert.ok(await store.getVerdict(fresh), "the statement before the throw was committed with the batch");
    assert.equal(verdictCount(tenantId), 3);
  });

  it("a nonce issue that fails part-way leaves the unused counter over, never under: the cap stays exact", async () => {
    const tenantId = uid("t-");
    const n0 = nonce(tenantId);
    assert.equal(await store.issue(n0, 3, T0), "ok");
    // the same nonce again: the insert fails (PRIMARY KEY) after the counter was bumped
    await assert.rejects(store.issue(n0, 3, T0), (e) => isConstraintViolation(e));
    const counter = pluck(other.prepare("SELECT n FROM nonce_unused_counts WHERE tenant_id = ?")).get(tenantId) as number;
    assert.equal(counter, 2, "an over-estimate of the 1 outstanding nonce");
    // the exact count decides at the boundary: two more fit, the fourth does not
    assert.equal(await store.issue(nonce(tenantId), 3, T0), "ok");
    assert.equal(await store.issue(nonce(tenantId), 3, T0), "ok");
    assert.equal(await store.issue(nonce(tenantId), 3, T0), "limit");
  });

  it("consumeWithVerdict: the consumption and the verdict commit together, once per nonce", async () => {
    const tenantId = uid("t-");
    const n = nonce(tenantId);
    assert.equal(await store.issue(n, 100, T0), "ok");
    const stranger = uid("t-");
    assert.equal(await store.consumeWithVerdict(n.nonce, stranger, T0 + 1, verdict(uid("v-"), stranger)), "unknown", "another tenant's nonce");
    assert.equal(await store.consumeWithVerdict(n.nonce, tenantId, T0 + 60_000, verdict(uid("v-"), tenantId)), "expired");
    assert.equal(verdictCount(tenantId) + verdictCount(stranger), 0, "a refused consumption stores no verdict");

    const ids = Array.from({ length: 20 }, () => uid("v-"));
    const outcomes = await Promise.all(ids.map((id) => store.consumeWithVerdict(n.nonce, tenantId, T0 + 1, verdict(id, tenantId))));
    assert.equal(outcomes.filter((o) => o === "ok").length, 1);
    assert.equal(outcomes.filter((o) => o === "used").length, 19);
    assert.equal(verdictCount(tenantId), 1, "only the winner's verdict is stored");
    assert.ok(await store.getVerdict(ids[outcomes.indexOf("ok")]!));
    assert.equal(await store.consume(n.nonce, tenantId, T0 + 2), "used");
  });

  it("consumeWithVerdict: a verdict that cannot be stored leaves the nonce unused", async () => {
    const tenantId = uid("t-");
    const taken = uid("v-");
    await store.saveVerdict(verdict(taken, tenantId));
    const n = nonce(tenantId);
    assert.equal(await store.issue(n, 100, T0), "ok");
    await assert.rejects(
      store.consumeWithVerdict(n.nonce, tenantId, T0 + 1, verdict(taken, tenantId)), // PRIMARY KEY violation
      (e) => isConstraintViolation(e),
    );
    // the consumption was rolled back with the verdict: the nonce is still there to be used, once
    assert.equal(await store.consumeWithVerdict(n.nonce, tenantId, T0 + 2, verdict(uid("v-"), tenantId)), "ok");
    assert.equal(await store.consumeWithVerdict(n.nonce, uid("t-"), T0 + 2, verdict(uid("v-"), tenantId)), "unknown");
  });

  it("close() commits what is queued before closing the connection", async () => {
    const d = mkdtempSync(path.join(tmpdir(), "attestd-gc-close-"));
    try {
      const f = path.join(d, "attestd.sqlite");
      const s = new SqliteStore({ file: f });
      const tenantId = uid("t-");
      const pending = Array.from({ length: 25 }, (_, i) => s.saveVerdict(verdict(`v-${i}`, tenantId)));
      assert.equal(s.writer.pending, 25);
      await s.close();
      await Promise.all(pending); // answered, because committed
      await assert.rejects(s.saveVerdict(verdict("late", tenantId)), /closed/);
      const reopened = new SqliteStore({ file: f });
      try {
        assert.equal(pluck(reopened.db.prepare("SELECT COUNT(*) FROM verdicts")).get(), 25);
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe("GroupCommit on a raw connection", () => {
  let dir: string;
  let db: DatabaseSync;
  let locker: DatabaseSync;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-gc-raw-"));
    const file = path.join(dir, "x.sqlite");
    db = openDatabase(file, { busyTimeoutMs: 50 });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
    locker = openDatabase(file);
  });
  after(() => {
    locker.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const ins = () => db.prepare("INSERT INTO t (k) VALUES (?)");
  const count = () => pluck(db.prepare("SELECT COUNT(*) FROM t")).get() as number;

  it("keeps a batch open for `turns` event-loop turns: a write queued in the next turn joins it", async () => {
    for (const [turns, commits] of [[1, 2], [2, 1]] as const) {
      const w = new GroupCommit(db, { turns });
      const stmt = ins();
      const first = w.run(() => stmt.run(`turn-${turns}-a`));
      const second = new Promise((resolve) => setImmediate(() => resolve(w.run(() => stmt.run(`turn-${turns}-b`)))));
      await Promise.all([first, second]);
      assert.equal(w.stats.commits, commits, `turns ${turns}`);
      assert.equal(w.stats.ops, 2);
    }
  });

  it("flushes at once when maxBatch operations are queued", async () => {
    const w = new GroupCommit(db, { maxBatch: 8 });
    const stmt = ins();
    const ps = Array.from({ length: 20 }, (_, i) => w.run(() => stmt.run(`m-${i}`).changes));
    // two full batches ran synchronously; the last 4 wait for the next turn
    assert.equal(w.stats.commits, 2);
    assert.equal(w.pending, 4);
    assert.deepEqual(await Promise.all(ps), Array(20).fill(1));
    assert.equal(w.stats.commits, 3);
    assert.equal(w.stats.largestBatch, 8);
  });

  it("with no lock wait, refuses every operation of a batch whose BEGIN IMMEDIATE stays busy as unavailable, then recovers", async () => {
    const w = new GroupCommit(db);
    const stmt = ins();
    const n = count();
    locker.exec("BEGIN IMMEDIATE"); // another process holds the write lock past busy_timeout
    try {
      const results = await settled(Array.from({ length: 3 }, (_, i) => w.run(() => stmt.run(`b-${i}`))));
      assert.deepEqual(results.map((r) => r.status), ["rejected", "rejected", "rejected"]);
      const reason = (results[0] as PromiseRejectedResult).reason;
      assert.ok(reason instanceof StoreUnavailableError, String(reason));
      assert.equal(reason.backend, "sqlite");
      assert.ok(isSqliteBusy(reason.cause), String(reason.cause));
      assert.equal(w.stats.lockedAttempts, 1);
      assert.equal(w.stats.commits, 0);
    } finally {
      locker.exec("ROLLBACK");
    }
    assert.equal(count(), n);
    await w.run(() => stmt.run("b-after"));
    assert.equal(w.stats.commits, 1);
    assert.equal(count(), n + 1);
  });

  it("waits for a lock held elsewhere off the event loop, then commits the batch in order", async () => {
    const busyTimeout = pragma(db, "busy_timeout");
    db.exec("PRAGMA busy_timeout = 0"); // as on a serving connection
    const w = new GroupCommit(db, { lockWaitMs: 60_000 });
    const stmt = ins();
    const order: string[] = [];
    locker.exec("BEGIN IMMEDIATE");
    try {
      const writes = ["w-1", "w-2", "w-3"].map((k) => w.run(() => stmt.run(k)).then(() => order.push(k)));
      // the loop keeps turning: timers fire and other work runs while the writes wait
      let turns = 0;
      while (w.stats.lockedAttempts < 3) {
        await new Promise((r) => setTimeout(r, 1));
        turns++;
      }
      assert.ok(turns >= 1);
      assert.deepEqual(order, [], "nothing is answered while the lock is held elsewhere");
      locker.exec("COMMIT");
      await Promise.all(writes);
      assert.deepEqual(order, ["w-1", "w-2", "w-3"]);
      assert.deepEqual(pluck(db.prepare("SELECT k FROM t WHERE k LIKE 'w-%' ORDER BY rowid")).all(), ["w-1", "w-2", "w-3"]);
    } finally {
      if (locker.isTransaction) locker.exec("ROLLBACK");
      db.exec(`PRAGMA busy_timeout = ${busyTimeout}`);
    }
  });

  it("refuses as unavailable what waited lockWaitMs for the lock, writing none of it; later writes go through", async () => {
    const busyTimeout = pragma(db, "busy_timeout");
    db.exec("PRAGMA busy_timeout = 0");
    const w = new GroupCommit(db, { lockWaitMs: 30 });
    const stmt = ins();
    const n = count();
    locker.exec("BEGIN IMMEDIATE");
    try {
      const results = await settled([w.run(() => stmt.run("late-1")), w.run(() => stmt.run("late-2"))]);
      for (const r of results) {
        assert.equal(r.status, "rejected");
        assert.ok((r as PromiseRejectedResult).reason instanceof StoreUnavailableError);
      }
      assert.ok(w.stats.lockedAttempts >= 2, "tried again before giving up");
    } finally {
      locker.exec("ROLLBACK");
      db.exec(`PRAGMA busy_timeout = ${busyTimeout}`);
    }
    assert.equal(count(), n);
    await w.run(() => stmt.run("late-after"));
    assert.equal(count(), n + 1);
  });

  it("rejects the whole batch when an operation ends the transaction itself; nothing of it is kept", async () => {
    const w = new GroupCommit(db);
    const stmt = ins();
    const n = count();
    const results = await settled([
      w.run(() => void stmt.run("x-1")),
      w.run(() => void db.exec("ROLLBACK")), // as SQLite does on SQLITE_FULL / SQLITE_IOERR
      w.run(() => void stmt.run("x-2")),
    ]);
    assert.deepEqual(results.map((r) => r.status), ["rejected", "rejected", "rejected"]);
    assert.equal(w.stats.failedBatches, 1);
    assert.equal(count(), n, "the operation that ran before it was not committed either");
    assert.equal(db.isTransaction, false);
    await w.run(() => stmt.run("x-after"));
    assert.equal(count(), n + 1);
  });

  it("holds its commits while held (writes queue, the loop turns), commits them in order on release", async () => {
    const w = new GroupCommit(db, { maxBatch: 2 });
    const stmt = ins();
    const n = count();
    const order: string[] = [];
    const release = w.hold();
    const writes = ["h-1", "h-2", "h-3"].map((k) => w.run(() => stmt.run(k)).then(() => order.push(k)));
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 1));
    assert.deepEqual(order, [], "nothing answered while held, not even past maxBatch");
    assert.equal(count(), n, "nothing written while held");
    assert.equal(w.pending, 3);
    release();
    release(); // a second call is a no-op
    await Promise.all(writes);
    assert.deepEqual(order, ["h-1", "h-2", "h-3"]);
    assert.equal(count(), n + 3);
    await w.run(() => stmt.run("h-after")); // and the writer is back to normal
    assert.equal(count(), n + 4);
  });

  it("close() commits what is queued even while held", async () => {
    const w = new GroupCommit(db);
    const stmt = ins();
    const n = count();
    w.hold();
    const write = w.run(() => stmt.run("hc-1"));
    w.close();
    await write;
    assert.equal(count(), n + 1);
  });

  it("never leaves the connection inside a transaction between turns", async () => {
    const w = new GroupCommit(db);
    const stmt = ins();
    const p = w.run(() => stmt.run("y-1"));
    assert.equal(db.isTransaction, false);
    await p;
    assert.equal(db.isTransaction, false);
  });
});
