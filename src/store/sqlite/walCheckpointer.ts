import type { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { connectionArgs, pragma } from "./database.ts";

/** What the checkpoint thread has done so far, for tests and diagnostics. */
export interface WalCheckpointStats {
  /** PASSIVE checkpoints the thread ran */
  runs: number;
  /** frames in the WAL at the thread's last checkpoint */
  walFrames: number;
  /** frames copied back into the database file by then */
  checkpointedFrames: number;
  /** RESTART checkpoints that rewound the WAL once it outgrew `restartFrames` (run by the thread, writes held) */
  restarts: number;
}

export interface WalCheckpointerOptions {
  /** how often the thread checkpoints (default 50 ms) */
  intervalMs?: number;
  /**
   * past this many frames in the WAL (default 16384, 64 MiB at 4 KiB pages) the WAL is rewound: see the class
   * comment
   */
  restartFrames?: number;
  /**
   * Stops the connection's commits until the returned release is called (its group-commit writer's `hold`), so the
   * thread can take the write lock for the rewind. Without it the thread still tries, and may lose to the commits.
   */
  holdWrites?: () => () => void;
  /** how long the rewind may hold the writes at most, whatever the thread does (default 2 000 ms) */
  maxHoldMs?: number;
  /** the thread failed; the connection is back on SQLite's own automatic checkpoints */
  onError?: (err: unknown) => void;
}

/**
 * The thread's code, evaluated, so it needs no TypeScript loader and runs the same under tsx, a compiled build or a
 * test runner. It takes Node's modules from process.getBuiltinModule, not require: an evaluated worker inherits
 * the parent's --input-type, and as a module it has no require. It cannot load database.ts either, so the caller
 * hands it the connection's arguments from there, and its error tests are database.ts's isSqliteBusy and
 * isSqliteStorageFailure in plain JavaScript.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule("node:worker_threads");
const { DatabaseSync } = process.getBuiltinModule("node:sqlite");
const db = new DatabaseSync(workerData.connection.location, workerData.connection.options);
const isBusy = (err) => err != null && err.code === "ERR_SQLITE_ERROR" && (err.errcode & 0xff) === 5;
// database.ts's isSqliteStorageFailure: SQLITE_FULL or SQLITE_IOERR. A checkpoint the disk refused copied less than
// it meant to and is simply run again (the WAL keeps every commit); dying would put checkpoints back on the event
// loop for good, long after space came back.
const isDiskRefusal = (err) => err != null && err.code === "ERR_SQLITE_ERROR" && ((err.errcode & 0xff) === 13 || (err.errcode & 0xff) === 10);
const checkpoint = (mode) => db.prepare("PRAGMA wal_checkpoint(" + mode + ")").get();
const ownBusyTimeout = db.prepare("PRAGMA busy_timeout").get().timeout;
let runs = 0;
const timer = setInterval(() => {
  let r;
  try {
    r = checkpoint("PASSIVE");
  } catch (err) {
    // another checkpoint in progress (the connection's RESTART, another process), or a full disk: next tick
    if (isBusy(err) || isDiskRefusal(err)) return;
    throw err;
  }
  runs++;
  parentPort.postMessage({ runs, walFrames: r.log, checkpointedFrames: r.checkpointed });
}, workerData.intervalMs);
// The rewind, asked for by the connection once it has stopped committing: a RESTART checkpoint copies what is left
// and makes the next commit start the WAL afresh. Its busy wait covers other processes' writers and readers.
function restart() {
  db.exec("PRAGMA busy_timeout = " + workerData.restartBusyMs);
  try {
    const r = checkpoint("RESTART");
    return { restarted: true, busy: r.busy };
  } catch (err) {
    if (isBusy(err) || isDiskRefusal(err)) return { restarted: true, busy: 1 };
    throw err;
  } finally {
    db.exec("PRAGMA busy_timeout = " + ownBusyTimeout);
  }
}
parentPort.on("message", (m) => {
  if (m === "restart") return parentPort.postMessage(restart());
  if (m !== "stop") return;
  clearInterval(timer);
  db.close();
  parentPort.postMessage({ stopped: true });
});
parentPort.postMessage({ started: true });
`;

/** how long the thread's rewind waits for another process's writer or reader before giving up until next time */
const RESTART_BUSY_MS = 100;

/**
 * Checkpoints a WAL-mode SQLite file from a worker thread, so the serving thread never does it.
 *
 * Why: with SQLite's automatic checkpoints, the COMMIT that crosses `wal_autocheckpoint` copies the WAL back into
 * the database file and fsyncs both, on the thread that committed — the event loop. Nonce keys are random, so
 * every issued nonce dirties its own B-tree page, and on a disk with slow fsyncs those checkpoints were the largest
 * single cost of `POST /v2/nonces`. Here the connection's automatic checkpoints are switched off and a thread with
 * its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` every `intervalMs`: it copies what is committed without
 * taking the write lock, so commits go on meanwhile. Durability is unchanged: a commit is in the WAL before it is
 * acknowledged, as before; checkpoints only move it.
 *
 * A PASSIVE checkpoint that races continuous commits never catches up with the WAL's end, and SQLite only rewinds
 * the WAL when a write begins with everything in it copied, so under sustained load the WAL would grow without end.
 * A RESTART checkpoint rewinds it, but must take the write lock, and SQLite's busy handler, which sleeps and
 * retries, loses that race to an event loop that commits every few hundred microseconds. It used to run on the
 * connection itself, between two of its transactions: that cost the event loop 25-50 ms per rewind (the copy of
 * what was left and the database file's fsync), a stall for every request two or three times a second under a
 * full nonce load, about a tenth of the serving thread's time. So when the thread reports a WAL longer than
 * `restartFrames`, the connection holds its commits (`holdWrites`: the group-commit writer queues, the loop goes
 * on serving) and asks the thread, which runs `wal_checkpoint(RESTART)` with nobody racing it and answers; the
 * release commits what queued meanwhile. Requests that write wait those milliseconds; nothing else does. If another
 * process is writing or reading an old snapshot right then (past RESTART_BUSY_MS), the thread gives up and the
 * next report tries again; `maxHoldMs` bounds the hold whatever happens.
 *
 * If the thread dies, the connection goes back to SQLite's automatic checkpoints and `onError` is told: the
 * service goes on, only slower.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private latest: WalCheckpointStats = { runs: 0, walFrames: 0, checkpointedFrames: 0, restarts: 0 };
  private readonly restartFrames: number;
  private readonly holdWrites: () => () => void;
  private readonly maxHoldMs: number;
  /** while the thread rewinds: ends the hold on the connection's writes (once) */
  private rewinding: (() => void) | undefined;
  private readonly ready: Promise<void>;
  private stopped: Promise<void> | undefined;
  private failed = false;

  private constructor(
    private readonly db: DatabaseSync,
    file: string,
    opts: WalCheckpointerOptions,
  ) {
    this.restartFrames = opts.restartFrames ?? 16_384;
    this.holdWrites = opts.holdWrites ?? (() => () => undefined);
    this.maxHoldMs = opts.maxHoldMs ?? 2_000;
    const autocheckpoint = pragma(db, "wal_autocheckpoint") as number;
    db.exec("PRAGMA wal_autocheckpoint = 0");
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        connection: connectionArgs(file, { mustExist: true }),
        intervalMs: opts.intervalMs ?? 50,
        restartBusyMs: RESTART_BUSY_MS,
      },
    });
    this.worker.unref();
    let started: () => void;
    this.ready = new Promise<void>((resolve) => (started = resolve));
    this.worker.on("message", (m: { runs?: number; walFrames?: number; checkpointedFrames?: number; started?: boolean; restarted?: boolean; busy?: number }) => {
      if (m.started) return started();
      if (m.restarted) {
        if (m.busy === 0) this.latest = { ...this.latest, restarts: this.latest.restarts + 1 };
        return this.rewinding?.();
      }
      if (m.runs === undefined) return;
      this.latest = { ...this.latest, runs: m.runs, walFrames: m.walFrames!, checkpointedFrames: m.checkpointedFrames! };
      if (m.walFrames! > this.restartFrames) this.rewind();
    });
    const fail = (err: unknown) => {
      this.rewinding?.();
      if (this.failed || this.stopped) return;
      this.failed = true;
      if (db.isOpen) db.exec(`PRAGMA wal_autocheckpoint = ${autocheckpoint > 0 ? autocheckpoint : 1000}`);
      started();
      opts.onError?.(err);
    };
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`the WAL checkpoint thread exited (code ${code})`)));
  }

  /** The connection's commits held, the thread asked to RESTART; its answer (or maxHoldMs) ends the hold. */
  private rewind(): void {
    if (this.rewinding || !this.db.isOpen || this.stopped || this.failed) return;
    const release = this.holdWrites();
    const timer = setTimeout(() => this.rewinding?.(), this.maxHoldMs);
    this.rewinding = () => {
      clearTimeout(timer);
      this.rewinding = undefined;
      release();
    };
    this.worker.postMessage("restart");
  }

  /** Starts checkpointing `file`, the database `db` is connected to (WAL mode). Resolves once the thread runs. */
  static async start(db: DatabaseSync, file: string, opts: WalCheckpointerOptions = {}): Promise<WalCheckpointer> {
    const c = new WalCheckpointer(db, file, opts);
    await c.ready;
    return c;
  }

  get stats(): WalCheckpointStats {
    return { ...this.latest };
  }

  /** false once the thread has failed and the connection is back on automatic checkpoints */
  get running(): boolean {
    return !this.failed && !this.stopped;
  }

  /**
   * Stops the thread and closes its connection. The caller closes its own connection afterwards; as the last
   * one, that checkpoints what is left.
   */
  stop(): Promise<void> {
    this.rewinding?.();
    this.stopped ??= this.failed
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.worker.on("message", (m: { stopped?: boolean }) => m.stopped && resolve());
          this.worker.once("exit", () => resolve());
          this.worker.postMessage("stop");
        }).then(() => this.worker.terminate().then(() => undefined));
    return this.stopped;
  }
}
