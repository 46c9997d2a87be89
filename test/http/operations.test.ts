import assert from "node:assert/strict";
import path from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import type { FastifyBaseLogger } from "fastify";
import pino from "pino";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/** A logger whose JSON lines the test reads back, parsed. */
function capturedLog(): { lines: Record<string, unknown>[]; logger: FastifyBaseLogger } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: "info" }, sink) as unknown as FastifyBaseLogger };
}

describe("operations endpoints", () => {
  let t: TestRuntime;
  before(async () => {
    t = await startTestRuntime();
  });
  after(async () => t.close());

  it("/healthz answers ok; /readyz lists every backend and trust source", async () => {
    assert.deepEqual((await t.runtime.app.inject({ method: "GET", url: "/healthz" })).json(), { status: "ok" });
    const ready = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().ready, true);
    assert.ok(ready.json().checks.some((c: { name: string; ok: boolean }) => c.name === "sqlite" && c.ok));
    assert.deepEqual(ready.json().checks.map((c: { name: string }) => c.name), ["sqlite", "android-roots", "android-status"]);
  });

  it("offline with nothing configured: /readyz stays 200 and names android-status as degraded, telling a stranger no URL or path", async () => {
    // the test runtime's network is down (test/helpers/runtime.ts) and its data dir has no cached list
    const res = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.ready, true);
    assert.deepEqual(body.degraded, ["android-status"]);
    assert.deepEqual(body.checks, [
      { name: "sqlite", ok: true, state: "ok" },
      { name: "android-roots", ok: true, state: "ok" },
      { name: "android-status", ok: false, state: "missing" },
    ]);
    for (const secret of ["googleapis", t.dir, "ENOTFOUND", ".pem"]) assert.ok(!res.body.includes(secret), `/readyz names ${secret}: ${res.body}`);
    const metrics = await t.runtime.app.inject({ method: "GET", url: "/metrics" });
    assert.match(metrics.body, /^attestd_android_trust_fresh 0$/m);
  });

  it("/readyz is 503 when the store does not answer, Android trust or not", async () => {
    const original = t.runtime.stores.health;
    t.runtime.stores.health = async () => [{ name: "sqlite", ok: false, error: "database is locked" }];
    try {
      const res = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().ready, false);
      assert.deepEqual(res.json().checks[0], { name: "sqlite", ok: false, state: "failing" }, "the store's error is not told to strangers");
      assert.deepEqual(res.json().degraded, ["android-status"], "degraded lists only the non-critical checks");
    } finally {
      t.runtime.stores.health = original;
    }
  });

  it("the operator reads why in the log: one line when a check's state changes, not one per poll", async () => {
    const { lines, logger } = capturedLog();
    const own = await startTestRuntime({}, { logger });
    try {
      const original = own.runtime.stores.health;
      const poll = () => own.runtime.app.inject({ method: "GET", url: "/readyz" });
      await poll();
      own.runtime.stores.health = async () => [{ name: "sqlite", ok: false, error: "database is locked" }];
      for (let i = 0; i < 3; i++) assert.equal((await poll()).statusCode, 503);
      own.runtime.stores.health = original;
      for (let i = 0; i < 2; i++) assert.equal((await poll()).statusCode, 200);
      const said = lines.filter((l) => String(l.msg).startsWith("readiness:")).map((l) => [l.level, l.msg]);
      assert.deepEqual(said, [
        [
          40,
          "readiness: android-status is missing: the Android attestation status list could not be fetched from " +
            `https://android.googleapis.com/attestation/status (fetch failed: ENOTFOUND) and no cached copy is in ${path.join(own.dir, "android-trust")}`,
        ],
        [40, "readiness: sqlite is failing: database is locked"],
        [30, "readiness: sqlite is ok again"],
      ]);
    } finally {
      await own.close();
    }
  });

  it("the start-up log says in one warning line why android-key fails closed", async () => {
    const { lines, logger } = capturedLog();
    const own = await startTestRuntime({}, { logger });
    try {
      const android = lines.filter((l) => /android/.test(String(l.msg)));
      assert.equal(android.length, 1, JSON.stringify(android));
      assert.equal(android[0]!.level, 40);
      assert.equal(
        android[0]!.msg,
        "android-key appraisal fails closed: the Android attestation status list could not be fetched from " +
          "https://android.googleapis.com/attestation/status (fetch failed: ENOTFOUND) and no cached copy is in " +
          path.join(own.dir, "android-trust"),
      );
    } finally {
      await own.close();
    }
  });

  it("/openapi.json is generated from the route schemas, error responses included", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json();
    assert.equal(doc.openapi, "3.1.0");
    const blobs = doc.paths["/v2/blobs"].post;
    for (const status of ["200", "400", "401", "403", "405", "406", "415", "422", "429", "500", "501", "503"]) {
      assert.ok(blobs.responses[status], `POST /v2/blobs documents ${status}`);
    }
    assert.ok(doc.paths["/v2/nonces"].post.responses["200"]);
    assert.ok(doc.paths["/api/v1/transaction"].post.requestBody);
    assert.ok(doc.paths["/api/v1/verdicts/{objectId}"].get);
    assert.ok(doc.components.schemas.VerdictRecord || JSON.stringify(doc).includes("measurements"));
    const readiness = doc.paths["/readyz"].get.responses["200"].content["application/json"].schema;
    assert.ok(readiness.required.includes("degraded"), JSON.stringify(readiness));
    assert.equal(readiness.properties.degraded.type, "array");
  });

  it("/metrics counts activity-log entries given up on, and shows how many wait in memory", async () => {
    const durable = t.runtime.stores.durable;
    const original = durable.appendActivity;
    durable.appendActivity = async () => {
      throw new Error("store unreachable");
    };
    try {
      await t.runtime.activity.flush(); // whatever earlier tests left is written now, or waits with the rest
      assert.equal((await t.runtime.app.inject({ method: "GET", url: "/nope" })).statusCode, 404);
      const waiting = t.runtime.activity.pending;
      assert.ok(waiting >= 1);
      const scrape = async () => (await t.runtime.app.inject({ method: "GET", url: "/metrics" })).body;
      assert.match(await scrape(), new RegExp(`^attestd_activity_pending ${waiting}$`, "m"));
      // twelve failed writes (the recorder's default bound) and the entries are given up on
      for (let i = 0; i < 12; i++) await t.runtime.activity.flush();
      assert.equal(t.runtime.activity.pending, 0);
      const body = await scrape();
      assert.match(body, new RegExp(`^attestd_activity_dropped_total\\{reason="failed"\\} ${waiting}$`, "m"));
      assert.match(body, /^attestd_activity_pending 0$/m);
    } finally {
      durable.appendActivity = original;
    }
  });

  it("/docs serves the API browser", async () => {
    const res = await t.runtime.app.inject({ method: "GET", url: "/docs/" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /text\/html/);
  });
});
