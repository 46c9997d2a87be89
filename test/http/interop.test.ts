import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { negotiateFormat } from "../../src/http/negotiate.ts";
import { renderXml } from "../../src/http/render.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * Issue 13, item 5: what an ordinary HTTP client sends must work, and what the server writes must parse. The
 * node:http-level refusals (431, a bad request line) are over real sockets in connections.test.ts; the access
 * token's validity range in test/enrollment/tokens.test.ts.
 */

/** every character XML 1.0 allows (its Char production); a document with any other is not well-formed */
const XML_CHARS = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

function assertWellFormed(doc: string): void {
  assert.equal(XMLValidator.validate(doc), true, doc);
  assert.ok(XML_CHARS.test(doc), `a character XML 1.0 forbids in ${JSON.stringify(doc)}`);
}

describe("interop: what ordinary HTTP clients send", () => {
  let t: TestRuntime;
  const inject = (o: { method?: string; url: string; headers?: Record<string, string>; payload?: string }) =>
    t.runtime.app.inject({ method: (o.method ?? "POST") as "POST", url: o.url, headers: { [KEY_HEADER]: t.key, ...o.headers }, payload: o.payload });

  before(async () => {
    t = await startTestRuntime();
  });
  after(async () => t.close());

  it("POST /v2/nonces ignores any body: empty JSON, {}, not JSON, another type", async () => {
    for (const [type, payload] of [
      ["application/json", ""],
      ["application/json; charset=utf-8", ""],
      ["application/json", "{}"],
      ["application/json", "not json {"],
      ["application/x-www-form-urlencoded", "a=b"],
      ["text/plain", "hello"],
    ] as const) {
      const res = await inject({ url: "/v2/nonces", headers: { "content-type": type }, payload });
      assert.equal(res.statusCode, 200, `${type} ${JSON.stringify(payload)}: ${res.body}`);
      assert.match(res.json().nonce, /^[A-Za-z0-9_-]{43}$/);
    }
  });

  it("media-type parameters never defeat negotiation; q-values still decide", async () => {
    const nonceWith = (accept: string) => inject({ url: "/v2/nonces", headers: { accept } });
    const json = await nonceWith("application/json; charset=utf-8");
    assert.equal(json.statusCode, 200, json.body);
    assert.match(String(json.headers["content-type"]), /^application\/json/);
    const xml = await nonceWith('application/xml; charset="utf-8"; version=1');
    assert.equal(xml.statusCode, 200, xml.body);
    assert.match(xml.body, /^<\?xml [^>]+\?><nonceResponse><nonce>[A-Za-z0-9_-]{43}<\/nonce><\/nonceResponse>$/);
    assert.match((await nonceWith("application/json;charset=utf-8;q=0.1, application/xml;charset=utf-8")).body, /^<\?xml/);
    const refused = await nonceWith("text/html; charset=utf-8");
    assert.equal(refused.statusCode, 406);
    assert.equal(refused.json().error.code, "4060000");
  });

  it("negotiation is the same with or without any parameters but q (property)", () => {
    const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
    const quoted = fc.string({ maxLength: 12 }).map((v) => `"${v.replace(/["\\]/g, "")}"`);
    const param = fc.tuple(token.filter((k) => k !== "q"), fc.oneof(token, quoted)).map(([k, v]) => `${k}=${v}`);
    const type = fc.constantFrom("application/json", "application/xml", "text/xml", "application/*", "*/*", "text/html", "image/png");
    const range = fc.tuple(type, fc.array(param, { maxLength: 3 }), fc.option(fc.constantFrom("0", "0.5", "1"), { nil: undefined }));
    fc.assert(
      fc.property(fc.array(range, { minLength: 1, maxLength: 4 }), (ranges) => {
        const bare = ranges.map(([t, , q]) => (q === undefined ? t : `${t};q=${q}`)).join(", ");
        const withParams = ranges.map(([t, ps, q]) => [t, ...ps, ...(q === undefined ? [] : [`q=${q}`])].join("; ")).join(", ");
        assert.equal(negotiateFormat(withParams), negotiateFormat(bare), withParams);
      }),
    );
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (accept) => void negotiateFormat(accept)));
  });

  it("PROPFIND, TRACE and every other method a path does not take answer 405 with Allow, not 404", async () => {
    for (const [url, allow] of [
      ["/v2/nonces", "POST"],
      ["/v2/blobs?nonce=x", "POST"],
      ["/api/v1/transaction", "POST"],
      ["/api/v1/verdicts/anything", "GET"],
    ] as const) {
      for (const method of ["PROPFIND", "TRACE", "MKCOL", "SEARCH", "HEAD", "OPTIONS"]) {
        if (method === "HEAD" && allow === "GET") continue; // HEAD of a GET route is the GET
        const res = await t.runtime.app.inject({ method: method as "GET", url });
        assert.equal(res.statusCode, 405, `${method} ${url}: ${res.body}`);
        assert.equal(res.headers.allow, allow, `${method} ${url}`);
        if (method !== "HEAD") assert.equal(res.json().error.code, "4050000");
      }
    }
    assert.equal((await t.runtime.app.inject({ method: "PROPFIND" as "GET", url: "/v2/elsewhere" })).statusCode, 404);
  });

  it("a batch item whose requestedId holds a control character (or what XML cannot carry) is refused with 400", async () => {
    for (const id of ["a\u0000b", "line\nbreak", "tab\there", "del\u007f", "c1\u0085", "bell\u0007", "\ud800lone", "nonchar\uffff"]) {
      const res = await inject({
        url: "/api/v1/transaction",
        headers: { "content-type": "application/json", accept: "application/xml" },
        payload: JSON.stringify({ items: [{ requestedId: id, nonce: "x", blob: "AA==" }] }),
      });
      assert.equal(res.statusCode, 400, `${JSON.stringify(id)}: ${res.body}`);
      assertWellFormed(res.body);
      const doc = new XMLParser({ parseTagValue: false }).parse(res.body);
      assert.equal(doc.error.code, "4000000");
    }
    const fine = await inject({
      url: "/api/v1/transaction",
      headers: { "content-type": "application/json", accept: "application/xml" },
      payload: JSON.stringify({ items: [{ requestedId: "Ünïcødé <&> \"'", nonce: "x", blob: "AA==" }] }),
    });
    assert.equal(fine.statusCode, 200, fine.body);
    assertWellFormed(fine.body);
    const item = new XMLParser({ parseTagValue: false, processEntities: true }).parse(fine.body).asyncResult.resultList;
    assert.equal(item.requestedId, "Ünïcødé <&> \"'");
  });
});

