import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { portalPeople, refusalCode, type PortalRequest } from "../helpers/portalPeople.ts";
import { responseKeys, serviceAccountFile } from "../helpers/playAppKeys.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * The Play apps of a tenant over the portal's admin API and page (issue 23), in process: who may list, register and
 * remove (a tenant's admin its own tenant's, a viewer lists, an operator any tenant by ?tenant=), the refusals by
 * code, and that no answer (JSON or page) ever carries a key once entered.
 */
describe("portal: Play apps", () => {
  let t: TestRuntime;
  let portal: ReturnType<typeof portalPeople>;
  const keys = responseKeys();
  const account = serviceAccountFile();
  /** every text that must never come back */
  const secrets = [keys.decryptionKey, keys.verificationKey, account.privateKeyPem.split("\n")[1]!, JSON.parse(account.text).private_key_id as string];
  const answers: LightMyRequestResponse[] = [];
  const as = async (email: string, o: PortalRequest) => {
    const res = await portal.as(email, o);
    answers.push(res);
    return res;
  };
  const packages = async (tenantId: string) => (await t.runtime.stores.durable.listPlayApps(tenantId)).map((a) => a.policy.packageName);

  before(async () => {
    t = await startTestRuntime();
    portal = portalPeople(t);
    await t.addTenant("globex");
    await portal.add("ada@acme.example", "admin", "acme");
    await portal.add("vic@acme.example", "viewer", "acme");
    await portal.add("gus@globex.example", "admin", "globex");
    await portal.add("root@example.org", "operator");
  });
  after(() => t.close());

  it("an admin registers an app with the response keys: the answer and the store hold no key", async () => {
    const res = await as("ada@acme.example", {
      method: "POST",
      url: "/portal/api/play-apps",
      payload: { packageName: "com.acme.shop", certDigests: ["AB:".repeat(31) + "AB"], require: { licensed: true }, responseKeys: keys },
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.match(body.id, /^pa_/);
    assert.deepEqual([body.tenantId, body.opensWith, body.policy], [
      "t_acme",
      "response-keys",
      { packageName: "com.acme.shop", certDigests: ["ab".repeat(32)], deviceFloor: "MEETS_DEVICE_INTEGRITY", maxAgeSeconds: 300, require: { licensed: true, playProtect: false, appAccessRisk: false } },
    ]);
    const [stored] = await t.runtime.stores.durable.listPlayApps("t_acme");
    assert.equal(stored!.id, body.id);
    assert.match(stored!.sealedSecret, /^sealed:v1:/);
    for (const s of secrets) assert.ok(!JSON.stringify(stored).includes(s));
  });

  it("a viewer lists and sees the page but cannot register or remove", async () => {
    const list = await as("vic@acme.example", { url: "/portal/api/play-apps" });
    assert.equal(list.statusCode, 200);
    assert.deepEqual((list.json() as { policy: { packageName: string } }[]).map((a) => a.policy.packageName), ["com.acme.shop"]);
    const page = await as("vic@acme.example", { url: "/portal/play-apps" });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /com\.acme\.shop/);
    assert.doesNotMatch(page.body, /Register app|data-method="DELETE"/, "no form or remove button for a viewer");

    const add = await as("vic@acme.example", { method: "POST", url: "/portal/api/play-apps", payload: { packageName: "com.acme.other", responseKeys: responseKeys() } });
    assert.deepEqual([add.statusCode, refusalCode(add)], [403, "4038000"]);
    const id = (await t.runtime.stores.durable.listPlayApps("t_acme"))[0]!.id;
    const del = await as("vic@acme.example", { method: "DELETE", url: `/portal/api/play-apps/${id}` });
    assert.deepEqual([del.statusCode, refusalCode(del)], [403, "4038000"]);
    assert.deepEqual(await packages("t_acme"), ["com.acme.shop"]);
  });

  it("without the CSRF token nothing is registered", async () => {
    const res = await as("ada@acme.example", { method: "POST", url: "/portal/api/play-apps", payload: { packageName: "com.acme.csrf", responseKeys: responseKeys() }, csrf: false });
    assert.deepEqual([res.statusCode, refusalCode(res)], [403, "4038001"]);
    assert.deepEqual(await packages("t_acme"), ["com.acme.shop"]);
  });

  it("tenant isolation: another tenant's admin neither sees nor removes acme's app, whatever ?tenant= says", async () => {
    const id = (await t.runtime.stores.durable.listPlayApps("t_acme"))[0]!.id;
    const list = await as("gus@globex.example", { url: "/portal/api/play-apps?tenant=acme" });
    assert.deepEqual([list.statusCode, list.json()], [200, []]);
    const del = await as("gus@globex.example", { method: "DELETE", url: `/portal/api/play-apps/${id}?tenant=acme` });
    assert.deepEqual([del.statusCode, refusalCode(del)], [404, "4048000"]);
    // the same package is another tenant's to register
    const own = await as("gus@globex.example", { method: "POST", url: "/portal/api/play-apps?tenant=acme", payload: { packageName: "com.acme.shop", responseKeys: responseKeys() } });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(own.json().tenantId, "t_globex");
    assert.deepEqual(await packages("t_acme"), ["com.acme.shop"]);
    assert.deepEqual(await packages("t_globex"), ["com.acme.shop"]);
  });

  it("refusals by code: the schema's and the service's are 400 PORTAL_INVALID_REQUEST, a package twice 409", async () => {
    const bad: object[] = [
      { packageName: "com.acme.x", responseKeys: keys, extra: 1 },
      { packageName: "com.acme.x", responseKeys: keys, maxAgeSeconds: 5 },
      { packageName: "com.acme.x", responseKeys: keys, deviceFloor: "MEETS_VIRTUAL_INTEGRITY" },
      { packageName: "com.acme.x", responseKeys: { decryptionKey: keys.decryptionKey } },
      { packageName: "com.acme.x", responseKeys: keys, require: { rooted: true } },
      { packageName: "com.acme.x\u202e", responseKeys: keys },
      { packageName: "acme", responseKeys: keys },
      { packageName: "com.acme.x" },
      { packageName: "com.acme.x", responseKeys: keys, serviceAccount: account.text },
      { packageName: "com.acme.x", responseKeys: { ...keys, decryptionKey: keys.verificationKey } },
      { packageName: "com.acme.x", serviceAccount: "{}" },
      { packageName: "com.acme.x", responseKeys: keys, certDigests: ["abcd"] },
    ];
    for (const payload of bad) {
      const res = await as("ada@acme.example", { method: "POST", url: "/portal/api/play-apps", payload });
      assert.deepEqual([res.statusCode, refusalCode(res)], [400, "4008000"], JSON.stringify(payload).slice(0, 120));
    }
    const twice = await as("ada@acme.example", { method: "POST", url: "/portal/api/play-apps", payload: { packageName: "com.acme.shop", serviceAccount: account.text } });
    assert.deepEqual([twice.statusCode, refusalCode(twice)], [409, "4098002"]);
    assert.deepEqual(await packages("t_acme"), ["com.acme.shop"]);
  });

  it("an operator names the tenant: registers a service-account app for acme and sees it on acme's page", async () => {
    const unnamed = await as("root@example.org", { url: "/portal/api/play-apps" });
    assert.deepEqual([unnamed.statusCode, refusalCode(unnamed)], [400, "4008000"]);
    const pick = await as("root@example.org", { url: "/portal/play-apps" });
    assert.equal(pick.statusCode, 200);
    assert.match(pick.body, /href="\/portal\/play-apps\?tenant=globex"/);

    const res = await as("root@example.org", {
      method: "POST",
      url: "/portal/api/play-apps?tenant=acme",
      payload: { packageName: "com.acme.bank", deviceFloor: "MEETS_STRONG_INTEGRITY", maxAgeSeconds: 60, serviceAccount: account.text },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().tenantId, res.json().opensWith, res.json().serviceAccountEmail], ["t_acme", "service-account", "attest@demo-project.iam.gserviceaccount.com"]);
    const page = await as("root@example.org", { url: "/portal/play-apps?tenant=acme" });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /com\.acme\.bank/);
    assert.match(page.body, /attest@demo-project\.iam\.gserviceaccount\.com/);
    assert.match(page.body, /Register app/);
    assert.deepEqual(await packages("t_acme"), ["com.acme.bank", "com.acme.shop"]);
  });

  it("an admin removes an app: 204, then 404", async () => {
    const id = (await t.runtime.stores.durable.listPlayApps("t_acme")).find((a) => a.policy.packageName === "com.acme.shop")!.id;
    const page = await as("ada@acme.example", { url: "/portal/play-apps" });
    assert.match(page.body, new RegExp(`data-api="/portal/api/play-apps/${id}" data-method="DELETE"`));
    const del = await as("ada@acme.example", { method: "DELETE", url: `/portal/api/play-apps/${id}` });
    assert.equal(del.statusCode, 204);
    const again = await as("ada@acme.example", { method: "DELETE", url: `/portal/api/play-apps/${id}` });
    assert.deepEqual([again.statusCode, refusalCode(again)], [404, "4048000"]);
    assert.deepEqual(await packages("t_acme"), ["com.acme.bank"]);
  });

  it("no answer of this suite carried a key", () => {
    assert.ok(answers.length > 20);
    for (const res of answers) for (const s of secrets) assert.ok(!res.body.includes(s), `${res.statusCode} answer holds no key text`);
  });
});
