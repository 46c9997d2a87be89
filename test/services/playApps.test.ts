import assert from "node:assert/strict";
import { createHash, createPublicKey, generateKeyPairSync, randomBytes } from "node:crypto";
import { beforeEach, describe, it } from "node:test";
import { cryptoRng } from "../../src/clock.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { catalog, type CatalogEntry } from "../../src/errors/catalog.ts";
import { SecretBox } from "../../src/secrets/secretBox.ts";
import { PLAY_APP_CACHE_MS, PlayAppRegistry, type PlayAppInput } from "../../src/services/playApps.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { T0 } from "../helpers/clock.ts";
import { responseKeys, serviceAccountFile } from "../helpers/playAppKeys.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * PlayAppRegistry (src/services/playApps.ts): what a registration accepts and refuses (by catalog code), the
 * defaults, that the secrets are sealed before the store sees them and come back only through appsForAppraisal,
 * and how long another process's change takes to be seen.
 */

const DIGEST = createHash("sha256").update("signing cert").digest("hex");

async function refusedWith(entry: CatalogEntry, fn: () => Promise<unknown>): Promise<void> {
  await assert.rejects(fn, (e: unknown) => isAppError(e) && e.entry === entry);
}

describe("PlayAppRegistry", () => {
  let store: MemoryDurableStore;
  let now: number;
  let box: SecretBox;
  let registry: PlayAppRegistry;
  let acme: Tenant;
  let other: Tenant;
  const clock = { nowMs: () => now };

  beforeEach(async () => {
    store = new MemoryDurableStore();
    now = T0;
    box = new SecretBox([randomBytes(32)]);
    registry = new PlayAppRegistry(store, clock, cryptoRng, box);
    acme = await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1001", kind: "customer", createdAt: new Date(T0).toISOString() });
    other = await store.createTenant({ tenantId: "t_other", name: "other", customerId: "1002", kind: "customer", createdAt: new Date(T0).toISOString() });
  });

  it("registers with the defaults: device floor MEETS_DEVICE_INTEGRITY, 300 s, no optional signal deciding", async () => {
    const keys = responseKeys();
    const s = await registry.add(acme, { packageName: "com.example.app", responseKeys: keys }, testActor());
    assert.match(s.id, /^pa_[a-z2-7]{16}$/);
    assert.deepEqual(
      { ...s, id: "x" },
      {
        id: "x",
        tenantId: "t_acme",
        policy: {
          packageName: "com.example.app",
          certDigests: [],
          deviceFloor: "MEETS_DEVICE_INTEGRITY",
          maxAgeSeconds: 300,
          require: { licensed: false, playProtect: false, appAccessRisk: false },
        },
        opensWith: "response-keys",
        createdAt: new Date(T0).toISOString(),
      },
    );
    assert.deepEqual(await registry.list(acme), [s]);
    assert.deepEqual(await registry.list(other), []);
  });

  it("normalises certificate digests: colon-separated uppercase as the Play Console shows them, duplicates once", async () => {
    const colons = DIGEST.toUpperCase().match(/../g)!.join(":");
    const s = await registry.add(acme, {
      packageName: "com.example.app",
      certDigests: [colons, DIGEST, "AB".repeat(32)],
      deviceFloor: "MEETS_STRONG_INTEGRITY",
      maxAgeSeconds: 60,
      require: { licensed: true, appAccessRisk: true },
      responseKeys: responseKeys(),
    }, testActor());
    assert.deepEqual(s.policy, {
      packageName: "com.example.app",
      certDigests: [DIGEST, "ab".repeat(32)],
      deviceFloor: "MEETS_STRONG_INTEGRITY",
      maxAgeSeconds: 60,
      require: { licensed: true, playProtect: false, appAccessRisk: true },
    });
  });

  it("refuses a bad field with PORTAL_INVALID_REQUEST and stores nothing", async () => {
    const keys = responseKeys();
    const sa = serviceAccountFile().text;
    const { publicKey: rsaPublic } = generateKeyPairSync("rsa", { modulusLength: 1024 });
    const { publicKey: p384 } = generateKeyPairSync("ec", { namedCurve: "secp384r1" });
    const spki = (k: typeof rsaPublic) => k.export({ format: "der", type: "spki" }).toString("base64");
    const bad: [string, PlayAppInput][] = [
      ["one segment", { packageName: "example", responseKeys: keys }],
      ["a digit first", { packageName: "com.1example", responseKeys: keys }],
      ["a hyphen", { packageName: "com.ex-ample", responseKeys: keys }],
      ["too long", { packageName: "com." + "a".repeat(252), responseKeys: keys }],
      ["a short digest", { packageName: "com.example.app", certDigests: ["abcd"], responseKeys: keys }],
      ["a digest of 63 hex", { packageName: "com.example.app", certDigests: [DIGEST.slice(1)], responseKeys: keys }],
      ["21 digests", { packageName: "com.example.app", certDigests: Array.from({ length: 21 }, (_, i) => createHash("sha256").update(String(i)).digest("hex")), responseKeys: keys }],
      ["an unknown floor", { packageName: "com.example.app", deviceFloor: "MEETS_VIRTUAL_INTEGRITY" as never, responseKeys: keys }],
      ["9 s", { packageName: "com.example.app", maxAgeSeconds: 9, responseKeys: keys }],
      ["a day and a second", { packageName: "com.example.app", maxAgeSeconds: 86_401, responseKeys: keys }],
      ["a fraction", { packageName: "com.example.app", maxAgeSeconds: 30.5, responseKeys: keys }],
      ["neither keys nor account", { packageName: "com.example.app" }],
      ["both", { packageName: "com.example.app", responseKeys: keys, serviceAccount: sa }],
      ["a 16-byte AES key", { packageName: "com.example.app", responseKeys: { ...keys, decryptionKey: randomBytes(16).toString("base64") } }],
      ["an AES key not base64", { packageName: "com.example.app", responseKeys: { ...keys, decryptionKey: "not base64!" } }],
      ["an RSA verification key", { packageName: "com.example.app", responseKeys: { ...keys, verificationKey: spki(rsaPublic) } }],
      ["a P-384 verification key", { packageName: "com.example.app", responseKeys: { ...keys, verificationKey: spki(p384) } }],
      ["garbage verification key", { packageName: "com.example.app", responseKeys: { ...keys, verificationKey: randomBytes(91).toString("base64") } }],
      ["an account not JSON", { packageName: "com.example.app", serviceAccount: "{" }],
      ["an account of another type", { packageName: "com.example.app", serviceAccount: JSON.stringify({ ...JSON.parse(sa), type: "authorized_user" }) }],
      ["an account without email", { packageName: "com.example.app", serviceAccount: JSON.stringify({ ...JSON.parse(sa), client_email: undefined }) }],
      ["an account with an EC key", { packageName: "com.example.app", serviceAccount: JSON.stringify({ ...JSON.parse(sa), private_key: generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ format: "pem", type: "pkcs8" }) }) }],
      ["an account key not PEM", { packageName: "com.example.app", serviceAccount: JSON.stringify({ ...JSON.parse(sa), private_key: "MIIE..." }) }],
    ];
    for (const [why, input] of bad) {
      await refusedWith(catalog.PORTAL_INVALID_REQUEST, () => registry.add(acme, input, testActor())).catch((e: unknown) => assert.fail(`${why}: ${String(e)}`));
    }
    assert.deepEqual(await store.listPlayApps(acme.tenantId), []);
  });

  it("one registration per package and tenant: the second is PORTAL_PLAY_APP_EXISTS; another tenant may register it", async () => {
    await registry.add(acme, { packageName: "com.example.app", responseKeys: responseKeys() }, testActor());
    await refusedWith(catalog.PORTAL_PLAY_APP_EXISTS, () => registry.add(acme, { packageName: "com.example.app", serviceAccount: serviceAccountFile().text }, testActor()));
    await registry.add(other, { packageName: "com.example.app", responseKeys: responseKeys() }, testActor());
    assert.equal((await registry.list(acme)).length, 1);
    assert.equal((await registry.list(other)).length, 1);
  });

  it("seals the secret bound to the registration: the store holds no key text, and appsForAppraisal opens it", async () => {
    const keys = responseKeys();
    const account = serviceAccountFile();
    const a = await registry.add(acme, { packageName: "com.example.keys", responseKeys: keys }, testActor());
    const b = await registry.add(acme, { packageName: "com.example.account", serviceAccount: account.text }, testActor());
    assert.equal(b.opensWith, "service-account");
    assert.equal(b.serviceAccountEmail, "attest@demo-project.iam.gserviceaccount.com");

    const stored = await store.listPlayApps(acme.tenantId);
    for (const row of stored) {
      assert.ok(row.sealedSecret.startsWith(box.currentPrefix), "sealed with the current key");
      for (const plain of [keys.decryptionKey, keys.verificationKey, account.privateKeyPem, JSON.parse(account.text).private_key_id]) {
        assert.ok(!JSON.stringify(row).includes(plain), "no key text in the stored record");
      }
    }

    const apps = await registry.appsForAppraisal(acme.tenantId);
    const byId = new Map(apps.map((x) => [x.id, x]));
    const opened = byId.get(a.id)!;
    assert.equal(Buffer.from(opened.responseKeys!.decryptionKey).toString("base64"), keys.decryptionKey);
    assert.equal(Buffer.from(opened.responseKeys!.verificationKeySpki).toString("base64"), keys.verificationKey);
    assert.equal(opened.serviceAccount, undefined);
    const sa = byId.get(b.id)!.serviceAccount!;
    assert.equal(sa.clientEmail, "attest@demo-project.iam.gserviceaccount.com");
    assert.equal(sa.projectId, "demo-project");
    assert.equal(sa.privateKeyId, JSON.parse(account.text).private_key_id);
    assert.equal(createPublicKey(sa.privateKeyPem).asymmetricKeyType, "rsa");
    assert.equal(byId.get(b.id)!.responseKeys, undefined);
    assert.deepEqual(await registry.appsForAppraisal(other.tenantId), []);

    // a sealed value moved to another registration's row does not open there: the operator's problem, a 500
    const [first, second] = stored;
    await store.removePlayApp(acme.tenantId, second!.id);
    await store.addPlayApp({ ...second!, sealedSecret: first!.sealedSecret });
    const fresh = new PlayAppRegistry(store, clock, cryptoRng, box);
    await refusedWith(catalog.INTERNAL_SERVER_ERROR, () => fresh.appsForAppraisal(acme.tenantId));
  });

  it("remove: the tenant's own app only; appsForAppraisal forgets it at once here, within PLAY_APP_CACHE_MS elsewhere", async () => {
    const a = await registry.add(acme, { packageName: "com.example.app", responseKeys: responseKeys() }, testActor());
    const elsewhere = new PlayAppRegistry(store, clock, cryptoRng, box);
    assert.equal((await elsewhere.appsForAppraisal(acme.tenantId)).length, 1);
    assert.equal((await registry.appsForAppraisal(acme.tenantId)).length, 1);

    assert.equal(await registry.remove(other, a.id, testActor()), false, "another tenant's id is not found");
    assert.equal(await registry.remove(acme, a.id, testActor()), true);
    assert.equal(await registry.remove(acme, a.id, testActor()), false);
    assert.deepEqual(await registry.appsForAppraisal(acme.tenantId), [], "this instance: at once");
    assert.equal((await elsewhere.appsForAppraisal(acme.tenantId)).length, 1, "another: still cached");
    now += PLAY_APP_CACHE_MS;
    assert.deepEqual(await elsewhere.appsForAppraisal(acme.tenantId), [], "another: after the cache time");
  });
});
