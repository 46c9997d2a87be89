import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * What Fastify's router refuses before any route or hook runs (`frameworkErrors`, src/http/errorHandler.ts): a path
 * segment over `maxParamLength` (256) and a path that is not valid percent-encoding are answered like every other
 * refusal, with the 400 of the part the path belongs to, a catalog code and an X-Error-Id, never Fastify's own body.
 */
describe("refusals of the router itself", () => {
  let t: TestRuntime;
  before(async () => {
    t = await startTestRuntime();
  });
  after(() => t.close());

  const long = "a".repeat(300);
  for (const [url, code, shape] of [
    [`/api/v1/devices/${long}`, "4000000", "part A"],
    [`/svc/v1/enroll/profiles/${long}`, "4000000", "part B"],
    [`/portal/api/devices/${long}`, "4008000", "part B"],
    ["/api/v1/devices/%zz", "4000000", "part A"],
    [`/portal/api/policy/versions/${"9".repeat(400)}`, "4008000", "part B"],
  ] as const) {
    it(`${url.slice(0, 40)}…: 400 ${code}`, async () => {
      const res = await t.runtime.app.inject({ method: "GET", url, headers: { [KEY_HEADER]: t.key } });
      assert.equal(res.statusCode, 400, res.body);
      assert.match(String(res.headers["x-error-id"]), /^[0-9a-f]{24}$/);
      const body = res.json();
      if (shape === "part A") assert.equal(body.error.code, code);
      else assert.deepEqual([body.code, body.errorId], [code, res.headers["x-error-id"]]);
      assert.doesNotMatch(res.body, /FST_ERR/);
    });
  }
});
