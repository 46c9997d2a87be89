import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

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
  });

  it("/readyz is 503 when the store does not answer", async () => {
    const original = t.runtime.stores.health;
    t.runtime.stores.health = async () => [{ name: "sqlite", ok: false, error: "database is locked" }];
    try {
      const res = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().ready, false);
      assert.equal(res.json().checks[0].detail, "database is locked");
    } finally {
      t.runtime.stores.health = original;
    }
  });

  it("/openapi.json is generated from the route schemas, error responses included", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json();
    assert.equal(doc.openapi, "3.0.3");
    const blobs = doc.paths["/v2/blobs"].post;
    for (const status of ["200", "400", "401", "403", "405", "406", "415", "422", "429", "500", "501"]) {
      assert.ok(blobs.responses[status], `POST /v2/blobs documents ${status}`);
    }
    assert.ok(doc.paths["/v2/nonces"].post.responses["200"]);
    assert.ok(doc.paths["/api/v1/transaction"].post.requestBody);
    assert.ok(doc.paths["/api/v1/verdicts/{objectId}"].get);
    assert.ok(doc.components.schemas.VerdictRecord || JSON.stringify(doc).includes("measurements"));
  });

  it("/docs serves the API browser", async () => {
    const res = await t.runtime.app.inject({ method: "GET", url: "/docs/" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /text\/html/);
  });
});
