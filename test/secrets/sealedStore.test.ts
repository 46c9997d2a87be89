import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { systemClock } from "../../src/clock.ts";
import { encryptForTenant, TenantKeyService } from "../../src/enrollment/tenantKeys.ts";
import { AppError } from "../../src/errors/AppError.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { loadMigrations } from "../../src/store/migrations.ts";
import { openStores, sqliteFile, type StoreConfig } from "../../src/store/openStores.ts";
import { openDatabase, pluck } from "../../src/store/sqlite/database.ts";
import { openSecrets } from "../../src/secrets/openSecrets.ts";
import { SecretsError } from "../../src/secrets/secretBox.ts";
import type { Stores } from "../../src/store/types.ts";
import { REPO } from "../helpers/serverProcess.ts";
import { createTestDatabase, type TestDatabase } from "../store/backends.ts";

/**
 * Tenants' private keys sealed at rest, on both SQL backends, starting where a deployment from before sealing
 * stands: a store migrated to 003 holding tenant keys in plaintext.
 */
interface OldStore {
  /** the data directory (where the default key file goes) */
  dir: string;
  config: StoreConfig;
  /** the private_key column as stored */
  raw(tenantId: string): Promise<string>;
  /** the sealing_key row's key id */
  recordedKeyId(): Promise<string | undefined>;
  cleanup(): Promise<void>;
}

interface PlainTenantKey {
  tenantId: string;
  publicKey: string;
  privateKey: string;
}

function tenantKeyPair(tenantId: string): PlainTenantKey {
  const k = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "der" },
  });
  return { tenantId, publicKey: k.publicKey.toString("base64"), privateKey: k.privateKey.toString("base64") };
}

const PRE_SEALING = 3;
const CREATED = "2026-11-01T00:00:00.000Z";

