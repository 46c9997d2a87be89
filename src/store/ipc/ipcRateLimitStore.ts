import type { Worker } from "node:cluster";
import { StoreUnavailableError } from "../../errors/storeUnavailable.ts";
import { MemoryRateLimitStore } from "../memory/memoryRateLimitStore.ts";
import type { RateDecision, RateLimitStore } from "../types.ts";

/**
 * Rate limits shared by the workers of `attestd serve --workers N` without Redis: every token bucket lives in the
 * cluster primary (`IpcRateLimitPrimary`) and each worker takes tokens from it over node:cluster IPC
 * (`IpcRateLimitStore`), so a key's limit is per key, not per worker. Buckets in the SQLite file would cost a
 * write transaction per request on top of the nonce's; the primary is already the one process every worker talks
 * to, and a bucket is a few bytes of arithmetic. src/cluster.ts decides when to use them.
 */

const RL = "attestd:rl";

interface TakeRequest {
  kind: typeof RL;
  id: number;
  bucket: string;
  rate: number;
  burst: number;
  now: number;
}

interface TakeReply {
  kind: typeof RL;
  id: number;
  decision?: RateDecision;
  error?: string;
}

const isTakeRequest = (m: unknown): m is TakeRequest =>
  (m as TakeRequest | null)?.kind === RL && typeof (m as TakeRequest).id === "number";

/**
 * A worker's view of the primary's buckets. A reply that does not come within `timeoutMs` (the primary is gone or
 * wedged) is a StoreUnavailableError, so the request gets a 503 rather than skipping the limit.
 */
export class IpcRateLimitStore implements RateLimitStore {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (d: RateDecision) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();

  constructor(private readonly timeoutMs = 2_000) {
    process.on("message", (m: unknown) => {
      const reply = m as TakeReply;
      if (reply?.kind !== RL) return;
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      clearTimeout(p.timer);
      if (reply.decision) p.resolve(reply.decision);
      else p.reject(new StoreUnavailableError("cluster", reply.error ?? "no decision"));
    });
  }

  take(bucket: string, ratePerSec: number, burst: number, nowMs: number): Promise<RateDecision> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const fail = (why: unknown) => {
        if (!this.pending.delete(id)) return;
        clearTimeout(timer);
        reject(new StoreUnavailableError("cluster", why));
      };
      const timer = setTimeout(() => fail("the cluster primary did not answer"), this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      const msg: TakeRequest = { kind: RL, id, bucket, rate: ratePerSec, burst, now: nowMs };
      if (!process.send) return fail("not a cluster worker");
      process.send(msg, undefined, {}, (err) => err && fail(err));
    });
  }
}

/** The primary's side: the one set of buckets, answering the take requests of every worker it is shown. */
export class IpcRateLimitPrimary {
  constructor(private readonly buckets: RateLimitStore = new MemoryRateLimitStore()) {}

  /** Answers a newly forked worker's requests; a worker gone before its answer is simply not answered. */
  serve(worker: Worker): void {
    worker.on("message", (m: unknown) => {
      if (!isTakeRequest(m)) return;
      this.buckets.take(m.bucket, m.rate, m.burst, m.now).then(
        (decision) => worker.isConnected() && worker.send({ kind: RL, id: m.id, decision } satisfies TakeReply),
        (err: unknown) => worker.isConnected() && worker.send({ kind: RL, id: m.id, error: String(err) } satisfies TakeReply),
      );
    });
  }
}
