import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { appraise } from "../../src/attestation/appraise.ts";
import { androidKeyFormat } from "../../src/attestation/formats/androidKey.ts";
import { chainEncodingOf } from "../../src/attestation/encoding/chainInput.ts";
import { splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { androidTrust, pemBlob, trustConfig } from "./fixtures.ts";

/**
 * What integrators actually send: the chain as DER end to end, as a PEM bundle, or as {"x5c": [...]}. All three
 * appraise alike; every BLOB_MALFORMED reason names the format and encoding tried and what was wrong.
 */
const CAIMAN = "android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem";
const NONCE = "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4";
const AT = new Date("2025-10-01T00:00:00Z");
const trust = trustConfig(androidTrust());
const ders = () => splitDerCertificates(pemBlob(CAIMAN))!;

const pem = (certs = ders()) => Buffer.from(certs.map((d) => toPem(d, "CERTIFICATE")).join(""));
const x5c = (extra: Record<string, unknown> = {}, certs = ders()) =>
  Buffer.from(JSON.stringify({ ...extra, x5c: certs.map((d) => Buffer.from(d).toString("base64")) }));

function run(blob: Uint8Array, nonce = NONCE) {
  return appraise({ blob, nonce, trust, now: AT });
}

function malformed(blob: Uint8Array): string {
  try {
    const r = run(blob);
    assert.fail(`expected BLOB_MALFORMED, got ${r.record.status}: ${r.reason}`);
  } catch (e) {
    if (!isAppError(e)) throw e;
    assert.equal(e.entry.code, "4000006", e.reason);
    return e.reason;
  }
}

describe("three encodings of one chain", () => {
  test("DER, PEM and x5c give the same record; the detail says which came in", () => {
    const results = [pemBlob(CAIMAN), pem(), x5c()].map((b) => run(b));
    for (const r of results) {
      assert.equal(r.format, "android-key");
      assert.equal(r.record.verdict, "Yes", r.reason);
    }
    assert.deepEqual(results.map((r) => r.detail.encoding), ["der", "pem", "x5c"]);
    assert.deepEqual(results[1]!.record, results[0]!.record);
    assert.deepEqual(results[2]!.record, results[0]!.record);
  });

  test("PEM as tools print it: CRLF, leading whitespace and a BOM, text between blocks", () => {
    const noisy = "\ufeff  \r\n" + ders().map((d, i) => `subject=certificate ${i}\r\n${toPem(d, "CERTIFICATE").replace(/\n/g, "\r\n")}`).join("\r\n");
    const r = run(Buffer.from(noisy));
    assert.equal(r.detail.encoding, "pem");
    assert.equal(r.record.verdict, "Yes", r.reason);
  });

  test("x5c inside a WebAuthn attStmt: the other keys are ignored and reported", () => {
    const r = run(x5c({ alg: -7, sig: "MEUCIQ" }));
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.deepEqual(r.detail.ignoredKeys, ["alg", "sig"]);
  });

  test("the nonce is checked the same way in every encoding", () => {
    for (const b of [pem(), x5c()]) assert.equal(run(b, Buffer.alloc(32, 9).toString("base64url")).record.status, "NonceMismatch");
  });
});

describe("recognition by the bytes alone", () => {
  test("text forms are recognised only as text; a vendor container never is", () => {
    assert.equal(chainEncodingOf(pem(), 10), "pem");
    assert.equal(chainEncodingOf(x5c(), 10), "x5c");
    assert.equal(chainEncodingOf(Buffer.from("[1]"), 10), "x5c");
    // a vendor blob of exitCode 0x7b ('{') or 0x2d ('-') still carries its version byte 0x02: not text
    assert.equal(chainEncodingOf(Buffer.from([0x7b, 0x01, 0x41, 0x02, 0x00, 0x00]), 10), undefined);
    assert.equal(chainEncodingOf(Buffer.from("-----BEGIN CERT\x02"), 10), undefined);
    assert.equal(chainEncodingOf(Buffer.from("---- not pem"), 10), undefined);
    assert.equal(androidKeyFormat.matches(Buffer.from("MIIBase64WithoutHeaders")), false);
  });
});

describe("BLOB_MALFORMED reasons name the format, the encoding and the fault", () => {
  const cases: [string, () => Uint8Array, RegExp][] = [
    ["PEM block without its END", () => Buffer.from(pem().toString().replace(/-----END CERTIFICATE-----\n$/, "")), /^android-key \(PEM bundle\): the bundle: block "CERTIFICATE" opened on line \d+ has no END$/],
    ["a private key in the bundle", () => Buffer.concat([pem(), Buffer.from(toPem(Buffer.from([0x30, 0x00]), "PRIVATE KEY"))]), /^android-key \(PEM bundle\): block 5 is "PRIVATE KEY"; only CERTIFICATE blocks belong in a chain$/],
    ["corrupted base64 in a PEM block", () => Buffer.from(pem().toString().replace(/^(MII.)/m, "$1!")), /^android-key \(PEM bundle\): .*not valid base64$/],
    ["non-canonical base64 (padding bits)", () => Buffer.from(toPem(Buffer.from([0x30, 0x00]), "CERTIFICATE").replace("MAA=", "MAB=")), /^android-key \(PEM bundle\): .*not canonical base64/],
    ["a PEM block that is not one certificate", () => Buffer.from(toPem(Buffer.concat([ders()[0]!, ders()[1]!]), "CERTIFICATE")), /^android-key \(PEM bundle\): block 0 holds more than one certificate$/],
    ["too many PEM certificates", () => pem([...ders(), ...ders(), ...ders()]), /^android-key \(PEM bundle\): more than 10 certificates$/],
    ["x5c not JSON", () => Buffer.from('{"x5c": [}'), /^android-key \(x5c JSON\): not JSON \(/],
    ["x5c as a bare array", () => Buffer.from(JSON.stringify(ders().map((d) => Buffer.from(d).toString("base64")))), /^android-key \(x5c JSON\): expected an object \{"x5c": \["<base64 DER>", \.\.\.\]\}, got an array$/],
    ["x5c missing", () => Buffer.from('{"chain": []}'), /^android-key \(x5c JSON\): "x5c" must be an array/],
    ["x5c empty", () => Buffer.from('{"x5c": []}'), /^android-key \(x5c JSON\): "x5c" is empty$/],
    ["x5c entry not a string", () => Buffer.from('{"x5c": [42]}'), /^android-key \(x5c JSON\): x5c\[0\] is not a string$/],
    ["x5c entry in base64url", () => Buffer.from(JSON.stringify({ x5c: [Buffer.from(ders()[0]!).toString("base64url")] })), /^android-key \(x5c JSON\): x5c\[0\]: base64url, expected standard base64/],
    ["x5c entry not a certificate", () => Buffer.from('{"x5c": ["AAAA"]}'), /^android-key \(x5c JSON\): x5c\[0\] is not one DER certificate \(it starts with byte 0x00/],
    ["DER chain with a certificate that is not X.509", () => Buffer.from([0x30, 0x08, 0x30, 0x00, 0x30, 0x00, 0x03, 0x02, 0x00, 0x00]), /^android-key \(DER certificates\): /],
  ];
  for (const [name, blob, reason] of cases) {
    test(name, () => assert.match(malformed(blob()), reason));
  }

  test("a body that looks like a failed attempt at android-key says why it is not that either", () => {
    // truncated DER chain: read as a vendor container, and the reason says what the DER walk found
    const truncated = pemBlob(CAIMAN).subarray(0, 600);
    assert.match(malformed(truncated), /^vendor container: .*; not android-key DER certificates either: certificate 0 at byte 0: its length .* runs past the end of the body \(600 bytes left\)$/);
    // base64 of the chain without PEM armour
    assert.match(malformed(Buffer.from(pemBlob(CAIMAN).toString("base64"))), /^vendor container: .*; not android-key either: the body is text, and android-key text is a PEM bundle/);
    // PEM with a stray control byte
    const withNul = Buffer.concat([pem().subarray(0, 40), Buffer.from([0x00]), pem().subarray(40)]);
    assert.match(malformed(withNul), /; not android-key either: a PEM bundle or x5c JSON is plain text, and byte 40 is the control byte 0x00$/);
    // the PEM body of the issue used to say only "vendor container: version 66 is unknown"
    assert.doesNotMatch(malformed(Buffer.from("-----BEGIN CERTIFICATE-----\nMIIB\n")), /vendor container/);
  });

  test("a binary vendor-looking body keeps the vendor reason alone", () => {
    assert.match(malformed(Buffer.from([0x00, 0x07, 0x53, 0x75, 0x63, 0x63, 0x65, 0x73, 0x73, 0x42])), /^vendor container: version 66 is unknown \(2 expected\)$/);
  });
});
