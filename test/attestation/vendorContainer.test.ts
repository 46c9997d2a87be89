import "reflect-metadata";
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { isAppError } from "../../src/errors/AppError.ts";
import { parseStatusList } from "../../src/attestation/chain/statusList.ts";
import { vendorTrustProblems } from "../../src/attestation/chain/vendorChain.ts";
import { parsePemBlocks, parsePemBundle, toPem } from "../../src/attestation/encoding/pem.ts";
import { parseVendorContainer, VendorRecordType as T } from "../../src/attestation/encoding/vendorContainer.ts";
import { vendorContainerFormat } from "../../src/attestation/formats/vendorContainer.ts";
import { parseReferenceValues } from "../../src/attestation/policy/referenceValues.ts";
import {
  createDevCa,
  createRootCertificate,
  issueCertificate,
  issueDeviceLeaf,
  readDevCa,
  writeDevCa,
  DEV_CA_FILES,
  type CertifiedKey,
  type DevCa,
  type KeyType,
} from "../../src/attestation/sim/devCa.ts";
import {
  DEFAULT_IMEI,
  DEFAULT_MEASUREMENTS,
  UNKNOWN_FIRMWARE,
  demoReferenceValues,
  encodeContainer,
  encodeTlv,
  encodeVendorBlob,
  signVendorData,
  vendorRecords,
  type ContainerFields,
  type SignedVendorBlobOptions,
  type TlvRecord,
} from "../../src/attestation/sim/deviceSim.ts";
import type { AppraisalResult, StatusList, TrustConfig, VendorTrust } from "../../src/attestation/types.ts";

/**
 * The vendor container end to end: every parser rule (one malformed case each), every appraisal outcome, and the
 * chain rules, with blobs from a test PKI generated once and appraised at a pinned time.
 */

const PINNED = new Date("2030-06-15T12:00:00.000Z");
const DAY = 86_400_000;
const at = (days: number) => new Date(PINNED.getTime() + days * DAY);
const NONCE = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) & 0xff)).toString("base64url");
const OTHER_NONCE = Buffer.alloc(32, 0x42).toString("base64url");
const MALFORMED = "4000006";
const NOT_IMPLEMENTED = "5010000";

interface Pki {
  ca: DevCa;
  leafEc: CertifiedKey;
  leafRsa: CertifiedKey;
  leafEd: CertifiedKey;
  leafRsa1024: CertifiedKey;
  leafP384: CertifiedKey;
  rsaCa: DevCa;
  edCa: DevCa;
  stranger: DevCa; // same names as `ca`, other keys
}
let pki: Pki;

before(async () => {
  const now = PINNED;
  const [ca, rsaCa, edCa, stranger] = await Promise.all([
    createDevCa({ now }),
    createDevCa({ now, keyType: "rsa", name: "RSA Vendor" }),
    createDevCa({ now, keyType: "ed25519", name: "Ed Vendor" }),
    createDevCa({ now }),
  ]);
  const leaf = (keyType: KeyType) => issueDeviceLeaf(ca, { now, keyType });
  const [leafEc, leafRsa, leafEd, leafRsa1024, leafP384] = await Promise.all([
    leaf("ec"), leaf("rsa"), leaf("ed25519"), leaf("rsa-1024"), leaf("ec-p384"),
  ]);
  pki = { ca, leafEc, leafRsa, leafEd, leafRsa1024, leafP384, rsaCa, edCa, stranger };
});

function trustOf(ca: DevCa | readonly Uint8Array[], over: Partial<VendorTrust> = {}): TrustConfig {
  const rootsDer = Array.isArray(ca) ? ca : [(ca as DevCa).root.certDer];
  return {
    vendor: { rootsDer, revocations: new Map(), referenceValues: demoReferenceValues(), ...over },
    // The vendor format never reads the android half.
    android: {} as TrustConfig["android"],
  };
}

function appraise(blob: Uint8Array, opts: { trust?: TrustConfig; now?: Date; nonce?: string } = {}): AppraisalResult {
  return vendorContainerFormat.appraise({
    blob,
    nonce: opts.nonce ?? NONCE,
    trust: opts.trust ?? trustOf(pki.ca),
    now: opts.now ?? PINNED,
  });
}

function blob(over: Partial<SignedVendorBlobOptions> = {}): Uint8Array {
  return encodeVendorBlob({ nonce: NONCE, now: PINNED, leaf: pki.leafEc, ca: pki.ca, ...over });
}

function expectVerdict(b: Uint8Array, status: string, verdict: string, opts: Parameters<typeof appraise>[1] = {}) {
  const r = appraise(b, opts);
  assert.equal(r.record.status, status, r.reason);
  assert.equal(r.record.verdict, verdict, r.reason);
  return r;
}

function expectError(b: Uint8Array, code: string, mentions?: RegExp, context = "") {
  assert.throws(
    () => appraise(b),
    (e: unknown) => {
      assert.ok(isAppError(e), `${context}: expected an AppError, got ${String(e)}`);
      assert.equal(e.entry.code, code, `${context}: ${e.reason}`);
      if (mentions) assert.match(e.reason, mentions, context);
      return true;
    },
  );
}

