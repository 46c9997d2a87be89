import assert from "node:assert/strict";
import { test } from "node:test";
import { encode } from "cbor2";
import { appraise } from "../../src/attestation/appraise.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { DEMO_APP_ID, makeAppAttestAssertion, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import { refusedByStore } from "../../src/attestation/formats/appAttest.ts";
import { APPS, NONCE, NOW, appraiseAssertion, appraiseAttestation, demoCa, knownKey, trustOf } from "./fixtures.ts";

/** Every App Attest rule (src/attestation/formats/appAttest.ts), with objects from the simulator. */

const verdictOf = (r: { detail: Record<string, unknown>; record: { status: string; verdict: string } }) => [r.detail.rule, r.record.status, r.record.verdict];

test("attestation: the good case is Yes, and remembers the key", async () => {
  const { blob, key } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
  const r = await appraiseAttestation(blob);
  assert.deepEqual(verdictOf(r), ["pass", "Success", "Yes"], r.reason);
  assert.equal(r.format, "app-attest");
  assert.equal(r.record.chipId, key.keyId);
  assert.equal(r.record.measurements, DEMO_APP_ID);
  assert.equal(r.appAttest?.kind, "attested");
  assert.equal(r.appAttest?.kind === "attested" && r.appAttest.keyId, key.keyId);
  assert.deepEqual(r.facts, { format: "app-attest", identity: { appAttestKeyId: key.keyId, appId: DEMO_APP_ID }, levels: {} });
  assert.equal(r.detail.nonceReading, "bytes");
});

test("attestation: a nonce passed as its ASCII is accepted too", async () => {
  // the simulator hashes the decoded bytes; a nonce-shaped string that is not 32 bytes' encoding reads as ASCII
  const ascii = "not-a-nonce-but-ascii";
  const { blob } = await makeAppAttestAttestation(await demoCa(), { nonce: ascii, now: NOW });
  const r = await appraiseAttestation(blob, { nonce: ascii });
  assert.deepEqual(verdictOf(r), ["pass", "Success", "Yes"]);
  assert.equal(r.detail.nonceReading, "ascii");
});

const cases: [string, Parameters<typeof makeAppAttestAttestation>[1], { apps?: typeof APPS }, [string, string, string]][] = [
  ["no app registered", { nonce: NONCE, now: NOW }, { apps: [] }, ["no-app", "CertificateInvalid", "No"]],
  ["another CA", { nonce: NONCE, now: NOW, otherCa: true }, {}, ["chain", "CertificateInvalid", "No"]],
  ["an expired credential certificate", { nonce: NONCE, now: NOW, expired: true }, {}, ["chain", "CertificateInvalid", "No"]],
  ["another nonce", { nonce: NONCE, now: NOW, wrongNonce: true }, {}, ["nonce", "NonceMismatch", "No"]],
  ["a credential id that is not the key's", { nonce: NONCE, now: NOW, wrongKeyId: true }, {}, ["key-id", "CertificateInvalid", "No"]],
  ["another app's RP ID", { nonce: NONCE, now: NOW, otherAppId: "DEMOTEAM01.com.example.other" }, {}, ["app-id", "NonceMismatch", "No"]],
  ["a counter above 0", { nonce: NONCE, now: NOW, counter: 1 }, {}, ["counter", "Success", "No"]],
  ["an unknown AAGUID", { nonce: NONCE, now: NOW, unknownAaguid: true }, {}, ["environment", "Success", "No"]],
  ["a development key for a production-only app", { nonce: NONCE, now: NOW, environment: "development" }, {}, ["environment", "Success", "No"]],
];
for (const [name, make, over, expected] of cases) {
  test(`attestation: ${name} → ${expected.join(" / ")}`, async () => {
    const { blob } = await makeAppAttestAttestation(await demoCa(), make);
    const r = await appraiseAttestation(blob, over);
    assert.deepEqual(verdictOf(r), expected, r.reason);
    assert.equal(r.appAttest, undefined);
  });
}

