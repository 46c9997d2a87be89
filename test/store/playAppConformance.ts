import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { cryptoRng } from "../../src/clock.ts";
import type { StoredPlayApp } from "../../src/domain/playApps.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { SecretBox, sealContext } from "../../src/secrets/secretBox.ts";
import { PlayAppRegistry } from "../../src/services/playApps.ts";
import { PLAY_APP_SECRET_PURPOSE } from "../../src/store/sealedColumns.ts";
import type { DurableStore, SecretsStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";
import { responseKeys, serviceAccountFile } from "../helpers/playAppKeys.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * A tenant's registered Play apps (PlayAppStore), asserted the same on memory, SQLite and PostgreSQL: a record
 * comes back as it was given, one registration per (tenant, package), every read and removal within one tenant,
 * and the secret column holds the sealed value only, resealed by the start-up's sealAll like every sealed column.
 * Every test works under its own tenants, so the suite also runs on a database other suites write to.
 */
export interface PlayAppBackend {
  durable: DurableStore;
  /** the secret column of a row as the database holds it, read past the store's interface (memory: its record) */
  rawSecret(tenantId: string, id: string): Promise<string | undefined>;
  /** the SQL backends' sealing at start-up (src/secrets/openSecrets.ts); memory has none */
  secrets?: SecretsStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `rotates`: the backend has a SecretsStore (the SQL ones), so a key rotation's resealing is checked; the memory
 * store has none, and there is nothing of rotation to check on it.
 */
export function playAppConformance(name: string, factory: () => Promise<PlayAppBackend>, opts: { rotates: boolean }): void {
  describe(`play app store conformance: ${name}`, () => {
    let b: PlayAppBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b.close();
    });

    // every row of the suite is sealed with this key, as a real store's are with the operator's, so that sealAll
    // (the last test) can reseal them all
    const suiteKey = randomBytes(32);
    const box = new SecretBox([suiteKey]);

    async function tenant(): Promise<Tenant> {
      const n = randomBytes(9).toString("base64url");
      return b.durable.createTenant({ tenantId: `t_${n}`, name: n, customerId: `c${randomBytes(6).toString("hex")}`, kind: "customer", createdAt: iso(T0) });
    }

    function app(t: Tenant, packageName: string, over: Partial<StoredPlayApp> = {}): StoredPlayApp {
      const id = `pa_${randomBytes(10).toString("hex")}`;
      return {
        id,
        tenantId: t.tenantId,
        policy: {
          packageName,
          certDigests: ["ab".repeat(32), "cd".repeat(32)],
          deviceFloor: "MEETS_STRONG_INTEGRITY",
          maxAgeSeconds: 120,
          require: { licensed: true, playProtect: false, appAccessRisk: true },
        },
        opensWith: "response-keys",
        sealedSecret: box.seal(JSON.stringify({ any: "secret" }), sealContext(PLAY_APP_SECRET_PURPOSE, id)),
        createdAt: iso(T0),
        ...over,
      };
    }

    it("add, get, list by package name, remove: each within its tenant", async () => {
      const t = await tenant();
      const u = await tenant();
      const z = app(t, "com.example.zeta");
      const a = app(t, "com.example.alpha", {
        opensWith: "service-account",
        serviceAccountEmail: "sa@p.iam.gserviceaccount.com",
        policy: { packageName: "com.example.alpha", certDigests: [], deviceFloor: "MEETS_BASIC_INTEGRITY", maxAgeSeconds: 10, require: { licensed: false, playProtect: true, appAccessRisk: false } },
      });
      assert.equal(await b.durable.addPlayApp(z), "ok");
      assert.equal(await b.durable.addPlayApp(a), "ok");
      assert.deepEqual(await b.durable.getPlayApp(t.tenantId, z.id), z);
      assert.deepEqual(await b.durable.getPlayApp(t.tenantId, a.id), a);
      assert.deepEqual(await b.durable.listPlayApps(t.tenantId), [a, z]);

      assert.equal(await b.durable.getPlayApp(u.tenantId, z.id), undefined, "another tenant does not get it");
      assert.deepEqual(await b.durable.listPlayApps(u.tenantId), []);
      assert.equal(await b.durable.removePlayApp(u.tenantId, z.id), false, "nor remove it");

      assert.equal(await b.durable.removePlayApp(t.tenantId, z.id), true);
      assert.equal(await b.durable.removePlayApp(t.tenantId, z.id), false);
      assert.equal(await b.durable.getPlayApp(t.tenantId, z.id), undefined);
      assert.deepEqual(await b.durable.listPlayApps(t.tenantId), [a]);
    });

    it("one registration per (tenant, package): a second is 'exists' and changes nothing; another tenant may have it", async () => {
      const t = await tenant();
      const u = await tenant();
      const first = app(t, "com.example.app");
      assert.equal(await b.durable.addPlayApp(first), "ok");
      assert.equal(await b.durable.addPlayApp(app(t, "com.example.app", { opensWith: "service-account" })), "exists");
      assert.deepEqual(await b.durable.listPlayApps(t.tenantId), [first]);
      assert.equal(await b.durable.addPlayApp(app(u, "com.example.app")), "ok");
      // once removed, the package may be registered anew
      await b.durable.removePlayApp(t.tenantId, first.id);
      assert.equal(await b.durable.addPlayApp(app(t, "com.example.app")), "ok");
    });

    it("a registration names an existing tenant", async () => {
      await assert.rejects(b.durable.addPlayApp(app({ tenantId: `t_none_${randomBytes(6).toString("hex")}` } as Tenant, "com.example.app")));
    });

    it("the secret column holds the sealed value only, never the keys' text", async () => {
      const t = await tenant();
      const registry = new PlayAppRegistry(b.durable, { nowMs: () => T0 }, cryptoRng, box);
      const keys = responseKeys();
      const account = serviceAccountFile();
      const k = await registry.add(t, { packageName: "com.example.keys", responseKeys: keys }, testActor());
      const s = await registry.add(t, { packageName: "com.example.account", serviceAccount: account.text }, testActor());
      for (const [id, plain] of [
        [k.id, [keys.decryptionKey, keys.verificationKey]],
        [s.id, [account.privateKeyPem.split("\n")[1]!, JSON.parse(account.text).private_key_id as string]],
      ] as const) {
        const raw = (await b.rawSecret(t.tenantId, id))!;
        assert.ok(raw.startsWith(box.currentPrefix), "sealed with the current key");
        for (const p of plain) assert.ok(!raw.includes(p), "no key text in the column");
      }
    });

    if (opts.rotates) it("sealAll reseals the column after a key rotation, and the apps open with the new key alone", async () => {
      assert.ok(b.secrets, "a backend that rotates has a SecretsStore");
      const t = await tenant();
      const oldKey = suiteKey;
      const newKey = randomBytes(32);
      const oldBox = box;
      const seal = (box: SecretBox) =>
        b.secrets!.sealAll({
          keyId: box.currentKeyId,
          sealedPrefix: box.currentPrefix,
          reseal: (value, purpose, id) => box.reseal(value, sealContext(purpose, id)),
          accepts: () => true,
        });
      assert.equal((await seal(oldBox)).outcome, "sealed");
      const keys = responseKeys();
      const a = await new PlayAppRegistry(b.durable, { nowMs: () => T0 }, cryptoRng, oldBox).add(t, { packageName: "com.example.app", responseKeys: keys }, testActor());

      assert.equal((await seal(new SecretBox([newKey, oldKey]))).outcome, "sealed");
      const newOnly = new SecretBox([newKey]);
      assert.ok((await b.rawSecret(t.tenantId, a.id))!.startsWith(newOnly.currentPrefix), "resealed with the new key");
      const apps = await new PlayAppRegistry(b.durable, { nowMs: () => T0 }, cryptoRng, newOnly).appsForAppraisal(t.tenantId);
      assert.equal(Buffer.from(apps[0]!.responseKeys!.decryptionKey).toString("base64"), keys.decryptionKey);
    });
  });
}