async function oldSqliteStore(keys: PlainTenantKey[]): Promise<OldStore> {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-sealed-"));
  const file = sqliteFile(dir);
  const db = openDatabase(file);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  for (const m of loadMigrations(path.join(REPO, "src/store/sqlite/migrations")).filter((m) => m.version <= PRE_SEALING)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(m.version, m.name, CREATED);
  }
  for (const [i, k] of keys.entries()) {
    db.prepare("INSERT INTO tenants (tenant_id, name, customer_id, kind, state, enrollment_enabled, created_at) VALUES (?, ?, ?, 'customer', 'active', 1, ?)").run(
      k.tenantId, k.tenantId, String(1_000_000 + i), CREATED,
    );
    db.prepare("INSERT INTO tenant_encryption_keys VALUES (?, ?, ?, ?)").run(k.tenantId, k.publicKey, k.privateKey, CREATED);
  }
  db.close();
  const read = <T>(sql: string, ...args: string[]) => {
    const r = openDatabase(file, { readOnly: true });
    try {
      return pluck(r.prepare(sql)).get(...args) as T;
    } finally {
      r.close();
    }
  };
  return {
    dir,
    config: { store: "sqlite", dataDir: dir, databaseUrl: undefined, redisUrl: undefined, pgPoolMax: 2, sqliteSynchronous: "NORMAL", sqliteLockWaitMs: 2000 },
    raw: async (tenantId) => read<string>("SELECT private_key FROM tenant_encryption_keys WHERE tenant_id = ?", tenantId),
    recordedKeyId: async () => read<string | undefined>("SELECT key_id FROM sealing_key"),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function oldPostgresStore(keys: PlainTenantKey[]): Promise<OldStore> {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-sealed-pg-"));
  const testDb: TestDatabase = await createTestDatabase("sealed");
  const run = async <T>(fn: (c: pg.Client) => Promise<T>) => {
    const c = new pg.Client({ connectionString: testDb.url });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  await run(async (c) => {
    await c.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    for (const m of loadMigrations(path.join(REPO, "src/store/postgres/migrations")).filter((m) => m.version <= PRE_SEALING)) {
      await c.query(m.sql);
      await c.query("INSERT INTO schema_migrations VALUES ($1, $2, $3)", [m.version, m.name, CREATED]);
    }
    for (const [i, k] of keys.entries()) {
      await c.query("INSERT INTO tenants (tenant_id, name, customer_id, kind, state, enrollment_enabled, created_at) VALUES ($1, $1, $2, 'customer', 'active', true, $3)", [
        k.tenantId,
        String(1_000_000 + i),
        CREATED,
      ]);
      await c.query("INSERT INTO tenant_encryption_keys VALUES ($1, $2, $3, $4)", [k.tenantId, k.publicKey, k.privateKey, CREATED]);
    }
  });
  return {
    dir,
    config: { store: "postgres", dataDir: dir, databaseUrl: testDb.url, redisUrl: undefined, pgPoolMax: 2, sqliteSynchronous: "NORMAL", sqliteLockWaitMs: 2000 },
    raw: (tenantId) => run(async (c) => (await c.query("SELECT private_key FROM tenant_encryption_keys WHERE tenant_id = $1", [tenantId])).rows[0]!.private_key as string),
    recordedKeyId: () => run(async (c) => (await c.query("SELECT key_id FROM sealing_key")).rows[0]?.key_id as string | undefined),
    cleanup: async () => {
      rmSync(dir, { recursive: true, force: true });
      await testDb.drop();
    },
  };
}

/** 64-character pieces of `text` at a few offsets: a copy of any of them in a file is a copy of the secret */
function fragments(text: string): string[] {
  return [0, Math.floor(text.length / 3), Math.floor(text.length / 2), text.length - 64].map((o) => text.slice(o, o + 64));
}

function sealedStoreSuite(name: string, make: (keys: PlainTenantKey[]) => Promise<OldStore>): void {
  describe(`sealed tenant keys: ${name}`, () => {
    const plain = [tenantKeyPair("t_one"), tenantKeyPair("t_two")];
    let old: OldStore;
    // made with the tenants' public keys before the upgrade, as clients did
    const ciphertexts = new Map(plain.map((k) => [k.tenantId, encryptForTenant(k.publicKey, `password of ${k.tenantId}`)]));
    const withStores = async <T>(fn: (stores: Stores) => Promise<T>, settings: { secretsKeyFile?: string } = {}) => {
      const stores = await openStores({ ...old.config, ...settings });
      try {
        return await fn(stores);
      } finally {
        await stores.close();
      }
    };
    const start = (settings: { secretsKeyFile?: string } = {}) =>
      withStores((stores) => openSecrets(stores.secrets, { dataDir: old.dir, ...settings }), settings);

    before(async () => {
      old = await make(plain);
    });
    after(() => old?.cleanup());

    it("the first start generates the key and seals every plaintext key, which still decrypts what clients sent", async () => {
      assert.equal(await old.raw("t_one"), plain[0]!.privateKey, "the starting point: plaintext");
      const first = await start();
      assert.equal(first.generated, true);
      assert.equal(first.keyFile, path.join(old.dir, "secrets.key"));
      assert.equal(first.resealed, 2);
      assert.equal(await old.recordedKeyId(), first.box.currentKeyId);
      for (const k of plain) {
        const stored = await old.raw(k.tenantId);
        assert.ok(stored.startsWith(`sealed:v1:${first.box.currentKeyId}:`), stored.slice(0, 40));
        for (const f of fragments(k.privateKey)) assert.ok(!stored.includes(f), "the column is not the key");
      }
      await withStores(async (stores) => {
        const { box } = await openSecrets(stores.secrets, { dataDir: old.dir });
        const keys = new TenantKeyService(stores.enrollment, systemClock, box);
        for (const k of plain) {
          assert.equal((await keys.decrypt(k.tenantId, ciphertexts.get(k.tenantId)!)).toString(), `password of ${k.tenantId}`);
          assert.equal(await keys.publicKey(k.tenantId), k.publicKey, "the public key is as it was");
        }
      });
      const again = await start();
      assert.deepEqual([again.generated, again.resealed], [false, 0], "the next start finds everything sealed");
    });

    it("seals a tenant key made after the upgrade, and round-trips it", async () => {
      await withStores(async (stores) => {
        await stores.durable.createTenant({ tenantId: "t_new", name: "t_new", customerId: "2000000", kind: "customer", createdAt: CREATED });
        const { box } = await openSecrets(stores.secrets, { dataDir: old.dir });
        const keys = new TenantKeyService(stores.enrollment, systemClock, box, 2048);
        const publicKey = await keys.publicKey("t_new");
        const stored = await old.raw("t_new");
        assert.ok(stored.startsWith(`sealed:v1:${box.currentKeyId}:`));
        assert.ok(!stored.includes("MII"), "no DER in base64 in the column");
        const ciphertext = encryptForTenant(publicKey, "fresh secret");
        assert.equal((await keys.decrypt("t_new", ciphertext)).toString(), "fresh secret");
      });
    });

    it("refuses to start with another key, or without the key, saying which key the store needs", async () => {
      const keyId = await old.recordedKeyId();
      const wrong = path.join(old.dir, "wrong.key");
      writeFileSync(wrong, Buffer.alloc(32, 7).toString("base64") + "\n", { mode: 0o600 });
      await assert.rejects(start({ secretsKeyFile: wrong }), (e: Error) => e instanceof SecretsError && e.message.includes(`sealed with key ${keyId}`) && !e.message.includes("\n"));
      await assert.rejects(start({ secretsKeyFile: path.join(old.dir, "absent.key") }), /--secrets-key-file .*absent\.key does not exist/);
      const moved = path.join(old.dir, "moved.key");
      writeFileSync(moved, readFileSync(path.join(old.dir, "secrets.key")));
      rmSync(path.join(old.dir, "secrets.key"));
      await assert.rejects(start(), (e: Error) => e instanceof SecretsError && /no key file at .*secrets\.key/.test(e.message));
      assert.equal(existsSync(path.join(old.dir, "secrets.key")), false, "no new key is made for a store that has one");
      const back = await start({ secretsKeyFile: moved });
      assert.equal(back.box.currentKeyId, keyId, "the moved file is the store's key");
    });

    it("rotates: a key file with a new key first reseals everything, after which the old key alone is refused", async () => {
      const oldKeyFile = path.join(old.dir, "moved.key");
      const oldKey = readFileSync(oldKeyFile, "utf8").split("\n").filter((l) => l && !l.startsWith("#"))[0]!;
      const ring = path.join(old.dir, "ring.key");
      const newKey = Buffer.alloc(32, 9).toString("base64");
      writeFileSync(ring, `${newKey}\n${oldKey}\n`, { mode: 0o600 });
      const rotated = await start({ secretsKeyFile: ring });
      assert.ok(rotated.resealed >= 3, `resealed ${rotated.resealed}`);
      assert.equal(await old.recordedKeyId(), rotated.box.currentKeyId);
      writeFileSync(ring, `${newKey}\n`);
      assert.equal((await start({ secretsKeyFile: ring })).resealed, 0);
      await assert.rejects(start({ secretsKeyFile: oldKeyFile }), SecretsError);
      await withStores(async (stores) => {
        const { box } = await openSecrets(stores.secrets, { dataDir: old.dir, secretsKeyFile: ring });
        const keys = new TenantKeyService(stores.enrollment, systemClock, box);
        assert.equal((await keys.decrypt("t_two", ciphertexts.get("t_two")!)).toString(), "password of t_two");
      }, { secretsKeyFile: ring });
    });

    // last: a later rotation would (rightly) refuse to reseal the moved row it leaves behind
    it("a sealed key copied to another tenant's row does not open there", async () => {
      const ring = path.join(old.dir, "ring.key");
      await withStores(async (stores) => {
        const { box } = await openSecrets(stores.secrets, { dataDir: old.dir, secretsKeyFile: ring });
        const one = await stores.enrollment.getTenantKey("t_one");
        await stores.durable.createTenant({ tenantId: "t_thief", name: "t_thief", customerId: "3000000", kind: "customer", createdAt: CREATED });
        await stores.enrollment.putTenantKeyIfAbsent({ ...one!, tenantId: "t_thief" });
        const keys = new TenantKeyService(stores.enrollment, systemClock, box);
        await assert.rejects(
          keys.decrypt("t_thief", ciphertexts.get("t_one")!),
          (e: unknown) => e instanceof AppError && e.entry === catalog.INTERNAL_SERVER_ERROR && /t_thief value does not open/.test(e.loggedReason),
        );
      }, { secretsKeyFile: ring });
    });
  });
}

sealedStoreSuite("SQLite", oldSqliteStore);
sealedStoreSuite("PostgreSQL", oldPostgresStore);

describe("sealing leaves no plaintext in the SQLite files", () => {
  it("neither the database file nor its WAL holds a fragment of a key once sealed", async () => {
    const keys = Array.from({ length: 3 }, (_, i) => tenantKeyPair(`t_${i}`));
    const old = await oldSqliteStore(keys);
    try {
      const file = sqliteFile(old.dir);
      const contents = () => [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1")).join("");
      assert.ok(contents().includes(fragments(keys[0]!.privateKey)[1]!), "the starting point: plaintext on disk");
      // as `serve` opens it: the WAL checkpoint thread running beside the connection that seals
      const stores = await openStores(old.config, { serving: true });
      try {
        const opened = await openSecrets(stores.secrets, { dataDir: old.dir });
        assert.equal(opened.resealed, 3);
        const onDisk = contents();
        for (const k of keys) for (const f of fragments(k.privateKey)) assert.ok(!onDisk.includes(f), `${k.tenantId}: ${f.slice(0, 16)}… on disk`);
      } finally {
        await stores.close();
      }
    } finally {
      await old.cleanup();
    }
  });
});
