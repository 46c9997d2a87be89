import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { rawConnect, serverClosed, type RawResponse } from "../helpers/rawHttp.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * The hooks decide by the route the router matched, not by the raw request target: a target in absolute-form
 * (`GET https://host/path`, which HTTP/1.1 servers must accept) or with a percent-encoded path reaches the same
 * route as the plain one and gets the same headers, guards and error bodies. Two Host fields are refused.
 * Raw HTTP on a real socket, as no HTTP client writes such requests.
 */
describe("request targets in absolute-form, encoded paths and duplicate Host", () => {
  let t: TestRuntime;
  let port: number;
  before(async () => {
    t = await startTestRuntime();
    await t.runtime.app.listen({ host: "127.0.0.1", port: 0 });
    port = (t.runtime.app.server.address() as AddressInfo).port;
  });
  after(() => t.close());

  /** one request on its own connection, closed by the server after the answer */
  async function raw(target: string, headers: string[] = [`Host: 127.0.0.1:${port}`], method = "GET"): Promise<RawResponse> {
    const c = await rawConnect(port, `${method} ${target} HTTP/1.1\r\n${headers.join("\r\n")}\r\nConnection: close\r\n\r\n`);
    await serverClosed(c, target);
    const res = c.response();
    assert.ok(res, `an answer to ${target}`);
    return res;
  }

  const pageHeaders = (res: RawResponse, target: string) => {
    assert.match(res.headers["content-security-policy"] ?? "", /frame-ancestors 'none'/, `CSP on ${target}`);
    assert.match(res.headers["content-security-policy"] ?? "", /script-src 'self'/, `CSP on ${target}`);
    assert.equal(res.headers["x-frame-options"], "DENY", target);
    assert.equal(res.headers["x-content-type-options"], "nosniff", target);
    assert.equal(res.headers["referrer-policy"], "same-origin", target);
    assert.equal(res.headers["cache-control"], "no-store", target);
  };

  it("a portal page asked for in absolute-form or with an encoded path carries every security header", async () => {
    for (const target of [`http://127.0.0.1:${port}/portal/signin`, "https://attacker.example/portal/signin", "/%70ortal/signin", "HTTP://x/portal/invite"]) {
      const res = await raw(target);
      assert.equal(res.status, 200, target);
      pageHeaders(res, target);
    }
    // a page's 404 too
    const missing = await raw("https://x/portal/no-such-page");
    assert.equal(missing.status, 404);
    pageHeaders(missing, "a missing portal page");
  });

  it("the admin API in absolute-form answers 401 PORTAL_SIGNED_OUT, not a redirect; a page redirects to this host only", async () => {
    for (const target of ["https://x/portal/api/verdicts", "/portal/%61pi/verdicts"]) {
      const res = await raw(target);
      assert.equal(res.status, 401, target);
      assert.equal(res.json().code, "4018001", target);
      assert.match(res.json().errorId, /^[0-9a-f]{24}$/, "Part B's body");
    }
    const page = await raw("https://attacker.example/portal/verdicts?verdict=No");
    assert.equal(page.status, 302);
    assert.equal(page.headers.location, "/portal/signin?next=%2Fportal%2Fverdicts%3Fverdict%3DNo");
  });

  it("Part B and Part A in absolute-form answer in their own error bodies", async () => {
    const svc = await raw("https://x/svc/v1/enroll/profiles");
    assert.equal(svc.status, 401);
    assert.equal(svc.json().code, "4010000");
    assert.match(svc.json().errorId, /^[0-9a-f]{24}$/, "Part B's body under /svc/");
    const svcMissing = await raw("https://x/svc/v1/no-such-thing");
    assert.equal(svcMissing.status, 404);
    assert.ok("errorId" in svcMissing.json(), "Part B's 404 body");
    const partA = await raw("https://x/v2/nonces", [`Host: 127.0.0.1:${port}`], "POST");
    assert.equal(partA.status, 401);
    assert.deepEqual([partA.json().result, partA.json().error.code], ["FAIL", "4010000"]);
  });

  it("two Host fields are 400 in the body of the part asked for, before any credential is looked at", async () => {
    const twoHosts = [`Host: 127.0.0.1:${port}`, "Host: attacker.example"];
    const partA = await raw("/v2/nonces", [...twoHosts, `${KEY_HEADER}: ${t.key}`], "POST");
    assert.equal(partA.status, 400);
    assert.deepEqual([partA.json().result, partA.json().error.code], ["FAIL", "4000000"]);
    const svc = await raw("/svc/v1/enroll/profiles", twoHosts);
    assert.equal(svc.status, 400);
    assert.deepEqual([svc.json().code, svc.json().message], ["4000000", "RESOURCE_INVALID_PARAM"]);
    const portal = await raw("/portal/api/session", [...twoHosts, "Origin: http://attacker.example"], "POST");
    assert.equal(portal.status, 400);
    assert.equal(portal.json().code, "4008000");
    // routes whose own invalid-input code is another (NONCE_INVALID, ACCESS_TOKEN_BAD_REQUEST) still get the plain 400
    const blobs = await raw("/v2/blobs?nonce=x", [...twoHosts, `${KEY_HEADER}: ${t.key}`], "POST");
    assert.deepEqual([blobs.status, blobs.json().error.code], [400, "4000000"]);
    const token = await raw("/svc/v1/auth/accesstoken", twoHosts, "POST");
    assert.deepEqual([token.status, token.json().code], [400, "4000000"]);
    const sameTwice = await raw("/healthz", [`Host: 127.0.0.1:${port}`, `host: 127.0.0.1:${port}`]);
    assert.equal(sameTwice.status, 400, "even two equal Host fields: RFC 9112 §3.2 allows one");
    const one = await raw("/healthz");
    assert.equal(one.status, 200, "one Host field is fine");
  });
});
