import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, it } from "node:test";
import type { DatabaseSync } from "node:sqlite";
import { openStores } from "../../src/store/openStores.ts";
import { openDatabase, pluck, pragma, transaction } from "../../src/store/sqlite/database.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { groupCommitFor } from "../../src/store/sqlite/groupCommit.ts";
import { WalCheckpointer } from "../../src/store/sqlite/walCheckpointer.ts";
import { REPO } from "../helpers/serverProcess.ts";
import { fillUp, mountTinyFs, unmountTinyFs } from "../helpers/tinyFs.ts";

/**
 * The WAL checkpoint thread (src/store/sqlite/walCheckpointer.ts): a serving process's SQLite connection stops
 * checkpointing in its commits, a thread does it instead, the WAL stays bounded under writes that never pause, and
 * if the thread dies the connection is back on SQLite's automatic checkpoints.
 */

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tmpFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-ckpt-"));
  dirs.push(dir);
  return path.join(dir, "attestd.sqlite");
}

function openWal(file: string): DatabaseSync {
  const db = openDatabase(file, { busyTimeoutMs: 10_000 });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID");
  return db;
}

/** random keys, as nonces: each row dirties a page of its own */
function writeRows(db: DatabaseSync, rows: number): void {
  const ins = db.prepare("INSERT INTO t (k, v) VALUES (?, ?)");
  transaction(db, "deferred", () => {
    for (let i = 0; i < rows; i++) ins.run(randomBytes(24).toString("base64url"), randomBytes(64));
  });
}

const PAGE = 4096;
const walBytes = (file: string) => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);

