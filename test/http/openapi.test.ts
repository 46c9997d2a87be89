import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { API_TAGS } from "../../src/http/openapi.ts";
import { NONCE_PATTERN } from "../../src/nonces/nonce.ts";
import { PACKAGE_VERSION } from "../../src/packageInfo.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

type Json = Record<string, any>;

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Every operation of the document: its method, path and Operation Object. */
function operations(doc: Json): { method: string; path: string; op: Json }[] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ method, path, op: op as Json })),
  );
}

/** Every Schema Object of the document, with where it sits. */
function schemaObjects(doc: Json): [where: string, schema: unknown][] {
  const found: [string, unknown][] = Object.entries(doc.components?.schemas ?? {}).map(([name, s]) => [`components.schemas.${name}`, s]);
  const media = (where: string, content: Json | undefined) => {
    for (const [type, m] of Object.entries(content ?? {})) if ((m as Json).schema) found.push([`${where} ${type}`, (m as Json).schema]);
  };
  for (const { method, path, op } of operations(doc)) {
    const at = `${method.toUpperCase()} ${path}`;
    for (const p of op.parameters ?? []) if (p.schema) found.push([`${at} parameter ${p.name}`, p.schema]);
    media(`${at} requestBody`, op.requestBody?.content);
    for (const [status, r] of Object.entries(op.responses as Json)) {
      media(`${at} ${status}`, (r as Json).content);
      for (const [name, h] of Object.entries((r as Json).headers ?? {})) found.push([`${at} ${status} header ${name}`, (h as Json).schema]);
    }
  }
  return found;
}

/**
 * The Schema Objects that are not JSON Schema 2020-12, the dialect of OpenAPI 3.1. The OpenAPI schema the validator
 * holds a 3.1 document to leaves Schema Objects open (any object passes), so they are checked against the
 * 2020-12 meta-schema here; OpenAPI's own keywords (example, discriminator, xml) are unknown keywords to it, allowed.
 */
function schemaProblems(doc: Json): string[] {
  const ajv = new Ajv2020({ strict: false });
  return schemaObjects(doc).flatMap(([where, schema]) =>
    ajv.validateSchema(schema as object) ? [] : [`${where}: ${ajv.errorsText(ajv.errors)}`],
  );
}

