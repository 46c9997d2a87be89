import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { Clock, Rng } from "../clock.ts";
import type { EnrollmentStore, JobItem } from "../store/types.ts";

export interface WorkerOptions {
  /** items leased per claim */
  batchSize?: number;
  /** lease length; renewed every third of it while the worker holds items */
  leaseMs?: number;
  /** idle wait between empty claims */
  pollMs?: number;
  /**
   * Extra time spent on each device before its result is written. 0 in production; the crash-recovery test sets
   * it through createRuntime's options (test/helpers/slowWorkerServe.ts) so a batch is still running when it
   * kills the process.
   */
  deviceDelayMs?: number;
}

/**
 * Drains the device job queue. Every process runs one; they share the queue through the store. An item is
 * leased, worked on, then finished by `completeJob`, which takes effect only while this worker still owns the
 * lease: a worker that dies mid-batch leaves its items to be leased again when the lease runs out, and a worker
 * that stalls past its lease finds its late result refused. Either way each device's result is written once.
 */
export class DeviceJobWorker {
  readonly owner: string;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly deviceDelayMs: number;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wake: AbortController | undefined;

  constructor(
    private readonly store: EnrollmentStore,
    private readonly clock: Clock,
    rng: Rng,
    private readonly log: FastifyBaseLogger,
    o: WorkerOptions = {},
  ) {
    this.owner = `${hostname()}:${process.pid}:${rng.bytes(6).toString("hex")}`;
    this.batchSize = o.batchSize ?? 10;
    this.leaseMs = o.leaseMs ?? 5000;
    this.pollMs = o.pollMs ?? 250;
    this.deviceDelayMs = o.deviceDelayMs ?? 0;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Lets the current device finish, hands unstarted items back to the queue, and resolves when idle. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.abort();
    await this.loop;
    this.loop = undefined;
  }

  /** Wakes an idle worker (after an upload) instead of waiting out the poll interval. */
  nudge(): void {
    this.wake?.abort();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let worked = 0;
      try {
        worked = await this.runOnce();
        failures = 0;
      } catch (err) {
        failures++;
        this.log.error({ err }, "device job worker failed; retrying");
      }
      if (worked === 0 && !this.stopping) {
        this.wake = new AbortController();
        const wait = failures > 0 ? Math.min(30_000, this.pollMs * 2 ** failures) : this.pollMs;
        await sleep(wait, undefined, { signal: this.wake.signal, ref: false }).catch(() => undefined);
        this.wake = undefined;
      }
    }
  }

  /** Claims one batch and processes it; answers how many items it claimed. Tests drive the queue with it. */
  async runOnce(): Promise<number> {
    const items = await this.store.claimJobs(this.owner, this.batchSize, this.clock.nowMs(), this.leaseMs);
    if (items.length === 0) return 0;
    const heartbeat = setInterval(() => {
      this.store
        .renewJobLeases(this.owner, this.clock.nowMs(), this.leaseMs)
        .catch((err: unknown) => this.log.warn({ err }, "job lease renewal failed"));
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    heartbeat.unref();
    try {
      for (const item of items) {
        if (this.stopping) break;
        await this.process(item);
      }
    } finally {
      clearInterval(heartbeat);
      if (this.stopping) await this.store.releaseJobs(this.owner);
    }
    return items.length;
  }

  /** Processes until the queue has nothing claimable. */
  async drain(): Promise<number> {
    let total = 0;
    for (let n = await this.runOnce(); n > 0; n = await this.runOnce()) total += n;
    return total;
  }

  private async process(item: JobItem): Promise<void> {
    if (this.deviceDelayMs > 0) await sleep(this.deviceDelayMs);
    const result = await this.store.completeJob(item.seq, this.owner, new Date(this.clock.nowMs()).toISOString());
    if (!result) {
      this.log.warn({ seq: item.seq, deviceId: item.deviceId }, "job lease lost; another worker owns the item");
    } else if (result.error) {
      this.log.info({ deviceId: item.deviceId, code: result.error.code }, "device enrollment failed");
    }
  }
}
