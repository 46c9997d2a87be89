import { isStoreUnavailable } from "../errors/storeUnavailable.ts";
import { onRejection } from "./methodRejections.ts";

/** One backend's line in /readyz (`Stores.health`). */
export interface HealthLine {
  name: string;
  ok: boolean;
  error?: string;
}

/** One backend's line in /readyz (`Stores.health`): its ping answered, or the error it gave. */
export async function pingHealth(name: string, ping: () => Promise<unknown>): Promise<HealthLine> {
  try {
    await ping();
    return { name, ok: true };
  } catch (e) {
    return { name, ok: false, error: (e as Error).message };
  }
}

/**
 * how long a backend without a write probe stays not-ready after its last failed write: about one load-balancer
 * check, so the instance is taken out, then let back in to find out (a failure takes it out again)
 */
export const STORAGE_HOLD_MS = 10_000;

/** how long after its last storage failure a backend whose writes work again must stay without one to be ready */
export const STORAGE_SETTLE_MS = 2_000;

/**
 * Whether a backend's writes fail for want of disk (StoreUnavailableError with `storage`). A ping is a read, and
 * reads go on answering on a full disk, so without this /readyz said ready while every write answered 503.
 *
 * Not-ready from the first such failure until writes are seen to work again: a write committed (`recovered`), or
 * the backend's `probe` (a small real write, tried on each readiness check while failing) succeeded, and in
 * either case no storage failure for STORAGE_SETTLE_MS. The settle time is there because on a full disk some writes
 * still fit: SQLite reuses its WAL file from the start after a checkpoint, so a probe or a small commit may land in
 * space the file already has while the next verdict needs a new page (seen on Node 26's SQLite: /readyz ready
 * again at once after a write was refused). A backend without a probe (PostgreSQL, where the same holds of pages it
 * already has) is ready again STORAGE_HOLD_MS after its last failure, and goes not-ready again if writes still fail.
 */
export class StorageHealth {
  private failure: { atMs: number; reason: string } | undefined;

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  /** a write failed: when `err` is a storage failure, the backend is not ready until it recovers */
  failed(err: unknown): void {
    if (isStoreUnavailable(err) && err.storage) this.failure = { atMs: this.nowMs(), reason: err.message };
  }

  /** a write committed: the disk takes writes again, once none has failed for STORAGE_SETTLE_MS */
  recovered(): void {
    if (this.failure && this.nowMs() - this.failure.atMs >= STORAGE_SETTLE_MS) this.failure = undefined;
  }

  /** the message of the failure in force, if any */
  get failing(): string | undefined {
    return this.failure?.reason;
  }

  /** The backend's /readyz line: its ping, then whether its writes work. */
  async check(name: string, ping: () => Promise<unknown>, probe?: () => Promise<unknown>): Promise<HealthLine> {
    const line = await pingHealth(name, ping);
    if (!line.ok || !this.failure) return line;
    if (probe) {
      try {
        await probe();
        this.recovered();
      } catch (err) {
        this.failed(err);
      }
    } else if (this.nowMs() - this.failure.atMs >= STORAGE_HOLD_MS) {
      this.recovered();
    }
    return this.failure ? { name, ok: false, error: `writes failing: ${this.failure.reason}` } : line;
  }
}

/**
 * Tells `health` of every storage failure `store`'s methods reject with: for a backend whose driver errors are
 * mapped where no write is seen whole (PostgreSQL's, statement by statement in pgQuery.ts).
 */
export function reportStorageFailures(store: object, health: StorageHealth): void {
  onRejection(store, async (err) => {
    health.failed(err);
    throw err;
  });
}
