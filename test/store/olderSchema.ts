import assert from "node:assert/strict";
import path from "node:path";
import type { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { loadMigrations, type Migration } from "../../src/store/migrations.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { REPO } from "../helpers/serverProcess.ts";

/**
 * A store as an older attestd left it, for the tests of a migration that changes data already stored: the schema of
 * every migration before the one named, recorded as applied, and the rows the test writes. Opening a store on it
 * then applies the named migration and the ones after it.
 */

const APPLIED_AT = "2026-11-01T00:00:00.000Z";

/** the migrations of `backend` before the one named `name` (which must exist and not be the first) */
export function migrationsBefore(backend: "sqlite" | "postgres", name: string): Migration[] {
  const all = loadMigrations(path.join(REPO, `src/store/${backend}/migrations`));
  const at = all.findIndex((m) => m.name === name);
  assert.ok(at > 0, `migration ${name} exists`);
  return all.slice(0, at);
}

/** the SQLite file `file` with the schema before migration `name` and the rows `seed` writes */
export function sqliteBefore(file: string, name: string, seed: (db: DatabaseSync) => void): void {
  const db = openDatabase(file);
  try {
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    for (const m of migrationsBefore("sqlite", name)) {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(m.version, m.name, APPLIED_AT);
    }
    seed(db);
  } finally {
    db.close();
  }
}

/** the (empty) PostgreSQL database at `url` with the schema before migration `name` and the rows `seed` writes */
export async function postgresBefore(url: string, name: string, seed: (c: pg.Client) => Promise<void>): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    for (const m of migrationsBefore("postgres", name)) {
      await c.query(m.sql);
      await c.query("INSERT INTO schema_migrations VALUES ($1, $2, $3)", [m.version, m.name, APPLIED_AT]);
    }
    await seed(c);
  } finally {
    await c.end();
  }
}
