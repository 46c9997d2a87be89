import assert from "node:assert/strict";
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { StoredAppAttestKey } from "../../src/domain/iosApps.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { portalPeople, refusalCode } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/** A key as an attestation's Yes leaves it in the store: the id is SHA-256 of the public key (base64). */
function attestedKey(tenantId: string, appId: string, over: Partial<StoredAppAttestKey> = {}): StoredAppAttestKey {
  const publicKey = Buffer.concat([Buffer.from([4]), randomBytes(64)]);
  return {
    tenantId,
    keyId: createHash("sha256").update(publicKey).digest("base64"),
    appId,
    publicKey: publicKey.toString("base64"),
    counter: 0,
    environment: "production",
    receipt: randomBytes(16).toString("base64"),
    attestedAt: "2026-11-26T10:00:00.000Z",
    lastAssertedAt: null,
    revokedAt: null,
    riskMetric: null,
    riskMetricAt: null,
    lastRefreshResult: null,
    lastRefreshReason: null,
    lastRefreshAt: null,
    refreshDueAt: null,
    ...over,
  };
}

const pathId = (keyId: string) => Buffer.from(keyId, "base64").toString("base64url");

/**
 * The iOS apps page and its admin API in process (issue 25): the apps listed, registered (a bad app id refused with
 * the field named) and removed; the App Attest keys listed with their verdicts' link and revoked; who may do what
 * (a viewer reads, another tenant finds nothing, an operator picks the tenant).
 */