/** A valid container from parts, signed by the EC leaf, with the given records and field overrides. */
function container(records: readonly TlvRecord[] = vendorRecords({ nonce: NONCE, now: PINNED }), over: Partial<ContainerFields> = {}) {
  const data = encodeTlv(records);
  return encodeContainer({
    data,
    signature: signVendorData(pki.leafEc.privateKey, data),
    certificates: [pki.leafEc.certDer, pki.ca.intermediate.certDer],
    ...over,
  });
}

/** The default records with `type` replaced by `value` (null removes it). */
function withRecord(type: number, value: Uint8Array | null): TlvRecord[] {
  const base = vendorRecords({ nonce: NONCE, now: PINNED });
  return value === null ? base.filter((r) => r.type !== type) : base.map((r) => (r.type === type ? { type, value } : r));
}

const ascii = (s: string) => Buffer.from(s, "latin1");

describe("vendor container layout", () => {
  it("agrees byte for byte with the conformance suite's encoder", () => {
    // Produced by ../shared/conformance/part_a_smoke.py's tlv()/records()/struct packing with nonce = bytes 0..31,
    // tamper=1, signature 5 × 0xAA and two stub "certificates".
    const expected =
      "0007537563636573730201560100e0" +
      DEFAULT_MEASUREMENTS.map((m) => Buffer.from(m).toString("hex")).join("") +
      "020003596573030020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f05000400001234" +
      "0600010107000f3335313233343536373839303132340800060a1b2c3d4e5f090008c0ffee01234567890a0007534d2d" +
      "583130300b000c5831303058585531414141310005aaaaaaaaaa02000330010000023000";
    const nonce = Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString("base64url");
    const encoded = encodeContainer({
      data: vendorRecords({ nonce, tamper: true, timestamp: null }),
      signature: Buffer.alloc(5, 0xaa),
      certificates: [Uint8Array.of(0x30, 0x01, 0x00), Uint8Array.of(0x30, 0x00)],
    });
    assert.equal(Buffer.from(encoded).toString("hex"), expected);
  });

  it("parses into views of the blob, never copies sized by a length field", () => {
    const b = blob();
    const c = parseVendorContainer(b);
    assert.equal(c.data.buffer, b.buffer);
    assert.equal(c.signature.buffer, b.buffer);
    assert.equal(c.records.nonce!.buffer, b.buffer);
  });
});

