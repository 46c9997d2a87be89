import type Database from "better-sqlite3";

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
}

interface Pending {
  op: () => unknown;
  /** false: run without a savepoint of its own (see `RunOptions.savepoint`) */
  savepoint: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
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
}

/**
 * Group commit for one better-sqlite3 connection: write operations are queued and run together in ONE
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
 * - When the batch as a whole fails — BEGIN IMMEDIATE still SQLITE_BUSY after `busy_timeout`, an error after which
 *   SQLite rolled the whole transaction back (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, ...), a failed COMMIT —
 *   nothing of it is in the file and every operation of the batch is rejected.
 *
 * The flush is synchronous from BEGIN to COMMIT (better-sqlite3 never yields), so the connection is never left
 * inside an open transaction between event-loop turns: reads and writes made directly on the connection
 * (autocommit) are never mixed into a batch and never see a batch half done.
 */
export class GroupCommit {
  readonly stats: GroupCommitStats = { commits: 0, failedBatches: 0, ops: 0, failedOps: 0, largestBatch: 0 };
  private readonly maxBatch: number;
  private readonly turns: number;
  private queue: Pending[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private flushing = false;
  private closed = false;
  /** BEGIN IMMEDIATE; run each operation in a savepoint; COMMIT (better-sqlite3 rolls back if this throws) */
  private readonly batchTx: Database.Transaction<(batch: readonly Pending[], out: Outcome[]) => void>;
  /** called inside batchTx, so better-sqlite3 makes it SAVEPOINT / RELEASE, or ROLLBACK TO + RELEASE on a throw */
  private readonly savepoint: Database.Transaction<(op: () => unknown) => unknown>;

  constructor(
    private readonly db: Database.Database,
    opts: GroupCommitOptions = {},
  ) {
    this.maxBatch = Math.max(1, opts.maxBatch ?? 256);
    this.turns = Math.max(1, opts.turns ?? 2);
    this.savepoint = db.transaction((op: () => unknown) => op());
    this.batchTx = db.transaction((batch: readonly Pending[], out: Outcome[]) => {
      for (const p of batch) {
        try {
          out.push({ ok: true, value: p.savepoint ? this.savepoint(p.op) : p.op() });
        } catch (error) {
          // SQLite ended the whole transaction itself (e.g. SQLITE_FULL, SQLITE_IOERR): what ran before is gone
          // too, and what follows would run in autocommit. Give up on the batch: every operation is rejected.
          if (!this.db.inTransaction) throw error;
          out.push({ ok: false, error });
        }
      }
    });
  }

  /** Queues `op` for the next batch; settles with its result (or error) once that batch has committed. */
  run<T>(op: () => T, opts?: RunOptions): Promise<T> {
    if (this.closed) return Promise.reject(new Error("The SQLite store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, savepoint: opts?.savepoint ?? true, resolve: resolve as (v: unknown) => void, reject });
      if (this.queue.length >= this.maxBatch && !this.flushing) this.flush();
      else this.scheduled ??= setImmediate(this.flushScheduled);
    });
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

  /** Runs and commits everything queued now, synchronously. */
  flush(): void {
    if (this.scheduled) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    this.turnsWaited = 0;
    if (this.flushing) return; // an operation queued another one: the loop below picks it up
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        this.commit(batch);
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Flushes what is queued and refuses further operations. The caller closes the connection afterwards. */
  close(): void {
    this.flush();
    this.closed = true;
  }

  private commit(batch: Pending[]): void {
    const out: Outcome[] = [];
    this.stats.ops += batch.length;
    if (batch.length > this.stats.largestBatch) this.stats.largestBatch = batch.length;
    try {
      this.batchTx.immediate(batch, out);
    } catch (err) {
      // BEGIN, an operation that took the whole transaction down, or COMMIT failed: nothing of the batch is durable
      this.stats.failedBatches++;
      for (let i = 0; i < batch.length; i++) {
        const o = out[i];
        batch[i]!.reject(o && !o.ok ? o.error : err);
      }
      return;
    }
    this.stats.commits++;
    for (let i = 0; i < batch.length; i++) {
      const o = out[i]!;
      if (o.ok) batch[i]!.resolve(o.value);
      else {
        this.stats.failedOps++;
        batch[i]!.reject(o.error);
      }
    }
  }
}

const writers = new WeakMap<Database.Database, GroupCommit>();

/**
 * The one writer of a connection, so every store on it (Part A, Part B, jti) shares its batches. Made on first
 * use; whoever closes the connection calls `close()` on it first.
 */
export function groupCommitFor(db: Database.Database): GroupCommit {
  let w = writers.get(db);
  if (!w) writers.set(db, (w = new GroupCommit(db)));
  return w;
}
