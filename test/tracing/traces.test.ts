import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import type { FastifyBaseLogger } from "fastify";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { DEFAULT_IMEI, demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { tracingEnabled } from "../../src/tracing/spans.ts";
import { T0 } from "../helpers/clock.ts";
import { KEY_HEADER, offlineFetch, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { startOtlpReceiver, type ReceivedSpan } from "./otlpReceiver.ts";

/**
 * Traces (docs/traces.md) against a collector the test runs on 127.0.0.1: what spans a request makes, how they hang
 * together with the caller's trace, what they say and what they never say, and that a dead or stalled collector
 * costs the requests nothing.
 */

const OCTET = { "content-type": "application/octet-stream" };
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const TCP_TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4737";
const traceparent = (trace = TRACE_ID, parent = CALLER_SPAN) => `00-${trace}-${parent}-01`;

interface Fixture {
  ca: DevCa;
  leaf: CertifiedKey;
  trustFlags: Record<string, string>;
  dir: string;
}

async function vendorFixture(): Promise<Fixture> {
  const now = new Date(T0);
  const ca = await createDevCa({ now });
  const leaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-traces-"));
  writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
  writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
  return { ca, leaf, dir, trustFlags: { vendorRoots: path.join(dir, "roots.pem"), referenceValues: path.join(dir, "refs.json") } };
}

/** a logger whose lines the test reads */
function capturedLogger(): { logger: FastifyBaseLogger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream) as unknown as FastifyBaseLogger, lines };
}

