import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { verdictHistorySql, sqlitePlaceholder } from "../../src/store/historyQueries.ts";
import { loadMigrations } from "../../src/store/migrations.ts";
import { openDatabase, pluck, pragma } from "../../src/store/sqlite/database.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { REPO } from "../helpers/serverProcess.ts";

const MIGRATIONS = path.join(REPO, "src/store/sqlite/migrations");

describe("SQLite migration 003 (portal) and the verdict-history indexes", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-mig-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("upgrades a database made by 001 + 002 in place: data kept, filters find old verdicts, foreign keys enforced", async () => {
    const file = path.join(dir, "old.sqlite");
    const old = openDatabase(file);
    old.exec("PRAGMA foreign_keys = ON");
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    for (const [v, name] of [[1, "part_a"], [2, "enrollment"]] as const) {
      old.exec(readFileSync(path.join(MIGRATIONS, `00${v}_${name}.sql`), "utf8"));
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(v, name, "2026-11-01T00:00:00.000Z");
    }
    old.prepare("INSERT INTO tenants VALUES ('t_acme', 'acme', '1234567890', 'customer', 'active', 1, '2026-11-01T00:00:00.000Z')").run();
    old
      .prepare("INSERT INTO enroll_users (user_id, tenant_id, email, state, created_at, updated_at) VALUES ('u_1', 't_acme', 'ops@acme.example', 'registered', 'x', 'x')")
      .run();
    old
      .prepare(
        "INSERT INTO enroll_clients (client_id, tenant_id, user_id, public_key, identifier_hash, read_only, rps, burst, restrictions, created_at) VALUES ('c_1', 't_acme', 'u_1', 'pk', 'h', 0, 1, 1, NULL, 'x')",
      )
      .run();
    const record = { verdict: "No", status: "SignatureInvalid", chipId: "chip-old", IMEI: "" };
    old
      .prepare("INSERT INTO verdicts VALUES ('v_old', 't_acme', 'vendor', ?, 'bad signature', '{}', '2026-11-01T00:00:00.000Z')")
      .run(JSON.stringify(record));
    old.close();

    const store = new SqliteStore({ file });
    try {
      const versions = pluck(store.db.prepare("SELECT version FROM schema_migrations ORDER BY version")).all();
      assert.deepEqual(versions, loadMigrations(MIGRATIONS).map((m) => m.version), "every later migration applied too");
      const revoked = pluck(store.db.prepare("SELECT revoked_at FROM enroll_clients WHERE client_id = 'c_1'")).get();
      assert.equal(revoked, null, "an existing client is not revoked by migration 004");
      assert.equal(pragma(store.db, "foreign_keys"), 1, "foreign keys are on again after migrating");
      const client = pluck(store.db.prepare("SELECT user_id FROM enroll_clients WHERE client_id = 'c_1'")).get();
      assert.equal(client, "u_1");
      const found = await store.listVerdicts({ tenantId: "t_acme", verdict: "No", device: "chip-old", limit: 10 });
      assert.deepEqual(found.map((v) => v.objectId), ["v_old"]);
      // the rebuilt users table still answers for its Part B clients
      assert.throws(
        () =>
          store.db
            .prepare(
              "INSERT INTO enroll_clients (client_id, tenant_id, user_id, public_key, identifier_hash, read_only, rps, burst, restrictions, created_at) VALUES ('c_2', 't_acme', 'u_nobody', 'pk', 'h', 0, 1, 1, NULL, 'x')",
            )
            .run(),
        /FOREIGN KEY/,
      );
      const made = await store.createPortalUser({ userId: "u_new", email: "OPS@acme.example", tenantId: "t_acme", role: "admin", at: "y" });
      assert.equal(made.outcome === "ok" && made.user.userId, "u_1", "the Part B user became the portal user");
      const op = await store.createPortalUser({ userId: "u_op", email: "root@example.org", tenantId: null, role: "operator", at: "y" });
      assert.equal(op.outcome, "ok");
    } finally {
      await store.close();
    }
  });

  it("a tenant's first page of verdicts, with or without a filter, is an index range read in index order", async () => {
    const store = new SqliteStore({ file: path.join(dir, "plan.sqlite") });
    try {
      const plan = (q: Parameters<typeof verdictHistorySql>[0]) => {
        const { sql, args } = verdictHistorySql(q, sqlitePlaceholder, "*");
        return (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join(" | ");
      };
      const cases: [Parameters<typeof verdictHistorySql>[0], RegExp][] = [
        [{ tenantId: "t", limit: 50 }, /verdicts_tenant_time/],
        [{ tenantId: "t", verdict: "No", limit: 50 }, /verdicts_tenant_verdict_time/],
        [{ tenantId: "t", status: "Success", limit: 50 }, /verdicts_tenant_status_time/],
        [{ tenantId: "t", limit: 50, before: { createdAt: "2026-11-22T10:00:00.000Z", objectId: "v" } }, /verdicts_tenant_time/],
        [{ limit: 50 }, /verdicts_time/],
      ];
      for (const [q, index] of cases) {
        const p = plan(q);
        assert.match(p, index, JSON.stringify(q));
        assert.doesNotMatch(p, /TEMP B-TREE|SCAN verdicts(?! USING)/, `${JSON.stringify(q)}: ${p}`);
      }
      // a device: an ordered, limited read of each partial index; only the two pages are merged and sorted
      const device = plan({ tenantId: "t", device: "c0ffee", limit: 50 });
      assert.match(device, /verdicts_tenant_chip/, device);
      assert.match(device, /verdicts_tenant_imei/, device);
      assert.doesNotMatch(device, /SCAN verdicts(?! USING)/, device);
    } finally {
      await store.close();
    }
  });
});
