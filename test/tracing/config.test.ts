import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { loadConfig } from "../../src/config.ts";
import { otlpHeadersProblem, parseOtlpHeaders } from "../../src/tracing/otlpHeaders.ts";
import { tracesUrl } from "../../src/tracing/sdk.ts";

describe("tracing settings", () => {
  it("are off by default, with the documented defaults", () => {
    const c = loadConfig({}, {});
    assert.equal(c.otlpEndpoint, undefined);
    assert.equal(c.otlpHeaders, undefined);
    assert.equal(c.traceSampleRatio, 1);
    assert.equal(c.serviceName, "attestd");
  });

  it("--otlp-endpoint takes https anywhere and http to a loopback address only", () => {
    assert.equal(loadConfig({ otlpEndpoint: "https://collector.example:4318" }, {}).otlpEndpoint, "https://collector.example:4318");
    assert.equal(loadConfig({ otlpEndpoint: "http://127.0.0.1:4318" }, {}).otlpEndpoint, "http://127.0.0.1:4318");
    assert.equal(loadConfig({}, { ATTESTD_OTLP_ENDPOINT: "http://localhost:4318" }).otlpEndpoint, "http://localhost:4318");
    assert.throws(() => loadConfig({ otlpEndpoint: "http://collector.example:4318" }, {}), /--otlp-endpoint http:\/\/collector.example:4318 must be an https URL/);
    assert.throws(() => loadConfig({ otlpEndpoint: "grpc://127.0.0.1:4317" }, {}), /--otlp-endpoint .* must be an https URL/);
    assert.throws(() => loadConfig({ otlpEndpoint: "collector:4318" }, {}), /--otlp-endpoint/);
    assert.throws(() => loadConfig({ otlpEndpoint: "https://u:hunter2@collector.example" }, {}), (e: Error) => e.message === "--otlp-endpoint must not carry a user or password");
  });

  it("--otlp-headers is checked without repeating its value", () => {
    assert.deepEqual(parseOtlpHeaders(loadConfig({ otlpHeaders: "Authorization=Bearer%20abc,x-tenant=t1" }, {}).otlpHeaders), {
      authorization: "Bearer abc",
      "x-tenant": "t1",
    });
    for (const bad of ["no-equals-sign-hunter2", "=hunter2", "bad name=hunter2", "x=hunter2%0d%0aInjected: 1", "x=%E0%A4%Ahunter2"]) {
      assert.throws(
        () => loadConfig({ otlpHeaders: bad }, {}),
        (e: Error) => e.message.startsWith("--otlp-headers ") && !e.message.includes("hunter2"),
        bad,
      );
    }
  });

  it("--trace-sample-ratio is a number from 0 to 1", () => {
    assert.equal(loadConfig({ traceSampleRatio: "0.25" }, {}).traceSampleRatio, 0.25);
    assert.equal(loadConfig({ traceSampleRatio: 0 }, {}).traceSampleRatio, 0);
    assert.throws(() => loadConfig({ traceSampleRatio: "1.5" }, {}), /trace-sample-ratio must be at most 1/);
    assert.throws(() => loadConfig({ traceSampleRatio: "-0.1" }, {}), /trace-sample-ratio must be at least 0/);
  });

  it("the traces URL is the endpoint with /v1/traces, unless it ends with it", () => {
    assert.equal(tracesUrl("http://127.0.0.1:4318"), "http://127.0.0.1:4318/v1/traces");
    assert.equal(tracesUrl("https://c.example/otlp/"), "https://c.example/otlp/v1/traces");
    assert.equal(tracesUrl("https://c.example/v1/traces"), "https://c.example/v1/traces");
  });

  it("any --otlp-headers value is refused or parsed into at most 16 headers without line breaks (fuzzed)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.array(fc.tuple(fc.string(), fc.string()), { maxLength: 20 }).map((kv) => kv.map(([k, v]) => `${k}=${v}`).join(","))), (value) => {
        if (otlpHeadersProblem(value) !== undefined) return;
        const headers = parseOtlpHeaders(value);
        const entries = Object.entries(headers);
        assert.ok(entries.length >= 1 && entries.length <= 16);
        for (const [name, v] of entries) {
          assert.match(name, /^[!#$%&'*+.^_`|~0-9a-z-]+$/);
          assert.doesNotMatch(v, /[\r\n\0]/);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