describe("sqlite WAL checkpoint thread", () => {
  it("turns the connection's automatic checkpoints off and copies committed frames into the file", async () => {
    const file = tmpFile();
    const db = openWal(file);
    const c = await WalCheckpointer.start(db, file, { intervalMs: 10 });
    try {
      assert.equal(pragma(db, "wal_autocheckpoint"), 0);
      for (let i = 0; i < 20; i++) writeRows(db, 100);
      const framesWritten = walBytes(file) / (PAGE + 24);
      assert.ok(framesWritten > 100, `the write went to the WAL (${framesWritten} frames)`);
      for (let i = 0; i < 200 && c.stats.checkpointedFrames < framesWritten * 0.9; i++) await sleep(10);
      assert.ok(c.running);
      assert.ok(c.stats.runs > 0);
      assert.ok(
        c.stats.checkpointedFrames >= framesWritten * 0.9,
        `the thread copied the commit back (${c.stats.checkpointedFrames} of ~${framesWritten} frames)`,
      );
      // what is in the database file itself: a copy of it without the WAL holds the rows. The thread may still be
      // copying the last commit's frames (the wait above stops at 90 %), so look again until it has, or give up.
      const copy = `${file}.copy`;
      let rowsInFile: number | string = "no copy read";
      for (let i = 0; i < 200 && rowsInFile !== 2_000; i++) {
        if (i > 0) await sleep(10);
        copyFileSync(file, copy);
        try {
          const fileOnly = openDatabase(copy, { readOnly: true });
          try {
            rowsInFile = Number(pluck(fileOnly.prepare("SELECT COUNT(*) FROM t")).get());
          } finally {
            fileOnly.close();
          }
        } catch (err) {
          rowsInFile = String(err); // a copy taken mid-page-write; the next one will do
        }
      }
      assert.equal(rowsInFile, 2_000);
    } finally {
      await c.stop();
      db.close();
    }
  });

  it("keeps the WAL bounded while commits never pause, by restarting it past restartFrames", async () => {
    const file = tmpFile();
    const db = openWal(file);
    const restartFrames = 400;
    // as SqliteStore wires it: the rewind holds the connection's group-commit writer while the thread restarts
    const writer = groupCommitFor(db);
    let holds = 0;
    const c = await WalCheckpointer.start(db, file, { intervalMs: 5, restartFrames, holdWrites: () => (holds++, writer.hold()) });
    // the rewind's checkpoint and its fsync run on the thread, never on the serving connection (they stalled its loop)
    const checkpointsHere: string[] = [];
    const exec = db.exec.bind(db);
    const prepare = db.prepare.bind(db);
    const watch = (sql: string) => void (/wal_checkpoint/i.test(sql) && checkpointsHere.push(sql));
    db.exec = (sql: string) => (watch(sql), exec(sql));
    db.prepare = ((sql: string, ...rest: unknown[]) => (watch(sql), prepare(sql, ...(rest as [])))) as typeof db.prepare;
    try {
      let rows = 0;
      // one small commit per event-loop turn, as group commit does under load; a count, not a duration, and a 1 ms
      // timer now and then, so a box loaded by other work still gives the thread its turns (it failed at load 12)
      while (rows < 12_000) {
        await writer.run(() => writeRows(db, 20));
        rows += 20;
        await new Promise((r) => (rows % 400 === 0 ? setTimeout(r, 1) : setImmediate(r)));
      }
      const written = rows * 1; // at least a page per row
      assert.ok(written > restartFrames * 5, `enough was written to need restarts (${rows} rows)`);
      assert.ok(c.stats.restarts >= 1, `the WAL was restarted (${JSON.stringify(c.stats)})`);
      assert.ok(holds >= c.stats.restarts, "each rewind held the writer");
      assert.deepEqual(checkpointsHere, [], "the serving connection ran no checkpoint itself");
      // without restarts the WAL would hold every page written: ~one per row
      const frames = walBytes(file) / (PAGE + 24);
      assert.ok(frames < rows / 2, `the WAL stayed bounded: ${Math.round(frames)} frames for ${rows} rows`);
      assert.equal(pluck(db.prepare("SELECT COUNT(*) FROM t")).get(), rows);
    } finally {
      await c.stop();
      db.close();
    }
  });

  it("falls back to automatic checkpoints and reports it when the thread fails", async () => {
    const file = tmpFile();
    const db = openWal(file);
    db.exec("PRAGMA wal_autocheckpoint = 500");
    const errors: unknown[] = [];
    // the thread opens its own connection to an existing file only: a wrong path kills it at once
    const c = await WalCheckpointer.start(db, `${file}.missing`, { onError: (e) => errors.push(e) });
    try {
      assert.equal(c.running, false);
      assert.equal(errors.length, 1);
      assert.equal(pragma(db, "wal_autocheckpoint"), 500, "the connection's own setting is back");
    } finally {
      await c.stop();
      db.close();
    }
  });

  it("starts in a process whose evaluated code is a module (a worker inherits --input-type)", async () => {
    const file = tmpFile();
    const module = pathToFileURL(path.join(REPO, "src/store/sqlite/sqliteStore.ts")).href;
    const code = `
      import { SqliteStore } from ${JSON.stringify(module)};
      const store = new SqliteStore({ file: process.argv[1] });
      await store.startWalCheckpointer({ intervalMs: 5, onError: (e) => console.error(String(e)) });
      for (let i = 0; i < 100 && !store.walCheckpoints?.runs; i++) await new Promise((r) => setTimeout(r, 10));
      console.log(JSON.stringify({ runs: store.walCheckpoints?.runs ?? 0 }));
      await store.close();`;
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, file], { cwd: REPO });
    assert.equal(stderr, "", "the thread did not fail");
    assert.ok((JSON.parse(stdout) as { runs: number }).runs > 0, stdout);
  });

  it("runs for a serving store and stops with it, leaving every write in the file", async () => {
    const file = tmpFile();
    const dataDir = path.dirname(file);
    const config = { store: "sqlite", dataDir, databaseUrl: undefined, redisUrl: undefined, pgPoolMax: 1, sqliteSynchronous: "NORMAL" };
    const serving = await openStores(config as never, { serving: true });
    const sqlite = serving.durable as SqliteStore;
    assert.ok(sqlite.walCheckpoints, "a serving store checkpoints in its thread");
    assert.equal(pragma(sqlite.db, "wal_autocheckpoint"), 0);
    const now = Date.now();
    for (let i = 0; i < 50; i++) {
      assert.equal(
        await serving.nonces.issue({ nonce: `n${i}`, tenantId: "t1", createdAtMs: now, expiresAtMs: now + 60_000 }, 1e6, now),
        "ok",
      );
    }
    await serving.close();
    assert.equal(existsSync(`${file}-wal`), false, "the last connection to close checkpointed and removed the WAL");

    const cli = await openStores(config as never);
    try {
      assert.equal((cli.durable as SqliteStore).walCheckpoints, undefined, "one-shot commands keep automatic checkpoints");
      assert.equal(pragma((cli.durable as SqliteStore).db, "wal_autocheckpoint"), 1000);
      assert.equal(await cli.nonces.consume("n49", "t1", now + 1), "ok");
    } finally {
      await cli.close();
    }
  });

  it("survives a full disk: the thread keeps running (checkpoints wait for space), and copies again once space is back", async () => {
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "attestd-ckpt-full-")), "data");
    dirs.push(path.dirname(dataDir));
    mountTinyFs(dataDir, "2m");
    const failures: unknown[] = [];
    try {
      const config = { store: "sqlite", dataDir, pgPoolMax: 1, sqliteSynchronous: "NORMAL", sqliteLockWaitMs: 2_000 };
      const serving = await openStores(config as never, { serving: true, onBackgroundError: (e) => failures.push(e) });
      const sqlite = serving.durable as SqliteStore;
      const now = Date.now();
      let issued = 0;
      const issue = () => serving.nonces.issue({ nonce: `n${issued++}`.padEnd(200, "x"), tenantId: "t1", createdAtMs: now, expiresAtMs: now + 60_000 }, 1e6, now);
      const filler = fillUp(dataDir);
      // commits go on into WAL space already there, then fail; the thread meanwhile meets the full disk too
      let refused = 0;
      for (let i = 0; i < 2_000 && refused < 20; i++) {
        await issue().catch(() => refused++);
        if (i % 20 === 0) await sleep(20);
      }
      assert.equal(refused, 20, "writes were refused: the disk is full");
      const runs = sqlite.walCheckpoints?.runs ?? 0;
      for (let i = 0; i < 200 && (sqlite.walCheckpoints?.runs ?? 0) < runs + 3; i++) await sleep(20);
      assert.deepEqual(failures.map(String), [], "the thread did not fail");
      assert.ok(sqlite.walCheckpoints, "and still runs");

      rmSync(filler);
      assert.equal(await issue(), "ok");
      const runsBefore = sqlite.walCheckpoints!.runs;
      const caughtUp = () => {
        const st = sqlite.walCheckpoints!;
        return st.runs > runsBefore && st.walFrames > 0 && st.checkpointedFrames === st.walFrames;
      };
      for (let i = 0; i < 500 && !caughtUp(); i++) await sleep(20);
      assert.ok(caughtUp(), `it copies every committed frame again: ${JSON.stringify(sqlite.walCheckpoints)}`);
      assert.equal(pragma(sqlite.db, "wal_autocheckpoint"), 0, "checkpoints stayed off the event loop");
      await serving.close();
    } finally {
      unmountTinyFs(dataDir);
    }
  });
});