describe("parser rules → BLOB_MALFORMED (4000006)", () => {
  it("the baseline used by these cases is valid", () => {
    expectVerdict(container(), "Success", "Yes");
  });

  it("version 1 → NOT_IMPLEMENTED (5010000), whatever follows", () => {
    expectError(container(undefined, { version: 1 }), NOT_IMPLEMENTED);
    expectError(Uint8Array.of(0, 0, 1), NOT_IMPLEMENTED);
  });

  it("any other version → malformed", () => {
    for (const version of [0, 3, 255]) expectError(container(undefined, { version }), MALFORMED, /version/);
  });

  it("empty or truncated header", () => {
    expectError(new Uint8Array(), MALFORMED, /exitCode/);
    expectError(Uint8Array.of(0), MALFORMED, /errLen/);
    expectError(Uint8Array.of(0, 7, 0x53), MALFORMED, /errString/);
    expectError(Uint8Array.of(0, 0), MALFORMED, /version/);
    expectError(Uint8Array.of(0, 0, 2, 0), MALFORMED, /dataLen/);
  });

  it("errString must be printable ASCII", () => {
    expectError(container(undefined, { errString: Uint8Array.of(0x53, 0x00) }), MALFORMED, /errString/);
    expectError(container(undefined, { errString: Uint8Array.of(0xc3, 0xa9) }), MALFORMED, /errString/);
  });

  it("dataLen: 0 only with exitCode ≠ 0, at most 16 384, no more than the bytes present", () => {
    expectError(container(undefined, { data: new Uint8Array() }), MALFORMED, /dataLen is 0/);
    const big = encodeTlv([{ type: 0x7f, value: new Uint8Array(16_385 - 3) }]);
    expectError(container(undefined, { data: big }), MALFORMED, /dataLen 16385/);
    expectError(container(undefined, { dataLen: 16_000 }), MALFORMED, /data needs 16000/);
  });

  it("sigLen: 0 only with exitCode ≠ 0, at most 1 024, no more than the bytes present", () => {
    expectError(container(undefined, { signature: new Uint8Array() }), MALFORMED, /sigLen is 0/);
    expectError(container(undefined, { signature: new Uint8Array(1025) }), MALFORMED, /sigLen 1025/);
    expectError(container(undefined, { sigLen: 1024, certificates: [], certCount: 1 }), MALFORMED, /signature needs 1024/);
  });

  it("certCount: 0 only with exitCode ≠ 0, at most 4, each length present and non-zero", () => {
    expectError(container(undefined, { certificates: [] }), MALFORMED, /certCount is 0/);
    const five = Array.from({ length: 5 }, () => pki.ca.intermediate.certDer);
    expectError(container(undefined, { certificates: [pki.leafEc.certDer, ...five.slice(1)] }), MALFORMED, /certCount 5/);
    expectError(container(undefined, { certCount: 3 }), MALFORMED, /certificate 2 length/);
    expectError(container(undefined, { certificates: [pki.leafEc.certDer, new Uint8Array()] }), MALFORMED, /empty/);
    expectError(container(undefined, { certLengths: [undefined, 65_535] }), MALFORMED, /certificate 1 needs 65535/);
  });

  it("no trailing bytes", () => {
    expectError(container(undefined, { trailing: Uint8Array.of(0) }), MALFORMED, /trailing/);
  });

  it("each certificate must be DER", () => {
    const leaf = pki.leafEc.certDer;
    const cases: [string, Uint8Array][] = [
      ["garbage", ascii("not a certificate")],
      ["PEM text", ascii(toPem(leaf, "CERTIFICATE"))],
      ["a trailing byte inside the slot", Buffer.concat([leaf, Uint8Array.of(0)])],
      ["a truncated certificate", leaf.subarray(0, leaf.length - 1)],
      // 0x30 0x82 LL LL → 0x30 0x83 00 LL LL: the same content under a non-minimal (BER) length
      ["a non-minimal length", Buffer.concat([Uint8Array.of(0x30, 0x83, 0x00), leaf.subarray(2)])],
    ];
    for (const [what, der] of cases) {
      expectError(container(undefined, { certificates: [der, pki.ca.intermediate.certDer] }), MALFORMED, /certificate 0/, what);
      expectError(container(undefined, { certificates: [leaf, der] }), MALFORMED, /certificate 1/, what);
    }
  });

  it("TLV framing: a header needs 3 bytes and a value cannot overrun data", () => {
    const records = encodeTlv(vendorRecords({ nonce: NONCE, now: PINNED }));
    expectError(container(undefined, { data: Buffer.concat([records, Uint8Array.of(0x0d, 0x00)]) }), MALFORMED, /record header/);
    expectError(container(undefined, { data: Buffer.concat([records, Uint8Array.of(0x0d, 0x00, 0x05, 1, 2)]) }), MALFORMED, /claims 5/);
  });

  it("a type may appear once, known or unknown", () => {
    const base = vendorRecords({ nonce: NONCE, now: PINNED });
    expectError(container([...base, { type: T.MODEL, value: ascii("SM-X100") }]), MALFORMED, /MODEL.*twice/);
    expectError(container([...base, { type: 0x44, value: ascii("a") }, { type: 0x44, value: ascii("b") }]), MALFORMED, /0x44\) appears twice/);
  });

  it("unknown types are skipped", () => {
    const base = vendorRecords({ nonce: NONCE, now: PINNED });
    const extra = [0x00, 0x04, 0x0d, 0xff].map((type) => ({ type, value: ascii("future") }));
    const r = expectVerdict(container([extra[0]!, ...base, ...extra.slice(1)]), "Success", "Yes");
    assert.deepEqual(r.detail.unknownRecordTypes, [0x00, 0x04, 0x0d, 0xff]);
  });

  it("required records: MEASUREMENTS, NONCE, TAMPER_BIT, MODEL, FIRMWARE_VERSION", () => {
    for (const type of [T.MEASUREMENTS, T.NONCE, T.TAMPER_BIT, T.MODEL, T.FIRMWARE_VERSION]) {
      expectError(container(withRecord(type, null)), MALFORMED, /required record/);
    }
  });

  it("one of IMEI / CHIP_ID is required; either alone suffices", () => {
    const neither = withRecord(T.IMEI, null).filter((r) => r.type !== T.CHIP_ID);
    expectError(container(neither), MALFORMED, /imei or chipId/);
    expectVerdict(container(withRecord(T.IMEI, null)), "Success", "Yes");
    expectVerdict(container(withRecord(T.CHIP_ID, null)), "Success", "Yes");
  });

  it("optional records may be absent", () => {
    const optional = new Set<number>([T.DEVICE_VERDICT, T.SERIAL, T.MAC, T.CHIP_ID, T.TIMESTAMP]);
    const minimal = vendorRecords({ nonce: NONCE, now: PINNED }).filter((r) => !optional.has(r.type));
    const r = expectVerdict(container(minimal), "Success", "Yes");
    assert.equal(r.record.MAC, "");
    assert.equal(r.record.chipId, "");
  });

  it("value sizes and forms", () => {
    const cases: [number, Uint8Array, RegExp][] = [
      [T.MEASUREMENTS, new Uint8Array(0), /MEASUREMENTS/],
      [T.MEASUREMENTS, new Uint8Array(31), /MEASUREMENTS/],
      [T.MEASUREMENTS, new Uint8Array(33), /MEASUREMENTS/],
      [T.MEASUREMENTS, new Uint8Array(32 * 17), /MEASUREMENTS/],
      [T.DEVICE_VERDICT, ascii("Maybe"), /DEVICE_VERDICT/],
      [T.DEVICE_VERDICT, ascii("yes"), /DEVICE_VERDICT/],
      [T.NONCE, new Uint8Array(31), /NONCE/],
      [T.NONCE, new Uint8Array(33), /NONCE/],
      [T.NONCE, ascii("!".repeat(43)), /NONCE/],
      [T.SERIAL, new Uint8Array(3), /SERIAL/],
      [T.SERIAL, new Uint8Array(5), /SERIAL/],
      [T.TAMPER_BIT, Uint8Array.of(2), /TAMPER_BIT/],
      [T.TAMPER_BIT, Uint8Array.of(0, 0), /TAMPER_BIT/],
      [T.TAMPER_BIT, new Uint8Array(0), /TAMPER_BIT/],
      [T.IMEI, ascii(DEFAULT_IMEI.slice(0, 14)), /IMEI/],
      [T.IMEI, ascii(`${DEFAULT_IMEI}0`), /IMEI/],
      [T.IMEI, ascii(`${DEFAULT_IMEI.slice(0, 14)}x`), /IMEI/],
      [T.IMEI, ascii(DEFAULT_IMEI.slice(0, 14) + ((Number(DEFAULT_IMEI[14]) + 1) % 10)), /Luhn/],
      [T.MAC, new Uint8Array(5), /MAC/],
      [T.MAC, new Uint8Array(7), /MAC/],
      [T.CHIP_ID, new Uint8Array(0), /CHIP_ID/],
      [T.CHIP_ID, new Uint8Array(33), /CHIP_ID/],
      [T.MODEL, new Uint8Array(0), /MODEL/],
      [T.MODEL, ascii("M".repeat(65)), /MODEL/],
      [T.MODEL, ascii("SM-X100\n"), /MODEL/],
      [T.FIRMWARE_VERSION, new Uint8Array(0), /FIRMWARE_VERSION/],
      [T.FIRMWARE_VERSION, ascii("F".repeat(65)), /FIRMWARE_VERSION/],
      [T.FIRMWARE_VERSION, Uint8Array.of(0x41, 0x80), /FIRMWARE_VERSION/],
      [T.TIMESTAMP, new Uint8Array(7), /TIMESTAMP/],
      [T.TIMESTAMP, new Uint8Array(9), /TIMESTAMP/],
    ];
    for (const [type, value, mentions] of cases) expectError(container(withRecord(type, value)), MALFORMED, mentions);
  });

  it("the limits themselves are accepted: 16 digests, 64-character model, 32-byte chip id", () => {
    const digests = Array.from({ length: 16 }, (_, i) => Buffer.alloc(32, i));
    const records = withRecord(T.MEASUREMENTS, Buffer.concat(digests))
      .map((r) => (r.type === T.MODEL ? { type: T.MODEL, value: ascii("M".repeat(64)) } : r))
      .map((r) => (r.type === T.CHIP_ID ? { type: T.CHIP_ID, value: new Uint8Array(32).fill(1) } : r));
    const r = expectVerdict(container(records), "Success", "Unknown");
    assert.equal(r.record.measurements.length, 16 * 64);
  });

  it("exitCode ≠ 0 relaxes counts and required records, but not well-formedness", () => {
    const failed = { exitCode: 7, errString: "TEE unavailable" };
    const empty = encodeContainer({ ...failed, data: new Uint8Array(), signature: new Uint8Array(), certificates: [] });
    expectVerdict(empty, "DeviceError", "Unknown");
    const partial = container([{ type: T.TAMPER_BIT, value: Uint8Array.of(1) }], { ...failed, certificates: [] });
    assert.equal(expectVerdict(partial, "DeviceError", "Unknown").record.tamperBit, "1");
    expectError(container(withRecord(T.TAMPER_BIT, Uint8Array.of(2)), failed), MALFORMED, /TAMPER_BIT/);
    expectError(container(undefined, { ...failed, certificates: [ascii("junk")] }), MALFORMED, /certificate 0/);
    expectError(container(undefined, { ...failed, trailing: Uint8Array.of(1) }), MALFORMED, /trailing/);
    expectError(container(undefined, { ...failed, sigLen: 2000, signature: new Uint8Array(2000) }), MALFORMED, /sigLen/);
  });
});

