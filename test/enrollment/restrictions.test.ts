import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { parseReferer, parseRefererPattern, refererMatches, wildcardMatch, type RefererPattern } from "../../src/auth/refererPattern.ts";
import { parseRestrictions, restrictionRefusal } from "../../src/auth/restrictions.ts";
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
      ["star scheme without ://", { referers: ["*.example.com/*"] }],
      ["star inside a label", { referers: ["https://*example.com/*"] }],
      ["star in a middle label", { referers: ["https://a.*.example.com/"] }],
      ["only star labels", { referers: ["https://*.*/"] }],
      ["empty label", { referers: ["https://a..example.com/"] }],
      ["userinfo", { referers: ["https://a.example.com@evil.com/"] }],
      ["fragment", { referers: ["https://a.example.com/#x"] }],
      ["backslash", { referers: ["https://a.example.com\\evil.com/"] }],
      ["star port", { referers: ["https://a.example.com:*/"] }],
      ["other scheme", { referers: ["ftp://a.example.com/"] }],
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

describe("referer patterns: scheme, host and path matched as URL parts", () => {
  const admits = (pattern: string, referer: string) => {
    const p = parseRefererPattern(pattern);
    assert.ok(typeof p !== "string", `${pattern}: ${String(p)}`);
    const r = parseReferer(referer);
    return r !== undefined && refererMatches(p, r);
  };

  it("does not let the pattern's host appear anywhere but in the Referer's host", () => {
    const pattern = "https://*.example.com/*";
    for (const evil of [
      "https://evil.com/?https://a.example.com/x",
      "https://evil.com/https://a.example.com/x",
      "https://evil.com/#https://a.example.com/x",
      "https://a.example.com.evil.com/x",
      "https://a.example.com@evil.com/x",
      "https://a.example.com:pw@evil.com/x",
      "https://evil.com\\.example.com/x",
      "https://evilexample.com/x",
      "https://example.com/x",
      "http://a.example.com/x",
      "https://a.example.com:8443/x",
      "javascript://a.example.com/%0aalert(1)",
      "https://a..example.com/x",
    ]) {
      assert.equal(admits(pattern, evil), false, evil);
    }
    for (const good of ["https://a.example.com/x", "https://A.Example.COM/", "https://a.b.example.com/x?y=1", "https://a.example.com:443/x"]) {
      assert.equal(admits(pattern, good), true, good);
    }
  });

  it("matches schemes, ports and paths as parts", () => {
    assert.equal(admits("*://a.example.com/app/*", "http://a.example.com/app/x"), true);
    assert.equal(admits("*://a.example.com/app/*", "https://a.example.com/app/x"), true);
    assert.equal(admits("*://a.example.com/app/*", "https://a.example.com/other/app/x"), false, "the path is anchored");
    assert.equal(admits("https://a.example.com:8443/*", "https://a.example.com:8443/x"), true);
    assert.equal(admits("https://a.example.com:8443/*", "https://a.example.com/x"), false);
    assert.equal(admits("https://a.example.com", "https://a.example.com/any/path?q=1"), true, "no path: any path");
    assert.equal(admits("https://a.example.com/", "https://a.example.com/page"), false, "a path given is matched whole");
    assert.equal(admits("https://a.example.com/App/*", "https://a.example.com/app/x"), false, "paths are case-sensitive");
    assert.equal(admits("https://bücher.example/*", "https://xn--bcher-kva.example/x"), true, "IDN and punycode are one host");
    assert.equal(admits("http://[2001:db8::1]/*", "http://[2001:DB8:0::1]/x"), true);
    assert.equal(admits("https://*.*.example.com/*", "https://a.example.com/x"), false, "two wildcard labels need two labels");
    assert.equal(admits("https://*.*.example.com/*", "https://a.b.example.com/x"), true);
  });

  it("stored patterns that no longer parse admit nobody", () => {
    const legacy = { ipAddresses: [], referers: ["*example.com*"] };
    assert.ok(restrictionRefusal(legacy, { ip: "1.1.1.1", referer: "https://example.com/" }));
  });

  // hosts made of a few letters so that generated hosts collide with each other often
  const label = fc.stringMatching(/^[a-c][a-c0-9-]{0,2}$/).filter((l) => !l.endsWith("-"));
  const host = fc.array(label, { minLength: 1, maxLength: 3 }).map((l) => l.join("."));
  const patternArb = fc.record({
    scheme: fc.constantFrom("http://", "https://", "*://"),
    wildcards: fc.integer({ min: 0, max: 2 }),
    host,
    port: fc.option(fc.constantFrom(":8443", ":443", ":80"), { nil: undefined }),
    path: fc.option(fc.constantFrom("/", "/*", "/a/*", "/*?x=*", "/a*b"), { nil: undefined }),
  });
  const patternText = (p: { scheme: string; wildcards: number; host: string; port: string | undefined; path: string | undefined }) =>
    p.scheme + "*.".repeat(p.wildcards) + p.host + (p.port ?? "") + (p.path ?? "");
  // Referers a browser could send and an attacker could write: the pattern's host smuggled into every other part
  const refererArb = (p: { host: string }) =>
    fc.oneof(
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.tuple(fc.constantFrom("http://", "https://", "HTTPS://"), fc.array(label, { minLength: 0, maxLength: 2 }), host, fc.string({ maxLength: 20 })).map(
        ([s, sub, h, tail]) => s + [...sub, h].join(".") + "/" + tail,
      ),
      fc.tuple(fc.constantFrom("https://", "http://"), host, fc.constantFrom("/?", "/", "#", "@", ":x@", "\\", ".", "%2e", "/..", "?https://"), fc.constantFrom(p.host, "a." + p.host, p.host + ".")).map(
        ([s, h, sep, smuggled]) => s + h + sep + smuggled + "/x",
      ),
      fc.tuple(fc.constantFrom("https://", "http://"), fc.constantFrom(p.host, "a." + p.host, "a.b." + p.host), fc.constantFrom("", "/", "/a/x", "/?x=1", ":8443/", ":443/a/b")).map(
        ([s, h, tail]) => s + h + tail,
      ),
    );

  it("admits no Referer whose host is not the pattern's (fast-check)", () => {
    fc.assert(
      fc.property(
        patternArb.chain((p) => fc.tuple(fc.constant(p), refererArb(p))),
        ([p, referer]) => {
          const pattern = parseRefererPattern(patternText(p)) as RefererPattern;
          assert.equal(typeof pattern, "object", patternText(p));
          const parsed = parseReferer(referer);
          if (!parsed || !refererMatches(pattern, parsed)) return;
          // admitted: the host the browser would have connected to is the pattern's, or under it by enough labels
          const actual = new URL(referer).hostname;
          if (p.wildcards === 0) assert.equal(actual, p.host, `${patternText(p)} admitted ${referer}`);
          else {
            assert.ok(actual.endsWith("." + p.host), `${patternText(p)} admitted ${referer}`);
            assert.ok(actual.split(".").length >= p.host.split(".").length + p.wildcards, `${patternText(p)} admitted ${referer}`);
          }
        },
      ),
      { numRuns: 5000 },
    );
  });

  it("admits the Referers a pattern describes (fast-check)", () => {
    fc.assert(
      fc.property(patternArb, fc.array(label, { minLength: 2, maxLength: 3 }), fc.constantFrom("http:", "https:"), (p, sub, protocol) => {
        if (p.scheme !== "*://" && p.scheme !== protocol + "//") return;
        const hostname = [...sub.slice(0, Math.max(p.wildcards, 0)), p.host].join(".");
        const path = (p.path ?? "/any").replace(/\*/g, "zz");
        const referer = `${protocol}//${hostname}${p.port ?? ""}${path}`;
        const pattern = parseRefererPattern(patternText(p)) as RefererPattern;
        assert.ok(refererMatches(pattern, parseReferer(referer)!), `${patternText(p)} refused ${referer}`);
      }),
      { numRuns: 2000 },
    );
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
    h.clock.advance(2001); // past Part A's key cache (KEY_CACHE_MS): this change came through Part B, not ApiKeyAdmin
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
