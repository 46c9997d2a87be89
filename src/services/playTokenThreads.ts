import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import {
  openTokenWithKeys,
  type OpenedToken,
  PlayOpenError,
  PlayResponseKeyError,
  PlayTokenError,
} from "../attestation/encoding/playIntegrityToken.ts";
import type { PlayResponseKeys } from "../domain/playApps.ts";
import type { OpenAnswer, OpenRequest } from "./playTokenThread.ts";

/** Opens a token with one app's response keys: `openTokenWithKeys`, inline or on a thread. */
export type OpenWithKeys = (token: string, keys: PlayResponseKeys) => Promise<OpenedToken>;

/**
 * `--play-threads auto`: of the cores a process has (its share when `--workers` runs several), one for the event loop
 * and one thread per core beyond it, at most 4 (more threads than cores only queue); none on a one-core share.
 */
export function autoPlayThreads(cores = availableParallelism(), processes = 1): number {
  return Math.min(4, Math.max(0, Math.floor(cores / Math.max(1, processes)) - 1));
}

function rebuilt(error: NonNullable<OpenAnswer["error"]>): Error {
  switch (error.kind) {
    case "open":
      return new PlayOpenError(error.message);
    case "token":
      return new PlayTokenError(error.message);
    case "keys":
      return new PlayResponseKeyError(error.message);
    default:
      return new Error(error.message);
  }
}

interface Pending {
  request: OpenRequest;
  resolve: (opened: OpenedToken) => void;
  reject: (e: Error) => void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

// The thread's module beside this one: .ts under the sources (tsx, the tests), .js in dist/.
const THREAD_MODULE = new URL(`./playTokenThread${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);

/**
 * Opening a Play Integrity token is two WebCrypto operations (A256KW + A256GCM, then ES256), about half of what a
 * token's appraisal costs the process; Node runs them on the calling thread. These threads take them off the
 * event loop, so on a machine of more than one core the crypto of one request overlaps the parsing, storage and
 * answering of others, and a slow burst of tokens does not hold up nonces, the portal or health checks
 * (docs/play-integrity.md, "Throughput"). The work is pure, so a token whose thread died is opened again inline,
 * and the thread is replaced: no request fails because a thread did.
 */
export class PlayTokenThreads {
  private readonly threads: (Thread | undefined)[];
  private next = 0;
  private ids = 0;
  private closed = false;
  /** threads that exited unexpectedly and were replaced (for tests and diagnostics) */
  replaced = 0;

  constructor(count: number) {
    this.threads = Array.from({ length: Math.max(0, count) }, () => undefined);
  }

  get size(): number {
    return this.threads.length;
  }

  /** `openTokenWithKeys` on a thread (round robin), or inline when there are none or after close(). */
  readonly open: OpenWithKeys = (token, keys) => {
    if (this.threads.length === 0 || this.closed) return openTokenWithKeys(token, keys);
    const slot = this.next;
    this.next = (this.next + 1) % this.threads.length;
    const thread = (this.threads[slot] ??= this.start(slot));
    const request: OpenRequest = { id: ++this.ids, token, keys: { decryptionKey: keys.decryptionKey, verificationKeySpki: keys.verificationKeySpki } };
    return new Promise<OpenedToken>((resolve, reject) => {
      thread.pending.set(request.id, { request, resolve, reject });
      thread.worker.postMessage(request);
    });
  };

  private start(slot: number): Thread {
    const worker = new Worker(THREAD_MODULE, { execArgv: loaderArgs() });
    worker.unref();
    const thread: Thread = { worker, pending: new Map() };
    worker.on("message", (answer: OpenAnswer) => {
      const p = thread.pending.get(answer.id);
      if (!p) return;
      thread.pending.delete(answer.id);
      if (answer.error) p.reject(rebuilt(answer.error));
      else p.resolve(answer.opened!);
    });
    let gone = false;
    const lost = () => {
      if (gone) return; // "error" is followed by "exit"
      gone = true;
      if (this.threads[slot] === thread) this.threads[slot] = undefined;
      if (!this.closed) this.replaced++;
      const orphans = [...thread.pending.values()];
      thread.pending.clear();
      // pure work: open again here rather than fail a request for a thread's sake
      for (const p of orphans) openTokenWithKeys(p.request.token, p.request.keys).then(p.resolve, p.reject);
    };
    worker.on("error", lost);
    worker.on("exit", lost);
    return thread;
  }

  /** Stops the threads; later opens run inline, and any in flight are finished inline. */
  async close(): Promise<void> {
    this.closed = true;
    const running = this.threads.filter((t): t is Thread => t !== undefined);
    this.threads.fill(undefined);
    await Promise.all(running.map((t) => t.worker.terminate()));
  }
}

/**
 * The loader flags a thread needs to load the sources (`--import tsx` under the tests) and nothing else: a worker
 * refuses process-wide flags such as the test runner's.
 */
function loaderArgs(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if ((a === "--import" || a === "--loader" || a === "--experimental-loader" || a === "--require") && argv[i + 1]) out.push(a, argv[++i]!);
    else if (/^--(import|loader|experimental-loader|require)=/.test(a)) out.push(a);
  }
  return out;
}
