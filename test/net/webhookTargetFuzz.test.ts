import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { checkWebhookUrl, isRefusedAddress, WebhookTargetRefused } from "../../src/net/webhookTarget.ts";
import { parseTenantPolicy } from "../../src/attestation/policy/tenantPolicyDocument.ts";

/**
 * The two parsers issue 26 added, fuzzed (every parser is): a webhook endpoint's URL (src/net/webhookTarget.ts) and
 * a tenant's policy document (src/attestation/policy/tenantPolicyDocument.ts). Neither may throw anything but its
 * own refusal, and neither may let through what its rules refuse.
 */
const STRICT = { allowPrivate: false, allowHosts: [], allowHttp: false };

const privateV4 = fc.oneof(
  fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
).map((p) => p.join("."));

describe("webhook target URLs, fuzzed", () => {
  it("any text: a URL that is https, without credentials or fragment, and not a refused address; else WebhookTargetRefused", () => {
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.webUrl({ withFragments: true, withQueryParameters: true }),
      fc.tuple(fc.constantFrom("https://", "http://", "https://u:p@", "ftp://"), privateV4, fc.constantFrom("", ":8443/x", "/hook#f")).map((p) => p.join("")),
    );
    fc.assert(
      fc.property(text, (raw) => {
        let url: URL;
        try {
          url = checkWebhookUrl(raw, STRICT);
        } catch (e) {
          assert.ok(e instanceof WebhookTargetRefused, `${JSON.stringify(raw)}: ${String(e)}`);
          return;
        }
        assert.equal(url.protocol, "https:");
        assert.equal(url.username + url.password + url.hash, "");
        assert.ok(!/^\[?(10|127)\.|^192\.168\.|^169\.254\./.test(url.hostname), `${raw} let through`);
      }),
      { numRuns: 5000 },
    );
  });

  it("every private, loopback and link-local IPv4 address is refused, as a URL and as an address", () => {
    fc.assert(
      fc.property(privateV4, (address) => {
        assert.equal(isRefusedAddress(address), true, address);
        assert.throws(() => checkWebhookUrl(`https://${address}/hook`, STRICT), WebhookTargetRefused);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("tenant policy documents, fuzzed", () => {
  const policyish = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      fc.constantFrom("2024-01", "2024-01-05", "StrongBox", "TrustedEnvironment", "MEETS_DEVICE_INTEGRITY", "production", "com.example.app", "a".repeat(64)),
      fc.string({ maxLength: 20 }),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 4 }),
      tie("object"),
    ),
    object: fc.dictionary(
      fc.constantFrom("android", "playIntegrity", "appAttest", "minOsPatchLevel", "requiredSecurityLevel", "allowedApps", "packageName", "signingDigests", "factoryExpiry", "allowedBootKeys", "minDeviceVerdict", "environments", "key", "label", "__proto__", "x"),
      tie("value"),
      { maxKeys: 5 },
    ),
  }));

  it("any JSON value: a document, or problems each naming a field path; never a throw", () => {
    fc.assert(
      fc.property(fc.oneof(policyish.object, policyish.value), (value) => {
        const r = parseTenantPolicy(value);
        if (r.ok) {
          assert.equal(typeof r.document, "object");
          // what it accepts it accepts again, unchanged
          assert.deepEqual(parseTenantPolicy(JSON.parse(JSON.stringify(r.document))), r);
          return;
        }
        assert.ok(r.problems.length > 0);
        for (const p of r.problems) {
          assert.equal(typeof p.path, "string");
          assert.ok(p.message.length > 0);
        }
      }),
      { numRuns: 5000 },
    );
  });
});
