import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createDevCa, issueDeviceLeaf } from "../../src/attestation/sim/devCa.ts";
import { DEFAULT_IMEI, demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { operationName, storeWithSpans } from "../../src/tracing/storeSpans.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { startOtlpReceiver, type ReceivedSpan } from "./otlpReceiver.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * Store spans for every request (docs/traces.md, "Spans"): whichever service a request reaches — the portal's admin
 * API here, Part B the same way — each store call it makes is a `store <operation>` span under the request's span;
 * a use case that names its durable write (Part A's) is that one span; timers (the activity log's flush) make no
 * trace.
 */

describe("store spans", () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let t: TestRuntime;
  let spans: ReceivedSpan[];
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-store-spans-"));
    const now = new Date(T0);
    const ca = await createDevCa({ now });
    const leaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
    writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
    writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
    receiver = await startOtlpReceiver();
    t = await startTestRuntime({ vendorRoots: path.join(dir, "roots.pem"), referenceValues: path.join(dir, "refs.json"), otlpEndpoint: receiver.url });
    const people = portalPeople(t);
    await people.add("ada@acme.example", "admin", "acme");
    const made = await people.as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "traced" } });
    assert.equal(made.statusCode, 200, made.body);
    const nonce = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
    const blob = encodeVendorBlob({ ca, leaf, now, nonce, imei: DEFAULT_IMEI });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" },
      payload: Buffer.from(blob),
    });
    assert.equal(res.json().verdict, "Yes", res.body);
    // the activity log's timer writes the requests' rows meanwhile (every 100 ms)
    await new Promise((r) => setTimeout(r, 300));
    await t.runtime.tracing!.flush();
    spans = [...receiver.spans];
  });
  after(async () => {
    await t.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const childrenOf = (parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId);

  it("an admin API request's store calls are spans under its server span, named by operation", () => {
    const server = spans.find((s) => s.name === "POST /portal/api/keys");
    assert.ok(server, `spans: ${spans.map((s) => s.name).join(", ")}`);
    const names = childrenOf(server).map((s) => s.name);
    assert.ok(names.includes("store create_api_key"), `children: ${names.join(", ")}`);
    const create = childrenOf(server).find((s) => s.name === "store create_api_key")!;
    assert.equal(create.attributes["db.operation.name"], "create_api_key");
    assert.equal(create.traceId, server.traceId);
    // the session lookup the portal's hook makes is the request's store work too
    assert.ok(names.some((n) => n.startsWith("store ") && n.includes("session")), `children: ${names.join(", ")}`);
  });

  it("Part A's named durable write is one span: the store methods inside it open none", () => {
    const write = spans.find((s) => s.name === "store consume_nonce_save_verdict");
    assert.ok(write, `spans: ${spans.map((s) => s.name).join(", ")}`);
    assert.deepEqual(childrenOf(write).map((s) => s.name), []);
    const server = spans.find((s) => s.spanId === write.parentSpanId);
    assert.equal(server?.name, "POST /v2/blobs");
  });

  it("work on timers makes no trace: no span for the activity log's writes", () => {
    assert.deepEqual(spans.filter((s) => s.name === "store append_activity").map((s) => s.name), []);
    assert.ok(spans.every((s) => s.parentSpanId || !s.name.startsWith("store ")), "every store span has a parent");
  });
});

describe("storeWithSpans, tracing off", () => {
  it("calls the store's own methods on the store itself, sync and async, results and throws alike", async () => {
    class Store {
      #rows = [1, 2];
      count() {
        return this.#rows.length;
      }
      async add(n: number) {
        this.#rows.push(n);
        return this.#rows.length;
      }
      async fail(): Promise<never> {
        throw new Error("refused");
      }
    }
    const store = storeWithSpans(new Store());
    assert.equal(store.count(), 2);
    assert.equal(await store.add(3), 3);
    await assert.rejects(store.fail(), /refused/);
    assert.ok(store instanceof Store);
    assert.equal(store.add, store.add, "one wrapper per method");
  });

  it("names operations in snake case", () => {
    assert.equal(operationName("getTenantByCustomerId"), "get_tenant_by_customer_id");
    assert.equal(operationName("consume"), "consume");
  });
});