describe("the XML writer", () => {
  /** a record as the routes pass it: strings, numbers, nested objects, arrays of objects */
  const leaf = fc.oneof(fc.string({ unit: "binary", maxLength: 30 }), fc.integer(), fc.boolean());
  const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9._-]{0,10}$/);
  const record = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, leaf, tie("object"), fc.array(tie("object"), { maxLength: 3 })),
    object: fc.dictionary(name, tie("value"), { maxKeys: 4 }),
  })).object as fc.Arbitrary<Record<string, unknown>>;

  it("writes a well-formed document whatever the values hold, and each value reads back (property)", () => {
    // htmlEntities: also decode character references (&#13;), which are XML's own
    const parser = new XMLParser({ parseTagValue: false, processEntities: true, htmlEntities: true, trimValues: false });
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), (text) => {
        const doc = renderXml("r", { text });
        assertWellFormed(doc);
        const back = parser.parse(doc).r;
        // what XML cannot carry at all comes back as U+FFFD; everything else as it was
        const expected = text.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "\uFFFD");
        assert.equal(back === "" ? "" : String(back.text ?? ""), expected);
      }),
      { numRuns: 2000 },
    );
    fc.assert(fc.property(record, (body) => assertWellFormed(renderXml("root", body))), { numRuns: 500 });
  });

  it("refuses to write an element name that is not an XML name", () => {
    for (const bad of ["@_attr", "#text", "a b", "1st", "<x>", ""]) {
      assert.throws(() => renderXml("r", { [bad]: "v" }), /not an XML element name/, bad);
    }
  });
});
