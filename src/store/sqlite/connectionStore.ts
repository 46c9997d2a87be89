import type { DatabaseSync } from "node:sqlite";
import { groupCommitFor, type GroupCommit } from "./groupCommit.ts";
import { waitOutLocks } from "./lockWait.ts";

/**
 * The base of every store that shares a SqliteStore's connection (Part B, replay ids, signing keys, secrets).
 * Its constructor gives the store the connection's group-commit writer and makes its promise-answering methods
 * wait out another process's lock (`lockWait.ts`) as the SqliteStore set it up: on a serving connection
 * `busy_timeout` is 0, so a store that skipped this would fail at once with "database is locked" whenever a
 * sibling process, a CLI command or a second first start held the write lock. Extending this class is how a new
 * store gets that; test/store/lockWait.test.ts checks every store openStores builds.
 */
export abstract class SqliteConnectionStore {
  protected readonly writer: GroupCommit;

  protected constructor(protected readonly db: DatabaseSync) {
    this.writer = groupCommitFor(db);
    waitOutLocks(this, this.writer.lockWaitMs, this.writer.storage);
  }
}
