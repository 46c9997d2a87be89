import type { DatabaseSync } from "node:sqlite";
import { StorageHealth } from "../health.ts";
import { isSqliteBusy, pragma, transaction } from "./database.ts";
import { lockedOut, lockRetryDelayMs } from "./lockWait.ts";

/** Counters, for tests and diagnostics. */
export interface GroupCommitStats {
  /** batches committed */
  commits: number;
  /** batches that failed as a whole (nothing committed, every operation rejected) */
  failedBatches: number;
  /** operations run (including the ones that failed alone) */
  ops: number;
  /** operations that threw and were rolled back alone */
  failedOps: number;
  /** the largest batch so far */
  largestBatch: number;
  /** BEGIN IMMEDIATEs that met another connection's write lock (the batch then waited and was tried again) */
  lockedAttempts: number;
}

interface Pending {
  op: () => unknown;
  /** false: run without a savepoint of its own (see `RunOptions.savepoint`) */
  savepoint: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** performance.now() when queued: the lock wait is counted from here */
  queuedAt: number;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface RunOptions {
  /**
   * Run the operation inside a SAVEPOINT of its own (default true), so a throw undoes all of its statements.
   * false saves the SAVEPOINT/RELEASE pair (about a third of the statement work of a nonce issue) and is only for
   * an operation that leaves the file consistent whichever of its statements throws: a single write (SQLite undoes
   * a failed statement by itself), or writes ordered so that what a later failure leaves behind is harmless (a
   * counter that may only over-estimate, say). Its caller is still rejected alone; what it wrote before the throw
   * is committed with the batch.
   */
  savepoint?: boolean;
}

export interface GroupCommitOptions {
  /** flush at once when this many operations are queued (default 256) */
  maxBatch?: number;
  /**
   * event-loop turns (`setImmediate`s) a batch stays open for more operations (default 2). One turn collects what
   * the I/O callbacks of one poll phase queued; a second also takes the requests whose sockets became readable
   * while the first batch's requests were being parsed and routed. Measured on `POST /v2/nonces` (bench/README.md):
   * ~20 % less server CPU per nonce than one turn, and no worse latency, since a bigger batch costs less per
   * operation; the added wait is one loop turn (tens of microseconds when idle).
   */
  turns?: number;
  /**
   * how long an operation may wait for another connection's write lock (default 0), asynchronously: a batch whose
   * BEGIN IMMEDIATE meets the lock (SQLITE_BUSY; on a serving connection `busy_timeout` is 0, so at once) goes back
   * to the head of the queue and is tried again from a timer (`lockWait.ts`); an operation that has waited this
   * long is rejected with StoreUnavailableError ("sqlite"). Also the synchronous `busy_timeout` of the flush in
   * `close()`, when there is no event loop left to keep free.
   */
  lockWaitMs?: number;
}

/**
 * Group commit for one SQLite connection: write operations are queued and run together in ONE
 * `BEGIN IMMEDIATE ... COMMIT`, so a burst of concurrent requests pays for one WAL commit (the write lock, the
 * WAL frames, the `fcntl`s and, with synchronous=FULL, the fsync) instead of one each.
 *
 * - An operation is a synchronous closure over prepared statements. It runs when its batch is flushed, not when
 *   it is queued; its result (or error) is handed to the caller only after the batch's COMMIT returned, so nothing
 *   is acknowledged before it is as durable as a transaction of its own would have been.
 * - A batch is flushed after `turns` macrotask turns (`setImmediate`: after the I/O callbacks of the loop
 *   iterations have queued theirs), or at once when `maxBatch` operations are waiting, and by `flush()` / `close()`.
 * - Operations run one after another, in the order they were queued, each in its own SAVEPOINT: each sees the
 *   effects of the ones before it (a per-tenant cap stays exact), and one that throws (a UNIQUE violation, a bug)
 *   is rolled back alone and rejects only its own caller; its batch-mates still commit. (An operation queued with
 *   `{ savepoint: false }` is not rolled back, by its own design: see `RunOptions`.)
 * - When another connection holds the write lock (SQLITE_BUSY), nothing of the batch ran: it waits, without
 *   blocking the event loop, and is tried again, up to `lockWaitMs` per operation (`GroupCommitOptions`).
 * - When the batch as a whole fails otherwise — an error after which SQLite rolled the whole transaction back
 *   (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, ...), a failed COMMIT — nothing of it is in the file and every
 *   operation of the batch is rejected.
 *
 * The flush is synchronous from BEGIN to COMMIT (node:sqlite never yields), so the connection is never left
 * inside an open transaction between event-loop turns: reads and writes made directly on the connection
 * (autocommit) are never mixed into a batch and never see a batch half done.
 */
export class GroupCommit {
  readonly stats: GroupCommitStats = { commits: 0, failedBatches: 0, ops: 0, failedOps: 0, largestBatch: 0, lockedAttempts: 0 };
  readonly lockWaitMs: number;
  /**
   * whether the connection's writes reach the disk: told of a full or failing disk by the stores' methods
   * (`lockWait.ts`), and that it is over by the next batch that commits; /readyz reads it
   */
  readonly storage = new StorageHealth();
  private readonly maxBatch: number;
  private readonly turns: number;
  private queue: Pending[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private flushing = false;
  private closed = false;
  /** set while the queue waits for another connection's lock: the timer that tries again */
  private lockRetry: NodeJS.Timeout | undefined;
  private lockedTries = 0;
  /** the SQLITE_BUSY of the last locked attempt, the cause of what is refused for waiting too long */
  private lockError: unknown;
  /** close() has begun: what cannot get the lock in its flush is refused, not kept waiting */
  private closing = false;
  /** holds in force (`hold()`): while any is, nothing is committed and operations queue */
  private holds = 0;
  constructor(
    private readonly db: DatabaseSync,
    opts: GroupCommitOptions = {},
  ) {
    this.maxBatch = Math.max(1, opts.maxBatch ?? 256);
    this.turns = Math.max(1, opts.turns ?? 2);
    this.lockWaitMs = Math.max(0, opts.lockWaitMs ?? 0);
  }

  /** Inside the batch's transaction: each operation in a savepoint of its own (a nested `transaction`), in order. */
  private runBatch(batch: readonly Pending[], out: Outcome[]): void {
    for (const p of batch) {
      try {
        out.push({ ok: true, value: p.savepoint ? transaction(this.db, "deferred", p.op) : p.op() });
      } catch (error) {
        // SQLite ended the whole transaction itself (e.g. SQLITE_FULL, SQLITE_IOERR): what ran before is gone
        // too, and what follows would run in autocommit. Give up on the batch: every operation is rejected.
        if (!this.db.isTransaction) throw error;
        out.push({ ok: false, error });
      }
    }
  }

  /** Queues `op` for the next batch; settles with its result (or error) once that batch has committed. */
  run<T>(op: () => T, opts?: RunOptions): Promise<T> {
    if (this.closed) return Promise.reject(new Error("The SQLite store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, savepoint: opts?.savepoint ?? true, resolve: resolve as (v: unknown) => void, reject, queuedAt: performance.now() });
      // while the lock is held elsewhere, the retry timer flushes: trying at every turn would only spin
      if (this.lockRetry) return;
      if (this.queue.length >= this.maxBatch && !this.flushing) this.flush();
      else this.scheduled ??= setImmediate(this.flushScheduled);
    });
  }

  /**
   * Stops committing until the returned release is called: operations queue (their callers wait) and the event loop
   * goes on. For a moment when another connection of this process needs the write lock and could not win it from
   * a writer that commits every turn: the WAL checkpoint thread rewinding the WAL (`walCheckpointer.ts`). Whoever
   * holds must release, on every path; `close()` commits what is queued regardless.
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      if (this.holds === 0 && this.queue.length > 0 && !this.lockRetry) this.flush();
    };
  }

  /** how many operations wait for the next batch */
  get pending(): number {
    return this.queue.length;
  }

  private turnsWaited = 0;
  private readonly flushScheduled = (): void => {
    this.scheduled = undefined;
    if (++this.turnsWaited < this.turns && this.queue.length < this.maxBatch) {
      this.scheduled = setImmediate(this.flushScheduled);
      return;
    }
    this.flush();
  };

  /**
   * Runs and commits everything queued now, synchronously; if another connection holds the write lock, what is
   * left waits for it (see `lockWaitMs`).
   */
  flush(): void {
    if (this.scheduled) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    if (this.lockRetry) {
      clearTimeout(this.lockRetry);
      this.lockRetry = undefined;
    }
    this.turnsWaited = 0;
    if (this.flushing) return; // an operation queued another one: the loop below picks it up
    if (this.holds > 0 && !this.closing) return; // the release flushes
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        if (this.commit(batch) === "locked") {
          this.waitForLock();
          break;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * Flushes what is queued and refuses further operations. The caller closes the connection afterwards. With no
   * request left to serve, this flush may wait for a lock held elsewhere synchronously, up to `lockWaitMs`.
   */
  close(): void {
    if (this.closed) return;
    if (!this.db.isOpen) {
      this.closed = true;
      return;
    }
    this.closing = true;
    const busyTimeout = pragma(this.db, "busy_timeout") as number;
    if (this.lockWaitMs > busyTimeout) this.db.exec(`PRAGMA busy_timeout = ${this.lockWaitMs}`);
    try {
      this.flush();
    } finally {
      this.closed = true;
      if (this.db.isOpen) this.db.exec(`PRAGMA busy_timeout = ${busyTimeout}`);
    }
  }

  /** Another connection holds the write lock: operations that have waited long enough are refused, the rest wait. */
  private waitForLock(): void {
    const now = performance.now();
    const waiting: Pending[] = [];
    for (const p of this.queue) {
      if (this.closing || now - p.queuedAt >= this.lockWaitMs) p.reject(lockedOut(this.lockError));
      else waiting.push(p);
    }
    this.queue = waiting;
    if (waiting.length === 0) return;
    this.lockRetry = setTimeout(() => {
      this.lockRetry = undefined;
      this.flush();
    }, lockRetryDelayMs(this.lockedTries++));
  }

  private commit(batch: Pending[]): "committed" | "failed" | "locked" {
    const out: Outcome[] = [];
    try {
      // BEGIN IMMEDIATE ... COMMIT, rolled back if anything in it throws
      transaction(this.db, "immediate", () => this.runBatch(batch, out));
    } catch (err) {
      if (isSqliteBusy(err)) {
        // BEGIN IMMEDIATE met another connection's lock (or COMMIT did, and the transaction was rolled back): nothing
        // of the batch is in the file, so it is run again, in the same order, once the lock is free
        this.stats.lockedAttempts++;
        this.lockError = err;
        this.queue.unshift(...batch);
        return "locked";
      }
      this.countBatch(batch);
      // BEGIN, an operation that took the whole transaction down, or COMMIT failed: nothing of the batch is durable
      this.stats.failedBatches++;
      for (let i = 0; i < batch.length; i++) {
        const o = out[i];
        batch[i]!.reject(o && !o.ok ? o.error : err);
      }
      return "failed";
    }
    this.countBatch(batch);
    this.lockedTries = 0;
    this.stats.commits++;
    this.storage.recovered();
    for (let i = 0; i < batch.length; i++) {
      const o = out[i]!;
      if (o.ok) batch[i]!.resolve(o.value);
      else {
        this.stats.failedOps++;
        batch[i]!.reject(o.error);
      }
    }
    return "committed";
  }

  private countBatch(batch: readonly Pending[]): void {
    this.stats.ops += batch.length;
    if (batch.length > this.stats.largestBatch) this.stats.largestBatch = batch.length;
  }
}

const writers = new WeakMap<DatabaseSync, GroupCommit>();

/**
 * The one writer of a connection, so every store on it (Part A, Part B, jti) shares its batches. Made on first
 * use; whoever closes the connection calls `close()` on it first.
 */
export function groupCommitFor(db: DatabaseSync, opts?: GroupCommitOptions): GroupCommit {
  let w = writers.get(db);
  if (!w) writers.set(db, (w = new GroupCommit(db, opts)));
  return w;
}
