import type { ActivityEntry } from "../domain/activity.ts";
import type { ActivityStore } from "../store/types.ts";

/** what the recorder needs of a logger: services stay free of Fastify, and any pino logger fits */
export interface ActivityLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Why entries were given up on, the label of `attestd_activity_dropped_total`:
 * - `refused`: the store refused the entry itself, at every attempt (it breaks a constraint of the table);
 * - `failed`: the store wrote nothing of the batches carrying it, at every attempt (unreachable, locked, lost);
 * - `overflow`: more entries were waiting than the recorder keeps, the oldest went;
 * - `shutdown`: still unwritten when the service closed (its last flush failed).
 */
export type ActivityDropReason = "refused" | "failed" | "overflow" | "shutdown";

export interface ActivityRecorderOptions {
  /** how long an entry waits in memory before its batch is written (default 100 ms): the write-behind window */
  flushMs?: number;
  /** write at once when this many entries are waiting (default 1 000) */
  maxBatch?: number;
  /**
   * writes tried per entry before it is dropped (default 12): with the pause doubling from `flushMs` to
   * `maxRetryDelayMs`, about two minutes of a store that writes nothing
   */
  maxAttempts?: number;
  /** entries kept in memory at most, new and retried together (default 10 000); past it the oldest are dropped */
  maxWaiting?: number;
  /** the longest pause between retries after failed batches (default 30 s; the pause doubles from `flushMs`) */
  maxRetryDelayMs?: number;
  /** told of every drop, for the metric */
  onDropped?: (reason: ActivityDropReason, count: number) => void;
}

interface Waiting {
  entry: ActivityEntry;
  /** writes tried so far */
  attempts: number;
}

/**
 * Write-behind buffer for the activity log: requests append in memory and a timer writes them every `flushMs` (or
 * at `maxBatch` entries), so logging costs the hot path one array push instead of a store write.
 *
 * One bad entry never costs the others: the store writes each entry on its own and returns the ones it refused.
 * What was not written, whether refused alone or in a batch the store could not write at all, waits for the next
 * flush, up to `maxAttempts` tries; after failed batches the pause before the next one doubles (up to
 * `maxRetryDelayMs`), so an unreachable store is not hammered. What is finally given up on is counted
 * (`onDropped`, the `attestd_activity_dropped_total` metric) and logged with its error ids, so support can still
 * find those requests in the service log. `close()` writes what is left.
 *
 * What a crash may lose (docs/reliability.md): the entries still in memory, i.e. those of the last `flushMs`, plus,
 * while the store is failing, those waiting for a retry (at most `maxWaiting`).
 */
export class ActivityRecorder {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** batches in a row the store wrote nothing of: sets the retry pause */
  private failedBatches = 0;
  private closed = false;
  private readonly flushMs: number;
  private readonly maxBatch: number;
  private readonly maxAttempts: number;
  private readonly maxWaiting: number;
  private readonly maxRetryDelayMs: number;

  constructor(
    private readonly store: ActivityStore,
    private readonly log: ActivityLog,
    private readonly opts: ActivityRecorderOptions = {},
  ) {
    this.flushMs = opts.flushMs ?? 100;
    this.maxBatch = opts.maxBatch ?? 1000;
    this.maxAttempts = Math.max(1, opts.maxAttempts ?? 12);
    this.maxWaiting = Math.max(this.maxBatch, opts.maxWaiting ?? 10_000);
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 30_000;
  }

  /** entries in memory, not yet written (new ones and ones waiting for a retry) */
  get pending(): number {
    return this.waiting.length;
  }

  record(e: ActivityEntry): void {
    this.waiting.push({ entry: e, attempts: 0 });
    if (this.waiting.length > this.maxWaiting) this.drop(this.waiting.splice(0, this.waiting.length - this.maxWaiting), "overflow");
    // while the store keeps failing, a full buffer waits for the retry pause instead of trying again at once
    if (this.waiting.length >= this.maxBatch && this.failedBatches === 0) void this.flush();
    else this.schedule(this.flushMs);
  }

  private schedule(ms: number): void {
    if (!this.timer && !this.closed) this.timer = setTimeout(() => void this.flush(), ms);
  }

  /** Writes what is waiting now; resolves when that write (and any before it) has finished. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting.splice(0, this.waiting.length);
    if (batch.length === 0) return this.flushing;
    this.flushing = this.flushing.then(() => this.write(batch));
    return this.flushing;
  }

  private async write(batch: Waiting[]): Promise<void> {
    for (const w of batch) w.attempts++;
    try {
      const { refused } = await this.store.appendActivity(batch.map((w) => w.entry));
      this.failedBatches = 0;
      if (refused.length === 0) return;
      const refusedEntries = new Set(refused.map((r) => r.entry));
      this.log.warn({ err: refused[0]!.error, refused: refused.length, of: batch.length }, "activity log refused entries");
      this.settle(batch.filter((w) => refusedEntries.has(w.entry)), "refused");
    } catch (err) {
      this.failedBatches++;
      this.log.warn({ err, entries: batch.length }, "activity log write failed; will retry");
      this.settle(batch, "failed");
    }
  }

  /** puts entries with tries left back in front of newer ones, drops the rest, and schedules the next write */
  private settle(unwritten: Waiting[], reason: ActivityDropReason): void {
    const again = unwritten.filter((w) => w.attempts < this.maxAttempts);
    if (again.length < unwritten.length) this.drop(unwritten.filter((w) => w.attempts >= this.maxAttempts), reason);
    if (again.length === 0) return;
    if (this.closed) return this.drop(again, "shutdown");
    this.waiting.unshift(...again);
    if (this.waiting.length > this.maxWaiting) this.drop(this.waiting.splice(0, this.waiting.length - this.maxWaiting), "overflow");
    this.schedule(Math.min(this.maxRetryDelayMs, this.flushMs * 2 ** this.failedBatches));
  }

  private drop(gone: Waiting[], reason: ActivityDropReason): void {
    if (gone.length === 0) return;
    this.opts.onDropped?.(reason, gone.length);
    // the error ids are what support searches for: name them here, where they can still be found
    const errorIds = gone.flatMap((w) => (w.entry.errorId ? [w.entry.errorId] : []));
    this.log.error({ dropped: gone.length, reason, errorIds }, "activity log entries dropped");
  }

  /** Writes what is waiting, once more; what still fails is dropped (reason `shutdown`) and logged. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // what the write above put back for a retry gets one last try
    await this.flush();
    this.drop(this.waiting.splice(0, this.waiting.length), "shutdown");
  }
}
