import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import { cryptoRng } from "../../src/clock.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { catalog, type CatalogEntry } from "../../src/errors/catalog.ts";
import { AppAttestKeys } from "../../src/services/appAttestKeys.ts";
import { IOS_APP_CACHE_MS, IosAppRegistry } from "../../src/services/iosApps.ts";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { isSealed, SecretBox } from "../../src/secrets/secretBox.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { DEMO_APP_ID, makeAppAttestAssertion, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import { T0 } from "../helpers/clock.ts";
import { NONCE, NOW, appraiseAttestation, demoCa } from "./fixtures.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * IosAppRegistry and AppAttestKeys (src/services/): what they refuse, the registry's cache, what they look up before
 * an appraisal, and the effect a Yes asks the store for.
 */
const refusedWith = (entry: CatalogEntry) => (e: unknown) => isAppError(e) && e.entry === entry;

describe("IosAppRegistry and AppAttestKeys", () => {
  let store: MemoryDurableStore;
  let now = T0;
  const clock = { nowMs: () => now };
  let apps: IosAppRegistry;
  let keys: AppAttestKeys;
  let acme: Tenant;
  let other: Tenant;
  const box = new SecretBox([randomBytes(32)]);
  const p8 = () => generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();

  beforeEach(async () => {
    store = new MemoryDurableStore();
    now = T0;
    apps = new IosAppRegistry(store, clock, cryptoRng, box);
    keys = new AppAttestKeys(store, apps, clock);
    acme = await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1001", kind: "customer", createdAt: new Date(T0).toISOString() });
    other = await store.createTenant({ tenantId: "t_other", name: "other", customerId: "1002", kind: "customer", createdAt: new Date(T0).toISOString() });
  });

  it("checks the app id and the environment; production by default; one per tenant and app id", async () => {
    for (const appId of ["com.example.app", "abcde12345.com.example", "ABCDE1234.com.x", "ABCDE12345.", "ABCDE12345.a b", `ABCDE12345.${"a".repeat(250)}`]) {
      await assert.rejects(apps.add(acme, { appId }, testActor()), refusedWith(catalog.PORTAL_INVALID_REQUEST), appId);
    }
    await assert.rejects(apps.add(acme, { appId: DEMO_APP_ID, environment: "staging" as never }, testActor()), refusedWith(catalog.PORTAL_INVALID_REQUEST));
    const added = await apps.add(acme, { appId: DEMO_APP_ID }, testActor());
    assert.equal(added.environment, "production");
    assert.match(added.id, /^ia_/);
    await assert.rejects(apps.add(acme, { appId: DEMO_APP_ID, environment: "both" }, testActor()), refusedWith(catalog.PORTAL_IOS_APP_EXISTS));
    assert.equal((await apps.add(other, { appId: DEMO_APP_ID, environment: "development" }, testActor())).environment, "development");
    assert.equal(await apps.remove(other, added.id, testActor()), false, "another tenant's id is not found");
  });

  it("appsForAppraisal: cached per tenant; a change through the registry holds at once, one elsewhere within the cache time", async () => {
    assert.deepEqual(await apps.appsForAppraisal(acme.tenantId), []);
    const a = await apps.add(acme, { appId: DEMO_APP_ID, environment: "both" }, testActor());
    assert.deepEqual(await apps.appsForAppraisal(acme.tenantId), [{ appId: DEMO_APP_ID, environment: "both" }]);
    const elsewhere = new IosAppRegistry(store, clock, cryptoRng, box);
    await elsewhere.remove(acme, a.id, testActor());
    assert.equal((await apps.appsForAppraisal(acme.tenantId)).length, 1, "cached");
    now += IOS_APP_CACHE_MS;
    assert.deepEqual(await apps.appsForAppraisal(acme.tenantId), []);
  });

  it("evidence: the apps for an attestation, the tenant's key for an assertion, nothing for another body", async () => {
    await apps.add(acme, { appId: DEMO_APP_ID, environment: "both" }, testActor());
    const { blob, key } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
    assert.deepEqual(await keys.evidence(acme.tenantId, blob, NONCE), { apps: [{ appId: DEMO_APP_ID, environment: "both" }] });
    assert.equal(await keys.evidence(acme.tenantId, new Uint8Array([0x30, 0x82]), NONCE), undefined);
    const assertion = makeAppAttestAssertion(key, { nonce: NONCE }).body;
    const unknown = await keys.evidence(acme.tenantId, assertion, NONCE);
    assert.deepEqual({ ...unknown, assertion: undefined }, { apps: [], key: undefined, assertion: undefined });
    // the body as read to find the key goes with the evidence, so the appraisal does not read it again
    assert.equal(unknown?.assertion?.blob, assertion);
    assert.equal(Buffer.from(unknown!.assertion!.read.keyId).toString("base64"), key.keyId);

    // a Yes attestation's effect, stored; then the tenant's key is found, another tenant's not
    const result = await appraiseAttestation(blob);
    const effect = keys.effectOf(acme.tenantId, result)!;
    assert.equal(effect.kind, "attested");
    assert.equal(await store.applyAppAttestEffect(effect), true);
    const found = await keys.evidence(acme.tenantId, assertion, NONCE);
    assert.deepEqual(found?.key && { keyId: found.key.keyId, appId: found.key.appId, counter: found.key.counter, revoked: found.key.revoked }, { keyId: key.keyId, appId: DEMO_APP_ID, counter: 0, revoked: false });
    assert.equal((await keys.evidence(other.tenantId, assertion, NONCE))?.key, undefined);
    // a malformed assertion is the appraisal's to refuse: no lookup, no key
    assert.deepEqual(await keys.evidence(acme.tenantId, Buffer.from('{"keyId":"AAAA","assertion":"AAAA"}'), NONCE), { apps: [] });
  });

  it("the receipt check, when given, is handed to every attestation's appraisal", async () => {
    const check = () => ({ ok: true as const });
    const withReceipts = new AppAttestKeys(store, apps, clock, check);
    const { blob } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
    assert.equal((await withReceipts.evidence(acme.tenantId, blob, NONCE))?.receiptCheck, check);
  });

  it("keys: list, show and revoke within the tenant; a bad key id is INVALID_REQUEST, an unknown one A_NOT_FOUND", async () => {
    await apps.add(acme, { appId: DEMO_APP_ID, environment: "both" }, testActor());
    const { blob, key } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
    await store.applyAppAttestEffect(keys.effectOf(acme.tenantId, await appraiseAttestation(blob))!);
    const shown = await keys.get(acme.tenantId, key.keyId);
    assert.equal("receipt" in shown, false, "lists show the receipt's size, not its bytes");
    assert.ok(shown.receiptBytes > 0);
    assert.deepEqual((await keys.list(acme.tenantId, { limit: 1 })).items.map((k) => k.keyId), [key.keyId]);
    assert.equal((await keys.list(acme.tenantId, { limit: 1 })).next, key.keyId);
    await assert.rejects(keys.get(other.tenantId, key.keyId), refusedWith(catalog.A_NOT_FOUND));
    await assert.rejects(keys.get(acme.tenantId, "not a key id"), refusedWith(catalog.INVALID_REQUEST));
    await assert.rejects(keys.revoke(other.tenantId, key.keyId, testActor()), refusedWith(catalog.A_NOT_FOUND));
    assert.notEqual((await keys.revoke(acme.tenantId, key.keyId, testActor())).revokedAt, null);
    await assert.rejects(keys.revoke(acme.tenantId, key.keyId, testActor()), refusedWith(catalog.A_NOT_FOUND), "revoked already");
  });

  it("developer key: checked, sealed bound to the registration, shown only as set and its key id; per app, within the tenant", async () => {
    const pem = p8();
    const by = testActor(store);
    const a = await apps.add(acme, { appId: DEMO_APP_ID, environment: "both", developerKey: { keyId: "KEY1234567", privateKey: pem } }, by);
    assert.deepEqual(a.developerKey, { keyId: "KEY1234567" });
    assert.equal(JSON.stringify(a).includes("PRIVATE KEY"), false);
    assert.deepEqual((await apps.list(acme)).map((x) => x.developerKey), [{ keyId: "KEY1234567" }]);
    assert.equal(JSON.stringify(await apps.list(acme)).includes("sealed"), false, "lists show no sealed value either");
    const stored = (await store.listIosApps(acme.tenantId))[0]!;
    assert.ok(stored.sealedDeveloperKey && isSealed(stored.sealedDeveloperKey), "sealed in the store");
    assert.equal(stored.sealedDeveloperKey.includes("PRIVATE"), false);
    // opened for the refresher, the team id the app id's
    const opened = await apps.developerKeyFor(acme.tenantId, DEMO_APP_ID);
    assert.equal(opened?.teamId, DEMO_APP_ID.split(".")[0]);
    assert.equal(opened?.keyId, "KEY1234567");
    assert.match(opened!.privateKeyPem, /BEGIN PRIVATE KEY/);
    assert.equal(await apps.developerKeyFor(other.tenantId, DEMO_APP_ID), undefined, "another tenant's app: none");
    // a sealed value copied to another registration does not open there
    const b = await apps.add(other, { appId: DEMO_APP_ID }, by);
    await store.setIosAppDeveloperKey(other.tenantId, b.id, { keyId: "KEY1234567", sealed: stored.sealedDeveloperKey }, new Date().toISOString());
    assert.throws(() => box.open(stored.sealedDeveloperKey!, `ios-app-developer-key:${b.id}`));
    // refused: a bad key id, a key that is not P-256, not PEM; an unknown app
    for (const bad of [
      { keyId: "short", privateKey: pem },
      { keyId: "key1234567", privateKey: pem },
      { keyId: "KEY1234567", privateKey: "not a key" },
      { keyId: "KEY1234567", privateKey: generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
      { keyId: "KEY1234567", privateKey: generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
    ]) {
      await assert.rejects(apps.setDeveloperKey(acme, a.id, bad, by), refusedWith(catalog.PORTAL_INVALID_REQUEST), bad.keyId);
    }
    await assert.rejects(apps.setDeveloperKey(other, a.id, { keyId: "KEY7654321", privateKey: p8() }, by), refusedWith(catalog.PORTAL_NOT_FOUND), "another tenant's app");
    // replaced, then removed
    assert.deepEqual((await apps.setDeveloperKey(acme, a.id, { keyId: "KEY7654321", privateKey: p8() }, by)).developerKey, { keyId: "KEY7654321" });
    assert.equal((await apps.developerKeyFor(acme.tenantId, DEMO_APP_ID))?.keyId, "KEY7654321");
    assert.equal((await apps.setDeveloperKey(acme, a.id, null, by)).developerKey, null);
    assert.equal(await apps.developerKeyFor(acme.tenantId, DEMO_APP_ID), undefined);
    const cleared = (await store.listIosApps(acme.tenantId))[0]!;
    assert.equal(cleared.sealedDeveloperKey, null);
    // the audit trail names the key by its id, never the key itself (docs/audit.md)
    const trail = await store.queryAudit({ tenantId: acme.tenantId, targetKind: "ios-app", targetId: a.id, limit: 10 });
    assert.deepEqual([...new Set(trail.map((r) => r.action))].sort(), ["ios-app.added", "ios-app.developer-key-cleared", "ios-app.developer-key-set"]);
    assert.equal(JSON.stringify(trail).includes("PRIVATE KEY"), false);
    const set = trail.filter((r) => r.action === "ios-app.developer-key-set").map((r) => (r.after as { developerKeyId: string }).developerKeyId);
    assert.ok(set.includes("KEY7654321"), JSON.stringify(set));
  });
});