describe("portal: iOS apps and App Attest keys", () => {
  let t: TestRuntime;
  let portal: ReturnType<typeof portalPeople>;
  const appIds = async (tenantId: string) => (await t.runtime.stores.durable.listIosApps(tenantId)).map((a) => a.appId);
  const active = attestedKey("t_acme", "ABCDE12345.com.acme.shop");
  const second = attestedKey("t_acme", "ABCDE12345.com.acme.shop", { environment: "development" });
  const globexKey = attestedKey("t_globex", "ZYXWV98765.com.globex.app");
  const verdictId = randomBytes(16).toString("base64url");

  before(async () => {
    t = await startTestRuntime();
    portal = portalPeople(t);
    await t.addTenant("globex");
    await portal.add("ada@acme.example", "admin", "acme");
    await portal.add("vic@acme.example", "viewer", "acme");
    await portal.add("gus@globex.example", "admin", "globex");
    await portal.add("root@example.org", "operator");
    const store = t.runtime.stores.durable;
    for (const key of [active, second, globexKey]) assert.ok(await store.applyAppAttestEffect({ kind: "attested", key }));
    // one assertion of the first key: its counter and time stored
    assert.ok(await store.applyAppAttestEffect({ kind: "asserted", tenantId: "t_acme", keyId: active.keyId, counter: 7, at: "2026-11-26T11:00:00.000Z" }));
    // the key's verdict, as an appraisal stores it: the key id is the record's chipId (docs/app-attest.md)
    const createdAt = "2026-11-26T11:00:00.000Z";
    const verdict: StoredVerdict = {
      objectId: verdictId,
      tenantId: "t_acme",
      format: "app-attest",
      record: { measurements: active.appId, tamperBit: "", IMEI: "", status: "Success", nonce: "n", chipId: active.keyId, verdict: "Yes", MAC: "", version: "7", createdDate: createdAt, updateDate: createdAt },
      reason: "pass",
      detail: { rule: "pass", kind: "assertion", keyId: active.keyId },
      createdAt,
    };
    await store.saveVerdict(verdict);
  });
  after(() => t.close());

  it("an admin registers an app from the page's form fields; it is listed on the page and by the API", async () => {
    const res = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "ABCDE12345.com.acme.shop", environment: "both" } });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.json().id, /^ia_/);
    assert.deepEqual([res.json().tenantId, res.json().appId, res.json().environment], ["t_acme", "ABCDE12345.com.acme.shop", "both"]);

    const page = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    assert.equal(page.statusCode, 200);
    // the page's form posts the fields the API takes, by the API's names
    assert.match(page.body, /<form data-api="\/portal\/api\/ios-apps" data-method="POST"/);
    assert.match(page.body, /<input name="appId" required/);
    assert.match(page.body, /<select name="environment">/);
    assert.match(page.body, /<td data-label="App id"[^>]*><code>ABCDE12345\.com\.acme\.shop<\/code><\/td>\s*<td data-label="Environment">both<\/td>/);
    assert.match(page.body, /<a href="\/portal\/ios-apps" aria-current="page">iOS apps<\/a>/, "in the navigation, marked current");
    const list = await portal.as("vic@acme.example", { url: "/portal/api/ios-apps" });
    assert.deepEqual((list.json() as { appId: string }[]).map((a) => a.appId), ["ABCDE12345.com.acme.shop"]);
  });

  it("a bad app id is refused with the field named, and nothing is registered", async () => {
    for (const appId of ["com.acme.shop", "abcde12345.com.acme.shop", "ABCDE12345.", "ABCDE12345.com acme"]) {
      const res = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId } });
      assert.deepEqual([res.statusCode, refusalCode(res)], [400, "4008000"], appId);
      assert.match(res.json().data, /^the app id is TEAMID\.BUNDLEID/, appId);
    }
    // the schema's refusals name the field too
    const env = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "ABCDE12345.com.acme.x", environment: "staging" } });
    assert.deepEqual([env.statusCode, refusalCode(env)], [400, "4008000"]);
    assert.match(env.json().data, /^environment: /);
    const missing = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { environment: "both" } });
    assert.deepEqual([missing.statusCode, refusalCode(missing)], [400, "4008000"]);
    assert.match(missing.json().data, /^appId: missing/);
    const twice = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "ABCDE12345.com.acme.shop" } });
    assert.deepEqual([twice.statusCode, refusalCode(twice)], [409, "4098003"]);
    assert.deepEqual(await appIds("t_acme"), ["ABCDE12345.com.acme.shop"]);
  });

  it("the keys are listed with their state, counter, and a link to their verdicts, which the verdict list filters by", async () => {
    const page = await portal.as("vic@acme.example", { url: "/portal/ios-apps" });
    assert.equal(page.statusCode, 200);
    const row = (keyId: string) => page.body.split("<tr>").find((r) => r.includes(keyId)) ?? "";
    assert.match(row(active.keyId), /<td data-label="Counter" data-secondary>7<\/td>/);
    assert.match(row(active.keyId), /<td data-label="State">active<\/td>/);
    assert.match(row(active.keyId), /datetime="2026-11-26T11:00:00.000Z"/, "the last assertion");
    assert.match(row(second.keyId), /<td data-label="Last assertion \(UTC\)"[^>]*>never<\/td>/);
    assert.equal(row(globexKey.keyId), "", "another tenant's key is not listed");
    const link = new URLSearchParams({ device: active.keyId }).toString();
    assert.ok(row(active.keyId).includes(`href="/portal/verdicts?${link}"`), "the key's verdicts link");
    assert.doesNotMatch(page.body, /Register app|data-method="DELETE"|>Revoke</, "no form, remove or revoke for a viewer");

    const verdicts = await portal.as("vic@acme.example", { url: `/portal/verdicts?${link}` });
    assert.equal(verdicts.statusCode, 200);
    assert.ok(verdicts.body.includes(verdictId), "the key's verdict is listed under its filter");
    const none = await portal.as("vic@acme.example", { url: `/portal/verdicts?${new URLSearchParams({ device: second.keyId })}` });
    assert.equal(none.statusCode, 200);
    assert.ok(!none.body.includes(verdictId), "another key's filter does not list it");
  });

  it("a viewer can neither register, remove nor revoke", async () => {
    const add = await portal.as("vic@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "ABCDE12345.com.acme.other" } });
    assert.deepEqual([add.statusCode, refusalCode(add)], [403, "4038000"]);
    const id = (await t.runtime.stores.durable.listIosApps("t_acme"))[0]!.id;
    const del = await portal.as("vic@acme.example", { method: "DELETE", url: `/portal/api/ios-apps/${id}` });
    assert.deepEqual([del.statusCode, refusalCode(del)], [403, "4038000"]);
    const revoke = await portal.as("vic@acme.example", { method: "POST", url: `/portal/api/app-attest-keys/${pathId(active.keyId)}/revoke` });
    assert.deepEqual([revoke.statusCode, refusalCode(revoke)], [403, "4038000"]);
    assert.deepEqual(await appIds("t_acme"), ["ABCDE12345.com.acme.shop"]);
    assert.equal((await t.runtime.stores.durable.getAppAttestKey("t_acme", active.keyId))!.revokedAt, null);
  });

  it("another tenant's admin finds neither acme's app nor its key, whatever ?tenant= says", async () => {
    const id = (await t.runtime.stores.durable.listIosApps("t_acme"))[0]!.id;
    const del = await portal.as("gus@globex.example", { method: "DELETE", url: `/portal/api/ios-apps/${id}?tenant=acme` });
    assert.deepEqual([del.statusCode, refusalCode(del)], [404, "4048000"]);
    const revoke = await portal.as("gus@globex.example", { method: "POST", url: `/portal/api/app-attest-keys/${pathId(active.keyId)}/revoke?tenant=acme` });
    assert.equal(revoke.statusCode, 404);
    const page = await portal.as("gus@globex.example", { url: "/portal/ios-apps?tenant=acme" });
    assert.equal(page.statusCode, 200);
    assert.ok(!page.body.includes("ABCDE12345.com.acme.shop") && !page.body.includes(active.keyId), "globex's page shows none of acme's");
    assert.ok(page.body.includes(globexKey.keyId), "its own key");
    assert.deepEqual(await appIds("t_acme"), ["ABCDE12345.com.acme.shop"]);
    assert.equal((await t.runtime.stores.durable.getAppAttestKey("t_acme", active.keyId))!.revokedAt, null);
  });

  it("an admin revokes a key from its row's button: the key is revoked, its row says so and offers no second revoke", async () => {
    const before = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    const api = `/portal/api/app-attest-keys/${pathId(active.keyId)}/revoke`;
    assert.ok(before.body.includes(`data-api="${api}" data-method="POST"`), "the row's Revoke button posts to the admin API");
    assert.match(before.body, /data-confirm="Revoke key /);
    const res = await portal.as("ada@acme.example", { method: "POST", url: api });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().keyId, active.keyId);
    assert.ok(res.json().revokedAt);
    const after = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    const row = after.body.split("<tr>").find((r) => r.includes(active.keyId))!;
    assert.match(row, /<td data-label="State">revoked <time/);
    assert.ok(!row.includes(api), "no Revoke on a revoked key");
    const again = await portal.as("ada@acme.example", { method: "POST", url: api });
    assert.equal(again.statusCode, 404);
  });

  it("an operator picks the tenant, then sees and changes that tenant's apps", async () => {
    const pick = await portal.as("root@example.org", { url: "/portal/ios-apps" });
    assert.equal(pick.statusCode, 200);
    assert.match(pick.body, /href="\/portal\/ios-apps\?tenant=globex"/);
    const add = await portal.as("root@example.org", { method: "POST", url: "/portal/api/ios-apps?tenant=globex", payload: { appId: "ZYXWV98765.com.globex.app", environment: "development" } });
    assert.equal(add.statusCode, 200, add.body);
    assert.equal(add.json().tenantId, "t_globex");
    const page = await portal.as("root@example.org", { url: "/portal/ios-apps?tenant=globex" });
    assert.match(page.body, /ZYXWV98765\.com\.globex\.app/);
    assert.match(page.body, /data-api="\/portal\/api\/ios-apps\/ia_[^"?]+\?tenant=globex" data-method="DELETE"/);
  });

  it("an admin sets the app's developer key from its row's form (the .p8 as text); answers and the page show only 'set' and its key id; removed again", async () => {
    const id = (await t.runtime.stores.durable.listIosApps("t_acme"))[0]!.id;
    const api = `/portal/api/ios-apps/${id}/developer-key`;
    const before = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    assert.ok(before.body.includes(`<form data-api="${api}" data-method="PUT"`), "the row's form PUTs to the admin API");
    assert.match(before.body, /<input name="keyId" required/);
    assert.match(before.body, /<input type="file" name="privateKey" required data-text-file/);
    assert.match(before.body, /<td data-label="Developer key">not set<\/td>/);
    const pem = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const viewer = await portal.as("vic@acme.example", { method: "PUT", url: api, payload: { keyId: "KEY1234567", privateKey: pem } });
    assert.deepEqual([viewer.statusCode, refusalCode(viewer)], [403, "4038000"]);
    const globex = await portal.as("gus@globex.example", { method: "PUT", url: `${api}?tenant=acme`, payload: { keyId: "KEY1234567", privateKey: pem } });
    assert.deepEqual([globex.statusCode, refusalCode(globex)], [404, "4048000"]);
    const bad = await portal.as("ada@acme.example", { method: "PUT", url: api, payload: { keyId: "KEY1234567", privateKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" } });
    assert.deepEqual([bad.statusCode, refusalCode(bad)], [400, "4008000"]);
    assert.match(bad.json().data, /not an EC P-256 private key/);
    const res = await portal.as("ada@acme.example", { method: "PUT", url: api, payload: { keyId: "KEY1234567", privateKey: pem } });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().developerKey, { keyId: "KEY1234567" });
    assert.ok(!res.body.includes("PRIVATE") && !res.body.includes("sealed"), "the key is never shown");
    const list = await portal.as("vic@acme.example", { url: "/portal/api/ios-apps" });
    assert.deepEqual((list.json() as { developerKey: unknown }[]).map((a) => a.developerKey), [{ keyId: "KEY1234567" }]);
    assert.ok(!list.body.includes("PRIVATE") && !list.body.includes("sealed"));
    const page = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    assert.match(page.body, /<td data-label="Developer key">set \(<code>KEY1234567<\/code>\)<\/td>/);
    assert.ok(!page.body.includes("PRIVATE"));
    assert.match((await t.runtime.stores.durable.listIosApps("t_acme"))[0]!.sealedDeveloperKey!, /^sealed:v1:/, "sealed in the store");
    assert.ok(page.body.includes(`data-api="${api}" data-method="DELETE"`), "a Remove key button");
    const cleared = await portal.as("ada@acme.example", { method: "DELETE", url: api });
    assert.equal(cleared.statusCode, 200, cleared.body);
    assert.equal(cleared.json().developerKey, null);
    assert.equal((await t.runtime.stores.durable.listIosApps("t_acme"))[0]!.sealedDeveloperKey, null);
  });

  it("a key's fraud-risk metric: in the API with when it was read, and on the page; or why it was not read", async () => {
    const store = t.runtime.stores.durable;
    await store.saveAppAttestRefresh({ tenantId: "t_acme", keyId: second.keyId, result: "refreshed", reason: null, at: "2026-11-26T12:00:00.000Z", refreshed: { receipt: second.receipt, riskMetric: 4 }, refreshDueAt: "2026-11-27T12:00:00.000Z" });
    const shown = await portal.as("vic@acme.example", { url: `/portal/api/app-attest-keys/${pathId(second.keyId)}` });
    assert.equal(shown.statusCode, 200, shown.body);
    assert.deepEqual([shown.json().riskMetric, shown.json().riskMetricAt, shown.json().lastRefreshResult], [4, "2026-11-26T12:00:00.000Z", "refreshed"]);
    await store.saveAppAttestRefresh({ tenantId: "t_acme", keyId: active.keyId, result: "unreachable", reason: "not refreshed: Apple's App Attest receipt service could not be reached", at: "2026-11-26T12:00:00.000Z", refreshDueAt: null });
    const page = await portal.as("vic@acme.example", { url: "/portal/ios-apps" });
    const row = (keyId: string) => page.body.split("<tr>").find((r) => r.includes(keyId)) ?? "";
    assert.match(row(second.keyId), /<td data-label="Fraud-risk metric"><span[^>]*>4<\/span> <small[^>]*><time datetime="2026-11-26T12:00:00.000Z"/);
    assert.match(row(active.keyId), /<td data-label="Fraud-risk metric"><span class="muted" title="not refreshed: Apple&#39;s App Attest receipt service could not be reached">not read \(unreachable\)<\/span>/);
  });

  it("an admin removes an app through the row's button's route: 204, then 404; its keys stay", async () => {
    const id = (await t.runtime.stores.durable.listIosApps("t_acme"))[0]!.id;
    const page = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    assert.match(page.body, new RegExp(`data-api="/portal/api/ios-apps/${id}" data-method="DELETE" data-success="[^"]+" data-confirm="Remove ABCDE12345\\.com\\.acme\\.shop\\?`));
    const del = await portal.as("ada@acme.example", { method: "DELETE", url: `/portal/api/ios-apps/${id}` });
    assert.equal(del.statusCode, 204);
    const again = await portal.as("ada@acme.example", { method: "DELETE", url: `/portal/api/ios-apps/${id}` });
    assert.deepEqual([again.statusCode, refusalCode(again)], [404, "4048000"]);
    assert.deepEqual(await appIds("t_acme"), []);
    const after = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    assert.ok(after.body.includes(second.keyId), "the keys are listed still");
  });

  it("the keys' pager: a malformed cursor is refused, a cursor past the last key shows none", async () => {
    const bad = await portal.as("ada@acme.example", { url: "/portal/ios-apps?after=nope" });
    assert.equal(bad.statusCode, 400);
    const last = [active.keyId, second.keyId].sort().at(-1)!;
    const page = await portal.as("ada@acme.example", { url: `/portal/ios-apps?${new URLSearchParams({ after: last })}` });
    assert.equal(page.statusCode, 200);
    assert.doesNotMatch(page.body, /<td data-label="Key id">/, "no key after the last");
    assert.match(page.body, /First keys/);
  });
});
