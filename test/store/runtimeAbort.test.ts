import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, describe, it } from "node:test";
import { REPO } from "../helpers/serverProcess.ts";

/**
 * The process survives its SQLite statements being collected (issue 21). better-sqlite3 12 on Node 24 aborted it
 * with `Assertion failed: (env) != nullptr` in `node::RemoveEnvironmentCleanupHook`, from `Statement::~Statement()`:
 * since Node 24.19 an ObjectWrap's destructor removes an environment cleanup hook, which needs an entered V8
 * context, and a statement collected by a GC that runs from a platform task (V8's memory reducer, idle GC) has
 * none. A serving store makes such garbage all the time: a statement per call of its ad-hoc queries, and one per
 * tick on the WAL checkpoint thread. So a separate process does what a server does, in miniature: the real
 * SqliteStore with its checkpoint thread, writes through the group-commit writer, many prepared statements left to
 * the collector, an idle spell for V8 to collect them on its own schedule, then the store, the thread and the
 * process end. An abort is SIGABRT (exit 134 from a shell) and the assertion on stderr.
 *
 * The child is the same scenario that aborted with better-sqlite3 12.11.1 on Node 24.21 (checked by hand against
 * the code before the switch to node:sqlite; docs/deployment.md, "The SQLite binding").
 */

const CHILD = `
import { SqliteStore } from ${JSON.stringify(pathToFileURL(path.join(REPO, "src/store/sqlite/sqliteStore.ts")).href)};
const store = new SqliteStore({ file: process.argv[2], lockWaitMs: 2000 });
// a checkpoint every few ms: the thread uses a statement each time and leaves it behind
await store.startWalCheckpointer({ intervalMs: 5 });
const now = Date.now();
const writes = [];
for (let i = 0; i < 500; i++) {
  writes.push(store.issue({ nonce: "n" + i, tenantId: "t", createdAtMs: now, expiresAtMs: now + 60000 }, 1e6, now));
}
await Promise.all(writes);
// statements used once and dropped, with enough other garbage beside them that V8 collects on its own
let junk = [];
for (let i = 0; i < 20000; i++) {
  store.db.prepare("SELECT " + (i % 50)).get();
  junk.push(new Array(100).fill(i));
}
junk = null;
for (let i = 0; i < 500; i++) await store.consume("n" + i, "t", now + 1);
// idle: the memory reducer and idle-time GC run from platform tasks, outside any V8 context
await new Promise((resolve) => setTimeout(resolve, 2000));
if (store.walCheckpoints === undefined || store.walCheckpoints.runs === 0) throw new Error("the checkpoint thread never ran");
await store.close();
process.stdout.write("closed\\n");
`;

describe("the SQLite binding on this Node", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-abort-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("survives statements collected off a platform task, on the serving connection and the checkpoint thread, and at exit", async () => {
    const script = path.join(dir, "child.mts");
    writeFileSync(script, CHILD);
    const child = spawn(process.execPath, ["--import", "tsx", script, path.join(dir, "attestd.sqlite")], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const [code, signal] = (await new Promise((resolve) => child.once("exit", (c, s) => resolve([c, s])))) as [number | null, NodeJS.Signals | null];
    clearTimeout(timer);
    assert.doesNotMatch(stderr, /Assertion failed/, stderr);
    assert.equal(signal, null, `ended by ${signal}: ${stderr}`);
    assert.equal(code, 0, stderr);
    assert.equal(stdout, "closed\n", "the scenario ran to its end");
  });
});
