import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import {
  isConstraintViolation,
  isSqliteBusy,
  openDatabase,
  pluck,
  pragma,
  transaction,
} from "../../src/store/sqlite/database.ts";

/**
 * src/store/sqlite/database.ts: what the store expects of its driver helpers, on real connections. The store's own
 * suites exercise them in use (groupCommit.test.ts: savepoints per operation and the busy retry; lockWait.test.ts;
 * walCheckpointer.test.ts: the thread's must-exist open); this pins the contracts those rely on.
 */
describe("sqlite driver helpers (node:sqlite)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-sqlitedb-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("mustExist refuses a missing file without creating one, and opens an existing one whatever its name", () => {
    const missing = path.join(dir, "missing.sqlite");
    assert.throws(() => openDatabase(missing, { mustExist: true }), /unable to open database file/);
    assert.throws(() => openDatabase(missing, { mustExist: true, readOnly: true }), /unable to open database file/);
    assert.deepEqual(readdirSync(dir), [], "nothing was created, not even under a URI-looking name");

    // characters a file: URI would misread if they were not escaped
    const odd = path.join(dir, "a b?c#d%20.sqlite");
    const made = openDatabase(odd);
    made.exec("CREATE TABLE t (k TEXT)");
    made.close();
    const again = openDatabase(odd, { mustExist: true });
    again.exec("INSERT INTO t VALUES ('x')");
    assert.equal(again.location(), odd);
    again.close();
    const ro = openDatabase(odd, { mustExist: true, readOnly: true });
    assert.equal(pluck(ro.prepare("SELECT COUNT(*) FROM t")).get(), 1);
    assert.throws(() => ro.exec("INSERT INTO t VALUES ('y')"), /readonly/);
    ro.close();
    assert.equal(existsSync(odd), true);
  });

  it("keeps better-sqlite3's default busy timeout unless told otherwise", () => {
    const db = openDatabase(":memory:");
    assert.equal(pragma(db, "busy_timeout"), 5000);
    db.close();
    const quick = openDatabase(":memory:", { busyTimeoutMs: 0 });
    assert.equal(pragma(quick, "busy_timeout"), 0);
    quick.close();
  });

  it("pluck answers with the first column, undefined when there is no row", () => {
    const db = openDatabase(":memory:");
    db.exec("CREATE TABLE t (k TEXT, v INTEGER); INSERT INTO t VALUES ('a', 1), ('b', 2)");
    const v = pluck(db.prepare("SELECT v, k FROM t WHERE k = ?"));
    assert.equal(v.get("b"), 2);
    assert.equal(v.get("z"), undefined);
    assert.deepEqual(pluck(db.prepare("SELECT k FROM t ORDER BY k")).all(), ["a", "b"]);
    db.close();
  });

  it("transaction commits, rolls back on a throw, and nests as a savepoint that undoes only its own statements", () => {
    const db = openDatabase(":memory:");
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
    const ins = db.prepare("INSERT INTO t VALUES (?)");
    const keys = () => pluck(db.prepare("SELECT k FROM t ORDER BY k")).all();

    assert.equal(transaction(db, "immediate", () => (ins.run("a"), "done")), "done");
    assert.throws(() => transaction(db, "deferred", () => (ins.run("b"), ins.run("a"))), (e) => isConstraintViolation(e));
    assert.deepEqual(keys(), ["a"], "the throw undid the whole transaction");
    assert.equal(db.isTransaction, false);

    transaction(db, "immediate", () => {
      ins.run("c");
      assert.throws(() => transaction(db, "deferred", () => (ins.run("d"), ins.run("c"))));
      assert.equal(db.isTransaction, true, "the outer transaction goes on");
      const nested = transaction(db, "immediate", () => (ins.run("e"), "kept"));
      assert.equal(nested, "kept");
    });
    assert.deepEqual(keys(), ["a", "c", "e"], "the failed savepoint's first insert (d) went with it");

    assert.throws(() => transaction(db, "immediate", () => Promise.resolve(ins.run("f"))), /cannot span an await/);
    assert.deepEqual(keys(), ["a", "c", "e"]);
    assert.equal(db.isTransaction, false);
    db.close();
  });

  it("tells SQLITE_BUSY and constraint violations from SQLite's own errors", () => {
    const file = path.join(dir, "busy.sqlite");
    const a = openDatabase(file, { busyTimeoutMs: 0 });
    a.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT PRIMARY KEY, u TEXT UNIQUE, n TEXT NOT NULL)");
    const b = openDatabase(file, { busyTimeoutMs: 0 });
    b.exec("BEGIN IMMEDIATE");
    const busy = catchOf(() => a.exec("BEGIN IMMEDIATE"));
    b.exec("ROLLBACK");
    assert.ok(isSqliteBusy(busy), String(busy));
    assert.equal(isConstraintViolation(busy), false);

    a.prepare("INSERT INTO t VALUES ('k', 'u', 'n')").run();
    const unique = catchOf(() => a.prepare("INSERT INTO t VALUES ('k2', 'u', 'n')").run());
    const primaryKey = catchOf(() => a.prepare("INSERT INTO t VALUES ('k', 'u2', 'n')").run());
    const notNull = catchOf(() => a.prepare("INSERT INTO t VALUES ('k3', 'u3', NULL)").run());
    assert.ok(isConstraintViolation(unique, "unique"));
    for (const e of [unique, primaryKey, notNull]) {
      assert.ok(isConstraintViolation(e), String(e));
      assert.equal(isSqliteBusy(e), false);
    }
    assert.equal(isConstraintViolation(primaryKey, "unique"), false);
    assert.equal(isConstraintViolation(notNull, "unique"), false);

    const syntax = catchOf(() => a.exec("SELEC 1"));
    assert.equal(isSqliteBusy(syntax), false);
    assert.equal(isConstraintViolation(syntax), false);
    assert.equal(isSqliteBusy(new Error("database is locked")), false, "only node:sqlite's errors are classified");
    a.close();
    b.close();
  });
});

function catchOf(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  assert.fail("expected a throw");
}
