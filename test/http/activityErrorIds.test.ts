import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { accessTokenRequest, apiToken, parseClientKeys, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { ERROR_ID_HEADER } from "../../src/http/errorHandler.ts";
import { PAGE_SIZE } from "../../src/portal/history.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { createApiKeyFor, KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

const ERROR_ID = /^[0-9a-f]{24}$/;

interface ActivityJson {
  items: { errorId: string | null; route: string; status: number; code: string | null; message: string | null; clientId: string | null; seq: number }[];
  next?: string;
  prev?: string;
}

/**
 * The errorId a customer sees and the Activity log that finds it: every error answer of every API (Part A, Part B,
 * the admin API) names its errorId in the X-Error-Id header (and in the body where the body has the field), the
 * activity log keeps the request under it, and the portal's deep link /portal/activity?errorId=… finds it. Then the
 * log as a page: the APIs' requests by default, the message beside the code, errors marked in words, paging both
 * ways, a filter by key.
 */
describe("errorIds and the Activity log", () => {
  let t: TestRuntime;
  let portal: ReturnType<typeof portalPeople>;
  let keyId: string;
  const as = (email: string, url: string) => portal.as(email, { url });
  const partA = (method: "GET" | "POST", url: string, headers: Record<string, string> = {}, payload?: string | Buffer) =>
    t.runtime.app.inject({ method, url, headers: { [KEY_HEADER]: t.key, ...headers }, ...(payload !== undefined ? { payload } : {}) });

  /** The errorId of an error answer: in the header, and the same in the body when the body has the field. */
  function errorIdOf(res: LightMyRequestResponse, status: number, code: string): string {
    assert.equal(res.statusCode, status, res.body);
    const id = res.headers[ERROR_ID_HEADER.toLowerCase()];
    assert.equal(typeof id, "string", `${ERROR_ID_HEADER} on ${status} ${res.body}`);
    assert.match(id as string, ERROR_ID);
    const body = res.json() as { errorId?: string; code?: string; error?: { code: string } };
    assert.equal(body.code ?? body.error?.code, code);
    if ("errorId" in body) assert.equal(body.errorId, id, "body and header name the same errorId");
    return id as string;
  }

  /** The activity row of an errorId, read through the admin API as `email`, and the deep-link page showing it. */
  async function found(email: string, errorId: string, tenant?: string): Promise<ActivityJson["items"][number] | undefined> {
    await t.runtime.activity.flush();
    const q = `errorId=${errorId}${tenant ? `&tenant=${tenant}` : ""}`;
    const api = (await as(email, `/portal/api/activity?${q}`)).json() as ActivityJson;
    const page = await as(email, `/portal/activity?${q}`);
    assert.equal(page.statusCode, 200);
    const row = api.items[0];
    assert.equal(page.body.includes(`>${errorId}</a>`), row !== undefined, "the deep link shows the row when the API finds it");
    return row;
  }

  before(async () => {
    t = await startTestRuntime({}, { enrollment: { startWorker: false, tenantKeyBits: 2048 } });
    portal = portalPeople(t);
    await portal.add("ada@acme.example", "admin", "acme");
    await portal.add("root@example.org", "operator");
    await t.addTenant("globex");
    await portal.add("gus@globex.example", "admin", "globex");
    keyId = (await t.runtime.stores.durable.listApiKeys(t.tenant.tenantId))[0]!.keyId;
  });
  after(() => t.close());

  it("Part A: a malformed blob and an unknown nonce carry X-Error-Id, in JSON and XML (the body keeps the spec's shape)", async () => {
    const nonce = (await partA("POST", "/v2/nonces")).json().nonce as string;
    const malformed = await partA("POST", `/v2/blobs?nonce=${nonce}`, { "content-type": "application/octet-stream" }, Buffer.from("not a container"));
    const unknownNonce = await partA("POST", `/v2/blobs?nonce=${"A".repeat(43)}`, { "content-type": "application/octet-stream" }, Buffer.from("x"));
    const xml = await partA("POST", `/v2/blobs?nonce=${"B".repeat(43)}`, { "content-type": "application/octet-stream", accept: "application/xml" }, Buffer.from("x"));
    for (const [res, status, code] of [[malformed, 400, "4000006"], [unknownNonce, 400, "4000002"]] as const) {
      const id = errorIdOf(res, status, code);
      assert.deepEqual(Object.keys(res.json()), ["result", "error"], "attestation-api.md's body, nothing added");
      assert.deepEqual(Object.keys(res.json().error), ["code", "message", "reason"]);
      const row = await found("ada@acme.example", id);
      assert.deepEqual([row?.route, row?.status, row?.code, row?.message, row?.clientId], ["/v2/blobs", status, code, code === "4000006" ? "BLOB_MALFORMED" : "NONCE_INVALID", keyId]);
      assert.equal(await found("gus@globex.example", id), undefined, "another tenant's people do not find it");
    }
    assert.match(String(xml.headers["x-error-id"]), ERROR_ID, "an XML error names it too");
    assert.ok(!xml.body.includes(String(xml.headers["x-error-id"])), "and its body is the spec's, unchanged");
  });

  it("Part A unauthenticated: the header names it; it belongs to no tenant, so the operator finds it", async () => {
    const res = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces" });
    const id = errorIdOf(res, 401, "4010000");
    assert.equal(await found("ada@acme.example", id), undefined);
    const page = await as("ada@acme.example", `/portal/activity?errorId=${id}`);
    assert.match(page.body, /named no valid API key belongs to no tenant/);
    const row = await found("root@example.org", id);
    assert.deepEqual([row?.status, row?.code, row?.message], [401, "4010000", "AUTHORIZATION_FAIL"]);
  });

  it("Part B and the admin API: the same errorId in the body and the header, found by the deep link", async () => {
    const created = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/clients", payload: { email: "ops@acme.example" } });
    assert.equal(created.statusCode, 200, created.body);
    const k: ClientKeys = parseClientKeys((created.json() as { keysJson: string }).keysJson);
    const token = await t.runtime.app.inject({ method: "POST", url: "/svc/v1/auth/accesstoken", payload: await accessTokenRequest(k, { nowMs: t.clock.nowMs() }) });
    assert.equal(token.statusCode, 200, token.body);
    const header = await apiToken(k, token.json().accessToken, { nowMs: t.clock.nowMs() });
    const partB = await t.runtime.app.inject({ method: "GET", url: "/svc/v1/enroll/profiles?pageNum=-1", headers: { "x-vendor-apitoken": header } });
    const bId = errorIdOf(partB, 400, partB.json().code);
    const bRow = await found("ada@acme.example", bId);
    assert.deepEqual([bRow?.route, bRow?.status], ["/svc/v1/enroll/profiles", 400]);
    assert.equal(typeof bRow?.message, "string");

    const admin = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { rps: -1 } });
    const aId = errorIdOf(admin, 400, "4008000");
    const aRow = await found("ada@acme.example", aId);
    assert.deepEqual([aRow?.route, aRow?.status, aRow?.message], ["/portal/api/keys", 400, "PORTAL_INVALID_REQUEST"]);
  });

  it("the openapi document names X-Error-Id on every error response", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown> }> }>>;
    };
    let errors = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, r] of Object.entries(op.responses ?? {})) {
          if (!/^[45]/.test(status)) continue;
          errors++;
          assert.ok(r.headers?.[ERROR_ID_HEADER], `${method} ${path} ${status}`);
        }
      }
    }
    assert.ok(errors > 50);
  });

  it("lists the APIs' requests by default, the portal's page views on request, errors marked in words beside their message", async () => {
    await t.runtime.activity.flush();
    const api = (await as("ada@acme.example", "/portal/api/activity")).json() as ActivityJson;
    assert.ok(api.items.length > 0);
    assert.ok(api.items.every((e) => !e.route.startsWith("/portal/") || e.route.startsWith("/portal/api/")), "no page views");
    const pages = (await as("ada@acme.example", "/portal/api/activity?kind=portal")).json() as ActivityJson;
    assert.ok(pages.items.some((e) => e.route === "/portal/activity"), "the Activity page's own views are there on request");
    assert.ok(pages.items.every((e) => e.route === "/" || (e.route.startsWith("/portal") && !e.route.startsWith("/portal/api/"))));
    const both = (await as("ada@acme.example", "/portal/api/activity?kind=all")).json() as ActivityJson;
    assert.equal(both.items.length, Math.min(PAGE_SIZE, api.items.length + pages.items.length));

    const page = await as("ada@acme.example", "/portal/activity");
    assert.match(page.body, /<option value="api" selected>API requests<\/option>/);
    assert.match(page.body, /<span class="badge badge-error">Error<\/span>/, "an error says so in words");
    assert.match(page.body, /<code>4000006<\/code> <strong>BLOB_MALFORMED<\/strong>/, "the message beside the code");
    // the frame marks a cell's long values (data-long): the cell's other attributes are not this test's
    const pageView = /<td[^>]*data-label="Request"[^>]*>GET \/portal\/activity<\/td>/;
    assert.doesNotMatch(page.body, pageView, "no page views by default");
    assert.match((await as("ada@acme.example", "/portal/activity?kind=portal")).body, pageView, "but on request");
  });

  it("pages older and newer by key, and filters by API key", async () => {
    const second = await createApiKeyFor(t.runtime.stores.durable, t.tenant, { at: t.clock.nowMs() });
    for (let i = 0; i < PAGE_SIZE + 10; i++) await partA("POST", "/v2/nonces", { [KEY_HEADER]: second.key });
    await t.runtime.activity.flush();

    const first = (await as("ada@acme.example", "/portal/api/activity")).json() as ActivityJson;
    assert.equal(first.items.length, PAGE_SIZE);
    assert.equal(first.prev, undefined, "nothing is newer than the first page");
    assert.ok(first.next);
    const older = (await as("ada@acme.example", `/portal/api/activity?after=${first.next}`)).json() as ActivityJson;
    assert.ok(older.items.length > 0 && older.prev);
    assert.ok(older.items[0]!.seq < first.items[PAGE_SIZE - 1]!.seq, "older continues where the first page ended");
    const back = (await as("ada@acme.example", `/portal/api/activity?before=${older.prev}`)).json() as ActivityJson;
    assert.deepEqual(back.items.map((e) => e.seq), first.items.map((e) => e.seq), "newer from page 2 is page 1 again");
    assert.equal(back.prev, undefined);
    assert.equal(back.next, first.next);
    assert.equal((await as("ada@acme.example", `/portal/api/activity?before=${older.prev}&after=${first.next}`)).statusCode, 400);

    const html = await as("ada@acme.example", `/portal/activity?after=${first.next}`);
    assert.match(html.body, /rel="prev">← Newer requests</);

    const byKey = (await as("ada@acme.example", `/portal/api/activity?key=${second.keyId}`)).json() as ActivityJson;
    assert.equal(byKey.items.length, PAGE_SIZE);
    assert.ok(byKey.items.every((e) => e.clientId === second.keyId && e.route === "/v2/nonces"));
    const byFirst = (await as("ada@acme.example", `/portal/api/activity?key=${keyId}`)).json() as ActivityJson;
    assert.ok(byFirst.items.length > 0 && byFirst.items.every((e) => e.clientId === keyId));
    const keyPage = await as("ada@acme.example", `/portal/activity?key=${second.keyId}`);
    assert.match(keyPage.body, new RegExp(`<option value="${second.keyId}" selected>`), "the key menu lists the tenant's keys");
  });
});
