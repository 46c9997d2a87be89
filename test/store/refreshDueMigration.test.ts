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

/**
 * Migration 017: keys stored before it were all due from their attestation on; after it, only the keys of apps
 * with a developer key are (docs/app-attest.md "When attestd refreshes"), on both SQL backends.
 */
const MIGRATION = "app_attest_refresh_due";
const DUE = "2026-11-01T10:00:00.000Z";

const TENANT = ["t_acme", "acme", "c_acme", "customer", 0, DUE] as const;
/** app row id, app id, developer key (sealed) */
const APPS = [
  ["ia_with", "ABCDE12345.com.acme.with", "sealed:v1:x"],
  ["ia_without", "ABCDE12345.com.acme.without", null],
] as const;
/** key id, app id, due, revoked */
const KEYS = [
  ["k_with", "ABCDE12345.com.acme.with", DUE, null],
  ["k_without", "ABCDE12345.com.acme.without", DUE, null],
  ["k_without_revoked", "ABCDE12345.com.acme.without", DUE, DUE],
  ["k_gone_app", "ABCDE12345.com.acme.removed", DUE, null],
] as const;

async function assertDue(store: DurableStore): Promise<void> {
  const due = async (keyId: string) => (await store.getAppAttestKey("t_acme", keyId))?.refreshDueAt;
  assert.equal(await due("k_with"), DUE, "its app has a developer key: as it was");
  assert.equal(await due("k_without"), null);
  assert.equal(await due("k_without_revoked"), null);
  assert.equal(await due("k_gone_app"), null, "its app is no longer registered");
}

describe("migration 017: only keys of apps with a developer key stay due", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-duemig-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("SQLite", async () => {
    const file = path.join(dir, "old.sqlite");
    sqliteBefore(file, MIGRATION, (old) => {
      old.prepare("INSERT INTO tenants (tenant_id, name, customer_id, kind, enrollment_enabled, created_at) VALUES (?, ?, ?, ?, ?, ?)").run(...TENANT);
      for (const [id, appId, key] of APPS) {
        old.prepare("INSERT INTO ios_apps (id, tenant_id, app_id, environment, created_at, developer_key_id, developer_key) VALUES (?, 't_acme', ?, 'both', ?, ?, ?)").run(id, appId, DUE, key && "KEY1234567", key);
      }
      for (const [keyId, appId, due, revoked] of KEYS) {
        old
          .prepare("INSERT INTO app_attest_keys (key_id, tenant_id, app_id, public_key, counter, environment, receipt, attested_at, revoked_at, refresh_due_at) VALUES (?, 't_acme', ?, 'BA==', 0, 'production', '', ?, ?, ?)")
          .run(keyId, appId, DUE, revoked, due);
      }
    });
    const store = new SqliteStore({ file });
    try {
      await assertDue(store);
    } finally {
      await store.close();
    }
  });

  it("PostgreSQL", async () => {
    const db = await createTestDatabase("duemig");
    try {
      await postgresBefore(db.url, MIGRATION, async (c) => {
        await c.query("INSERT INTO tenants (tenant_id, name, customer_id, kind, enrollment_enabled, created_at) VALUES ($1, $2, $3, $4, $5::int::boolean, $6)", [...TENANT]);
        for (const [id, appId, key] of APPS) {
          await c.query("INSERT INTO ios_apps (id, tenant_id, app_id, environment, created_at, developer_key_id, developer_key) VALUES ($1, 't_acme', $2, 'both', $3, $4, $5)", [id, appId, DUE, key && "KEY1234567", key]);
        }
        for (const [keyId, appId, due, revoked] of KEYS) {
          await c.query(
            "INSERT INTO app_attest_keys (key_id, tenant_id, app_id, public_key, counter, environment, receipt, attested_at, revoked_at, refresh_due_at) VALUES ($1, 't_acme', $2, 'BA==', 0, 'production', '', $3, $4, $5)",
            [keyId, appId, DUE, revoked, due],
          );
        }
      });
      const store = await PgStore.open({ url: db.url, poolMax: 2 });
      try {
        await assertDue(store);
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });
});
