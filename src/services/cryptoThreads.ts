import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import {
  openTokenWithKeys,
  type OpenedToken,
  PlayOpenError,
  PlayResponseKeyError,
  PlayTokenError,
} from "../attestation/encoding/playIntegrityToken.ts";
import { appAttestKeyObject, firstVerifying } from "../attestation/formats/appAttest.ts";
import type { PlayResponseKeys } from "../domain/playApps.ts";
import type { ThreadAnswer, ThreadRequest } from "./cryptoThread.ts";

/** Opens a token with one app's response keys: `openTokenWithKeys`, inline or on a thread. */
export type OpenWithKeys = (token: string, keys: PlayResponseKeys) => Promise<OpenedToken>;

/**
 * Checks an App Attest assertion's signature with a remembered key (its point, base64): `firstVerifying`, inline or
 * on a thread: the index of the first of `messages` it verifies over, -1 when none.
 */
export type CheckAssertionSignature = (publicKey: string, messages: Uint8Array[], signature: Uint8Array) => Promise<number>;

/**
 * `--play-threads auto`: of the cores a process has (its share when `--workers` runs several), one for the event loop
 * and one thread per core beyond it, at most 4 (more threads than cores only queue); none on a one-core share.
 */
export function autoPlayThreads(cores = availableParallelism(), processes = 1): number {
  return Math.min(4, Math.max(0, Math.floor(cores / Math.max(1, processes)) - 1));
}

function rebuilt(error: NonNullable<ThreadAnswer["error"]>): Error {
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

/**
 * The bytes of `view` in an ArrayBuffer of their own. A message to a thread copies a typed array's whole ArrayBuffer,
 * and small Buffers are views into Node's shared 8 KiB pool (Buffer.concat, Buffer.from): sent as they are, each
 * would copy 8 KiB (measured: postMessage was 41 µs of an assertion's 382 µs on the event loop).
 */
function ownBytes(view: Uint8Array): Uint8Array {
  return view.byteOffset === 0 && view.byteLength === view.buffer.byteLength ? view : new Uint8Array(view);
}

/** An app's response keys as sent to threads, made once per keys object (the Play app registry's cache hands out the same one while it holds the app). */
const sentKeys = new WeakMap<PlayResponseKeys, PlayResponseKeys>();
function keysToSend(keys: PlayResponseKeys): PlayResponseKeys {
  let sent = sentKeys.get(keys);
  if (!sent) {
    sent = { decryptionKey: ownBytes(keys.decryptionKey), verificationKeySpki: ownBytes(keys.verificationKeySpki) };
    sentKeys.set(keys, sent);
  }
  return sent;
}

interface Pending {
  request: ThreadRequest;
  resolve: (answer: ThreadAnswer) => void;
  reject: (e: Error) => void;
}

/** The request's work on this thread: what a thread that died had in hand is done so, rather than failed. */
async function inline(request: ThreadRequest): Promise<ThreadAnswer> {
  if (request.kind === "app-attest-signature") {
    return { id: request.id, verified: firstVerifying(appAttestKeyObject(request.publicKey), request.messages, request.signature) };
  }
  return { id: request.id, opened: await openTokenWithKeys(request.token, request.keys) };
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

// The thread's module beside this one: .ts under the sources (tsx, the tests), .js in dist/.
const THREAD_MODULE = new URL(`./cryptoThread${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);

/**
 * Threads of attestd's own for the signature work of one request (`--play-threads`, docs/play-integrity.md
 * "Throughput", docs/app-attest.md "Throughput"), so on a machine of more than one core the crypto of one request
 * overlaps the parsing, storage and answering of others, and a burst does not hold up nonces, the portal or health
 * checks. Node runs WebCrypto and `crypto.verify` on the calling thread:
 *
 * - opening a Play Integrity token (A256KW + A256GCM, then ES256): about half of what a token's appraisal costs;
 * - an App Attest assertion's ECDSA P-256 verification: about a fifth of an assertion's cost to the event loop.
 *
 * The work is pure, so what a thread that died had in hand is done again inline, and the thread is replaced: no
 * request fails because a thread did.
 */
export class CryptoThreads {
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
  readonly open: OpenWithKeys = async (token, keys) => {
    if (!this.running) return openTokenWithKeys(token, keys);
    const answer = await this.send({ id: ++this.ids, kind: "play-open", token, keys: keysToSend(keys) });
    return answer.opened!;
  };

  /** `firstVerifying` with the key of that point, on a thread (round robin), or inline when there are none or after close(). */
  readonly checkAssertionSignature: CheckAssertionSignature = async (publicKey, messages, signature) => {
    if (!this.running) return firstVerifying(appAttestKeyObject(publicKey), messages, signature);
    const answer = await this.send({ id: ++this.ids, kind: "app-attest-signature", publicKey, messages: messages.map(ownBytes), signature: ownBytes(signature) });
    return answer.verified!;
  };

  private get running(): boolean {
    return this.threads.length > 0 && !this.closed;
  }

  private send(request: ThreadRequest): Promise<ThreadAnswer> {
    const slot = this.next;
    this.next = (this.next + 1) % this.threads.length;
    const thread = (this.threads[slot] ??= this.start(slot));
    return new Promise<ThreadAnswer>((resolve, reject) => {
      thread.pending.set(request.id, { request, resolve, reject });
      thread.worker.postMessage(request);
    });
  }

  private start(slot: number): Thread {
    const worker = new Worker(THREAD_MODULE, { execArgv: loaderArgs() });
    worker.unref();
    const thread: Thread = { worker, pending: new Map() };
    worker.on("message", (answer: ThreadAnswer) => {
      const p = thread.pending.get(answer.id);
      if (!p) return;
      thread.pending.delete(answer.id);
      if (answer.error) p.reject(rebuilt(answer.error));
      else p.resolve(answer);
    });
    let gone = false;
    const lost = () => {
      if (gone) return; // "error" is followed by "exit"
      gone = true;
      if (this.threads[slot] === thread) this.threads[slot] = undefined;
      if (!this.closed) this.replaced++;
      const orphans = [...thread.pending.values()];
      thread.pending.clear();
      // pure work: done again here rather than fail a request for a thread's sake
      for (const p of orphans) inline(p.request).then(p.resolve, p.reject);
    };
    worker.on("error", lost);
    worker.on("exit", lost);
    return thread;
  }

  /** Stops the threads; later work runs inline, and any in flight is finished inline. */
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