test("attestation: a development key for an app allowing both is Yes", async () => {
  const { blob } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW, environment: "development" });
  const r = await appraiseAttestation(blob, { apps: [{ appId: DEMO_APP_ID, environment: "both" }] });
  assert.deepEqual(verdictOf(r), ["pass", "Success", "Yes"]);
});

test("attestation: the receipt seam decides when plugged in, and is handed the receipt and what was proved", async () => {
  const ca = await demoCa();
  const { blob, key } = await makeAppAttestAttestation(ca, { nonce: NONCE, now: NOW });
  const seen: string[] = [];
  const r = appraise({
    blob,
    nonce: NONCE,
    trust: trustOf(ca),
    now: NOW,
    appAttest: {
      apps: APPS,
      receiptCheck: (receipt, a) => {
        seen.push(Buffer.from(receipt).toString(), a.appId, Buffer.from(a.keyId).toString("base64"));
        return { ok: false, reason: "not signed by Apple" };
      },
    },
  });
  assert.deepEqual(verdictOf(r), ["receipt", "Success", "No"]);
  assert.deepEqual(seen, ["attestd demo receipt: not signed by Apple", DEMO_APP_ID, key.keyId]);
  const ok = appraise({ blob, nonce: NONCE, trust: trustOf(ca), now: NOW, appAttest: { apps: APPS, receiptCheck: () => ({ ok: true }) } });
  assert.deepEqual(verdictOf(ok), ["pass", "Success", "Yes"]);
});

test("assertion: the good case is Yes and asks to store its counter", async () => {
  const { key } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
  const { body } = makeAppAttestAssertion(key, { nonce: NONCE });
  const r = await appraiseAssertion(body, knownKey(key));
  assert.deepEqual(verdictOf(r), ["pass", "Success", "Yes"], r.reason);
  assert.deepEqual(r.appAttest, { kind: "asserted", keyId: key.keyId, counter: 1 });
  assert.equal(r.record.chipId, key.keyId);
  assert.equal(r.record.version, "1");
});

test("assertion: every refusal", async () => {
  const { key } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
  const good = makeAppAttestAssertion(key, { nonce: NONCE }).body;
  assert.deepEqual(verdictOf(await appraiseAssertion(good, undefined)), ["unknown-key", "CertificateInvalid", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(makeAppAttestAssertion(key, { nonce: NONCE, unknownKeyId: true }).body, knownKey(key))), ["unknown-key", "CertificateInvalid", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(good, knownKey(key, { revoked: true }))), ["revoked-key", "Revoked", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(makeAppAttestAssertion(key, { nonce: NONCE, tamperedSignature: true }).body, knownKey(key))), ["signature", "SignatureInvalid", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(makeAppAttestAssertion(key, { nonce: NONCE, wrongNonce: true }).body, knownKey(key))), ["signature", "SignatureInvalid", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(good, knownKey(key), Buffer.alloc(32, 1).toString("base64url"))), ["signature", "SignatureInvalid", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(makeAppAttestAssertion(key, { nonce: NONCE, otherAppId: "DEMOTEAM01.x.y" }).body, knownKey(key))), ["app-id", "NonceMismatch", "No"]);
  // another key's public key cannot verify it
  const other = (await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW })).key;
  assert.deepEqual(verdictOf(await appraiseAssertion(good, knownKey(other, { keyId: key.keyId }))), ["signature", "SignatureInvalid", "No"]);
  // replay: a counter not above the stored one
  assert.deepEqual(verdictOf(await appraiseAssertion(good, knownKey(key, { counter: 1 }))), ["counter", "NonceMismatch", "No"]);
  assert.deepEqual(verdictOf(await appraiseAssertion(good, knownKey(key, { counter: 5 }))), ["counter", "NonceMismatch", "No"]);
});

