import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { XMLParser } from "fast-xml-parser";
import { catalogEntries } from "../../src/errors/catalog.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/** Every Part A code reached over HTTP is recorded here; the last test checks the catalog is covered. */
const seen = new Set<string>();

interface Res {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
  json(): any;
}

function expectError(res: Res, status: number, code: string): any {
  assert.equal(res.statusCode, status, `status: ${res.body}`);
  const body = res.json();
  assert.equal(body.result, "FAIL");
  assert.equal(body.error.code, code, `code: ${res.body}`);
  assert.equal(typeof body.error.message, "string");
  assert.equal(typeof body.error.reason, "string");
  assert.ok(!/\bat .+:\d+:\d+/.test(res.body), "no stack trace in the body");
  seen.add(code);
  return body;
}

const OCTET = { "content-type": "application/octet-stream" };

describe("Part A errors over HTTP", () => {
  let t: TestRuntime;
  const post = (url: string, headers: Record<string, string> = {}, payload?: string | Buffer) =>
    t.runtime.app.inject({ method: "POST", url, headers: { [KEY_HEADER]: t.key, ...headers }, payload }) as Promise<Res>;
  const nonce = async () => (await post("/v2/nonces")).json().nonce as string;

  before(async () => {
    t = await startTestRuntime({ maxOutstandingNonces: 1000, maxBatch: 2, maxBlobBytes: 1024 });
  });
  after(async () => t.close());

  it("401 when the key is missing, malformed, unknown, wrong or revoked", async () => {
    const noKey = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces" });
    assert.match(expectError(noKey, 401, "4010000").error.reason, /missing/);
    assert.equal(noKey.json().error.message, "AUTHORIZATION_FAIL");
    for (const bad of ["nonsense", "atd_aaaaaaaaaa_" + "A".repeat(43), t.key.slice(0, -1) + (t.key.endsWith("A") ? "B" : "A")]) {
      const res = await post("/v2/nonces", { [KEY_HEADER]: bad });
      assert.match(expectError(res, 401, "4010000").error.reason, /invalid/);
    }
    const extra = await t.addTenant("revoked-co");
    assert.equal((await post("/v2/nonces", { [KEY_HEADER]: extra.key })).statusCode, 200);
    await t.runtime.stores.durable.revokeApiKey(extra.keyId, new Date().toISOString());
    t.clock.advance(5_000); // past the key cache
    expectError(await post("/v2/nonces", { [KEY_HEADER]: extra.key }), 401, "4010000");
  });

  it("403 when the key's tenant is blocked or inactive", async () => {
    for (const state of ["blocked", "inactive"] as const) {
      const other = await t.addTenant(`t-${state}`);
      await t.runtime.stores.durable.setTenantState(other.tenant.name, state);
      const res = await post("/v2/nonces", { [KEY_HEADER]: other.key });
      assert.match(expectError(res, 403, "4030000").error.reason, new RegExp(state));
      assert.equal(res.json().error.message, "AUTHORIZATION_FAIL");
    }
  });

  it("405 with Allow: POST for other methods, before the key is checked", async () => {
    for (const url of ["/v2/nonces", "/v2/blobs?nonce=x"]) {
      for (const method of ["GET", "PUT", "DELETE", "PATCH"] as const) {
        const res = (await t.runtime.app.inject({ method, url })) as Res;
        expectError(res, 405, "4050000");
        assert.equal(res.headers.allow, "POST");
      }
    }
  });

  it("406 when Accept allows neither JSON nor XML, answered in JSON", async () => {
    const n = await nonce();
    for (const accept of ["text/html", "application/json;q=0, text/plain", "image/*"]) {
      const res = await post(`/v2/blobs?nonce=${n}`, { ...OCTET, accept }, Buffer.from([1]));
      expectError(res, 406, "4060000");
      assert.match(String(res.headers["content-type"]), /application\/json/);
    }
  });

  it("errors follow the negotiated type: XML <error> for Accept: application/xml", async () => {
    const res = await post("/v2/blobs", { ...OCTET, accept: "text/html;q=0.5, application/xml" }, Buffer.from([1]));
    assert.equal(res.statusCode, 400);
    assert.match(String(res.headers["content-type"]), /application\/xml/);
    assert.ok(res.body.startsWith('<?xml version="1.0" encoding="UTF-8"?><error>'));
    const doc = new XMLParser({ parseTagValue: false }).parse(res.body);
    assert.equal(doc.error.result, "FAIL");
    assert.equal(doc.error.code, "4000001");
    assert.equal(doc.error.message, "NONCE_REQUIRED");
  });

  it("415 when the body is not application/octet-stream", async () => {
    const n = await nonce();
    for (const headers of [{ "content-type": "application/json" }, { "content-type": "text/plain" }, {}] as Record<string, string>[]) {
      const res = await post(`/v2/blobs?nonce=${n}`, headers, headers["content-type"] === "application/json" ? "{}" : "x");
      expectError(res, 415, "4150000");
    }
  });

  it("422 BLOB_TOO_LARGE above maxBlobBytes and 400 BLOB_EMPTY for an empty body; the nonce survives both", async () => {
    const n = await nonce();
    expectError(await post(`/v2/blobs?nonce=${n}`, OCTET, Buffer.alloc(1025, 1)), 422, "4220001");
    expectError(await post(`/v2/blobs?nonce=${n}`, OCTET, Buffer.alloc(0)), 400, "4000005");
    // size and emptiness are checked before the nonce, so it is still unused
    expectError(await post(`/v2/blobs?nonce=${n}`, OCTET, Buffer.from([9, 9, 9])), 400, "4000006");
  });

  it("nonce errors: required, invalid (malformed, unknown, another tenant's), expired, already used", async () => {
    expectError(await post("/v2/blobs", OCTET, Buffer.from([1])), 400, "4000001");
    expectError(await post("/v2/blobs?nonce=", OCTET, Buffer.from([1])), 400, "4000001");
    expectError(await post("/v2/blobs?nonce=short", OCTET, Buffer.from([1])), 400, "4000002");
    expectError(await post(`/v2/blobs?nonce=${"A".repeat(43)}`, OCTET, Buffer.from([1])), 400, "4000002");
    expectError(await post("/v2/blobs?nonce=a&nonce=b", OCTET, Buffer.from([1])), 400, "4000002");
    const other = await t.addTenant("other-co");
    const theirs = (await post("/v2/nonces", { [KEY_HEADER]: other.key })).json().nonce;
    expectError(await post(`/v2/blobs?nonce=${theirs}`, OCTET, Buffer.from([1])), 400, "4000002");
    const old = await nonce();
    t.clock.advance(t.config.nonceTtl * 1000);
    expectError(await post(`/v2/blobs?nonce=${old}`, OCTET, Buffer.from([1])), 400, "4000003");
    const n = await nonce();
    expectError(await post(`/v2/blobs?nonce=${n}`, OCTET, Buffer.from([1, 2, 3])), 400, "4000006");
    expectError(await post(`/v2/blobs?nonce=${n}`, OCTET, Buffer.from([1, 2, 3])), 400, "4000004");
  });

  it("501 for a recognised but unsupported container version (1)", async () => {
    const n = await nonce();
    const v1 = Buffer.from([0x00, 0x07, ...Buffer.from("Success"), 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]);
    expectError(await post(`/v2/blobs?nonce=${n}`, OCTET, v1), 501, "5010000");
  });

  it("422 NONCE_LIMIT_EXCEEDED past the per-tenant cap; expired nonces do not count", async () => {
    const small = await startTestRuntime({ maxOutstandingNonces: 3 });
    try {
      const issue = () =>
        small.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: small.key } }) as Promise<Res>;
      for (let i = 0; i < 3; i++) assert.equal((await issue()).statusCode, 200);
      expectError(await issue(), 422, "4220003");
      small.clock.advance(small.config.nonceTtl * 1000 + 1);
      assert.equal((await issue()).statusCode, 200);
    } finally {
      await small.close();
    }
  });

  it("429 with Retry-After and RateLimit headers past the key's bucket", async () => {
    const limited = await t.addTenant("slow-co", { rps: 1, burst: 2 });
    const hit = () => post("/v2/nonces", { [KEY_HEADER]: limited.key });
    assert.equal((await hit()).statusCode, 200);
    const second = await hit();
    assert.equal(second.statusCode, 200);
    assert.match(String(second.headers["ratelimit-policy"]), /^2;w=2$/);
    const third = await hit();
    expectError(third, 429, "4290000");
    assert.equal(third.headers["retry-after"], "1");
    t.clock.advance(1000);
    assert.equal((await hit()).statusCode, 200);
  });

  it("batch: 422 BATCH_TOO_LARGE above maxBatch, 400 INVALID_REQUEST for a malformed body", async () => {
    const items = [1, 2, 3].map((i) => ({ requestedId: `r${i}`, nonce: "x", blob: "AA==" }));
    const tooMany = await post("/api/v1/transaction", { "content-type": "application/json" }, JSON.stringify({ items }));
    expectError(tooMany, 422, "4220002");
    expectError(await post("/api/v1/transaction", { "content-type": "application/json" }, '{"things": []}'), 400, "4000000");
    expectError(await post("/api/v1/transaction", { "content-type": "application/json" }, "{not json"), 400, "4000000");
  });

  it("404 for unknown paths and unknown verdicts", async () => {
    expectError((await t.runtime.app.inject({ method: "GET", url: "/v3/nothing" })) as Res, 404, "4040000");
    const res = (await t.runtime.app.inject({
      method: "GET",
      url: "/api/v1/verdicts/doesnotexist",
      headers: { [KEY_HEADER]: t.key },
    })) as Res;
    expectError(res, 404, "4040000");
  });

  it("500 names an error id that is in the log, and leaks nothing of the failure", async () => {
    const store = t.runtime.stores.durable;
    const original = store.getVerdict.bind(store);
    store.getVerdict = async () => {
      throw new Error("connection to db-internal-7 refused: password=hunter2");
    };
    try {
      const res = (await t.runtime.app.inject({
        method: "GET",
        url: "/api/v1/verdicts/anything",
        headers: { [KEY_HEADER]: t.key },
      })) as Res;
      const body = expectError(res, 500, "5000000");
      assert.match(body.error.reason, /error id [A-Za-z0-9_-]{16}/);
      assert.ok(!res.body.includes("hunter2") && !res.body.includes("db-internal"));
    } finally {
      store.getVerdict = original;
    }
  });

  it("reaches every Part A code of the catalog", () => {
    // 503 has its own tests (test/store/unavailable.test.ts, test/e2e/lockedStore.test.ts); node:http's refusals
    // (408, 431) need real sockets: test/http/connections.test.ts
    const elsewhere = new Set(["SERVICE_UNAVAILABLE", "REQUEST_TIMEOUT", "HEADERS_TOO_LARGE"]);
    const partA = catalogEntries
      .filter((e) => e.part === "A" || (e.part === "AB" && !elsewhere.has(e.key)))
      .map((e) => e.code);
    const missing = partA.filter((c) => !seen.has(c));
    assert.deepEqual(missing, [], `codes never reached over HTTP: ${missing.join(", ")}`);
  });
});
