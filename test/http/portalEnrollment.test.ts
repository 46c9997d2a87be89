import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { DEFAULT_MEASUREMENTS, DEFAULT_MODEL, encodeVendorBlob, UNKNOWN_FIRMWARE } from "../../src/attestation/sim/deviceSim.ts";
import { accessTokenRequest, apiToken, formatClientKeys, parseClientKeys, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { imeiFrom14 } from "../../src/enrollment/deviceIds.ts";
import { catalog } from "../../src/errors/catalog.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople, refusalCode, type PortalRequest } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { testActor } from "../helpers/audit.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/**
 * The portal's enrollment pages over HTTP, in process: Enrollment clients (keys.json once, revoke, read-only),
 * Reference values (per tenant, validated upload, used by the tenant's appraisals and no other's) and Enrollment
 * (profiles, transactions, devices). For each route: the data, a viewer writing, another tenant's record by URL,
 * a missing CSRF token. The browser walk is test/browser/portalEnrollment.test.ts.
 */
describe("portal enrollment pages over HTTP", () => {
  let t: TestRuntime;
  let ca: DevCa;
  let leaf: CertifiedKey;
  let keys: Record<string, string>;
  let globex: Tenant;
  let people: ReturnType<typeof portalPeople>;
  const person = (email: string, role: "admin" | "viewer" | "operator", tenant?: string) => people.add(email, role, tenant);
  const as = (email: string, o: PortalRequest): Promise<LightMyRequestResponse> => people.as(email, o);

  /** The API answers Part B's JSON body; a page, the error page naming the same code. */
  const refused = (res: LightMyRequestResponse, entry: { status: number; code: string }, note = "") => {
    assert.equal(res.statusCode, entry.status, `${note} ${res.body}`);
    assert.equal(refusalCode(res), entry.code, `${note} ${res.body}`);
  };

  /** A vendor blob of the simulator's default device with `firmwareVersion`, posted with the tenant's key. */
  async function appraise(tenant: "acme" | "globex", firmwareVersion: string): Promise<{ verdict: string; reason: string }> {
    const key = keys[tenant]!;
    const nonce = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } })).json().nonce as string;
    const blob = encodeVendorBlob({ ca, leaf, now: new Date(T0), nonce, firmwareVersion });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}`,
      headers: { [KEY_HEADER]: key, "content-type": "application/octet-stream" },
      payload: Buffer.from(blob),
    });
    assert.equal(res.statusCode, 200, res.body);
    const stored = await t.runtime.stores.durable.getVerdict(String(res.headers.location).split("/").pop()!);
    return { verdict: res.json().verdict, reason: stored!.reason };
  }

  before(async () => {
    ca = await createDevCa({ now: new Date(T0) });
    leaf = await issueDeviceLeaf(ca, { keyType: "ec", now: new Date(T0) });
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-portal-enroll-"));
    writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
    t = await startTestRuntime({ vendorRoots: path.join(dir, "roots.pem") }, { enrollment: { startWorker: false, tenantKeyBits: 2048 } });
    people = portalPeople(t);
    const g = await t.addTenant("globex");
    globex = g.tenant;
    keys = { acme: t.key, globex: g.key };
    await t.runtime.stores.durable.createTenant({ tenantId: "t_resell", name: "resell", customerId: "7700000001", kind: "reseller", createdAt: new Date(T0).toISOString() });
    await person("ada@acme.example", "admin", "acme");
    await person("vic@acme.example", "viewer", "acme");
    await person("gus@globex.example", "admin", "globex");
    await person("rita@resell.example", "admin", "resell");
    await person("root@example.org", "operator");
  });
  after(() => t.close());

  describe("Enrollment clients", () => {
    let keysJson: string;
    let clientId: string;

    async function accessToken(k: ClientKeys): Promise<LightMyRequestResponse> {
      return t.runtime.app.inject({ method: "POST", url: "/svc/v1/auth/accesstoken", payload: await accessTokenRequest(k, { nowMs: t.clock.nowMs() }) });
    }
    async function svc(k: ClientKeys, token: string, method: "GET" | "POST", url: string, payload?: object): Promise<LightMyRequestResponse> {
      const header = await apiToken(k, token, { nowMs: t.clock.nowMs() });
      return t.runtime.app.inject({ method, url, headers: { "x-vendor-apitoken": header }, ...(payload ? { payload } : {}) });
    }

    it("an admin creates a client: keys.json is in that answer only, as `client create` writes it, and it works on /svc/v1", async () => {
      const res = await as("ada@acme.example", { method: "POST", url: "/portal/api/clients", payload: { email: "ops@acme.example", rps: 50 } });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as { client: { clientId: string; email: string; state: string; readOnly: boolean; rps: number; burst: number }; keysJson: string };
      keysJson = body.keysJson;
      clientId = body.client.clientId;
      const k = parseClientKeys(keysJson);
      assert.equal(keysJson, formatClientKeys(k), "the bytes `attestd client create --out` writes");
      assert.deepEqual(Object.keys(JSON.parse(keysJson)), ["Public", "Private", "Identifier"]);
      assert.deepEqual([body.client.email, body.client.state, body.client.readOnly, body.client.rps, body.client.burst], ["ops@acme.example", "active", false, 50, 100]);
      assert.equal(res.headers["cache-control"], "no-store");

      const stored = JSON.stringify(await t.runtime.stores.enrollment.getClient(clientId));
      assert.ok(!stored.includes(k.Private), "the private key is not kept");
      assert.ok(!stored.includes(k.Identifier.split(".").pop()!), "nor the identifier's secret");
      const listed = JSON.stringify((await as("vic@acme.example", { url: "/portal/api/clients" })).json());
      assert.ok(!listed.includes(k.Private) && !listed.includes(k.Identifier), "never shown again");

      const token = await accessToken(k);
      assert.equal(token.statusCode, 200, token.body);
      const profiles = await svc(k, token.json().accessToken, "GET", "/svc/v1/enroll/profiles");
      assert.equal(profiles.statusCode, 200, profiles.body);
    });

    it("a viewer reads the list (email, limits, state) but cannot create, change or revoke: 403 PORTAL_FORBIDDEN", async () => {
      const list = await as("vic@acme.example", { url: "/portal/api/clients" });
      assert.equal(list.statusCode, 200);
      const body = list.json() as { clients: { clientId: string; email: string; state: string }[]; tenantRefusal: unknown };
      assert.deepEqual(body.clients.map((c) => [c.clientId, c.email, c.state]), [[clientId, "ops@acme.example", "active"]]);
      assert.equal(body.tenantRefusal, null);
      refused(await as("vic@acme.example", { method: "POST", url: "/portal/api/clients", payload: { email: "x@acme.example" } }), catalog.PORTAL_FORBIDDEN);
      refused(await as("vic@acme.example", { method: "PATCH", url: `/portal/api/clients/${clientId}`, payload: { readOnly: true } }), catalog.PORTAL_FORBIDDEN);
      refused(await as("vic@acme.example", { method: "DELETE", url: `/portal/api/clients/${clientId}` }), catalog.PORTAL_FORBIDDEN);
      assert.equal((await t.runtime.stores.enrollment.listClients("t_acme")).length, 1, "nothing was created");
      const page = await as("vic@acme.example", { url: "/portal/clients" });
      assert.equal(page.statusCode, 200);
      assert.ok(page.body.includes(clientId) && page.body.includes("ops@acme.example"));
      assert.ok(!page.body.includes("Create client") && !page.body.includes(">Revoke<"), "no write controls for a viewer");
    });

    it("refuses a state change without its CSRF token, another tenant's client by URL, and a bad email", async () => {
      refused(await as("ada@acme.example", { method: "POST", url: "/portal/api/clients", payload: { email: "y@acme.example" }, csrf: false }), catalog.PORTAL_CSRF);
      refused(await as("ada@acme.example", { method: "DELETE", url: `/portal/api/clients/${clientId}`, csrf: false }), catalog.PORTAL_CSRF);
      assert.equal((await t.runtime.stores.enrollment.listClients("t_acme")).length, 1);
      refused(await as("gus@globex.example", { method: "DELETE", url: `/portal/api/clients/${clientId}` }), catalog.PORTAL_NOT_FOUND, "cross-tenant revoke");
      refused(await as("gus@globex.example", { method: "PATCH", url: `/portal/api/clients/${clientId}?tenant=acme`, payload: { readOnly: true } }), catalog.PORTAL_NOT_FOUND);
      const untouched = await t.runtime.stores.enrollment.getClient(clientId);
      assert.deepEqual([untouched?.revokedAt, untouched?.readOnly], [null, false]);
      assert.deepEqual(((await as("gus@globex.example", { url: "/portal/api/clients?tenant=acme" })).json() as { clients: unknown[] }).clients, [], "?tenant= means nothing to a tenant user");
      refused(await as("ada@acme.example", { method: "POST", url: "/portal/api/clients", payload: { email: "not an email" } }), catalog.PORTAL_INVALID_REQUEST);
    });

    it("the read-only flag: a read-only client may GET but not POST; revoked, its token and its keys stop working and it stays listed", async () => {
      const k = parseClientKeys(keysJson);
      const token = (await accessToken(k)).json().accessToken as string;
      assert.equal((await as("ada@acme.example", { method: "PATCH", url: `/portal/api/clients/${clientId}`, payload: { readOnly: true } })).statusCode, 204);
      assert.equal((await svc(k, token, "GET", "/svc/v1/enroll/profiles")).statusCode, 200);
      refused(await svc(k, token, "POST", "/svc/v1/enroll/profiles", { name: "Tablets" }), catalog.B_FORBIDDEN, "read-only");
      assert.equal((await as("ada@acme.example", { method: "PATCH", url: `/portal/api/clients/${clientId}`, payload: { readOnly: false } })).statusCode, 204);
      assert.equal((await svc(k, token, "POST", "/svc/v1/enroll/profiles", { name: "Tablets" })).statusCode, 200);

      assert.equal((await as("ada@acme.example", { method: "DELETE", url: `/portal/api/clients/${clientId}` })).statusCode, 204);
      refused(await svc(k, token, "GET", "/svc/v1/enroll/profiles"), catalog.ACCESS_TOKEN_BAD_REQUEST, "its live token");
      refused(await accessToken(k), catalog.ACCESS_TOKEN_BAD_REQUEST, "a new token");
      const listed = ((await as("ada@acme.example", { url: "/portal/api/clients" })).json() as { clients: { clientId: string; state: string; revokedAt: string }[] }).clients;
      assert.deepEqual(listed.map((c) => [c.clientId, c.state, c.revokedAt]), [[clientId, "revoked", new Date(t.clock.nowMs()).toISOString()]]);
      refused(await as("ada@acme.example", { method: "DELETE", url: `/portal/api/clients/${clientId}` }), catalog.PORTAL_NOT_FOUND, "once");
      refused(await as("ada@acme.example", { method: "PATCH", url: `/portal/api/clients/${clientId}`, payload: { readOnly: true } }), catalog.PORTAL_NOT_FOUND, "a revoked client has no flag to set");
    });

    it("a reseller not enabled for enrollment is told why, in Part B's words, and the create form is disabled", async () => {
      const body = (await as("rita@resell.example", { url: "/portal/api/clients" })).json() as { tenantRefusal: { code: string; message: string } };
      assert.deepEqual([body.tenantRefusal.code, body.tenantRefusal.message], [catalog.RESELLER_BLOCKED.code, catalog.RESELLER_BLOCKED.message]);
      const page = (await as("rita@resell.example", { url: "/portal/clients" })).body;
      assert.ok(page.includes("Enrollment is not available to this tenant"));
      assert.ok(page.includes("attestd tenant enable-enrollment resell"));
      assert.ok(!page.includes("Create an enrollment client"), "no create form until enrollment is enabled");
      const enrollment = (await as("rita@resell.example", { url: "/portal/enrollment" })).body;
      assert.ok(enrollment.includes(catalog.RESELLER_BLOCKED.code), "the Enrollment page says it too");
      await t.runtime.stores.durable.setEnrollmentEnabled("resell", true);
      assert.equal(((await as("rita@resell.example", { url: "/portal/api/clients" })).json() as { tenantRefusal: unknown }).tenantRefusal, null);
    });

    it("an operator names the tenant", async () => {
      refused(await as("root@example.org", { url: "/portal/api/clients" }), catalog.PORTAL_INVALID_REQUEST);
      const listed = ((await as("root@example.org", { url: "/portal/api/clients?tenant=acme" })).json() as { clients: { tenantId: string }[] }).clients;
      assert.ok(listed.length > 0 && listed.every((c) => c.tenantId === "t_acme"));
    });
  });

  describe("Reference values", () => {
    const digests = DEFAULT_MEASUREMENTS.map(hex);
    const set = (firmwareVersion: string, measurements = digests) => ({ model: DEFAULT_MODEL, firmwareVersion, measurements });
    const upload = (email: string, sets: unknown, o: { url?: string; filename?: string; csrf?: false } = {}) =>
      as(email, {
        method: "POST",
        url: o.url ?? "/portal/api/reference-values",
        payload: { filename: o.filename ?? "refs.json", content: typeof sets === "string" ? sets : JSON.stringify(sets) },
        ...(o.csrf === false ? { csrf: false as const } : {}),
      });
    const own = async (email: string, query = "") =>
      ((await as(email, { url: `/portal/api/reference-values${query}` })).json() as { items: { model: string; firmwareVersion: string; source: string; measurements: string[] }[] }).items;

    it("a tenant's own set turns its Unknown firmware into Yes, and no other tenant's", async () => {
      assert.equal((await appraise("acme", UNKNOWN_FIRMWARE)).verdict, "Unknown");
      assert.equal((await appraise("globex", UNKNOWN_FIRMWARE)).verdict, "Unknown");

      const res = await upload("ada@acme.example", [set(UNKNOWN_FIRMWARE)]);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { imported: 1, scope: "tenant" });

      const mine = await appraise("acme", UNKNOWN_FIRMWARE);
      assert.equal(mine.verdict, "Yes");
      assert.match(mine.reason, /the tenant's own reference values/);
      assert.equal((await appraise("globex", UNKNOWN_FIRMWARE)).verdict, "Unknown", "globex's devices are appraised as before");
      assert.deepEqual(await own("gus@globex.example"), []);
      assert.deepEqual((await own("vic@acme.example")).map((s) => [s.firmwareVersion, s.source, s.measurements.length]), [[UNKNOWN_FIRMWARE, "tenant", 7]]);
    });

    it("a tenant's set replaces a global set of the same model and firmware for that tenant alone", async () => {
      const fw = "X100XXU2BBB2";
      const op = await upload("root@example.org", [set(fw)]);
      assert.deepEqual(op.json(), { imported: 1, scope: "global" }, "an operator without ?tenant= writes the global sets");
      assert.equal((await appraise("globex", fw)).verdict, "Yes");
      assert.equal((await appraise("acme", fw)).verdict, "Yes");
      assert.equal((await upload("ada@acme.example", [set(fw, [...digests].reverse())])).statusCode, 200);
      const acme = await appraise("acme", fw);
      assert.equal(acme.verdict, "No");
      assert.match(acme.reason, /differ from the tenant's own reference values/);
      assert.equal((await appraise("globex", fw)).verdict, "Yes", "globex still gets the global set");
      const global = await own("vic@acme.example", "?scope=global");
      assert.deepEqual(global.map((s) => [s.firmwareVersion, s.source]), [[fw, "global"]], "tenants read the global sets");
    });

    it("refuses a file with a faulty item, naming its index and field, and stores none of it", async () => {
      const before = await own("ada@acme.example");
      const bad = await upload("ada@acme.example", [set("X100XXU3CCC3"), set("X100XXU4DDD4", [digests[0]!, "abc"])], { filename: "acme-refs.json" });
      refused(bad, catalog.PORTAL_INVALID_REQUEST);
      assert.match(bad.json().data, /^acme-refs\.json: item 1 \("SM-X100" \/ "X100XXU4DDD4"\): measurements\[1\] is not 64 hex digits/);
      const unknownKey = await upload("ada@acme.example", [{ ...set("X100XXU3CCC3"), firmware: "typo" }]);
      assert.match(unknownKey.json().data, /item 0: unknown key\(s\) "firmware"/);
      const notJson = await upload("ada@acme.example", "[{", { filename: "broken.json" });
      refused(notJson, catalog.PORTAL_INVALID_REQUEST);
      assert.match(notJson.json().data, /^broken\.json: not JSON/);
      assert.deepEqual(await own("ada@acme.example"), before, "item 0 was valid, yet nothing was stored");
    });

    it("refuses a viewer, a missing CSRF token and another tenant's set by URL; a tenant admin never writes elsewhere", async () => {
      const before = await own("ada@acme.example");
      refused(await upload("vic@acme.example", [set("X100XXU5EEE5")]), catalog.PORTAL_FORBIDDEN);
      refused(await upload("ada@acme.example", [set("X100XXU5EEE5")], { csrf: false }), catalog.PORTAL_CSRF);
      const del = `/portal/api/reference-values?model=${DEFAULT_MODEL}&firmwareVersion=${UNKNOWN_FIRMWARE}`;
      refused(await as("vic@acme.example", { method: "DELETE", url: del }), catalog.PORTAL_FORBIDDEN);
      refused(await as("ada@acme.example", { method: "DELETE", url: del, csrf: false }), catalog.PORTAL_CSRF);
      refused(await as("gus@globex.example", { method: "DELETE", url: `${del}&tenant=acme` }), catalog.PORTAL_NOT_FOUND, "cross-tenant delete");
      assert.deepEqual(await own("ada@acme.example"), before);

      // ?tenant= is an operator's; for ada it changes nothing: the set lands in acme's own, not globex's or the global ones
      await upload("ada@acme.example", [set("X100XXU6FFF6")], { url: "/portal/api/reference-values?tenant=globex" });
      assert.deepEqual(await own("gus@globex.example"), []);
      assert.ok((await own("ada@acme.example")).some((s) => s.firmwareVersion === "X100XXU6FFF6"));
      assert.ok(!(await own("ada@acme.example", "?scope=global")).some((s) => s.firmwareVersion === "X100XXU6FFF6"));
    });

    it("a delete takes the tenant's set away: its devices appraise as before", async () => {
      const del = `/portal/api/reference-values?model=${DEFAULT_MODEL}&firmwareVersion=${UNKNOWN_FIRMWARE}`;
      assert.equal((await as("ada@acme.example", { method: "DELETE", url: del })).statusCode, 204);
      assert.equal((await appraise("acme", UNKNOWN_FIRMWARE)).verdict, "Unknown");
      refused(await as("ada@acme.example", { method: "DELETE", url: del }), catalog.PORTAL_NOT_FOUND);
    });

    it("the page lists both scopes, pages them and shows the upload form to admins only", async () => {
      const many = Array.from({ length: 55 }, (_, i) => set(`P${String(i).padStart(3, "0")}`));
      assert.equal((await upload("gus@globex.example", many)).statusCode, 200);
      const first = (await as("gus@globex.example", { url: "/portal/api/reference-values" })).json() as { items: { firmwareVersion: string }[]; next: string };
      assert.equal(first.items.length, 50);
      const second = (await as("gus@globex.example", { url: `/portal/api/reference-values?after=${first.next}` })).json() as { items: { firmwareVersion: string }[]; next?: string };
      assert.deepEqual(second.items.map((s) => s.firmwareVersion), ["P050", "P051", "P052", "P053", "P054"]);
      assert.equal(second.next, undefined);
      const page = await as("gus@globex.example", { url: "/portal/reference-values" });
      assert.equal(page.statusCode, 200);
      assert.ok(page.body.includes("Tenant globex's own sets") && page.body.includes("Global sets") && page.body.includes("data-upload"));
      assert.ok(page.body.includes("More of the tenant's sets"));
      const viewer = await as("vic@acme.example", { url: `/portal/reference-values?model=${DEFAULT_MODEL}` });
      assert.ok(!viewer.body.includes("data-upload") && !viewer.body.includes(">Delete<"));
      refused(await as("vic@acme.example", { url: "/portal/api/reference-values?after=not-a-cursor" }), catalog.PORTAL_INVALID_REQUEST);
    });
  });

  describe("Enrollment", () => {
    let profileId: string;
    let transactionId: string;
    const imeis = [imeiFrom14("35000000000001"), imeiFrom14("35000000000002"), imeiFrom14("35000000000003")];

    before(async () => {
      const e = t.runtime.enrollment;
      const acme = (await t.runtime.stores.durable.getTenantByName("acme"))!;
      t.clock.advance(1000); // after the profile the read-only test made, so "newest first" has one answer
      profileId = (await e.profiles.create("t_acme", { name: "Field tablets", mdmUrl: "https://mdm.acme.example/enroll", settings: { wifi: true } }, testActor())).profileId;
      t.clock.advance(1000);
      await e.profiles.create("t_acme", { name: "Kiosks" }, testActor());
      transactionId = (await e.devices.upload(acme, { profileId, devices: imeis.map((deviceId) => ({ deviceId })) }, testActor())).transactionId;
      await e.profiles.create("t_globex", { name: "Globex phones" }, testActor());
    });

    it("profiles, transactions with their state and each device's status, as Part B serves them, paged on the server", async () => {
      const names: string[] = [];
      for (let page = 0; page < 3; page++) {
        const p = (await as("vic@acme.example", { url: `/portal/api/enrollment/profiles?pageSize=1&page=${page}` })).json() as { total: number; totalPages: number; items: { name: string }[] };
        assert.deepEqual([p.total, p.totalPages, p.items.length], [3, 3, 1]);
        names.push(p.items[0]!.name);
      }
      assert.deepEqual(names, ["Kiosks", "Field tablets", "Tablets"], "newest first; the read-only test's profile included");

      const processing = (await as("vic@acme.example", { url: "/portal/api/enrollment/transactions?state=Processing" })).json() as { items: { transactionId: string; kind: string }[] };
      assert.deepEqual(processing.items.map((x) => [x.transactionId, x.kind]), [[transactionId, "devices"]]);
      const devices = (await as("vic@acme.example", { url: `/portal/api/enrollment/devices?transactionId=${transactionId}` })).json() as { processing: number; items: { deviceId: string; state: string }[] };
      assert.deepEqual([devices.processing, devices.items.map((d) => d.state)], [3, ["Processing", "Processing", "Processing"]]);

      await t.runtime.enrollment.worker.drain();
      const done = (await as("vic@acme.example", { url: `/portal/api/enrollment/transactions?profileId=${profileId}` })).json() as { items: { state: string; type: string }[] };
      assert.deepEqual(done.items.map((x) => [x.type, x.state]), [["Post", "Complete"], ["Post", "Complete"]], "the upload and the profile's creation");
      const enrolled = (await as("vic@acme.example", { url: `/portal/api/enrollment/devices?profileId=${profileId}&pageSize=2&page=1` })).json() as { total: number; page: number; processing: number; items: { deviceId: string; state: string }[] };
      assert.deepEqual([enrolled.total, enrolled.page, enrolled.processing, enrolled.items.map((d) => [d.deviceId, d.state])], [3, 1, 0, [[imeis[2], "Enrolled"]]]);

      // the pages: filters in the URL, the same records
      const txPage = await as("vic@acme.example", { url: `/portal/enrollment/transactions?state=Complete&profileId=${profileId}` });
      assert.equal(txPage.statusCode, 200);
      assert.ok(txPage.body.includes(transactionId) && txPage.body.includes("device upload"));
      const devPage = await as("vic@acme.example", { url: `/portal/enrollment/devices?transactionId=${transactionId}` });
      assert.ok(imeis.every((i) => devPage.body.includes(i)));
      const profilePage = await as("vic@acme.example", { url: `/portal/enrollment/profiles/${profileId}` });
      assert.equal(profilePage.statusCode, 200);
      assert.ok(profilePage.body.includes("https://mdm.acme.example/enroll"));
      const listPage = await as("vic@acme.example", { url: "/portal/enrollment?pageSize=1&page=1" });
      assert.ok(listPage.body.includes("Page 2 of 3") && listPage.body.includes("Previous page") && listPage.body.includes("Next page"));
    });

    it("another tenant's profile, transaction or devices by URL are not found", async () => {
      refused(await as("gus@globex.example", { url: `/portal/api/enrollment/profiles/${profileId}` }), catalog.PORTAL_NOT_FOUND);
      refused(await as("gus@globex.example", { url: `/portal/enrollment/profiles/${profileId}?tenant=acme` }), catalog.PORTAL_NOT_FOUND);
      refused(await as("gus@globex.example", { url: `/portal/api/enrollment/devices?transactionId=${transactionId}` }), catalog.PORTAL_NOT_FOUND);
      const theirs = (await as("gus@globex.example", { url: "/portal/api/enrollment/profiles?tenant=acme" })).json() as { items: { tenantId: string }[] };
      assert.deepEqual(theirs.items.map((p) => p.tenantId), [globex.tenantId]);
      const tx = (await as("gus@globex.example", { url: `/portal/api/enrollment/transactions?profileId=${profileId}` })).json() as { items: unknown[] };
      assert.deepEqual(tx.items, []);
      refused(await as("root@example.org", { url: "/portal/api/enrollment/profiles" }), catalog.PORTAL_INVALID_REQUEST, "operators name the tenant");
      assert.equal((await as("root@example.org", { url: `/portal/api/enrollment/profiles/${profileId}?tenant=acme` })).statusCode, 200);
    });
  });

  it("/openapi.json documents every new /portal/api route with its error answers", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; tags?: string[] }>>;
    };
    const expected: Record<string, string[]> = {
      "/portal/api/clients": ["get", "post"],
      "/portal/api/clients/{clientId}": ["delete", "patch"],
      "/portal/api/reference-values": ["delete", "get", "post"],
      "/portal/api/enrollment/profiles": ["get"],
      "/portal/api/enrollment/profiles/{profileId}": ["get"],
      "/portal/api/enrollment/transactions": ["get"],
      "/portal/api/enrollment/devices": ["get"],
    };
    for (const [p, methods] of Object.entries(expected)) {
      assert.deepEqual(Object.keys(doc.paths[p] ?? {}).sort(), methods, p);
      for (const [method, op] of Object.entries(doc.paths[p]!)) {
        assert.deepEqual(op.tags, ["portal"], `${method} ${p}`);
        assert.ok(["401", "404"].every((s) => s in op.responses), `${method} ${p} lists its errors`);
        if (method !== "get") assert.ok("403" in op.responses, `${method} ${p} lists 403`);
      }
    }
  });
});
