import assert from "node:assert/strict";
import { createHash, generateKeyPairSync, X509Certificate } from "node:crypto";
import { before, describe, test } from "node:test";
import { APPLE_ROOT_CA_G3_DER, APPLE_ROOT_CA_G3_SHA256 } from "../../src/attestation/chain/appleRootCaG3.ts";
import {
  appAttestReceiptCheck,
  RECEIPT_FIELD,
  RECEIPT_MAX_BYTES,
  openAppAttestReceipt,
  verifyAppAttestReceipt,
  type ReceiptExpectations,
  type ReceiptResult,
} from "../../src/attestation/encoding/appAttestReceipt.ts";
import {
  createReceiptSigningCa,
  encodeReceiptContent,
  signAppAttestReceipt,
  type ReceiptContent,
  type ReceiptSigningCa,
} from "../../src/attestation/sim/appAttestReceipt.ts";
import { T0 as T0_MS } from "../helpers/clock.ts";
import { receiptVectors } from "./receiptVectors.ts";

const T0 = new Date(T0_MS);
const vectors = receiptVectors();

function failure(r: ReceiptResult): string {
  assert.equal(r.ok, false, "the receipt was accepted");
  return r.ok ? "" : r.reason;
}

describe("real receipts (test/vectors/app-attest)", () => {
  test("the vectors are all there", () => {
    assert.equal(vectors.length, 9);
  });

  for (const v of vectors) {
    test(`${v.name}: verifies at the MANIFEST's time, Apple's app id, type ATTEST`, () => {
      const r = verifyAppAttestReceipt(v.receipt, { appId: v.appId, credentialCertificate: v.credentialCertificate, at: v.at, type: "ATTEST" });
      assert.ok(r.ok, r.ok ? "" : `${r.reason}: ${r.message}`);
      const receipt = r.receipt;
      assert.equal(receipt.type, "ATTEST");
      assert.equal(receipt.appId, v.appId);
      assert.deepEqual(Buffer.from(receipt.attestedCertificate), Buffer.from(v.credentialCertificate));
      // the MANIFEST's `at` is the receipt's creation time; ATTEST receipts last 90 days and carry no metric
      assert.equal(receipt.createdAt.toISOString(), v.at.toISOString());
      assert.equal(receipt.expiresAt.getTime() - receipt.createdAt.getTime(), 90 * 86_400_000);
      assert.equal(receipt.riskMetric, undefined);
      assert.equal(receipt.notBefore, undefined);
      assert.equal(receipt.environment, v.environment === "development" ? "sandbox" : "production");
      assert.equal(receipt.clientHash.length, 32);
      assert.ok(receipt.token.length > 0);
      assert.equal(receipt.signer.subject, "CN=Application Attestation Fraud Receipt Signing, O=Apple Inc., C=US");
      assert.deepEqual(receipt.otherFields, []);
    });
  }

  const v = vectors[0]!;
  // overrides may swap the certificate for the public key: the union is checked where it is used
  const expect = (over: Partial<ReceiptExpectations> = {}): ReceiptExpectations =>
    ({ appId: v.appId, credentialCertificate: v.credentialCertificate, at: v.at, ...over }) as ReceiptExpectations;

  test("one flipped byte in the signed content: signature-invalid", () => {
    // the app id's text sits inside the signed content only (the certificates carry other names)
    const at = Buffer.from(v.receipt).indexOf(Buffer.from(v.appId, "latin1"));
    assert.ok(at > 0);
    for (const offset of [at, at + 5, at + v.appId.length - 1]) {
      const mutant = new Uint8Array(v.receipt);
      mutant[offset]! ^= 0x01;
      assert.equal(failure(verifyAppAttestReceipt(mutant, expect())), "signature-invalid");
    }
  });

  test("one flipped byte in the signature: signature-invalid", () => {
    const mutant = new Uint8Array(v.receipt);
    // the signature is the last OCTET STRING before the closing end-of-contents (4 × 00 00)
    mutant[mutant.length - 8 - 10]! ^= 0x40;
    assert.equal(failure(verifyAppAttestReceipt(mutant, expect())), "signature-invalid");
  });

  test("another app, another credential certificate, another type are refused", () => {
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, expect({ appId: "6MURL8TA57.de.vincent-haupert.other" }))), "app-id-mismatch");
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, expect({ credentialCertificate: vectors[1]!.credentialCertificate }))), "certificate-mismatch");
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, expect({ type: "RECEIPT" }))), "type-mismatch");
  });

  test("a stored key's public key stands for its certificate: the point field 3 certifies must be it", () => {
    const point = (der: Uint8Array) => {
      const jwk = new X509Certificate(der).publicKey.export({ format: "jwk" });
      return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
    };
    const byKey = verifyAppAttestReceipt(v.receipt, { appId: v.appId, credentialPublicKey: point(v.credentialCertificate), at: v.at });
    assert.ok(byKey.ok);
    const other = verifyAppAttestReceipt(v.receipt, { appId: v.appId, credentialPublicKey: point(vectors[1]!.credentialCertificate), at: v.at });
    assert.equal(failure(other), "certificate-mismatch");
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, { appId: v.appId, credentialPublicKey: new Uint8Array(65), at: v.at })), "certificate-mismatch");
  });

  test("times: created ahead of the appraisal beyond the skew, expired, signer out of validity", () => {
    const created = v.at.getTime();
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, expect({ at: new Date(created - 6 * 60_000) }))), "created-in-future");
    assert.ok(verifyAppAttestReceipt(v.receipt, expect({ at: new Date(created - 4 * 60_000) })).ok, "within the 5-minute skew");
    assert.ok(verifyAppAttestReceipt(v.receipt, expect({ at: new Date(created - 6 * 60_000), maxFutureSkewMs: 10 * 60_000 })).ok, "a wider skew");
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, expect({ at: new Date(created - 11 * 60_000), maxFutureSkewMs: 10 * 60_000 }))), "created-in-future");
    // 91 days on: the receipt expired; its signer (valid to 2021-06-18) still is
    assert.equal(failure(verifyAppAttestReceipt(v.receipt, expect({ at: new Date(created + 91 * 86_400_000) }))), "expired");
    // years on: the signing certificate is no longer valid
    const late = openAppAttestReceipt(v.receipt, { at: T0 });
    assert.equal(failure(late), "untrusted-signer");
    assert.match(late.ok ? "" : late.message, /Application Attestation Fraud Receipt Signing, O=Apple Inc., C=US is valid .* not at 2026/);
  });

  test("without Apple's root trusted, Apple's receipt is refused", async () => {
    const other = await createReceiptSigningCa({ now: v.at });
    const r = openAppAttestReceipt(v.receipt, { at: v.at, roots: [other.root.certDer] });
    assert.equal(failure(r), "untrusted-signer");
  });

  test("the appraisal's seam: every real receipt passes for its key and app; another app's fails with a reason", () => {
    const check = appAttestReceiptCheck();
    for (const vector of vectors) {
      const r = check(vector.receipt, { appId: vector.appId, credentialCertDer: vector.credentialCertificate, now: vector.at });
      assert.ok(r.ok, vector.name);
    }
    const wrong = check(v.receipt, { appId: "V8H6LQ9448.io.uebelacker.AppAttestExample", credentialCertDer: v.credentialCertificate, now: v.at });
    assert.ok(!wrong.ok);
    assert.equal(wrong.reasonId, "app-id-mismatch");
    assert.match(wrong.reason, /^app-id-mismatch: the receipt is for app 6MURL8TA57/);
  });

  test("the built-in root is Apple Root CA - G3, and the one Apple's receipts carry", () => {
    assert.equal(createHash("sha256").update(APPLE_ROOT_CA_G3_DER).digest("hex"), APPLE_ROOT_CA_G3_SHA256);
    for (const vector of vectors) assert.ok(Buffer.from(vector.receipt).includes(Buffer.from(APPLE_ROOT_CA_G3_DER)), vector.name);
  });
});

