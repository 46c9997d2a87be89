import { DatabaseSync, type DatabaseSyncOptions, type SQLInputValue, type StatementSync } from "node:sqlite";
import { pathToFileURL } from "node:url";

/**
 * The one place that knows the SQLite driver, Node's built-in `node:sqlite` (docs/deployment.md, "The SQLite
 * binding", says why it replaced better-sqlite3): how a connection is opened, and the few things the driver leaves
 * to its caller (a pragma's value, a single column, nested transactions, what an error means). Every SQLite
 * connection of the program, its tests and its benchmarks is opened and driven through these.
 */

export interface OpenOptions {
  /** no writes through this connection */
  readOnly?: boolean;
  /** fail instead of creating an empty database when the file is not there (a connection to someone's store) */
  mustExist?: boolean;
  /**
   * SQLite's synchronous wait for another connection's lock (`busy_timeout`), default 5 000 ms: the default every
   * connection had under better-sqlite3, kept so a helper connection (the checkpoint thread, a test's second
   * connection) behaves as before. A serving connection sets its own (`SqliteStore`).
   */
  busyTimeoutMs?: number;
}

/**
 * What `openDatabase` passes to `new DatabaseSync`, as plain data: the WAL checkpoint thread opens its connection
 * from it, with the same settings, without loading this module.
 */
export function connectionArgs(file: string, opts: OpenOptions = {}): { location: string; options: DatabaseSyncOptions } {
  // node:sqlite has no "must exist" flag; a URI's mode=rw opens read-write without SQLITE_OPEN_CREATE, atomically
  // (a check before the open could race the file's removal). pathToFileURL escapes what a URI would misread (?, #, %).
  let location = file;
  if (opts.mustExist && file !== ":memory:") {
    const uri = pathToFileURL(file);
    uri.searchParams.set("mode", opts.readOnly ? "ro" : "rw");
    location = uri.href;
  }
  return { location, options: { readOnly: opts.readOnly ?? false, timeout: opts.busyTimeoutMs ?? 5_000 } };
}

export function openDatabase(file: string, opts: OpenOptions = {}): DatabaseSync {
  const { location, options } = connectionArgs(file, opts);
  return new DatabaseSync(location, options);
}

/** A statement that answers with its first column only (better-sqlite3's `pluck()`). */
export interface ColumnStatement {
  /** the first row's first column; undefined when there is no row */
  get(...params: SQLInputValue[]): unknown;
  all(...params: SQLInputValue[]): unknown[];
}

/** Makes `stmt` answer with its first column. The statement is changed (rows as arrays); use it through the result. */
export function pluck(stmt: StatementSync): ColumnStatement {
  // arrays, not objects keyed by a column name the caller would have to repeat
  stmt.setReturnArrays(true);
  return {
    get: (...params) => (stmt.get(...params) as unknown as unknown[] | undefined)?.[0],
    all: (...params) => (stmt.all(...params) as unknown as unknown[][]).map((r) => r[0]),
  };
}

/** A pragma's current value (`pragma(db, "busy_timeout")`). Names are the program's own constants, never input. */
export function pragma(db: DatabaseSync, name: string): unknown {
  return pluck(db.prepare(`PRAGMA ${name}`)).get();
}

const SAVEPOINT = "attestd_nested";

/**
 * Runs `fn` in a transaction and returns its result: COMMIT when it returns, ROLLBACK when it throws (the error
 * is rethrown). Called inside a transaction, it is a SAVEPOINT instead: RELEASE on return, ROLLBACK TO + RELEASE on
 * a throw, which undoes `fn`'s statements only and leaves the outer transaction going (better-sqlite3's nested
 * `db.transaction`; the group-commit writer runs each operation of a batch so). `mode` is the BEGIN's: "immediate"
 * takes the write lock up front, so a transaction that will write never fails half-way for another writer.
 */
export function transaction<T>(db: DatabaseSync, mode: "deferred" | "immediate", fn: () => T): T {
  const nested = db.isTransaction;
  db.exec(nested ? `SAVEPOINT ${SAVEPOINT}` : mode === "immediate" ? "BEGIN IMMEDIATE" : "BEGIN");
  try {
    const result = fn();
    // the statements after an await would run outside the transaction, or inside someone else's batch
    if (typeof (result as { then?: unknown } | null)?.then === "function") throw new TypeError("a SQLite transaction cannot span an await");
    db.exec(nested ? `RELEASE ${SAVEPOINT}` : "COMMIT");
    return result;
  } catch (err) {
    // SQLite may have ended the transaction itself (SQLITE_FULL, SQLITE_IOERR, a COMMIT that failed): nothing to undo
    if (db.isTransaction) db.exec(nested ? `ROLLBACK TO ${SAVEPOINT}; RELEASE ${SAVEPOINT}` : "ROLLBACK");
    throw err;
  }
}

/** SQLite's result codes that the store acts on (sqlite3.h). node:sqlite reports the extended code as `errcode`. */
const SQLITE_IOERR = 10;
const SQLITE_FULL = 13;
const SQLITE_BUSY = 5;
const SQLITE_CONSTRAINT = 19;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** The extended result code of an error SQLite returned through node:sqlite; undefined for any other error. */
function sqliteErrcode(err: unknown): number | undefined {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  return e?.code === "ERR_SQLITE_ERROR" && typeof e.errcode === "number" ? e.errcode : undefined;
}

/** SQLITE_BUSY and its extended codes: another connection holds a lock the statement needed. */
export function isSqliteBusy(err: unknown): boolean {
  const code = sqliteErrcode(err);
  return code !== undefined && (code & 0xff) === SQLITE_BUSY;
}

/**
 * The disk refused: SQLITE_FULL (no space left) or SQLITE_IOERR and its extended codes (a write, fsync or the
 * shared-memory file failed). Nothing of the statement was written; it can succeed once space is back.
 */
export function isSqliteStorageFailure(err: unknown): boolean {
  const code = sqliteErrcode(err);
  return code !== undefined && ((code & 0xff) === SQLITE_FULL || (code & 0xff) === SQLITE_IOERR);
}

/** A constraint refused the write (SQLITE_CONSTRAINT and its extended codes); `"unique"`: a UNIQUE index or constraint. */
export function isConstraintViolation(err: unknown, only?: "unique"): boolean {
  const code = sqliteErrcode(err);
  if (code === undefined) return false;
  return only === "unique" ? code === SQLITE_CONSTRAINT_UNIQUE : (code & 0xff) === SQLITE_CONSTRAINT;
}
