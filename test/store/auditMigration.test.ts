import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import pg from "pg";
import { loadMigrations } from "../../src/store/migrations.ts";
import { PgStore } from "../../src/store/postgres/pgStore.ts";
import type { DurableStore } from "../../src/store/types.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { REPO } from "../helpers/serverProcess.ts";
import { createTestDatabase } from "./backends.ts";

/** Migration 013 moves the pin resets kept apart since migration 007 into the audit trail, on both SQL backends. */
function before(backend: "sqlite" | "postgres") {
  const all = loadMigrations(path.join(REPO, `src/store/${backend}/migrations`));
  const at = all.findIndex((m) => m.name === "audit");
  assert.ok(at > 0, "the audit migration exists");
  return all.slice(0, at);
}

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
    const old = openDatabase(file);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    for (const m of before("sqlite")) {
      old.exec(m.sql);
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(m.version, m.name, "2026-11-01T00:00:00.000Z");
    }
    const reset = old.prepare("INSERT INTO attested_device_resets (tenant_id, device_id, reset_at, reset_by, previous_pin) VALUES (?, ?, ?, ?, ?)");
    for (const r of OLD_RESETS) reset.run(...r);
    old.close();
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
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        await c.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
        for (const m of before("postgres")) {
          await c.query(m.sql);
          await c.query("INSERT INTO schema_migrations VALUES ($1, $2, $3)", [m.version, m.name, "2026-11-01T00:00:00.000Z"]);
        }
        for (const r of OLD_RESETS) {
          await c.query("INSERT INTO attested_device_resets (tenant_id, device_id, reset_at, reset_by, previous_pin) VALUES ($1, $2, $3, $4, $5::json)", [...r]);
        }
      } finally {
        await c.end();
      }
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