describe("receipts of a test CA", () => {
  const APP = "ABCDE12345.com.example.wallet";
  let ca: ReceiptSigningCa;
  let credential: Uint8Array;
  before(async () => {
    ca = await createReceiptSigningCa({ now: T0 });
    // any certificate stands for the credential certificate: the receipt names it byte for byte
    credential = (await createReceiptSigningCa({ now: T0 })).leaf.certDer;
  });
  const content = (over: Partial<ReceiptContent> = {}): ReceiptContent => ({
    type: "RECEIPT",
    appId: APP,
    attestedCertificate: credential,
    createdAt: T0,
    notBefore: new Date(T0.getTime() + 86_400_000),
    riskMetric: 3,
    ...over,
  });
  const receipt = (over: Partial<ReceiptContent> = {}, opts?: Parameters<typeof signAppAttestReceipt>[2]) =>
    signAppAttestReceipt(ca, encodeReceiptContent(content(over)), opts);
  const check = (bytes: Uint8Array, over: Partial<ReceiptExpectations> = {}) =>
    verifyAppAttestReceipt(bytes, { appId: APP, credentialCertificate: credential, at: T0, roots: [ca.root.certDer], ...over } as ReceiptExpectations);

  test("a refreshed receipt: the risk metric and not-before are read; not-before in the future is no failure", () => {
    const r = check(receipt({ riskMetric: 17 }), { type: "RECEIPT" });
    assert.ok(r.ok, r.ok ? "" : r.message);
    assert.equal(r.receipt.riskMetric, 17);
    assert.equal(r.receipt.type, "RECEIPT");
    assert.equal(r.receipt.notBefore?.toISOString(), new Date(T0.getTime() + 86_400_000).toISOString());
  });

  test("the root need not be carried; a carried root must be a trusted one", async () => {
    assert.ok(check(receipt({}, { includeRoot: false })).ok);
    const lookAlike = await createReceiptSigningCa({ now: T0 });
    // the real Apple root trusted, the test CA's root carried: refused
    assert.equal(failure(openAppAttestReceipt(receipt(), { at: T0 })), "untrusted-signer");
    assert.equal(failure(check(receipt(), { roots: [lookAlike.root.certDer] })), "untrusted-signer");
  });

  test("a signer without Apple's receipt-signing marker is not trusted, though its chain is", async () => {
    const unmarked = await createReceiptSigningCa({ now: T0, unmarked: true });
    const r = signAppAttestReceipt(unmarked, encodeReceiptContent(content()));
    const checked = verifyAppAttestReceipt(r, { appId: APP, credentialCertificate: credential, at: T0, roots: [unmarked.root.certDer] });
    assert.equal(failure(checked), "untrusted-signer");
    assert.match(checked.ok ? "" : checked.message, /marker extension missing/);
  });

  test("signed by another key than the named signer's: signature-invalid", () => {
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    assert.equal(failure(check(receipt({}, { signWith: privateKey }))), "signature-invalid");
  });

  test("content that is signed but not Apple's attribute set: content-malformed", () => {
    const twice = [{ type: RECEIPT_FIELD.appId, value: new Uint8Array(Buffer.from(APP)) }];
    assert.equal(failure(check(receipt({ extra: twice }))), "content-malformed");
    assert.equal(failure(check(receipt({ appId: "not an app id" }))), "content-malformed");
    const badMetric = [{ type: RECEIPT_FIELD.riskMetric, value: new Uint8Array(Buffer.from("-1")) }];
    assert.equal(failure(check(receipt({ riskMetric: undefined, extra: badMetric }))), "content-malformed");
    assert.equal(failure(check(receipt({ riskMetric: 1234567890 }))), "content-malformed");
    const badTime = [{ type: RECEIPT_FIELD.notBefore, value: new Uint8Array(Buffer.from("2026-13-40T00:00:00Z")) }];
    assert.equal(failure(check(receipt({ notBefore: undefined, extra: badTime }))), "content-malformed");
  });

  test("undocumented attribute types are kept by number, not interpreted", () => {
    const r = check(receipt({ extra: [{ type: 99, value: new Uint8Array([1, 2, 3]) }] }));
    assert.ok(r.ok, r.ok ? "" : r.message);
    assert.deepEqual(r.receipt.otherFields, [99]);
  });

  test("bounds: an oversized body is refused before it is read; garbage is malformed", () => {
    assert.equal(failure(check(new Uint8Array(RECEIPT_MAX_BYTES + 1))), "too-large");
    assert.equal(failure(check(new Uint8Array(0))), "malformed");
    assert.equal(failure(check(new Uint8Array(Buffer.from("MIIK not a receipt")))), "malformed");
    const r = receipt();
    assert.equal(failure(check(Buffer.concat([r, Buffer.from([0])]))), "malformed");
    assert.equal(failure(check(r.subarray(0, r.length - 1))), "malformed");
  });
});
