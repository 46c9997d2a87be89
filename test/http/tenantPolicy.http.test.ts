import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import { POLICY_CACHE_MS, SEED_AUTHOR } from "../../src/services/tenantPolicies.ts";
import { pemBlob, vec } from "../android/fixtures.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { verifyEar } from "../helpers/ear.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { createTestDatabase, type TestDatabase } from "../store/backends.ts";

/**
 * A tenant's policy changed at run time (issue 26, docs/policy.md), through the admin API of a real runtime: a real
 * android-key chain (a Sony Xperia 10 III, TEE, osPatchLevel 2023-05 region) that passes under version 1 is refused
 * under a stricter version 2 with the rule's reason, its verdict naming v2 in `detail.policyVersion` and the
 * appraisal policy id; a rollback brings Yes back as v3; the file seeds version 1 at start.
 */
const AT = Date.parse("2025-06-01T00:00:00Z");
const SONY = "android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem";
const SONY_CHALLENGE = Buffer.from("3eafe4d5dd0090de5a42b432b42481af5ce29963656b2584c59a492de16d00c9", "hex").toString("base64url");
const POLICY_ID = /^urn:attestd:appraisal-policy:sha-256:[0-9a-f]{64};policy=v(\d+)$/;

describe("tenant policy over the admin API, and the verdicts it shapes", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  const blob = pemBlob(SONY);

  async function appraise(): Promise<{ verdict: string; reason: string; detail: Record<string, unknown> }> {
    // the chain's challenge is fixed: the used nonce is forgotten so it can be issued again
    await t.runtime.stores.nonces.purgeExpired(Number.MAX_SAFE_INTEGER, 0);
    await t.runtime.stores.nonces.issue({ nonce: SONY_CHALLENGE, tenantId: t.tenant.tenantId, createdAtMs: AT, expiresAtMs: AT + 300_000 }, 1000, AT);
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${SONY_CHALLENGE}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" },
      payload: blob,
    });
    assert.equal(res.statusCode, 200, res.body);
    const full = await t.runtime.app.inject({ method: "GET", url: `${res.headers.location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    const a = full.json().attestation;
    return { verdict: res.json().verdict, reason: a.reason, detail: a.detail };
  }

  /** the signed result (EAR) of an appraisal now, verified against the published keys */
  async function appraiseEar() {
    await t.runtime.stores.nonces.purgeExpired(Number.MAX_SAFE_INTEGER, 0);
    await t.runtime.stores.nonces.issue({ nonce: SONY_CHALLENGE, tenantId: t.tenant.tenantId, createdAtMs: AT, expiresAtMs: AT + 300_000 }, 1000, AT);
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${SONY_CHALLENGE}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream", accept: "application/eat+jwt" },
      payload: blob,
    });
    assert.equal(res.statusCode, 200, res.body);
    const jwks = (await t.runtime.app.inject({ method: "GET", url: "/.well-known/jwks.json" })).json();
    return verifyEar(res.body, jwks);
  }

  before(async () => {
    t = await startTestRuntime({ androidStatus: vec("google_android-key-attestation/status.json") }, { clock: new ManualClock(AT) });
    people = portalPeople(t);
    await people.add("admin@acme.test", "admin", "acme");
    await people.add("viewer@acme.test", "viewer", "acme");
    await people.add("op@attestd.test", "operator");
  });
  after(async () => t.close());

  it("a tenant without a stored policy: 404, and verdicts name no version", async () => {
    const res = await people.as("admin@acme.test", { url: "/portal/api/policy" });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, "4048000");
    const v = await appraise();
    assert.equal(v.verdict, "Yes", v.reason);
    assert.equal(v.detail.policyVersion, undefined);
    assert.doesNotMatch(String(v.detail.appraisalPolicyId), /;policy=/);
  });

  it("v1 that the device meets: Yes, named v1; v2 requiring StrongBox and a newer patch: No with both reasons, named v2", async () => {
    const v1 = await people.as("admin@acme.test", { method: "PUT", url: "/portal/api/policy", payload: { android: { minOsPatchLevel: "2020-01", factoryExpiry: "accept" } } });
    assert.equal(v1.statusCode, 200, v1.body);
    assert.equal(v1.json().version, 1);
    assert.equal(v1.json().author, "admin@acme.test");
    const yes = await appraise();
    assert.equal(yes.verdict, "Yes", yes.reason);
    assert.equal(yes.detail.policyVersion, 1);
    assert.equal(POLICY_ID.exec(String(yes.detail.appraisalPolicyId))?.[1], "1");

    // in force at once in the process that made the change: no waiting for the cache
    const v2 = await people.as("admin@acme.test", {
      method: "PUT",
      url: "/portal/api/policy",
      payload: { android: { minOsPatchLevel: "2099-01", requiredSecurityLevel: "StrongBox" } },
    });
    assert.equal(v2.json().version, 2);
    const no = await appraise();
    assert.equal(no.verdict, "No");
    assert.match(no.reason, /below the policy's required StrongBox/);
    assert.match(no.reason, /older than the minimum 209901/);
    assert.equal(no.detail.policyVersion, 2);
    assert.equal(POLICY_ID.exec(String(no.detail.appraisalPolicyId))?.[1], "2");
    assert.notEqual(String(no.detail.appraisalPolicyId).split(";")[0], String(yes.detail.appraisalPolicyId).split(";")[0], "another document, another hash");
    // the signed result names the same policy, version included
    const ear = await appraiseEar();
    assert.equal(ear.submods["android-key"]!["ear.appraisal-policy-id"], no.detail.appraisalPolicyId);
  });

  it("a rollback is a new version with the old document: v3 = v1's, and Yes again", async () => {
    const rb = await people.as("admin@acme.test", { method: "POST", url: "/portal/api/policy/rollback", payload: { version: 1 } });
    assert.equal(rb.statusCode, 200, rb.body);
    assert.equal(rb.json().version, 3);
    assert.deepEqual(rb.json().document, { android: { minOsPatchLevel: "2020-01", factoryExpiry: "accept" } });
    const v = await appraise();
    assert.equal(v.verdict, "Yes", v.reason);
    assert.equal(v.detail.policyVersion, 3);
    const list = await people.as("viewer@acme.test", { url: "/portal/api/policy/versions" });
    assert.deepEqual(list.json().map((x: { version: number }) => x.version), [3, 2, 1]);
    const page = await people.as("viewer@acme.test", { url: "/portal/api/policy/versions?before=3&limit=1" });
    assert.deepEqual(page.json().map((x: { version: number }) => x.version), [2]);
    const one = await people.as("viewer@acme.test", { url: "/portal/api/policy/versions/2" });
    assert.equal(one.json().document.android.requiredSecurityLevel, "StrongBox");
    const none = await people.as("viewer@acme.test", { method: "POST", url: "/portal/api/policy/rollback", payload: { version: 1 } });
    assert.equal(none.statusCode, 403, "a viewer changes nothing");
    const missing = await people.as("admin@acme.test", { method: "POST", url: "/portal/api/policy/rollback", payload: { version: 99 } });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, "4048000");
  });

  it("a bad document: 400 PORTAL_POLICY_INVALID naming every faulty field, and no new version", async () => {
    const res = await people.as("admin@acme.test", {
      method: "PUT",
      url: "/portal/api/policy",
      payload: { android: { minOsPatchLevel: "202401", requiredSecurityLevel: "Software", colour: "red" }, appAttest: { environments: ["staging"] } },
    });
    assert.equal(res.statusCode, 400);
    const body = res.json();
    assert.equal(body.code, "4008026");
    assert.match(body.data, /android\.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD/);
    assert.match(body.data, /android\.requiredSecurityLevel: must be one of TrustedEnvironment, StrongBox/);
    assert.match(body.data, /android\.colour: unknown field/);
    assert.match(body.data, /appAttest\.environments\[0\]: must be one of production, development/);
    const current = await people.as("admin@acme.test", { url: "/portal/api/policy" });
    assert.equal(current.json().version, 3);
  });

  it("the Policy page: the version in force, its document to edit for an admin, the history with rollbacks; read-only for a viewer", async () => {
    const page = await people.as("admin@acme.test", { url: "/portal/policy" });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Version <strong>v3<\/strong> is in force/);
    assert.match(page.body, /<form data-api="\/portal\/api\/policy" data-method="PUT" data-json-body/);
    assert.match(page.body, /&quot;minOsPatchLevel&quot;: &quot;2020-01&quot;/, "the document in the textarea, escaped");
    assert.match(page.body, /data-body="\{&quot;version&quot;:2\}"/, "a rollback to v2");
    assert.deepEqual(page.body.match(/>Roll back to v\d</g), [">Roll back to v2<", ">Roll back to v1<"], "v2 and v1, not the one in force");
    const viewer = await people.as("viewer@acme.test", { url: "/portal/policy" });
    assert.equal(viewer.statusCode, 200);
    assert.doesNotMatch(viewer.body, /data-json-body|Roll back to/);
    const pick = await people.as("op@attestd.test", { url: "/portal/policy" });
    assert.match(pick.body, /acme/, "an operator picks a tenant first");
  });

  it("an operator acts on the named tenant; the answer is in /openapi.json with its errors", async () => {
    const res = await people.as("op@attestd.test", { method: "PUT", url: "/portal/api/policy?tenant=acme", payload: { playIntegrity: { minDeviceVerdict: "MEETS_STRONG_INTEGRITY" } } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().version, 4);
    assert.equal(res.json().author, "op@attestd.test");
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const put = doc.paths["/portal/api/policy"].put;
    assert.ok(put.responses["400"] && put.responses["403"], "errors listed");
    assert.ok(doc.paths["/portal/api/policy/versions"].get);
    assert.ok(doc.paths["/portal/api/policy/rollback"].post);
  });
});

describe("tenant policy: seeding from --android-policy, and the bound between instances", () => {
  it("a tenant named in the file and with no stored policy gets version 1 at start, once; a stored policy wins over the file", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-policy-seed-"));
    const file = path.join(dir, "android-policy.json");
    writeFileSync(file, JSON.stringify({ default: { minOsPatchLevel: 202001 }, tenants: { acme: { minOsPatchLevel: 202401, factoryExpiry: "refuse" } } }));
    try {
      // acme is created by the first start's helper after its seeding: the second start seeds it
      const first = await startTestRuntime({ androidPolicy: file }, { dir });
      assert.equal(await first.runtime.stores.durable.currentTenantPolicy(first.tenant.tenantId), undefined);
      await first.close();
      const second = await startTestRuntime({ androidPolicy: file }, { dir });
      const v1 = await second.runtime.stores.durable.currentTenantPolicy(second.tenant.tenantId);
      assert.deepEqual(v1 && { version: v1.version, author: v1.author, document: v1.document }, {
        version: 1,
        author: SEED_AUTHOR,
        document: { android: { minOsPatchLevel: "2024-01", factoryExpiry: "refuse" } },
      });
      await second.close();
      // the file changes later: the stored version stays in force, nothing is re-seeded
      writeFileSync(file, JSON.stringify({ tenants: { acme: { minOsPatchLevel: 202501 } } }));
      const third = await startTestRuntime({ androidPolicy: file }, { dir });
      const versions = await third.runtime.stores.durable.listTenantPolicyVersions(third.tenant.tenantId, { limit: 10 });
      assert.deepEqual(versions.map((v) => [v.version, v.document.android?.minOsPatchLevel]), [[1, "2024-01"]]);
      await third.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(`another process's change reaches this one within ${POLICY_CACHE_MS} ms (the cache's bound), and not before it expires`, async () => {
    const clock = new ManualClock(AT);
    const t = await startTestRuntime({ androidStatus: vec("google_android-key-attestation/status.json") }, { clock });
    try {
      const d = t.runtime.stores.durable;
      const blob = pemBlob(SONY);
      const appraise = async () => {
        await t.runtime.stores.nonces.purgeExpired(Number.MAX_SAFE_INTEGER, 0);
        await t.runtime.stores.nonces.issue({ nonce: SONY_CHALLENGE, tenantId: t.tenant.tenantId, createdAtMs: clock.nowMs(), expiresAtMs: clock.nowMs() + 300_000 }, 1000, clock.nowMs());
        const res = await t.runtime.app.inject({ method: "POST", url: `/v2/blobs?nonce=${SONY_CHALLENGE}`, headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" }, payload: blob });
        return res.json().verdict as string;
      };
      assert.equal(await appraise(), "Yes");
      // written past this process's service, as another instance or the CLI writes it
      await d.appendTenantPolicy({ tenantId: t.tenant.tenantId, version: 1, createdAt: new Date(AT).toISOString(), author: "elsewhere", document: { android: { requiredSecurityLevel: "StrongBox" } } });
      clock.advance(POLICY_CACHE_MS - 1);
      assert.equal(await appraise(), "Yes", "the cached read (no policy) holds until the bound");
      clock.advance(1);
      assert.equal(await appraise(), "No", "at the bound the stored version is in force");
    } finally {
      await t.close();
    }
  });
});

describe("tenant policy: two runtimes over one PostgreSQL database", () => {
  let db: TestDatabase;
  let a: TestRuntime;
  let b: TestRuntime;
  const clockA = new ManualClock(AT);
  const clockB = new ManualClock(AT);
  before(async () => {
    db = await createTestDatabase("policy2");
    const settings = { store: "postgres", databaseUrl: db.url, androidStatus: vec("google_android-key-attestation/status.json") };
    a = await startTestRuntime(settings, { clock: clockA });
    // one deployment: the second instance has the first's secrets key, as every instance of one store must
    b = await startTestRuntime({ ...settings, secretsKeyFile: path.join(a.dir, "secrets.key") }, { clock: clockB });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  async function verdictOn(t: TestRuntime, clock: ManualClock): Promise<{ verdict: string; policyId: string }> {
    const nonce = SONY_CHALLENGE;
    await t.runtime.stores.nonces.purgeExpired(Number.MAX_SAFE_INTEGER, 0);
    await t.runtime.stores.nonces.issue({ nonce, tenantId: t.tenant.tenantId, createdAtMs: clock.nowMs(), expiresAtMs: clock.nowMs() + 300_000 }, 1000, clock.nowMs());
    const res = await t.runtime.app.inject({ method: "POST", url: `/v2/blobs?nonce=${nonce}`, headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" }, payload: pemBlob(SONY) });
    assert.equal(res.statusCode, 200, res.body);
    const full = await t.runtime.app.inject({ method: "GET", url: `${res.headers.location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    return { verdict: res.json().verdict, policyId: String(full.json().attestation.detail.appraisalPolicyId) };
  }

  it(`a change through one is in force there at once, and in the other within ${POLICY_CACHE_MS / 1000} s`, async () => {
    assert.equal(a.tenant.tenantId, b.tenant.tenantId, "one tenant, seen by both");
    assert.equal((await verdictOn(b, clockB)).verdict, "Yes", "B has read (and cached) the tenant's policy: none");
    const people = portalPeople(a);
    await people.add("admin@acme.test", "admin", "acme");
    const put = await people.as("admin@acme.test", { method: "PUT", url: "/portal/api/policy", payload: { android: { requiredSecurityLevel: "StrongBox" } } });
    assert.equal(put.statusCode, 200, put.body);
    const onA = await verdictOn(a, clockA);
    assert.equal(onA.verdict, "No", "A, which made the change, applies it from its answer on");
    assert.match(onA.policyId, /;policy=v1$/);
    clockB.advance(POLICY_CACHE_MS - 1);
    assert.equal((await verdictOn(b, clockB)).verdict, "Yes", "B within the bound may still use its copy");
    clockB.advance(1);
    const onB = await verdictOn(b, clockB);
    assert.equal(onB.verdict, "No", "B at the bound: the new version");
    assert.equal(onB.policyId, onA.policyId, "both name the same policy");
  });
});