describe("appraisal outcomes", () => {
  it("Success / Yes: EC, RSA and Ed25519 leaves; the record maps every field", () => {
    for (const leaf of [pki.leafEc, pki.leafRsa, pki.leafEd]) {
      const r = expectVerdict(blob({ leaf }), "Success", "Yes");
      assert.deepEqual(Object.keys(r.record), [
        "measurements", "tamperBit", "IMEI", "status", "nonce", "chipId", "verdict", "MAC", "version",
        "createdDate", "updateDate",
      ]);
      assert.deepEqual(r.record, {
        measurements: DEFAULT_MEASUREMENTS.map((m) => Buffer.from(m).toString("hex")).join(""),
        tamperBit: "0",
        IMEI: DEFAULT_IMEI,
        status: "Success",
        nonce: NONCE,
        chipId: "c0ffee0123456789",
        verdict: "Yes",
        MAC: "0a:1b:2c:3d:4e:5f",
        version: "2",
        createdDate: "2030-06-15T12:00:00.000Z",
        updateDate: "2030-06-15T12:00:00.000Z",
      });
      assert.equal(r.format, "vendor");
      assert.equal(r.detail.rule, 7);
      assert.equal(r.detail.model, "SM-X100");
      assert.equal(r.detail.serial, "00001234");
      assert.equal(r.detail.timestamp, PINNED.toISOString());
      assert.equal((r.detail.certificates as { serial: string }[])[0]!.serial, leaf.serial);
    }
  });

  it("Success / Yes under CAs of each key family (RSA, Ed25519), and only under their own roots", async () => {
    for (const ca of [pki.rsaCa, pki.edCa]) {
      const leaf = await issueDeviceLeaf(ca, { now: PINNED });
      const b = encodeVendorBlob({ nonce: NONCE, now: PINNED, leaf, ca });
      expectVerdict(b, "Success", "Yes", { trust: trustOf(ca) });
      expectVerdict(b, "CertificateInvalid", "No");
    }
  });

  it("rule 1: exitCode ≠ 0 → DeviceError / Unknown, filling what was present", () => {
    const r = expectVerdict(blob({ deviceError: { exitCode: 3, errString: "measure failed" } }), "DeviceError", "Unknown");
    assert.equal(r.record.IMEI, DEFAULT_IMEI);
    assert.equal(r.record.tamperBit, "0");
    assert.equal(r.detail.exitCode, 3);
    assert.equal(r.detail.errString, "measure failed");
    assert.equal(r.detail.rule, 1);
    // it decides before anything else: an untrusted chain and a bad signature do not matter
    const worst = encodeVendorBlob({
      nonce: OTHER_NONCE, now: PINNED, leaf: pki.leafRsa1024, ca: pki.stranger, badSignature: true,
      deviceError: { exitCode: 255 },
    });
    expectVerdict(worst, "DeviceError", "Unknown");
    const bare = blob({ deviceError: { omitData: true, omitSignature: true, omitCertificates: true } });
    const e = expectVerdict(bare, "DeviceError", "Unknown");
    assert.deepEqual([e.record.measurements, e.record.tamperBit, e.record.IMEI, e.record.MAC, e.record.version], ["", "", "", "", "2"]);
  });

  it("rule 2: untrusted chain → CertificateInvalid / No", () => {
    expectVerdict(blob(), "CertificateInvalid", "No", { trust: trustOf(pki.stranger) });
    expectVerdict(blob(), "CertificateInvalid", "No", { trust: trustOf([]) });
  });

  it("rule 2: RSA-1024 and P-384 leaves → CertificateInvalid (data signature key not accepted)", () => {
    for (const leaf of [pki.leafRsa1024, pki.leafP384]) {
      const r = expectVerdict(blob({ leaf }), "CertificateInvalid", "No");
      assert.match(r.reason, /RSA-1024|secp384r1/);
    }
  });

  it("rule 3: revoked leaf or intermediate → Revoked / No (serials compare without leading zeros)", () => {
    const list = (serial: string): StatusList =>
      parseStatusList(JSON.stringify({ entries: { [serial]: { status: "REVOKED", reason: "KEY_COMPROMISE" } } }));
    const leafRevoked = expectVerdict(blob(), "Revoked", "No", { trust: trustOf(pki.ca, { revocations: list(`00${pki.leafEc.serial.toUpperCase()}`) }) });
    assert.match(leafRevoked.reason, /leaf/);
    const interRevoked = expectVerdict(blob(), "Revoked", "No", { trust: trustOf(pki.ca, { revocations: list(pki.ca.intermediate.serial) }) });
    assert.match(interRevoked.reason, /intermediate/);
    const suspended = parseStatusList(JSON.stringify({ entries: { [pki.ca.root.serial]: { status: "SUSPENDED" } } }));
    expectVerdict(blob(), "Revoked", "No", { trust: trustOf(pki.ca, { revocations: suspended }) });
    expectVerdict(blob(), "Success", "Yes", { trust: trustOf(pki.ca, { revocations: list("0123456789abcdef") }) });
  });

  it("rule 4: signature over data does not verify → SignatureInvalid / No", () => {
    for (const leaf of [pki.leafEc, pki.leafRsa, pki.leafEd]) expectVerdict(blob({ leaf, badSignature: true }), "SignatureInvalid", "No");
    // signed by another key than the leaf's
    const data = encodeTlv(vendorRecords({ nonce: NONCE, now: PINNED }));
    expectVerdict(container(undefined, { signature: signVendorData(pki.leafRsa.privateKey, data) }), "SignatureInvalid", "No");
  });

  it("rule 5: NONCE ≠ the query nonce → NonceMismatch / No; the ASCII nonce string is accepted", () => {
    expectVerdict(blob({ wrongNonce: true }), "NonceMismatch", "No");
    expectVerdict(blob(), "NonceMismatch", "No", { nonce: OTHER_NONCE });
    expectVerdict(blob({ asciiNonce: true }), "Success", "Yes");
    expectVerdict(blob({ asciiNonce: true }), "NonceMismatch", "No", { nonce: OTHER_NONCE });
    expectVerdict(blob({ asciiNonce: true, wrongNonce: true }), "NonceMismatch", "No");
  });

  it("rule 6: TAMPER_BIT = 1 → Success / No", () => {
    const r = expectVerdict(blob({ tamper: true }), "Success", "No");
    assert.equal(r.record.tamperBit, "1");
    assert.equal(r.detail.rule, 6);
  });

  it("rule 7: reference values decide Yes / No / Unknown", () => {
    const reversed = [...DEFAULT_MEASUREMENTS].reverse();
    expectVerdict(blob({ measurements: reversed }), "Success", "No");
    expectVerdict(blob({ measurements: DEFAULT_MEASUREMENTS.slice(0, 6) }), "Success", "No");
    expectVerdict(blob({ measurements: [...DEFAULT_MEASUREMENTS, DEFAULT_MEASUREMENTS[0]!] }), "Success", "No");
    expectVerdict(blob({ firmwareVersion: UNKNOWN_FIRMWARE }), "Success", "Unknown");
    expectVerdict(blob({ model: "SM-OTHER" }), "Success", "Unknown");
    expectVerdict(blob(), "Success", "Unknown", { trust: trustOf(pki.ca, { referenceValues: [] }) });
    // the device's own claim is informational only
    expectVerdict(blob({ deviceVerdict: "No" }), "Success", "Yes");
    expectVerdict(blob({ deviceVerdict: "Yes", firmwareVersion: UNKNOWN_FIRMWARE }), "Success", "Unknown");
  });

  it("first rule that applies decides", () => {
    // 2 before 4, 3 before 4, 4 before 5, 5 before 6, 6 before 7
    expectVerdict(blob({ badSignature: true }), "CertificateInvalid", "No", { trust: trustOf(pki.stranger) });
    const revoked = parseStatusList(JSON.stringify({ entries: { [pki.leafEc.serial]: { status: "REVOKED" } } }));
    expectVerdict(blob({ badSignature: true }), "Revoked", "No", { trust: trustOf(pki.ca, { revocations: revoked }) });
    expectVerdict(blob({ leaf: pki.leafP384 }), "CertificateInvalid", "No", { trust: trustOf(pki.ca, { revocations: revoked }) });
    expectVerdict(blob({ badSignature: true, wrongNonce: true }), "SignatureInvalid", "No");
    expectVerdict(blob({ wrongNonce: true, tamper: true }), "NonceMismatch", "No");
    expectVerdict(blob({ tamper: true, firmwareVersion: UNKNOWN_FIRMWARE }), "Success", "No");
  });

  it("is deterministic: same input → same result, with cold or warm caches", () => {
    const b = blob();
    const first = appraise(b);
    assert.deepEqual(appraise(b), first);
    // a new trust object has its own (empty) caches
    assert.deepEqual(appraise(b, { trust: trustOf(pki.ca) }), first);
    const bad = blob({ tamper: true });
    assert.deepEqual(appraise(bad), appraise(bad));
  });
});

