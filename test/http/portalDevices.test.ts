import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { catalog } from "../../src/errors/catalog.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople, refusalCode, type PortalRequest } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * The portal's Devices page and admin API over HTTP, in process: named devices (per-device memory) listed and
 * looked up with their history, and the pin reset for tenant admins and operators through the same DeviceService
 * as `attestd device reset`. Refused: a viewer resetting, a missing CSRF token, and every way of reaching another
 * tenant's device by URL. The browser walk is in test/browser/portalEnrollment.test.ts.
 */
describe("portal devices over HTTP", () => {
  let t: TestRuntime;
  let dir: string;
  let ca: DevCa;
  let leaves: CertifiedKey[];
  let keys: Record<"acme" | "globex", string>;
  let acme: Tenant;
  let globex: Tenant;
  let people: ReturnType<typeof portalPeople>;
  const as = (email: string, o: PortalRequest): Promise<LightMyRequestResponse> => people.as(email, o);
  const refused = (res: LightMyRequestResponse, entry: { status: number; code: string }, note = "") => {
    assert.equal(res.statusCode, entry.status, `${note} ${res.body}`);
    assert.equal(refusalCode(res), entry.code, `${note} ${res.body}`);
  };

  /** One Yes-appraising vendor blob of leaf `i`, posted by `tenant` for `deviceId`; the device's pin outcome. */
  async function attest(tenant: "acme" | "globex", deviceId: string, i = 0): Promise<string> {
    const key = keys[tenant];
    const nonce = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } })).json().nonce as string;
    const blob = encodeVendorBlob({ ca, leaf: leaves[i]!, now: new Date(T0), nonce });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}&deviceId=${encodeURIComponent(deviceId)}`,
      headers: { [KEY_HEADER]: key, "content-type": "application/octet-stream" },
      payload: Buffer.from(blob),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().verdict, "Yes", res.body);
    const stored = await t.runtime.stores.durable.getVerdict(String(res.headers.location).split("/").pop()!);
    return (stored!.detail as { device: { pin: string } }).device.pin;
  }

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-portal-devices-"));
    ca = await createDevCa({ now: new Date(T0) });
    leaves = [await issueDeviceLeaf(ca, { keyType: "ec", now: new Date(T0) }), await issueDeviceLeaf(ca, { keyType: "ec", now: new Date(T0) })];
    writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
    writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
    t = await startTestRuntime({ vendorRoots: path.join(dir, "roots.pem"), referenceValues: path.join(dir, "refs.json") });
    people = portalPeople(t);
    acme = t.tenant;
    const g = await t.addTenant("globex");
    globex = g.tenant;
    keys = { acme: t.key, globex: g.key };
    await people.add("ada@acme.example", "admin", "acme");
    await people.add("vic@acme.example", "viewer", "acme");
    await people.add("gus@globex.example", "admin", "globex");
    await people.add("root@example.org", "operator");

    // acme: phone-1 twice (pinned, then matched), tablet.7 once; globex: its own phone-1 and a device acme never named
    assert.equal(await attest("acme", "phone-1"), "first");
    assert.equal(await attest("acme", "phone-1"), "matched");
    assert.equal(await attest("acme", "tablet.7", 1), "first");
    assert.equal(await attest("globex", "phone-1", 1), "first");
    assert.equal(await attest("globex", "globex-only:1"), "first");
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the tenant's own devices in deviceId order, with their history, a page at a time", async () => {
    const res = await as("vic@acme.example", { url: "/portal/api/devices" });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as { items: { deviceId: string; count: number; pin: unknown; tenantId?: string }[]; next: string | null };
    assert.deepEqual(body.items.map((d) => [d.deviceId, d.count]), [["phone-1", 2], ["tablet.7", 1]]);
    assert.equal(body.next, null);
    assert.ok(body.items.every((d) => d.pin !== null && d.tenantId === undefined), "pinned, and no internal tenant id");

    const first = (await as("vic@acme.example", { url: "/portal/api/devices?limit=1" })).json();
    assert.deepEqual([first.items.map((d: { deviceId: string }) => d.deviceId), first.next], [["phone-1"], "phone-1"]);
    const second = (await as("vic@acme.example", { url: "/portal/api/devices?limit=1&after=phone-1" })).json();
    assert.deepEqual(second.items.map((d: { deviceId: string }) => d.deviceId), ["tablet.7"]);
    refused(await as("vic@acme.example", { url: "/portal/api/devices?after=not%20a%20name" }), catalog.PORTAL_INVALID_REQUEST);

    const page = await as("vic@acme.example", { url: "/portal/devices" });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /href="\/portal\/devices\/phone-1"/);
    assert.match(page.body, /href="\/portal\/devices\/tablet\.7"/);
    assert.doesNotMatch(page.body, /globex-only/);
    assert.match(page.body, /<a href="\/portal\/devices" aria-current="page">Attested devices<\/a>/, "in the navigation");
  });

  it("looks a device up by its id: the lookup form leads to its page with history, pin and latest facts", async () => {
    const lookup = await as("vic@acme.example", { url: "/portal/devices?deviceId=phone-1" });
    assert.equal(lookup.statusCode, 303);
    assert.equal(lookup.headers.location, "/portal/devices/phone-1");

    const page = await as("vic@acme.example", { url: "/portal/devices/phone-1" });
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /<title>Device phone-1 · attestd<\/title>/);
    assert.match(page.body, /<dt>Appraisals<\/dt><dd>2<\/dd>/);
    assert.match(page.body, /matched the pin/);
    assert.match(page.body, /<dt>chipId<\/dt>/, "the pinned facts are shown");
    assert.doesNotMatch(page.body, /data-api="\/portal\/api\/devices\/phone-1\/reset"/, "a viewer gets no reset button");
    const admin = await as("ada@acme.example", { url: "/portal/devices/phone-1" });
    assert.match(admin.body, /data-api="\/portal\/api\/devices\/phone-1\/reset" data-method="POST"/);

    const api = (await as("vic@acme.example", { url: "/portal/api/devices/phone-1" })).json();
    assert.equal(api.device.count, 2);
    assert.equal(api.device.last.pin, "matched");
    assert.deepEqual(api.resets, []);

    refused(await as("vic@acme.example", { url: "/portal/devices/never-seen" }), catalog.PORTAL_NOT_FOUND);
    refused(await as("vic@acme.example", { url: "/portal/api/devices/bad%20name" }), catalog.PORTAL_INVALID_REQUEST);
    // a mistyped lookup: to the device's page, which says what a device id is
    const typo = await as("vic@acme.example", { url: "/portal/devices?deviceId=bad%20name" });
    assert.equal(typo.headers.location, "/portal/devices/bad%20name");
    const typoPage = await as("vic@acme.example", { url: String(typo.headers.location) });
    refused(typoPage, catalog.PORTAL_INVALID_REQUEST);
    assert.match(typoPage.body, /a device id is 1-128 characters/);
  });

  it("never shows or resets another tenant's device, whatever the URL says", async () => {
    for (const url of ["/portal/api/devices/globex-only:1", "/portal/api/devices/globex-only:1?tenant=globex", "/portal/devices/globex-only:1?tenant=globex"]) {
      refused(await as("ada@acme.example", { url }), catalog.PORTAL_NOT_FOUND, url);
    }
    // ?tenant= is an operator's choice only: a tenant admin listing "globex" still sees acme's devices
    const listed = (await as("ada@acme.example", { url: "/portal/api/devices?tenant=globex" })).json();
    assert.deepEqual(listed.items.map((d: { deviceId: string }) => d.deviceId), ["phone-1", "tablet.7"]);
    // the same name in two tenants is two devices
    assert.equal((await as("gus@globex.example", { url: "/portal/api/devices/phone-1" })).json().device.count, 1);
    assert.equal((await as("ada@acme.example", { url: "/portal/api/devices/phone-1" })).json().device.count, 2);

    refused(await as("ada@acme.example", { method: "POST", url: "/portal/api/devices/globex-only:1/reset?tenant=globex" }), catalog.PORTAL_NOT_FOUND);
    const untouched = await t.runtime.stores.durable.getDevice(globex.tenantId, "globex-only:1");
    assert.ok(untouched?.pin, "globex's pin is still there");
    assert.equal(untouched.resets, 0);
  });

  it("a viewer may not reset, nor anyone without the CSRF token; nothing changes", async () => {
    refused(await as("vic@acme.example", { method: "POST", url: "/portal/api/devices/tablet.7/reset" }), catalog.PORTAL_FORBIDDEN);
    refused(await as("ada@acme.example", { method: "POST", url: "/portal/api/devices/tablet.7/reset", csrf: false }), catalog.PORTAL_CSRF);
    refused(await as("ada@acme.example", { method: "POST", url: "/portal/api/devices/tablet.7/reset", csrf: "wrong" }), catalog.PORTAL_CSRF);
    const d = await t.runtime.stores.durable.getDevice(acme.tenantId, "tablet.7");
    assert.ok(d?.pin);
    assert.equal(d.resets, 0);
    assert.deepEqual(await t.runtime.stores.durable.queryAudit({ tenantId: acme.tenantId, targetId: "tablet.7" }), []);
  });

  it("a tenant admin resets a pin: recorded with who did it, the history kept, the next Yes pins afresh", async () => {
    const before = await t.runtime.stores.durable.getDevice(acme.tenantId, "tablet.7");
    const res = await as("ada@acme.example", { method: "POST", url: "/portal/api/devices/tablet.7/reset" });
    assert.equal(res.statusCode, 200, res.body);
    const reset = res.json();
    assert.deepEqual(reset, { deviceId: "tablet.7", at: new Date(T0).toISOString(), by: "ada@acme.example", previousPin: before!.pin });

    const after = await t.runtime.stores.durable.getDevice(acme.tenantId, "tablet.7");
    assert.equal(after!.pin, null);
    assert.equal(after!.resets, 1);
    assert.equal(after!.count, before!.count, "the history stays");
    // one home: the reset is the audit trail's record, with the person, where from, and the pin it cleared
    const audit = await t.runtime.stores.durable.queryAudit({ tenantId: acme.tenantId, targetKind: "device", targetId: "tablet.7" });
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.action, "device.pin-reset");
    assert.deepEqual(audit[0]!.actor, { kind: "user", id: audit[0]!.actor.id, email: "ada@acme.example" });
    assert.equal(audit[0]!.from.kind, "http");
    assert.deepEqual(audit[0]!.before, { pin: before!.pin });
    assert.deepEqual(audit[0]!.after, { pin: null });

    const shown = (await as("vic@acme.example", { url: "/portal/api/devices/tablet.7" })).json();
    assert.deepEqual(shown.resets, [reset]);
    const page = await as("vic@acme.example", { url: "/portal/devices/tablet.7" });
    assert.match(page.body, /<td[^>]* data-label="By"[^>]*>ada@acme.example<\/td>/);
    assert.match(page.body, /Not pinned: the device's next <code>Yes<\/code> pins it\./);
    const adminPage = await as("ada@acme.example", { url: "/portal/devices/tablet.7" });
    assert.doesNotMatch(adminPage.body, /data-api="\/portal\/api\/devices\/tablet\.7\/reset"/, "nothing left to reset");

    // a different device under that name is accepted now, and pins
    assert.equal(await attest("acme", "tablet.7", 0), "first");
    refused(await as("ada@acme.example", { method: "POST", url: "/portal/api/devices/never-seen/reset" }), catalog.PORTAL_NOT_FOUND);
  });

  it("an operator names the tenant, and resets any tenant's device", async () => {
    refused(await as("root@example.org", { url: "/portal/api/devices" }), catalog.PORTAL_INVALID_REQUEST);
    const pick = await as("root@example.org", { url: "/portal/devices" });
    assert.equal(pick.statusCode, 200);
    assert.match(pick.body, /href="\/portal\/devices\?tenant=globex"/);
    const listed = (await as("root@example.org", { url: "/portal/api/devices?tenant=globex" })).json();
    assert.deepEqual(listed.items.map((d: { deviceId: string }) => d.deviceId), ["globex-only:1", "phone-1"]);
    const page = await as("root@example.org", { url: "/portal/devices/globex-only:1?tenant=globex" });
    assert.match(page.body, /data-api="\/portal\/api\/devices\/globex-only%3A1\/reset\?tenant=globex"/);

    const res = await as("root@example.org", { method: "POST", url: "/portal/api/devices/globex-only:1/reset?tenant=globex" });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().by, "root@example.org");
    assert.equal((await t.runtime.stores.durable.getDevice(globex.tenantId, "globex-only:1"))!.pin, null);
  });

  it("/openapi.json documents the device routes with their error answers", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; tags?: string[] }>>;
    };
    const expected: Record<string, string[]> = {
      "/portal/api/devices": ["get"],
      "/portal/api/devices/{deviceId}": ["get"],
      "/portal/api/devices/{deviceId}/reset": ["post"],
    };
    for (const [p, methods] of Object.entries(expected)) {
      assert.deepEqual(Object.keys(doc.paths[p] ?? {}).sort(), methods, p);
      for (const [method, op] of Object.entries(doc.paths[p]!)) {
        assert.deepEqual(op.tags, ["portal"], `${method} ${p}`);
        assert.ok(["400", "401", "404"].every((s) => s in op.responses), `${method} ${p} lists its errors`);
        if (method !== "get") assert.ok("403" in op.responses, `${method} ${p} lists 403`);
      }
    }
    assert.equal(doc.paths["/portal/devices"], undefined, "pages are not part of the API");
  });
});