describe("/openapi.json", () => {
  let t: TestRuntime;
  let doc: Json;
  before(async () => {
    t = await startTestRuntime();
    const res = await t.runtime.app.inject({ method: "GET", url: "/openapi.json" });
    assert.equal(res.statusCode, 200);
    doc = res.json();
  });
  after(async () => t.close());

  it("is attestd's, at the package's version, and lists the relying party's calls first, then each tag in turn", () => {
    assert.equal(doc.info.title, "attestd");
    assert.equal(doc.info.version, PACKAGE_VERSION);
    const ops = operations(doc);
    assert.deepEqual(
      ops.slice(0, 5).map((o) => o.op.operationId),
      ["issueNonce", "appraiseBlob", "appraiseBatch", "getVerdict", "getDevice"],
    );
    // tags come in API_TAGS order: attestation, results, enrollment, portal, operations, never back again
    const tagRanks = ops.map((o) => API_TAGS.findIndex((t) => t.name === o.op.tags[0]));
    assert.deepEqual(tagRanks, [...tagRanks].sort((a, b) => a - b));
    assert.equal(new Set(tagRanks).size, API_TAGS.length);
  });

  it("is OpenAPI 3.1, valid under the OpenAPI schema, every reference resolving", async () => {
    assert.equal(doc.openapi, "3.1.0");
    const result = await new Validator().validate(structuredClone(doc));
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
  });

  it("every Schema Object in it is JSON Schema 2020-12", () => {
    assert.ok(schemaObjects(doc).length > 100, "the walk reaches the operations' schemas, not only components");
    assert.deepEqual(schemaProblems(doc), []);
    const broken = structuredClone(doc);
    broken.components.schemas.VerdictRecord.required = "measurements";
    assert.match(schemaProblems(broken).join("\n"), /^components\.schemas\.VerdictRecord: .*required/m);
  });

  it("claimed as 3.0.3 the same document is invalid: 3.0's dialect has only a boolean exclusiveMinimum", async () => {
    const result = await new Validator({ allErrors: true }).validate({ ...structuredClone(doc), openapi: "3.0.3" });
    assert.equal(result.valid, false);
    assert.match(JSON.stringify(result.errors), /exclusiveMinimum/);
  });

  it("every operation has a unique, readable operationId and at least one tag the document describes", () => {
    const ops = operations(doc);
    assert.ok(ops.length >= 70, `${ops.length} operations`);
    const named = new Map<string, string[]>();
    for (const { method, path, op } of ops) {
      const at = `${method.toUpperCase()} ${path}`;
      // camelCase: what generators make method names of as it is
      assert.match(String(op.operationId), /^[a-z][a-zA-Z0-9]+$/, `${at} has an operationId`);
      named.set(op.operationId, [...(named.get(op.operationId) ?? []), at]);
      assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${at} has a tag`);
    }
    assert.deepEqual([...named].filter(([, at]) => at.length > 1), [], "no operationId is used twice");

    const described = new Map((doc.tags as Json[]).map((t) => [t.name as string, t.description as string]));
    const used = new Set(ops.flatMap(({ op }) => op.tags as string[]));
    assert.deepEqual([...used].filter((tag) => !described.get(tag)), [], "every tag used is described");
    assert.deepEqual([...described.keys()].filter((tag) => !used.has(tag)), [], "every tag described is used");
  });

  it("the relying party's operations keep their operationIds: renaming one breaks every client generated with it", () => {
    const id = (method: string, path: string) => doc.paths[path][method].operationId;
    assert.equal(id("post", "/v2/nonces"), "issueNonce");
    assert.equal(id("post", "/v2/blobs"), "appraiseBlob");
    assert.equal(id("get", "/api/v1/verdicts/{objectId}"), "getVerdict");
    assert.equal(id("post", "/api/v1/transaction"), "appraiseBatch");
    assert.equal(id("get", "/.well-known/jwks.json"), "getResultKeys");
    assert.equal(id("post", "/svc/v1/auth/accesstoken"), "issueAccessToken");
    assert.equal(id("get", "/svc/v1/enroll/profiles"), "listProfiles");
  });

  it("/metrics is documented as the text it is, and still answers that text", async () => {
    const media = doc.paths["/metrics"].get.responses["200"].content;
    assert.deepEqual(Object.keys(media), ["text/plain"]);
    const res = await t.runtime.app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    assert.match(res.body, /^# HELP /);
  });

  describe("POST /v2/blobs: the document says what to send; the server answers as before", () => {
    const blobs = () => doc.paths["/v2/blobs"].post;
    const post = (query: string, headers: Record<string, string>, payload: string | Buffer) =>
      t.runtime.app.inject({ method: "POST", url: `/v2/blobs${query}`, headers: { [KEY_HEADER]: t.key, ...headers }, payload });
    const nonce = async () =>
      (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
    const code = (res: { statusCode: number; json(): any }) => [res.statusCode, res.json().error?.code];
    const OCTET = { "content-type": "application/octet-stream" };

    it("nonce is a required query parameter with the nonce's pattern; deviceId stays optional", () => {
      const params = Object.fromEntries((blobs().parameters as Json[]).map((p) => [p.name, p]));
      assert.equal(params.nonce.in, "query");
      assert.equal(params.nonce.required, true);
      assert.equal(params.nonce.schema.pattern, NONCE_PATTERN);
      assert.equal(params.deviceId.required, false);
    });

    it("the body is required bytes, application/octet-stream, in the vendor, DER, PEM, x5c and Play Integrity forms", () => {
      const body = blobs().requestBody;
      assert.equal(body.required, true);
      assert.deepEqual(Object.keys(body.content), ["application/octet-stream"]);
      const forms = Object.fromEntries((body.content["application/octet-stream"].schema.anyOf as Json[]).map((f) => [f.title, f]));
      assert.deepEqual(Object.keys(forms), ["vendor container", "android-key: DER certificates", "android-key: PEM bundle", "android-key: x5c JSON", "play-integrity: integrity token", "app-attest: attestation object", "app-attest: assertion"]);
      // bytes where the form is binary (generators make a Blob or a byte array of it), text where it is text
      assert.equal(forms["vendor container"].format, "binary");
      assert.equal(forms["android-key: DER certificates"].format, "binary");
      assert.equal(forms["android-key: PEM bundle"].contentMediaType, "application/pem-certificate-chain");
      assert.equal(forms["android-key: x5c JSON"].contentMediaType, "application/json");
      assert.deepEqual(forms["android-key: x5c JSON"].contentSchema.required, ["x5c"]);
      assert.ok(new RegExp(forms["play-integrity: integrity token"].pattern).test(" a.b.c.d.e\n"));
      assert.equal(forms["app-attest: attestation object"].format, "binary");
      assert.deepEqual(forms["app-attest: assertion"].contentSchema.required, ["keyId", "assertion"]);
    });

    it("a missing nonce is still the catalog's NONCE_REQUIRED, and still checked after the body", async () => {
      assert.deepEqual(code(await post("", OCTET, Buffer.from([1]))), [400, "4000001"]);
      assert.deepEqual(code(await post("?nonce=", OCTET, Buffer.from([1]))), [400, "4000001"]);
      // the document's pattern is not the route's: a malformed nonce is NONCE_INVALID, after the body checks too
      assert.deepEqual(code(await post("?nonce=short", OCTET, Buffer.from([1]))), [400, "4000002"]);
      assert.deepEqual(code(await post("", OCTET, Buffer.alloc(0))), [400, "4000005"]);
      assert.deepEqual(code(await post("?nonce=short", OCTET, Buffer.alloc(0))), [400, "4000005"]);
    });

    it("the PEM and x5c forms are read from application/octet-stream, the one type declared; their own types are 415", async () => {
      const pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
      const x5c = JSON.stringify({ x5c: ["AAAA"] });
      for (const type of Object.keys(blobs().requestBody.content)) {
        for (const [body, read] of [[pem, "PEM bundle"], [x5c, "x5c JSON"]] as const) {
          const res = await post(`?nonce=${await nonce()}`, { "content-type": type }, body);
          assert.deepEqual(code(res), [400, "4000006"], res.body);
          assert.match(res.json().error.reason, new RegExp(`^android-key \\(${read}\\)`));
        }
      }
      const n = await nonce();
      assert.deepEqual(code(await post(`?nonce=${n}`, { "content-type": "application/pem-certificate-chain" }, pem)), [415, "4150000"]);
      assert.deepEqual(code(await post(`?nonce=${n}`, { "content-type": "application/json" }, x5c)), [415, "4150000"]);
    });
  });
});