async function until(what: string, test: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** a port nothing listens on */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("traces over OTLP/HTTP", () => {
  let fx: Fixture;
  before(async () => {
    fx = await vendorFixture();
  });
  after(() => rmSync(fx.dir, { recursive: true, force: true }));

  const submit = async (t: TestRuntime, headers: Record<string, string> = {}) => {
    const nonce = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
    const blob = encodeVendorBlob({ ca: fx.ca, leaf: fx.leaf, now: new Date(T0), nonce });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}&deviceId=phone-0042`,
      headers: { [KEY_HEADER]: t.key, ...OCTET, ...headers },
      payload: Buffer.from(blob),
    });
    return { nonce, res };
  };

  describe("a collector that answers", () => {
    let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
    let t: TestRuntime;
    let spans: ReceivedSpan[];
    let nonce: string;
    let answer: Awaited<ReturnType<typeof submit>>["res"];
    const outbound: Headers[] = [];

    before(async () => {
      receiver = await startOtlpReceiver();
      // the network of an offline machine, which keeps the headers of what was sent (Google's status list at start)
      const fetch: typeof globalThis.fetch = async (input, init) => {
        outbound.push(new Headers(init?.headers));
        return offlineFetch(input, init);
      };
      t = await startTestRuntime({ ...fx.trustFlags, otlpEndpoint: receiver.url, otlpHeaders: "x-collector-key=s3cr%3Dt", serviceName: "attestd-test" }, { fetch });
      ({ nonce, res: answer } = await submit(t, { traceparent: traceparent(), tracestate: "vendor=abc" }));
      await t.runtime.app.inject({ method: "GET", url: "/api/v1/verdicts/AAAAAAAAAAAAAAAAAAAAAA", headers: { [KEY_HEADER]: t.key } });
      for (const url of ["/healthz", "/readyz", "/metrics"]) await t.runtime.app.inject({ method: "GET", url });
      // over a real connection too: there the body arrives on the socket's own async context, not the request's
      const origin = await t.runtime.app.listen({ host: "127.0.0.1", port: 0 });
      const overTcpNonce = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
      const body = Buffer.from(encodeVendorBlob({ ca: fx.ca, leaf: fx.leaf, now: new Date(T0), nonce: overTcpNonce }));
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${origin}/v2/blobs?nonce=${overTcpNonce}`, {
          method: "POST",
          headers: { [KEY_HEADER]: t.key, ...OCTET, "content-length": body.length, traceparent: traceparent(TCP_TRACE_ID) },
        });
        req.on("response", (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        });
        req.on("error", reject);
        // the body's second half a little later, as a slow network delivers it: it is read in a later event
        req.write(body.subarray(0, 100));
        setTimeout(() => req.end(body.subarray(100)), 100);
      });
      assert.equal(status, 200);
      await t.runtime.tracing!.flush();
      spans = [...receiver.spans];
    });
    after(async () => {
      await t.close();
      await receiver.close();
    });

    it("answers as without tracing, and adds no traceparent to the answer", () => {
      assert.equal(answer.statusCode, 200, answer.body);
      assert.equal(answer.json().verdict, "Yes");
      assert.equal(answer.headers.traceparent, undefined);
    });

    it("exports to /v1/traces with --otlp-headers, and names the service", () => {
      assert.ok(receiver.exports.length > 0);
      assert.ok(receiver.exports.every((e) => e.path === "/v1/traces"));
      assert.equal(receiver.exports[0]!.headers["x-collector-key"], "s3cr=t");
      assert.ok(spans.every((s) => s.resource["service.name"] === "attestd-test"));
    });

    it("continues the caller's trace: the server span has its trace id and its span as parent", () => {
      const server = spans.find((s) => s.name === "POST /v2/blobs");
      assert.ok(server, `spans: ${spans.map((s) => s.name).join(", ")}`);
      assert.equal(server.kind, SERVER);
      assert.equal(server.traceId, TRACE_ID);
      assert.equal(server.parentSpanId, CALLER_SPAN);
      assert.equal(server.traceState, "vendor=abc", "the caller's tracestate goes on with its trace");
      assert.equal(server.attributes["http.route"], "/v2/blobs");
      assert.equal(server.attributes["http.request.method"], "POST");
      assert.equal(server.attributes["http.response.status_code"], 200);
      assert.notEqual(server.status.code, ERROR);
    });

    it("opens child spans for the appraisal and the store writes, with the verdict as attributes", () => {
      const server = spans.find((s) => s.name === "POST /v2/blobs")!;
      const appraise = spans.find((s) => s.name === "appraise");
      assert.ok(appraise);
      assert.equal(appraise.traceId, TRACE_ID);
      assert.equal(appraise.parentSpanId, server.spanId);
      assert.equal(appraise.attributes["attestd.appraisal.format"], "vendor");
      assert.equal(appraise.attributes["attestd.appraisal.status"], "Success");
      assert.equal(appraise.attributes["attestd.verdict"], "Yes");
      const write = spans.find((s) => s.name === "store consume_nonce_save_device_verdict");
      assert.ok(write, `spans: ${spans.map((s) => s.name).join(", ")}`);
      assert.equal(write.parentSpanId, server.spanId);
      assert.equal(write.attributes["db.operation.name"], "consume_nonce_save_device_verdict");
    });

    it("any traceparent or tracestate a caller sends is answered as without it (fuzzed)", async () => {
      const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
      const header = fc.oneof(
        fc.string({ maxLength: 120 }).filter((v) => !/[\r\n\0]/.test(v) && v.trim() === v),
        fc.tuple(hex(2), hex(32), hex(16), hex(2)).map((p) => p.join("-")),
      );
      await fc.assert(
        fc.asyncProperty(header, header, async (tp, ts) => {
          const res = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key, traceparent: tp, tracestate: ts } });
          assert.equal(res.statusCode, 200, `${tp} / ${ts}: ${res.body}`);
        }),
        { numRuns: 200 },
      );
    });

    it("leaves the polled routes untraced", () => {
      const polled = spans.filter((s) => s.kind === SERVER && /^GET \/(healthz|readyz|metrics)$/.test(s.name));
      assert.deepEqual(polled.map((s) => s.name), []);
      assert.ok(spans.some((s) => s.name === "GET /api/v1/verdicts/:objectId"), "other GETs are");
    });

    it("over a real connection, the appraisal and the store write are children of the request's span", () => {
      const server = spans.find((s) => s.name === "POST /v2/blobs" && s.traceId === TCP_TRACE_ID);
      assert.ok(server, `spans: ${spans.map((s) => `${s.name}/${s.traceId}`).join(", ")}`);
      assert.equal(server.attributes["http.response.status_code"], 200);
      for (const name of ["appraise", "store consume_nonce_save_verdict"]) {
        const child = spans.find((s) => s.name === name && s.traceId === TCP_TRACE_ID);
        assert.ok(child, `${name} in the trace: ${spans.map((s) => `${s.name}/${s.traceId}`).join(", ")}`);
        assert.equal(child.parentSpanId, server.spanId, name);
      }
    });

    it("starts a new trace for a request without traceparent, with its store span inside it", () => {
      const issue = spans.find((s) => s.name === "POST /v2/nonces");
      assert.ok(issue);
      assert.notEqual(issue.traceId, TRACE_ID);
      assert.equal(issue.parentSpanId ?? "", "");
      const store = spans.find((s) => s.name === "store issue_nonce");
      assert.ok(store);
      assert.equal(store.parentSpanId, issue.spanId);
    });

    it("names a request by its route template and marks a catalog error by its code, not as a server error", () => {
      const read = spans.find((s) => s.name === "GET /api/v1/verdicts/:objectId");
      assert.ok(read, `spans: ${spans.map((s) => s.name).join(", ")}`);
      assert.equal(read.attributes["http.response.status_code"], 404);
      assert.equal(typeof read.attributes["attestd.error.code"], "string");
      assert.notEqual(read.status.code, ERROR);
      const lookup = spans.find((s) => s.name === "store read_verdict");
      assert.ok(lookup);
      assert.equal(lookup.parentSpanId, read.spanId);
    });

    it("a call out is a client span naming the host only, and carries no traceparent to the third party", () => {
      const call = spans.find((s) => s.kind === CLIENT && s.attributes["server.address"] === "android.googleapis.com");
      assert.ok(call, `spans: ${spans.map((s) => `${s.name}/${s.kind}`).join(", ")}`);
      assert.equal(call.attributes["http.request.method"], "GET");
      assert.equal(call.status.code, ERROR, "the offline network's failure marks it");
      assert.ok(Object.values(call.attributes).every((v) => !String(v).includes("/attestation/status")));
      assert.ok(outbound.length > 0);
      for (const h of outbound) assert.equal(h.get("traceparent"), null);
    });

    it("records no nonce, key, device identifier, tenant or path in any attribute", () => {
      const secrets = [nonce, t.key, t.key.split(".")[0]!, "phone-0042", DEFAULT_IMEI, t.tenant.tenantId, "AAAAAAAAAAAAAAAAAAAAAA", "s3cr"];
      for (const s of spans) {
        for (const [name, value] of Object.entries({ ...s.attributes, ...s.resource })) {
          for (const secret of secrets) assert.ok(!String(value).includes(secret), `${s.name} ${name} holds ${secret}`);
        }
      }
    });
  });

  it("sampling is parent-based: a caller's flag decides for its request, the ratio for requests without one", async () => {
    const receiver = await startOtlpReceiver();
    const t = await startTestRuntime({ ...fx.trustFlags, otlpEndpoint: receiver.url, traceSampleRatio: 0 });
    try {
      const SAMPLED = "6bf92f3577b34da6a3ce929d0e0e4738";
      const UNSAMPLED = "7bf92f3577b34da6a3ce929d0e0e4739";
      assert.equal((await submit(t, { traceparent: traceparent(SAMPLED) })).res.statusCode, 200);
      assert.equal((await submit(t, { traceparent: `00-${UNSAMPLED}-${CALLER_SPAN}-00` })).res.statusCode, 200);
      assert.equal((await submit(t)).res.statusCode, 200);
      await t.runtime.tracing!.flush();
      const traces = new Set(receiver.spans.map((s) => s.traceId));
      assert.deepEqual([...traces], [SAMPLED], "only the trace whose caller sampled it, at ratio 0");
      assert.ok(receiver.spans.some((s) => s.name === "appraise"));
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it("a collector that refuses connections: requests answer as usual, the loss is counted and logged once", async () => {
    const { logger, lines } = capturedLogger();
    const t = await startTestRuntime({ ...fx.trustFlags, otlpEndpoint: `http://127.0.0.1:${await closedPort()}` }, { logger });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await submit(t)).res.statusCode, 200);
      await t.runtime.tracing!.flush().catch(() => {});
      for (let i = 0; i < 3; i++) assert.equal((await submit(t)).res.statusCode, 200);
      await t.runtime.tracing!.flush().catch(() => {});
      await until("the drop to be counted", () => t.runtime.tracing!.dropped() > 0);
      const warnings = lines.filter((l) => String(l.msg).startsWith("traces: spans are being dropped"));
      assert.equal(warnings.length, 1, JSON.stringify(lines));
      const metrics = (await t.runtime.app.inject({ method: "GET", url: "/metrics" })).body;
      const counted = /^attestd_trace_spans_dropped_total (\d+)$/m.exec(metrics);
      assert.ok(counted && Number(counted[1]) > 0, "the drops are counted in /metrics");
    } finally {
      await t.close();
    }
  });

  it("a collector that accepts and never answers: requests answer as usual and shutdown is bounded", async () => {
    const receiver = await startOtlpReceiver({ hang: true });
    const t = await startTestRuntime({ ...fx.trustFlags, otlpEndpoint: receiver.url });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await submit(t)).res.statusCode, 200);
      void t.runtime.tracing!.flush().catch(() => {});
      await until("an export to start", () => receiver.exports.length > 0);
      for (let i = 0; i < 3; i++) assert.equal((await submit(t)).res.statusCode, 200);
    } finally {
      await t.close();
      await receiver.close();
    }
    assert.equal(tracingEnabled(), false);
  });

  it("without --otlp-endpoint: no hook, no span, no export, even with OTEL_* variables set", async () => {
    const receiver = await startOtlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    const t = await startTestRuntime({ ...fx.trustFlags });
    try {
      assert.equal(t.runtime.tracing, undefined);
      assert.equal(tracingEnabled(), false);
      const { res } = await submit(t, { traceparent: traceparent() });
      assert.equal(res.statusCode, 200);
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(receiver.exports.length, 0);
      assert.doesNotMatch((await t.runtime.app.inject({ method: "GET", url: "/metrics" })).body, /attestd_trace_spans_dropped_total/);
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      await t.close();
      await receiver.close();
    }
  });
});
