import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { STORAGE_SETTLE_MS } from "../../src/store/health.ts";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import { StoreUnavailableError } from "../../src/errors/storeUnavailable.ts";
import { pragma } from "../../src/store/sqlite/database.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * SQLITE_FULL at the statement rather than at COMMIT, made without a small filesystem: `max_page_count` caps the
 * file where it stands, so the next INSERT that needs a new page fails the way one does on a full disk. Such a
 * failure is the disk's, not the entry's: the batch is refused whole (503, retried later), never some of its entries
 * "refused" as if they broke a constraint (which the activity log gives up on within a second).
 */
describe("SQLITE_FULL inside a statement (max_page_count)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-full-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const entries = (n: number, tag: string): ActivityEntry[] =>
    Array.from({ length: n }, (_, i) => ({
      time: new Date(T0 + i).toISOString(),
      errorId: `${tag}${String(i).padStart(4, "0")}`,
      tenantId: null,
      clientId: null,
      method: "POST",
      route: "/v2/blobs",
      status: 503,
      code: "5030000",
      latencyMs: 1,
      remoteAddress: "127.0.0.1",
      reason: "r".repeat(400),
    }));

  it("an activity batch that meets a full file is refused whole, written not at all, and readiness says so; it goes in once there is room", async () => {
    const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite"), lockWaitMs: 0 });
    try {
      // a first batch so the table and its indexes have pages, then no new page
      assert.deepEqual(await store.appendActivity(entries(1, "a")), { refused: [] });
      store.db.exec(`PRAGMA max_page_count = ${Number(pragma(store.db, "page_count"))}`);
      const batch = entries(300, "b");
      await assert.rejects(store.appendActivity(batch), (e: unknown) => e instanceof StoreUnavailableError && e.storage && e.backend === "sqlite");
      assert.equal((await store.queryActivity({ limit: 1000 } as never)).length, 1, "nothing of the refused batch was written");
      assert.equal(store.writer.storage.failing !== undefined, true, "readiness goes not-ready");

      store.db.exec("PRAGMA max_page_count = 1073741823");
      assert.deepEqual(await store.appendActivity(batch), { refused: [] });
      assert.equal((await store.queryActivity({ limit: 1000 } as never)).length, 301);
      assert.notEqual(store.writer.storage.failing, undefined, "a commit right after a refused one proves nothing yet");
      await new Promise((r) => setTimeout(r, STORAGE_SETTLE_MS));
      assert.deepEqual(await store.appendActivity(entries(1, "c")), { refused: [] });
      assert.equal(store.writer.storage.failing, undefined, "a batch committed once no write failed for the settle time ends it");
    } finally {
      await store.close();
    }
  });

  it("a verdict or a nonce that meets a full file is a storage StoreUnavailableError, not a 500's raw SQLite error", async () => {
    const store = new SqliteStore({ file: path.join(dir, "other.sqlite"), lockWaitMs: 0 });
    try {
      store.db.exec(`PRAGMA max_page_count = ${Number(pragma(store.db, "page_count"))}`);
      let refused: unknown;
      for (let i = 0; i < 500 && !refused; i++) {
        await store
          .issue({ nonce: `n${i}`.padEnd(64, "x"), tenantId: "t1", createdAtMs: T0, expiresAtMs: T0 + 60_000 }, 1e6, T0)
          .catch((e: unknown) => (refused = e));
      }
      assert.ok(refused instanceof StoreUnavailableError && refused.storage, String(refused));
    } finally {
      await store.close();
    }
  });
});
