import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { PgStore } from "../../src/store/postgres/pgStore.ts";
import type { DurableStore } from "../../src/store/types.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { createTestDatabase } from "./backends.ts";
import { postgresBefore, sqliteBefore } from "./olderSchema.ts";

/** Migration 013 moves the pin resets kept apart since migration 007 into the audit trail, on both SQL backends. */

const PIN = { pinnedAt: "2026-11-01T09:00:00.000Z", format: "android-key", objectId: "v1" };
const OLD_RESETS = [
  ["t_acme", "phone-1", "2026-11-01T10:00:00.000Z", "cli", JSON.stringify(PIN)],
  ["t_acme", "phone-1", "2026-11-01T11:00:00.000Z", "u_abc", null],
] as const;

async function assertMoved(store: DurableStore): Promise<void> {
  const moved = (await store.queryAudit({ tenantId: "t_acme", targetKind: "device", targetId: "phone-1" })).reverse();
  assert.deepEqual(
    moved.map((r) => [r.time, r.action, r.actor.kind, r.actor.id, r.before, r.after, r.from.kind]),
    [
      ["2026-11-01T10:00:00.000Z", "device.pin-reset", "operator", "cli", { pin: PIN }, { pin: null }, "system"],
      ["2026-11-01T11:00:00.000Z", "device.pin-reset", "user", "u_abc", { pin: null }, { pin: null }, "system"],
    ],
  );
}

describe("migration 013 moves the old device pin resets into the audit trail", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-auditmig-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("SQLite", async () => {
    const file = path.join(dir, "old.sqlite");
    sqliteBefore(file, "audit", (old) => {
      const reset = old.prepare("INSERT INTO attested_device_resets (tenant_id, device_id, reset_at, reset_by, previous_pin) VALUES (?, ?, ?, ?, ?)");
      for (const r of OLD_RESETS) reset.run(...r);
    });
    const store = new SqliteStore({ file });
    try {
      await assertMoved(store);
      assert.equal(store.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'attested_device_resets'").get()!.n, 0, "the old table is gone");
    } finally {
      await store.close();
    }
  });

  it("PostgreSQL", async () => {
    const db = await createTestDatabase("auditmig");
    try {
      await postgresBefore(db.url, "audit", async (c) => {
        for (const r of OLD_RESETS) {
          await c.query("INSERT INTO attested_device_resets (tenant_id, device_id, reset_at, reset_by, previous_pin) VALUES ($1, $2, $3, $4, $5::json)", [...r]);
        }
      });
      const store = await PgStore.open({ url: db.url, poolMax: 2 });
      try {
        await assertMoved(store);
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });
});
