import type { ActivityEntry } from "../domain/activity.ts";
import type { ActivityStore } from "../store/types.ts";

/** what the recorder needs of a logger: services stay free of Fastify, and any pino logger fits */
export interface ActivityLog {
  error(obj: object, msg: string): void;
}

/**
 * Write-behind buffer for the activity log: requests append in memory and a timer flushes every `flushMs` (or at
 * `maxBuffered` entries), so logging costs the hot path one array push instead of a store write. `close()` flushes
 * what is left, so a graceful shutdown loses nothing; a crash loses at most the last `flushMs` of entries.
 */
export class ActivityRecorder {
  private buffer: ActivityEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: ActivityStore,
    private readonly log: ActivityLog,
    private readonly flushMs = 100,
    private readonly maxBuffered = 1000,
  ) {}

  record(e: ActivityEntry): void {
    this.buffer.push(e);
    if (this.buffer.length >= this.maxBuffered) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.flushMs);
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length === 0) return this.flushing;
    this.flushing = this.flushing.then(() =>
      this.store.appendActivity(batch).catch((err: unknown) => {
        this.log.error({ err, lost: batch.length }, "activity log write failed");
      }),
    );
    return this.flushing;
  }

  close(): Promise<void> {
    return this.flush();
  }
}