test("a Yes the store refuses becomes No: a counter stored first, a key already known", async () => {
  const { blob, key } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
  const att = refusedByStore(await appraiseAttestation(blob));
  assert.deepEqual(verdictOf(att), ["key-id", "CertificateInvalid", "No"]);
  assert.equal(att.appAttest, undefined);
  const as = refusedByStore(await appraiseAssertion(makeAppAttestAssertion(key, { nonce: NONCE }).body, knownKey(key)));
  assert.deepEqual(verdictOf(as), ["counter", "NonceMismatch", "No"]);
  assert.equal(as.facts, undefined);
});

const malformed = (e: unknown) => isAppError(e) && e.entry.message === "BLOB_MALFORMED" && e.reason.startsWith("app-attest:");

test("unreadable bodies are BLOB_MALFORMED with app-attest's reason", async () => {
  const trust = trustOf(await demoCa());
  const run = (blob: Uint8Array) => appraise({ blob, nonce: NONCE, trust, now: NOW, appAttest: { apps: APPS } });
  const fmt = ["fmt", "apple-appattest"] as const;
  const bodies: [string, Uint8Array][] = [
    ["truncated", encode(new Map<string, unknown>([fmt, ["attStmt", new Map()]])).subarray(0, 25)],
    ["missing authData", encode(new Map<string, unknown>([fmt, ["attStmt", new Map<string, unknown>([["x5c", []], ["receipt", new Uint8Array(1)]])]]))],
    ["an extra key", encode(new Map<string, unknown>([fmt, ["attStmt", new Map()], ["authData", new Uint8Array(1)], ["x", 1]]))],
    ["duplicate keys", Buffer.concat([Buffer.from([0xa2]), Buffer.from(encode("fmt")), Buffer.from(encode("apple-appattest")), Buffer.from(encode("fmt")), Buffer.from(encode("apple-appattest"))])],
    ["indefinite length", Buffer.concat([Buffer.from([0xa1]), Buffer.from(encode("fmt")), Buffer.from(encode("apple-appattest")), Buffer.from([0x5f, 0x41, 0x00, 0xff])])],
    ["a tag", Buffer.concat([Buffer.from([0xa2]), Buffer.from(encode("fmt")), Buffer.from(encode("apple-appattest")), Buffer.from(encode("t")), Buffer.from([0xc1, 0x01])])],
    ["too large", Buffer.concat([Buffer.from(encode(new Map([fmt]))).subarray(0, 1), Buffer.from(encode("fmt")), Buffer.from(encode("apple-appattest")), Buffer.alloc(17_000)])],
    ["assertion JSON with another member", Buffer.from('{"keyId":"AAAA","assertion":"AAAA","x":1}')],
    ["assertion with a short key id", Buffer.from('{"keyId":"AAAA","assertion":"AAAA"}')],
    ["assertion JSON without its assertion", Buffer.from(JSON.stringify({ keyId: Buffer.alloc(32).toString("base64") }))],
    ["assertion JSON without its key id", Buffer.from(JSON.stringify({ assertion: "oA==" }))],
    ["assertion that is not CBOR", Buffer.from(JSON.stringify({ keyId: Buffer.alloc(32).toString("base64"), assertion: "////" }))],
  ];
  for (const [name, blob] of bodies) assert.throws(() => run(blob), malformed, name);
});

test("x5c JSON stays android-key's, whatever else it holds", async () => {
  const trust = trustOf(await demoCa());
  assert.throws(
    () => appraise({ blob: Buffer.from(JSON.stringify({ x5c: ["AAAA"], keyId: "x", assertion: "y" })), nonce: NONCE, trust, now: NOW }),
    (e: unknown) => isAppError(e) && e.entry.message === "BLOB_MALFORMED" && e.reason.startsWith("android-key"),
  );
});

test("a CBOR map none accepts names app-attest as tried too", async () => {
  const trust = trustOf(await demoCa());
  assert.throws(
    () => appraise({ blob: new Uint8Array([0xa1, 1, 2, 3]), nonce: NONCE, trust, now: NOW }),
    (e: unknown) => isAppError(e) && e.entry.message === "BLOB_MALFORMED" && /^vendor container: .*; not app-attest either: an attestation object is a CBOR map holding fmt "apple-appattest"$/.test(e.reason),
  );
});
