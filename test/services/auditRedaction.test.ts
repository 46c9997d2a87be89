import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cryptoRng } from "../../src/clock.ts";
import { generateApiKey } from "../../src/auth/apiKeys.ts";
import { REDACTED, redactSecrets } from "../../src/domain/audit.ts";

/**
 * redactSecrets is the one home of "secrets never" in the audit trail: every record a service may copy into an
 * audit entry, with every secret field it has, comes out with none of the secret values anywhere in its JSON.
 */
describe("redactSecrets", () => {
  const apiKey = generateApiKey(cryptoRng);
  const secrets = {
    apiKey: apiKey.key,
    secretHash: apiKey.secretHash,
    passwordHash: "$scrypt$n=16384$c2FsdA$aGFzaA",
    tokenHash: "4f1c0ab5e2f17d1b2c9d",
    sessionHash: "b0b0b0b0b0b0b0b0b0b0",
    csrfToken: "csrf-0123456789abcdef",
    sealedSecret: "sealed:v1:0123456789abcdef:QUJDREVGR0g",
    privateKey: "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n",
    decryptionKey: "ZGVjcnlwdGlvbi1rZXktbWF0ZXJpYWwtMzItYnl0ZXM=",
    verificationKey: "dmVyaWZpY2F0aW9uLWtleS1tYXRlcmlhbA==",
    serviceAccount: '{"private_key":"x","client_email":"sa@example.iam.gserviceaccount.com"}',
    clientSecret: "cs_very_secret_value",
    password: "correct horse battery staple",
    newPassword: "Tr0ub4dor&3",
    accessToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig",
    jwk: '{"kty":"EC","d":"secretscalar"}',
  };
  const record = {
    keyId: apiKey.keyId,
    label: "ci",
    ...secrets,
    nested: { list: [{ secret: "s3cr3t-in-a-list", name: "ok" }], key: apiKey.key, blob: Buffer.from("raw key bytes") },
    // a secret under an innocent name is still caught by its shape
    note: "sealed:v1:fedcba9876543210:WFla",
    comment: apiKey.key,
  };

  it("leaves no secret value anywhere in the result's JSON", () => {
    const text = JSON.stringify(redactSecrets(record));
    for (const [field, value] of Object.entries(secrets)) assert.ok(!text.includes(value), `${field}'s value is gone`);
    for (const value of ["s3cr3t-in-a-list", "raw key bytes", Buffer.from("raw key bytes").toString("base64"), "WFla"]) assert.ok(!text.includes(value), value);
  });

  it("keeps what is not secret, as it was", () => {
    const out = redactSecrets(record) as Record<string, unknown>;
    assert.equal(out.keyId, apiKey.keyId);
    assert.equal(out.label, "ci");
    assert.deepEqual((out.nested as { list: unknown[] }).list, [{ name: "ok" }]);
    assert.equal(out.note, REDACTED);
    assert.equal(out.comment, REDACTED);
    assert.equal((out.nested as { blob: unknown }).blob, REDACTED);
  });

  it("copies: the input is untouched, cycles are cut, undefined fields dropped, null kept", () => {
    const a: Record<string, unknown> = { name: "a", gone: undefined, none: null };
    a.self = a;
    const out = redactSecrets(a) as Record<string, unknown>;
    assert.deepEqual(out, { name: "a", none: null, self: null });
    assert.equal(a.self, a);
    assert.equal(redactSecrets(undefined), null);
  });
});
