import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { DatabaseSync } from "node:sqlite";
import { StoreUnavailableError } from "../../src/errors/storeUnavailable.ts";
import { openSecrets } from "../../src/secrets/openSecrets.ts";
import { openStores, sqliteFile } from "../../src/store/openStores.ts";
import { openDatabase, pluck, pragma } from "../../src/store/sqlite/database.ts";
import { SqliteEnrollmentStore } from "../../src/store/sqlite/sqliteEnrollmentStore.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * A serving SQLite store (`lockWaitMs` set, src/store/sqlite/lockWait.ts) never waits for another connection's
 * lock synchronously: its direct writes (operator writes, Part B's single statements) wait on timers, so the event
 * loop goes on, and give up with StoreUnavailableError (503) after `lockWaitMs`. Reads are not held up at all
 * (WAL). The group-commit writer's own waiting is in groupCommit.test.ts; the whole server in
 * test/e2e/lockedStore.test.ts.
 */
describe("sqlite store: waiting for another process's lock off the event loop", () => {
  let dir: string;
  let file: string;
  let locker: DatabaseSync;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-lockwait-"));
    file = path.join(dir, "attestd.sqlite");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const open = async (lockWaitMs: number) => {
    const store = new SqliteStore({ file, lockWaitMs });
    locker ??= openDatabase(file);
    const name = `t-${lockWaitMs}-${Date.now()}`;
    await store.createTenant({ tenantId: name, name, customerId: String(T0 + lockWaitMs), kind: "customer", createdAt: new Date(T0).toISOString() });
    return { store, name };
  };

  it("a direct write waits for the lock without blocking, reads go on, and it lands once the lock is free", async () => {
    const { store, name } = await open(60_000);
    assert.equal(pragma(store.db, "busy_timeout"), 0, "no synchronous busy wait on a serving connection");
    locker.exec("BEGIN IMMEDIATE");
    try {
      let settled = false;
      const write = store.setTenantState(name, "blocked").then((v) => ((settled = true), v));
      for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 2)); // the loop turns, timers fire
      assert.equal(settled, false, "still waiting for the lock");
      assert.equal((await store.getTenantByName(name))?.state, "active", "reads are answered meanwhile");
      const enrollment = new SqliteEnrollmentStore(store.db);
      const deletion = enrollment.deleteClient("no-such-client"); // Part B's direct writes wait the same way
      locker.exec("COMMIT");
      assert.equal(await write, true);
      assert.equal(await deletion, false);
      assert.equal((await store.getTenantByName(name))?.state, "blocked");
    } finally {
      if (locker.isTransaction) locker.exec("ROLLBACK");
      await store.close();
    }
  });

  it("gives up after lockWaitMs with StoreUnavailableError, having written nothing", async () => {
    const { store, name } = await open(30);
    locker.exec("BEGIN IMMEDIATE");
    try {
      const refusal = await store.setTenantState(name, "inactive").then(
        () => assert.fail("written through another process's lock"),
        (err: unknown) => err,
      );
      assert.ok(refusal instanceof StoreUnavailableError, String(refusal));
      assert.equal(refusal.backend, "sqlite");
      const nonce = store.issue({ nonce: "n-locked", tenantId: name, createdAtMs: T0, expiresAtMs: T0 + 60_000 }, 10, T0);
      await assert.rejects(nonce, StoreUnavailableError, "the group-commit writer gives up the same way");
    } finally {
      locker.exec("ROLLBACK");
    }
    try {
      assert.equal((await store.getTenantByName(name))?.state, "active");
      assert.equal(await store.setTenantState(name, "inactive"), true, "and works once the lock is free");
    } finally {
      await store.close();
      locker.close();
    }
  });

  it("every store openStores builds on a serving connection waits the same way, the start-up writes included", async () => {
    // Seen in CI: three servers making their first start at once on one data directory; one sealed its secrets
    // (SqliteSecretsStore) while another ran its migrations, met the lock with busy_timeout 0, and exited with
    // "database is locked". The stores sharing the connection had no lock wait of their own.
    const dataDir = mkdtempSync(path.join(tmpdir(), "attestd-lockwait-start-"));
    const stores = await openStores(
      { store: "sqlite", dataDir, sqliteSynchronous: "NORMAL", sqliteLockWaitMs: 60_000, pgPoolMax: 1 } as Parameters<typeof openStores>[0],
      { serving: true },
    );
    const other = openDatabase(sqliteFile(dataDir));
    try {
      for (const [role, store] of Object.entries(stores)) {
        if (typeof store !== "object" || !store.constructor.name.startsWith("Sqlite")) continue;
        const proto = Object.getPrototypeOf(store) as object;
        for (const name of Object.getOwnPropertyNames(proto)) {
          // methods only: an accessor (a lazily prepared statement) is not a store call, and reading it off the prototype would run it
          if (name === "constructor" || typeof Object.getOwnPropertyDescriptor(proto, name)?.value !== "function") continue;
          assert.ok(Object.hasOwn(store, name), `${role} (${store.constructor.name}).${name} does not wait out a lock held elsewhere`);
        }
      }
      other.exec("BEGIN IMMEDIATE");
      let settled = false;
      const startUp = (async () => {
        const secrets = await openSecrets(stores.secrets, { dataDir });
        const key = await stores.signingKeys.putFirstSigningKey({
          kid: "kid-1", alg: "ES256", publicJwk: "{}", privateKey: "not a key", createdAt: new Date(T0).toISOString(), retiresAt: null,
        });
        return { secrets, key };
      })().finally(() => (settled = true));
      for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(settled, false, "the start-up writes wait for the lock instead of failing with SQLITE_BUSY");
      other.exec("COMMIT");
      const { secrets, key } = await startUp;
      assert.equal(await stores.secrets.sealingKeyId(), secrets.box.keyIds[0]);
      assert.equal(key.kid, "kid-1");
    } finally {
      if (other.isTransaction) other.exec("ROLLBACK");
      other.close();
      await stores.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("a secrets scrub that meets a lock after its reseal committed is run on the retry, not skipped", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "attestd-lockwait-scrub-"));
    const stores = await openStores(
      { store: "sqlite", dataDir, sqliteSynchronous: "NORMAL", sqliteLockWaitMs: 60_000, pgPoolMax: 1 } as Parameters<typeof openStores>[0],
      { serving: true },
    );
    const db = (stores.durable as SqliteStore).db;
    try {
      db.prepare("INSERT INTO ear_signing_keys (kid, alg, public_jwk, private_key, created_at) VALUES ('k1', 'ES256', '{}', 'plain', ?)")
        .run(new Date(T0).toISOString());
      // the VACUUM after the reseal meets another process's lock once (SQLITE_BUSY, as node:sqlite reports it)
      const exec = db.exec.bind(db);
      const vacuums: string[] = [];
      db.exec = ((sql: string) => {
        if (sql === "VACUUM") {
          vacuums.push(vacuums.length === 0 ? "busy" : "ran");
          if (vacuums.length === 1) throw Object.assign(new Error("database is locked"), { code: "ERR_SQLITE_ERROR", errcode: 5, errstr: "database is locked" });
        }
        return exec(sql);
      }) as typeof db.exec;
      const out = await stores.secrets.sealAll({
        keyId: "key-1",
        sealedPrefix: "sealed:",
        reseal: (value) => `sealed:${value}`,
        accepts: () => true,
      });
      assert.deepEqual(vacuums, ["busy", "ran"], "the retry scrubbed the old bytes");
      assert.deepEqual(out, { outcome: "sealed", resealed: 1 }, "and reports the value the first attempt resealed");
      assert.equal(pluck(db.prepare("SELECT private_key FROM ear_signing_keys WHERE kid = 'k1'")).get(), "sealed:plain");
    } finally {
      await stores.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