describe("chain validation (rule 2)", () => {
  const leafOf = (issuer: CertifiedKey, over: Parameters<typeof issueDeviceLeaf>[1] = {}) =>
    issueDeviceLeaf(issuer, { now: PINNED, ...over });
  const chainBlob = (leaf: CertifiedKey, chain: readonly Uint8Array[]) => blob({ leaf, chain });
  const invalid = (b: Uint8Array, reason: RegExp, trust?: TrustConfig) =>
    assert.match(expectVerdict(b, "CertificateInvalid", "No", trust ? { trust } : {}).reason, reason);

  it("the carried root is accepted when it is the operator's", () => {
    expectVerdict(blob({ includeRoot: true }), "Success", "Yes");
  });

  it("a leaf issued directly by the root, nothing carried", async () => {
    const leaf = await leafOf(pki.ca.root as CertifiedKey);
    expectVerdict(chainBlob(leaf, []), "Success", "Yes");
  });

  it("an operator anchor may be an intermediate", () => {
    expectVerdict(blob(), "Success", "Yes", { trust: trustOf([pki.ca.intermediate.certDer]) });
  });

  it("expired and not-yet-valid leaves", async () => {
    const expired = await leafOf(pki.ca.intermediate, { notBefore: at(-400), notAfter: at(-1) });
    invalid(chainBlob(expired, [pki.ca.intermediate.certDer]), /expired/);
    const early = await leafOf(pki.ca.intermediate, { notBefore: at(1), notAfter: at(400) });
    invalid(chainBlob(early, [pki.ca.intermediate.certDer]), /not valid before/);
  });

  it("validity in UTCTime and GeneralizedTime, up to 9999-12-31", async () => {
    const leaf = await leafOf(pki.ca.intermediate, {
      notBefore: new Date("1955-03-01T00:00:00Z"), notAfter: new Date("9999-12-31T23:59:59Z"),
    });
    const r = expectVerdict(chainBlob(leaf, [pki.ca.intermediate.certDer]), "Success", "Yes");
    const [summary] = r.detail.certificates as { notBefore: string; notAfter: string }[];
    assert.deepEqual([summary!.notBefore, summary!.notAfter], ["1955-03-01T00:00:00.000Z", "9999-12-31T23:59:59.000Z"]);
    const boundary = await leafOf(pki.ca.intermediate, { notBefore: at(-1), notAfter: PINNED });
    expectVerdict(chainBlob(boundary, [pki.ca.intermediate.certDer]), "Success", "Yes");
    expectVerdict(chainBlob(boundary, [pki.ca.intermediate.certDer]), "CertificateInvalid", "No", { now: new Date(PINNED.getTime() + 1000) });
  });

  it("intermediate and root validity are re-checked on every call despite the cache", async () => {
    const inter = await issueCertificate(pki.ca.root as CertifiedKey, {
      subject: "CN=Short-lived Intermediate", ca: true, pathLen: 0, notBefore: at(-10), notAfter: at(10),
    });
    const leaf = await leafOf(inter, { notBefore: at(-10), notAfter: at(400) });
    const b = chainBlob(leaf, [inter.certDer]);
    const trust = trustOf(pki.ca);
    expectVerdict(b, "Success", "Yes", { trust });
    assert.match(expectVerdict(b, "CertificateInvalid", "No", { trust, now: at(20) }).reason, /intermediate .*expired/);
    expectVerdict(b, "Success", "Yes", { trust, now: at(5) });
    assert.match(expectVerdict(b, "CertificateInvalid", "No", { trust, now: at(-11) }).reason, /not valid before/);

    const shortRoot = await createDevCa({ now: PINNED, rootValidityDays: 20, intermediateValidityDays: 1000 });
    const rootTrust = trustOf(shortRoot);
    const underShortRoot = blob({ leaf: await leafOf(shortRoot.intermediate), ca: shortRoot });
    expectVerdict(underShortRoot, "Success", "Yes", { trust: rootTrust });
    const late = expectVerdict(underShortRoot, "CertificateInvalid", "No", { trust: rootTrust, now: at(25) });
    assert.match(late.reason, /vendor root .* expired/);
  });

  it("an intermediate without the CA flag, or without basicConstraints", async () => {
    for (const over of [{ ca: false, keyUsage: ["keyCertSign"] as const }, { omitBasicConstraints: true, keyUsage: ["keyCertSign"] as const }]) {
      const inter = await issueCertificate(pki.ca.root as CertifiedKey, { subject: "CN=Not A CA", ...over, keyUsage: [...over.keyUsage] });
      invalid(chainBlob(await leafOf(inter), [inter.certDer]), /not a CA/);
    }
  });

  it("a leaf asserting the CA flag", async () => {
    invalid(chainBlob(await leafOf(pki.ca.intermediate, { ca: true }), [pki.ca.intermediate.certDer]), /leaf .* asserts basicConstraints cA/);
  });

  it("pathLenConstraint of an intermediate and of the root", async () => {
    const sub = await issueCertificate(pki.ca.intermediate, { subject: "CN=Sub CA", ca: true, now: PINNED });
    invalid(chainBlob(await leafOf(sub), [sub.certDer, pki.ca.intermediate.certDer]), /pathLenConstraint/);
    const a = await issueCertificate(pki.ca.root as CertifiedKey, { subject: "CN=Level A", ca: true, now: PINNED });
    const b = await issueCertificate(a, { subject: "CN=Level B", ca: true, now: PINNED });
    invalid(chainBlob(await leafOf(b), [b.certDer, a.certDer]), /Root CA, .* allows 1 intermediate/);
    // one level below the same root is within its limit
    expectVerdict(chainBlob(await leafOf(a), [a.certDer]), "Success", "Yes");
  });

  it("an issuer whose keyUsage lacks keyCertSign", async () => {
    const inter = await issueCertificate(pki.ca.root as CertifiedKey, {
      subject: "CN=Signing Only", ca: true, pathLen: 0, keyUsage: ["digitalSignature"], now: PINNED,
    });
    invalid(chainBlob(await leafOf(inter), [inter.certDer]), /keyCertSign/);
  });

  it("a broken name chain (issuer name differs, signature still by the intermediate)", async () => {
    const leaf = await leafOf(pki.ca.intermediate, { issuerName: "CN=Somebody Else, O=attestd Demo Vendor" });
    invalid(chainBlob(leaf, [pki.ca.intermediate.certDer]), /the leaf does not name .* as its issuer/);
  });

  it("certificate signatures that do not verify (leaf, intermediate)", () => {
    // The last byte of an ECDSA-signed certificate is inside s: flipping it keeps the DER and breaks the signature.
    const flipLast = (der: Uint8Array) => Uint8Array.from(der, (b, i) => (i === der.length - 1 ? b ^ 1 : b));
    const leaf = { ...pki.leafEc, certDer: flipLast(pki.leafEc.certDer) };
    invalid(chainBlob(leaf, [pki.ca.intermediate.certDer]), /signature on the leaf does not verify/);
    invalid(chainBlob(pki.leafEc, [flipLast(pki.ca.intermediate.certDer)]), /signature on intermediate .* does not verify/);
  });

  it("carried certificates that do not link", async () => {
    invalid(chainBlob(pki.leafEc, [pki.ca.intermediate.certDer, pki.rsaCa.root.certDer]), /carried root .* not one of the operator's/);
    invalid(chainBlob(pki.leafEc, [pki.stranger.intermediate.certDer]), /no operator vendor root issued .*Intermediate CA/);
    // a valid issuer part that did not issue this leaf
    const both = trustOf([pki.ca.root.certDer, pki.rsaCa.root.certDer]);
    invalid(chainBlob(pki.leafEc, [pki.rsaCa.intermediate.certDer]), /the leaf does not name .* as its issuer/, both);
    invalid(chainBlob(pki.leafEc, [pki.ca.root.certDer, pki.ca.intermediate.certDer]), /Root CA.* does not name .*Intermediate CA.* as its issuer/);
  });

  it("untrusted roots: a stranger's chain under the same names, with or without its root", async () => {
    const strangerLeaf = await leafOf(pki.stranger.intermediate);
    invalid(chainBlob(strangerLeaf, [pki.stranger.intermediate.certDer]), /no operator vendor root issued .*Intermediate CA/);
    invalid(
      chainBlob(strangerLeaf, [pki.stranger.intermediate.certDer, pki.stranger.root.certDer]),
      /carried root .* not one of the operator's/,
    );
  });

  it("an intermediate with an unsupported critical extension", async () => {
    const inter = await issueCertificate(pki.ca.root as CertifiedKey, {
      subject: "CN=Critical Surprise", ca: true, pathLen: 0, now: PINNED,
      extensions: [new x509.Extension("1.3.6.1.4.1.55555.1", true, Uint8Array.of(0x05, 0x00))],
    });
    invalid(chainBlob(await leafOf(inter), [inter.certDer]), /unsupported critical extension/);
  });

  it("an intermediate with a weak key", async () => {
    const inter = await issueCertificate(pki.ca.root as CertifiedKey, {
      subject: "CN=Weak Intermediate", ca: true, pathLen: 0, keyType: "rsa-1024", now: PINNED,
    });
    invalid(chainBlob(await leafOf(inter), [inter.certDer]), /RSA key has 1024 bits/);
  });

  it("an operator root that cannot serve is reported and ignored (fail closed)", async () => {
    const notCa = await createRootCertificate({ subject: "CN=Not Really A Root", ca: false, now: PINNED });
    const trust = trustOf([notCa.certDer, ascii("garbage")]);
    assert.equal(vendorTrustProblems(trust.vendor).length, 2);
    invalid(blob(), /no usable vendor root/, trust);
    const mixed = trustOf([notCa.certDer, pki.ca.root.certDer]);
    expectVerdict(blob(), "Success", "Yes", { trust: mixed });
    assert.equal(vendorTrustProblems(mixed.vendor).length, 1);
  });

  it("certificates beyond the operator root are refused", () => {
    invalid(chainBlob(pki.leafEc, [pki.ca.intermediate.certDer, pki.ca.root.certDer, pki.rsaCa.root.certDer]), /carried root .*RSA Vendor/);
  });
});

describe("reference values file", () => {
  it("parses and normalises", () => {
    const upper = DEFAULT_MEASUREMENTS.map((m) => Buffer.from(m).toString("hex").toUpperCase());
    const [v] = parseReferenceValues(JSON.stringify([{ model: "M", firmwareVersion: "F", measurements: upper }]));
    assert.deepEqual(v!.measurements, upper.map((h) => h.toLowerCase()));
  });

  it("names the item at fault", () => {
    const good = { model: "M", firmwareVersion: "F", measurements: ["a".repeat(64)] };
    const cases: [unknown, RegExp][] = [
      [{}, /array/],
      [[good, { ...good, measurements: ["a".repeat(63)] }], /item 1 .*measurements\[0\]/],
      [[{ ...good, firmware: "F" }], /item 0: unknown key/],
      [[{ ...good, model: "" }], /item 0: "model"/],
      [[{ ...good, measurements: [] }], /item 0 .*1\.\.16/],
      [[{ ...good, measurements: Array(17).fill("a".repeat(64)) }], /item 0 .*1\.\.16/],
      [[good, good], /item 1 .*duplicates item 0/],
      [[null], /item 0: expected an object/],
    ];
    for (const [doc, message] of cases) assert.throws(() => parseReferenceValues(JSON.stringify(doc)), message);
    assert.throws(() => parseReferenceValues("{", "refs.json"), /refs\.json: not JSON/);
  });
});

describe("PEM", () => {
  it("round-trips certificate bundles and skips other blocks", () => {
    const text = `junk\n${toPem(pki.ca.root.certDer, "CERTIFICATE")}${pki.leafEc.keyPem}${toPem(pki.ca.intermediate.certDer, "CERTIFICATE")}`;
    const ders = parsePemBundle(text);
    assert.equal(ders.length, 2);
    assert.deepEqual(Buffer.from(ders[0]!), Buffer.from(pki.ca.root.certDer));
    assert.deepEqual(Buffer.from(ders[1]!), Buffer.from(pki.ca.intermediate.certDer));
    assert.equal(parsePemBlocks(text).length, 3);
  });

  it("refuses what is not a well-formed bundle", () => {
    const pem = toPem(pki.ca.root.certDer, "CERTIFICATE");
    assert.throws(() => parsePemBundle(pki.leafEc.keyPem), /no "BEGIN CERTIFICATE"/);
    assert.throws(() => parsePemBundle(pem.replace(/-----END CERTIFICATE-----\n$/, "")), /no END/);
    assert.throws(() => parsePemBundle(pem.replace("END CERTIFICATE", "END X509 CRL")), /closed as/);
    assert.throws(() => parsePemBundle(pem.replace(/\n(.)/, "\n*$1")), /not valid base64/);
    assert.throws(() => parsePemBundle("-----END CERTIFICATE-----\n"), /END without a BEGIN/);
  });
});

describe("dev CA files", () => {
  it("writes the documented files, reads them back, refuses to overwrite", async () => {
    const dir = await mkdtemp(join(tmpdir(), "attestd-devca-"));
    try {
      await writeDevCa(pki.ca, dir);
      assert.deepEqual((await readdir(dir)).sort(), Object.values(DEV_CA_FILES).sort());
      assert.equal((await stat(join(dir, DEV_CA_FILES.intermediateKey))).mode & 0o077, 0);
      const back = await readDevCa(dir);
      assert.equal(back.intermediate.subject, pki.ca.intermediate.subject);
      assert.equal(back.root.serial, pki.ca.root.serial);
      const leaf = await issueDeviceLeaf(back, { now: PINNED });
      expectVerdict(blob({ leaf, ca: back }), "Success", "Yes");
      await assert.rejects(writeDevCa(pki.ca, dir), /refusing to replace/);
      await rm(join(dir, DEV_CA_FILES.rootKey));
      assert.equal((await readDevCa(dir)).root.privateKey, undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
