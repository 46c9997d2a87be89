import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { parseRestrictions, restrictionRefusal, wildcardMatch } from "../../src/auth/restrictions.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { assertPartBError, Harness, type Session } from "./harness.ts";

describe("restriction rules", () => {
  it("accepts IPv4/IPv6 addresses and CIDRs and referer patterns, refuses bad or empty ones", () => {
    const ok = parseRestrictions({ ipAddresses: ["203.0.113.0/24", "2001:DB8::/32", "198.51.100.7"], referers: ["https://*.example.com/*"] });
    assert.deepEqual(ok, {
      ok: true,
      restrictions: { ipAddresses: ["203.0.113.0/24", "2001:db8::/32", "198.51.100.7/32"], referers: ["https://*.example.com/*"] },
    });
    const bad: [string, object][] = [
      ["nothing", {}],
      ["both empty", { ipAddresses: [], referers: [] }],
      ["empty ip list", { ipAddresses: [], referers: ["https://a.example/*"] }],
      ["prefix too long", { ipAddresses: ["10.0.0.0/33"] }],
      ["v6 prefix too long", { ipAddresses: ["::/129"] }],
      ["not an address", { ipAddresses: ["10.0.0"] }],
      ["hostname", { ipAddresses: ["example.com"] }],
      ["zone id", { ipAddresses: ["fe80::1%eth0"] }],
      ["two slashes", { ipAddresses: ["10.0.0.0/8/8"] }],
      ["empty string", { ipAddresses: [""] }],
      ["only star", { referers: ["*"] }],
      ["no scheme", { referers: ["example.com/*"] }],
      ["space", { referers: ["https://a b.example/"] }],
      ["empty referer", { referers: [""] }],
    ];
    for (const [what, input] of bad) assert.equal(parseRestrictions(input).ok, false, what);
  });

  it("matches * wildcards like a reference regex does", () => {
    const toRegex = (p: string) => new RegExp("^" + p.split("*").map((x) => x.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$", "s");
    fc.assert(
      fc.property(fc.stringMatching(/^[ab*]{0,8}$/), fc.stringMatching(/^[ab]{0,10}$/), (p, t) => {
        assert.equal(wildcardMatch(p, t), toRegex(p).test(t));
      }),
      { numRuns: 2000 },
    );
  });

  it("stays fast on patterns built to backtrack", () => {
    const start = process.hrtime.bigint();
    assert.equal(wildcardMatch("*a*a*a*a*a*a*a*a*a*a*b", "a".repeat(2048)), false);
    assert.ok(process.hrtime.bigint() - start < 200_000_000n);
  });

  it("admits callers inside the lists only, IPv4-mapped IPv6 as IPv4", () => {
    const r = { ipAddresses: ["203.0.113.0/24", "2001:db8::/32"], referers: [] };
    assert.equal(restrictionRefusal(r, { ip: "203.0.113.9", referer: undefined }), undefined);
    assert.equal(restrictionRefusal(r, { ip: "::ffff:203.0.113.9", referer: undefined }), undefined);
    assert.equal(restrictionRefusal(r, { ip: "2001:db8:5::1", referer: undefined }), undefined);
    assert.ok(restrictionRefusal(r, { ip: "198.51.100.1", referer: undefined }));
    assert.ok(restrictionRefusal(r, { ip: "2001:db9::1", referer: undefined }));
    const ref = { ipAddresses: [], referers: ["https://*.example.com/*"] };
    assert.equal(restrictionRefusal(ref, { ip: "1.1.1.1", referer: "https://app.EXAMPLE.com/page" }), undefined);
    assert.ok(restrictionRefusal(ref, { ip: "1.1.1.1", referer: undefined }), "Referer required");
    assert.ok(restrictionRefusal(ref, { ip: "1.1.1.1", referer: "https://example.org/" }));
    assert.ok(restrictionRefusal(ref, { ip: "1.1.1.1", referer: "https://a.example.com/" + "x".repeat(2048) }), "overlong Referer");
    assert.equal(restrictionRefusal(null, { ip: "1.1.1.1", referer: undefined }), undefined);
  });
});

describe("API-key restrictions over HTTP", () => {
  let h: Harness;
  let s: Session;
  before(async () => {
    h = await Harness.start();
    s = await h.session();
  });
  after(() => h.close());

  const restrict = (keyId: string, body: object, session = s) => session.call("POST", `/svc/v1/apikeys/${keyId}/restrictions`, body);
  const nonce = (key: string, remoteAddress: string, referer?: string) =>
    h.app.inject({
      method: "POST",
      url: "/v2/nonces",
      remoteAddress,
      headers: { "x-vendor-attest-api-key": key, ...(referer ? { referer } : {}) },
    });

  it("restricts the tenant's Part A keys, enforced with 403 on Part A", async () => {
    const { key, keyId } = await h.partAKey(s.tenant);
    assert.equal((await nonce(key, "198.51.100.1")).statusCode, 200, "unrestricted");
    const set = await restrict(keyId, { ipAddresses: ["203.0.113.0/24", "2001:db8::/32"] });
    assert.equal(set.statusCode, 200, set.body);
    assert.deepEqual(set.json(), { keyId, kind: "apiKey", ipAddresses: ["203.0.113.0/24", "2001:db8::/32"], referers: [] });
    h.clock.advance(2001); // Part A caches key records for 2 s
    const refused = await nonce(key, "198.51.100.1");
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().error.code, catalog.A_FORBIDDEN.code);
    assert.equal((await nonce(key, "203.0.113.77")).statusCode, 200);
    assert.equal((await nonce(key, "2001:db8::42")).statusCode, 200);

    assert.deepEqual((await s.call("GET", `/svc/v1/apikeys/${keyId}/restrictions`)).json().ipAddresses, ["203.0.113.0/24", "2001:db8::/32"]);
    assert.equal((await s.call("DELETE", `/svc/v1/apikeys/${keyId}/restrictions`)).statusCode, 200);
    h.clock.advance(2001);
    assert.equal((await nonce(key, "198.51.100.1")).statusCode, 200, "restrictions removed");
  });

  it("restricts a Part B client, enforced with 403 on Part B", async () => {
    const c = await h.session({ tenant: s.tenant, email: "restricted@example.com" });
    const set = await restrict(c.client.clientId, { ipAddresses: ["203.0.113.0/24"], referers: ["https://portal.example.com/*"] });
    assert.equal(set.statusCode, 200, set.body);
    assert.equal(set.json().kind, "client");
    const outside = assertPartBError(await c.call("GET", "/svc/v1/resellers"), catalog.B_FORBIDDEN);
    assert.match(outside.data!, /127\.0\.0\.1/);
    const noReferer = await c.call("GET", "/svc/v1/resellers", undefined, { remoteAddress: "203.0.113.5" });
    assertPartBError(noReferer, catalog.B_FORBIDDEN);
    const inside = await c.call("GET", "/svc/v1/resellers", undefined, {
      remoteAddress: "203.0.113.5",
      headers: { referer: "https://portal.example.com/enroll" },
    });
    assert.equal(inside.statusCode, 200, inside.body);
    // the access-token request is held to the same restrictions
    const { accessTokenRequest } = await import("../../src/enrollment/clientJwt.ts");
    assertPartBError(await h.requestToken(await accessTokenRequest(c.keys, { nowMs: h.clock.nowMs() })), catalog.B_FORBIDDEN);
  });

  it("refuses another tenant's or an unknown key with 403, and bad formats with 404 API_KEY_RESTRICTION_INVALID", async () => {
    const other = await h.session();
    const { keyId } = await h.partAKey(other.tenant);
    assertPartBError(await restrict(keyId, { ipAddresses: ["10.0.0.0/8"] }), catalog.B_FORBIDDEN, "other tenant's Part A key");
    assertPartBError(await restrict(other.client.clientId, { ipAddresses: ["10.0.0.0/8"] }), catalog.B_FORBIDDEN, "other tenant's client");
    assertPartBError(await restrict("abcdefghij", { ipAddresses: ["10.0.0.0/8"] }), catalog.B_FORBIDDEN, "unknown key");
    for (const body of [{}, { ipAddresses: [] }, { referers: [] }, { ipAddresses: ["10.0.0.300"] }, { referers: ["ftp://x"] }, { other: 1 }]) {
      assertPartBError(await restrict(s.client.clientId, body), catalog.API_KEY_RESTRICTION_INVALID, JSON.stringify(body));
    }
    const ro = await h.session({ tenant: s.tenant, readOnly: true, email: "ro@example.com" });
    assertPartBError(await restrict(ro.client.clientId, { ipAddresses: ["10.0.0.0/8"] }, ro), catalog.B_FORBIDDEN, "read-only");
  });
});
