import assert from "node:assert/strict";
import { existsSync, mkdtempSync, renameSync, rmSync, statSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { sqliteFile } from "../../src/store/openStores.ts";
import { attestdCli, startInstance, type Instance } from "../helpers/serverProcess.ts";

/**
 * A data dir whose attestd.sqlite was truncated or deleted beside the secrets.key its first start made: SQLite takes
 * either for a new database, and the service used to come up empty (every API key 401). It must refuse, saying what
 * looks wrong and how to go on; `--allow-new-store` starts afresh on purpose.
 */
describe("a missing or empty database file in a used data dir", () => {
  const root = mkdtempSync(path.join(tmpdir(), "attestd-loststore-"));
  const dir = path.join(root, "data");
  const db = sqliteFile(dir);
  after(() => rmSync(root, { recursive: true, force: true }));

  before(async () => {
    const first = await startInstance(["--data-dir", dir]);
    first.kill("SIGTERM");
    assert.equal(await first.exited, 0);
    assert.ok(statSync(db).size > 0, "the first start made a store");
    assert.ok(existsSync(path.join(dir, "secrets.key")));
  });

  const serveOnce = (extra: string[] = []) => attestdCli(["serve", "--insecure-http", "--port", "0", "--data-dir", dir, ...extra]);

  it("refuses an empty (0-byte) attestd.sqlite: exit 1, one line naming the file, what it found and --allow-new-store", () => {
    truncateSync(db, 0);
    const r = serveOnce();
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /^attestd: refusing to start on a new, empty store: .*attestd\.sqlite is empty \(0 bytes\)/);
    assert.match(lines[0]!, /secrets\.key/);
    assert.match(lines[0]!, /restore it from a backup/);
    assert.match(lines[0]!, /--allow-new-store/);
    assert.equal(statSync(db).size, 0, "the refused start wrote nothing into the file");
  });

  it("refuses a missing attestd.sqlite the same way, and store commands refuse too", () => {
    const moved = path.join(root, "moved.sqlite");
    renameSync(db, moved);
    try {
      const r = serveOnce();
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.match(r.stderr, /^attestd: refusing to start on a new, empty store: .*attestd\.sqlite is missing/);
      assert.equal(existsSync(db), false, "no new file made in its place");
      // a store command would otherwise make the new store the server then starts on without a word
      const cmd = attestdCli(["tenant", "create", "acme", "--data-dir", dir]);
      assert.equal(cmd.status, 1, cmd.stdout + cmd.stderr);
      assert.match(cmd.stderr, /--allow-new-store/);
      assert.equal(existsSync(db), false);
    } finally {
      renameSync(moved, db);
    }
  });

  it("starts on a new store with --allow-new-store, and after that without it", async () => {
    truncateSync(db, 0);
    let inst: Instance | undefined;
    try {
      inst = await startInstance(["--data-dir", dir, "--allow-new-store"]);
      const ready = await request(`${inst.base}/readyz`);
      assert.equal(ready.statusCode, 200);
      await ready.body.text();
    } finally {
      inst?.kill("SIGTERM");
      if (inst) assert.equal(await inst.exited, 0);
    }
    assert.ok(statSync(db).size > 0);
    const again = await startInstance(["--data-dir", dir]);
    again.kill("SIGTERM");
    assert.equal(await again.exited, 0);
  });
});
