import { constants, verify as cryptoVerify, type KeyObject } from "node:crypto";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import {
  CertificateEncodingError,
  findRevoked,
  inspectCarriedCertificate,
  parseLeafCertificate,
  validateVendorChain,
  type InspectedCertificate,
  type LeafCertificate,
} from "../chain/vendorChain.ts";
import type { PublicKeyAlgorithm } from "../encoding/certificateExtensions.ts";
import { challengeMatches } from "../encoding/nonce.ts";
import { findReferenceSet, measurementDifference } from "../policy/referenceValues.ts";
import type { AppraisalInput, AppraisalResult, AppraisalStatus, VerdictRecord, VerdictValue } from "../types.ts";
import type { BlobFormat } from "./format.ts";

/**
 * The vendor container, version 2 (blob-format.md "Vendor container"): a strict parser, then appraisal rules 1–7.
 *
 * The parser reads only views into the blob (never a copy sized by a length field), in one forward pass, so no
 * input can make it allocate more than the blob or loop longer than its length. It throws only AppError
 * BLOB_MALFORMED, or NOT_IMPLEMENTED for version 1. Everything after parsing is a verdict, never an exception.
 */

export const VENDOR_CONTAINER_VERSION = 2;
/** Recognised but unsupported: 501 rather than 400, so a device on the old SDK is told what is wrong. */
export const VENDOR_CONTAINER_VERSION_UNSUPPORTED = 1;

export const VendorRecordType = {
  MEASUREMENTS: 0x01,
  DEVICE_VERDICT: 0x02,
  NONCE: 0x03,
  SERIAL: 0x05,
  TAMPER_BIT: 0x06,
  IMEI: 0x07,
  MAC: 0x08,
  CHIP_ID: 0x09,
  MODEL: 0x0a,
  FIRMWARE_VERSION: 0x0b,
  TIMESTAMP: 0x0c,
} as const;

export const VENDOR_LIMITS = {
  maxErrString: 255,
  maxDataLen: 16_384,
  maxSigLen: 1_024,
  maxCertificates: 4,
  digestLen: 32,
  maxDigests: 16,
  nonceLen: 32,
  maxChipId: 32,
  maxText: 64,
} as const;

const RECORD_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(VendorRecordType).map(([name, type]) => [type, name]),
);

export interface VendorRecords {
  /** lowercase hex, one string per 32-byte digest, in blob order */
  measurements?: string[];
  deviceVerdict?: VerdictValue;
  /** the challenge bytes as carried: 32 bytes, or the 43 ASCII characters of the nonce string */
  nonce?: Uint8Array;
  /** lowercase hex of the 4 bytes */
  serial?: string;
  tamperBit?: 0 | 1;
  imei?: string;
  /** aa:bb:cc:dd:ee:ff */
  mac?: string;
  /** lowercase hex */
  chipId?: string;
  model?: string;
  firmwareVersion?: string;
  /** ms since the epoch by the device clock */
  timestamp?: bigint;
  /** types skipped for forward compatibility, in blob order */
  unknownTypes: number[];
}

export interface VendorContainer {
  exitCode: number;
  errString: string;
  version: typeof VENDOR_CONTAINER_VERSION;
  /** the bytes the signature covers */
  data: Uint8Array;
  signature: Uint8Array;
  records: VendorRecords;
  /** undefined only when exitCode ≠ 0 and the device sent no certificate */
  leaf: LeafCertificate | undefined;
  /** the certificates after the leaf, in blob order */
  carried: InspectedCertificate[];
}

function malformed(reason: string): never {
  throw new AppError(catalog.BLOB_MALFORMED, `vendor container: ${reason}`);
}

const hex2 = (n: number) => `0x${n.toString(16).padStart(2, "0")}`;

class Reader {
  private pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  u8(field: string): number {
    if (this.remaining < 1) malformed(`truncated: ${field} missing at offset ${this.pos}`);
    return this.buf[this.pos++]!;
  }

  u16(field: string): number {
    if (this.remaining < 2) malformed(`truncated: ${field} (2 bytes) missing at offset ${this.pos}`);
    const v = (this.buf[this.pos]! << 8) | this.buf[this.pos + 1]!;
    this.pos += 2;
    return v;
  }

  bytes(n: number, field: string): Uint8Array {
    if (this.remaining < n) malformed(`truncated: ${field} needs ${n} bytes at offset ${this.pos}, ${this.remaining} remain`);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
}

/** A count with the exitCode ≠ 0 relaxation: 0 is allowed only when the device reported a failure. */
function checkCount(field: string, n: number, max: number, deviceFailed: boolean): void {
  if (n === 0 && !deviceFailed) malformed(`${field} is 0, allowed only when exitCode ≠ 0`);
  if (n > max) malformed(`${field} ${n} exceeds ${max}`);
}

// "ASCII" in the spec is read as printable ASCII: these strings reach logs, JSON and XML (which cannot carry most
// control characters), and no real model name, firmware version or status text needs one.
function printableAscii(v: Uint8Array): string | undefined {
  for (const b of v) if (b < 0x20 || b > 0x7e) return undefined;
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("latin1");
}

const toHex = (v: Uint8Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex");

/** The Luhn check an IMEI's last digit makes (ISO/IEC 7812-1). */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

const BASE64URL_CHAR = /^[A-Za-z0-9_-]{43}$/;
const DEVICE_VERDICTS: ReadonlySet<string> = new Set<VerdictValue>(["Yes", "No", "Unknown"]);

// Module-level rather than closures inside readRecord: it runs for every record of every blob, and each closure
// made per call costs an allocation (and, under tsx, a name assignment).
function badRecord(type: number, why: string): never {
  return malformed(`record ${RECORD_NAMES[type]} (${hex2(type)}) ${why}`);
}

function recordText(type: number, v: Uint8Array): string {
  if (v.length < 1 || v.length > VENDOR_LIMITS.maxText) badRecord(type, `must be 1..${VENDOR_LIMITS.maxText} bytes, is ${v.length}`);
  return printableAscii(v) ?? badRecord(type, "is not printable ASCII");
}

/** Validates one record's value and stores it; a value of the wrong size or form is malformed. */
function readRecord(type: number, v: Uint8Array, rec: VendorRecords): void {
  switch (type) {
    case VendorRecordType.MEASUREMENTS: {
      const { digestLen, maxDigests } = VENDOR_LIMITS;
      if (v.length === 0 || v.length % digestLen !== 0 || v.length > digestLen * maxDigests) {
        badRecord(type, `must be 1..${maxDigests} digests of ${digestLen} bytes, is ${v.length} bytes`);
      }
      const all = toHex(v);
      rec.measurements = [];
      for (let i = 0; i < all.length; i += digestLen * 2) rec.measurements.push(all.slice(i, i + digestLen * 2));
      return;
    }
    case VendorRecordType.DEVICE_VERDICT: {
      const s = printableAscii(v);
      if (s === undefined || !DEVICE_VERDICTS.has(s)) badRecord(type, "must be Yes, No or Unknown");
      rec.deviceVerdict = s as VerdictValue;
      return;
    }
    case VendorRecordType.NONCE:
      // 32 bytes per the table; the 43-character nonce string is accepted too, as blob-format.md allows apps to
      // pass the string itself. Which one it must equal is rule 5's business, not the parser's.
      if (v.length !== VENDOR_LIMITS.nonceLen && !(v.length === 43 && BASE64URL_CHAR.test(printableAscii(v) ?? ""))) {
        badRecord(type, `must be ${VENDOR_LIMITS.nonceLen} bytes (or the 43-character nonce string), is ${v.length} bytes`);
      }
      rec.nonce = v;
      return;
    case VendorRecordType.SERIAL:
      if (v.length !== 4) badRecord(type, `must be 4 bytes, is ${v.length}`);
      rec.serial = toHex(v);
      return;
    case VendorRecordType.TAMPER_BIT:
      if (v.length !== 1 || v[0]! > 1) badRecord(type, "must be one byte, 0 or 1");
      rec.tamperBit = v[0] as 0 | 1;
      return;
    case VendorRecordType.IMEI: {
      const s = v.length === 15 ? printableAscii(v) : undefined;
      if (s === undefined || !/^[0-9]{15}$/.test(s)) badRecord(type, "must be 15 ASCII digits");
      if (!luhnValid(s!)) badRecord(type, "fails the Luhn check digit");
      rec.imei = s;
      return;
    }
    case VendorRecordType.MAC:
      if (v.length !== 6) badRecord(type, `must be 6 bytes, is ${v.length}`);
      rec.mac = toHex(v).replace(/(..)(?!$)/g, "$1:");
      return;
    case VendorRecordType.CHIP_ID:
      if (v.length < 1 || v.length > VENDOR_LIMITS.maxChipId) badRecord(type, `must be 1..${VENDOR_LIMITS.maxChipId} bytes, is ${v.length}`);
      rec.chipId = toHex(v);
      return;
    case VendorRecordType.MODEL:
      rec.model = recordText(type, v);
      return;
    case VendorRecordType.FIRMWARE_VERSION:
      rec.firmwareVersion = recordText(type, v);
      return;
    case VendorRecordType.TIMESTAMP:
      if (v.length !== 8) badRecord(type, `must be 8 bytes, is ${v.length}`);
      rec.timestamp = Buffer.from(v.buffer, v.byteOffset, 8).readBigUInt64BE(0);
      return;
    default:
      rec.unknownTypes.push(type);
  }
}

const REQUIRED: readonly (keyof VendorRecords)[] = ["measurements", "nonce", "tamperBit", "model", "firmwareVersion"];

function parseRecords(data: Uint8Array, deviceFailed: boolean): VendorRecords {
  const rec: VendorRecords = { unknownTypes: [] };
  const seen = new Uint8Array(256);
  let pos = 0;
  while (pos < data.length) {
    if (data.length - pos < 3) malformed(`data: ${data.length - pos} byte(s) at offset ${pos} cannot hold a record header`);
    const type = data[pos]!;
    const len = (data[pos + 1]! << 8) | data[pos + 2]!;
    if (len > data.length - pos - 3) {
      malformed(`data: record ${hex2(type)} at offset ${pos} claims ${len} bytes, ${data.length - pos - 3} remain`);
    }
    // "A type may appear once" holds for unknown types too: a repeat is ambiguous whatever the type means.
    if (seen[type]) malformed(`data: record ${RECORD_NAMES[type] ?? "type"} (${hex2(type)}) appears twice`);
    seen[type] = 1;
    readRecord(type, data.subarray(pos + 3, pos + 3 + len), rec);
    pos += 3 + len;
  }
  if (!deviceFailed) {
    const missing = REQUIRED.filter((k) => rec[k] === undefined);
    if (rec.imei === undefined && rec.chipId === undefined) missing.push("imei or chipId" as keyof VendorRecords);
    if (missing.length) malformed(`data: required record(s) missing: ${missing.join(", ")}`);
  }
  return rec;
}

/**
 * Reads a version-2 container. Throws AppError BLOB_MALFORMED for any rule of the format it breaks, and
 * NOT_IMPLEMENTED for version 1; never anything else.
 */
export function parseVendorContainer(blob: Uint8Array): VendorContainer {
  const r = new Reader(blob);
  const exitCode = r.u8("exitCode");
  const errBytes = r.bytes(r.u8("errLen"), "errString");
  const version = r.u8("version");
  // The version decides the layout of everything else, including whether errString is what we think it is.
  if (version === VENDOR_CONTAINER_VERSION_UNSUPPORTED) {
    throw new AppError(catalog.NOT_IMPLEMENTED, "vendor container version 1 is recognised but not supported; send version 2");
  }
  if (version !== VENDOR_CONTAINER_VERSION) malformed(`version ${version} is unknown (2 expected)`);
  const errString = printableAscii(errBytes) ?? malformed("errString is not printable ASCII");
  const deviceFailed = exitCode !== 0;

  const dataLen = r.u16("dataLen");
  checkCount("dataLen", dataLen, VENDOR_LIMITS.maxDataLen, deviceFailed);
  const data = r.bytes(dataLen, "data");
  const sigLen = r.u16("sigLen");
  checkCount("sigLen", sigLen, VENDOR_LIMITS.maxSigLen, deviceFailed);
  const signature = r.bytes(sigLen, "signature");
  const certCount = r.u8("certCount");
  checkCount("certCount", certCount, VENDOR_LIMITS.maxCertificates, deviceFailed);
  const certDers: Uint8Array[] = [];
  for (let i = 0; i < certCount; i++) {
    const len = r.u16(`certificate ${i} length`);
    if (len === 0) malformed(`certificate ${i} is empty`);
    certDers.push(r.bytes(len, `certificate ${i}`));
  }
  if (r.remaining > 0) malformed(`${r.remaining} trailing byte(s) after the certificates`);

  const records = parseRecords(data, deviceFailed);

  // Certificates last: they are the expensive part, and every cheaper rule has had its chance to refuse.
  let leaf: LeafCertificate | undefined;
  const carried: InspectedCertificate[] = [];
  for (let i = 0; i < certDers.length; i++) {
    const der = certDers[i]!;
    try {
      if (i === 0) leaf = parseLeafCertificate(der);
      else carried.push(inspectCarriedCertificate(der));
    } catch (e) {
      malformed(`certificate ${i}: ${e instanceof CertificateEncodingError ? e.message : "cannot be read"}`);
    }
  }
  return { exitCode, errString, version: VENDOR_CONTAINER_VERSION, data, signature, records, leaf, carried };
}

// ---------------------------------------------------------------------------------------------------------------
// Appraisal

interface DataSignatureScheme {
  readonly name: string;
  verify(data: Uint8Array, signature: Uint8Array): boolean;
}

// OpenSSL may throw (rather than return false) on a signature it cannot even decode; either way it is invalid.
function safely(f: () => boolean): boolean {
  try {
    return f();
  } catch {
    return false;
  }
}

const OID_PRIME256V1 = "1.2.840.10045.3.1.7";
/** names for reasons, as OpenSSL prints them */
const CURVE_NAMES: Record<string, string> = {
  [OID_PRIME256V1]: "prime256v1",
  "1.3.132.0.34": "secp384r1",
  "1.3.132.0.35": "secp521r1",
  "1.3.132.0.10": "secp256k1",
};

/**
 * "Signature algorithm follows the leaf key"; any key outside the three families is CertificateInvalid. An EC
 * key's curve is taken from the certificate's subjectPublicKeyInfo (the named-curve OID), which OpenSSL parsed
 * into `key` from those same bytes.
 */
function dataSignatureScheme(key: KeyObject, algorithm: PublicKeyAlgorithm): DataSignatureScheme | string {
  const type = key.asymmetricKeyType;
  if (type === "rsa") {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < 2048) return `the leaf key is RSA-${bits}; data signatures need RSA ≥ 2048, EC P-256 or Ed25519`;
    return {
      name: `RSA-${bits} PKCS#1 v1.5 SHA-256`,
      verify: (d, s) => safely(() => cryptoVerify("sha256", d, { key, padding: constants.RSA_PKCS1_PADDING }, s)),
    };
  }
  if (type === "ec") {
    const curve = algorithm.parameterOid;
    if (curve !== OID_PRIME256V1) {
      const name = curve === undefined ? "(unnamed curve)" : (CURVE_NAMES[curve] ?? curve);
      return `the leaf key is EC ${name}; data signatures need RSA ≥ 2048, EC P-256 or Ed25519`;
    }
    return {
      name: "ECDSA P-256 SHA-256",
      verify: (d, s) => safely(() => cryptoVerify("sha256", d, { key, dsaEncoding: "der" }, s)),
    };
  }
  if (type === "ed25519") return { name: "Ed25519", verify: (d, s) => safely(() => cryptoVerify(null, d, key, s)) };
  return `the leaf key is ${type ?? "of an unknown type"}; data signatures need RSA ≥ 2048, EC P-256 or Ed25519`;
}

function timestampText(ms: bigint): string {
  // Date covers ±8.64e15 ms; a device clock outside it is reported as the raw number rather than dropped.
  return ms <= 8_640_000_000_000_000n ? new Date(Number(ms)).toISOString() : ms.toString();
}

/** Everything the blob said, JSON-safe, for `attestd appraise --detail` and the stored verdict. */
function parsedDetail(c: VendorContainer): Record<string, unknown> {
  const r = c.records;
  const d: Record<string, unknown> = { version: c.version, exitCode: c.exitCode, errString: c.errString };
  if (r.model !== undefined) d.model = r.model;
  if (r.firmwareVersion !== undefined) d.firmwareVersion = r.firmwareVersion;
  if (r.serial !== undefined) d.serial = r.serial;
  if (r.deviceVerdict !== undefined) d.deviceVerdict = r.deviceVerdict;
  if (r.timestamp !== undefined) d.timestamp = timestampText(r.timestamp);
  if (r.measurements !== undefined) d.measurements = r.measurements;
  if (r.nonce !== undefined) d.nonceRecord = toHex(r.nonce);
  if (r.tamperBit !== undefined) d.tamperBit = r.tamperBit;
  if (r.imei !== undefined) d.imei = r.imei;
  if (r.chipId !== undefined) d.chipId = r.chipId;
  if (r.mac !== undefined) d.mac = r.mac;
  if (r.unknownTypes.length) d.unknownRecordTypes = r.unknownTypes;
  const certificates = [];
  if (c.leaf) certificates.push({ role: "leaf", ...c.leaf.summary });
  for (const x of c.carried) certificates.push({ role: "carried", ...x.summary });
  d.certificates = certificates;
  return d;
}

function verdictRecord(c: VendorContainer, input: AppraisalInput, status: AppraisalStatus, verdict: VerdictValue): VerdictRecord {
  const r = c.records;
  const at = input.now.toISOString();
  return {
    measurements: r.measurements?.join("") ?? "",
    tamperBit: r.tamperBit === undefined ? "" : String(r.tamperBit),
    IMEI: r.imei ?? "",
    status,
    nonce: input.nonce,
    chipId: r.chipId ?? "",
    verdict,
    MAC: r.mac ?? "",
    version: String(c.version),
    createdDate: at,
    updateDate: at,
  };
}

/** Rules 1–7 of blob-format.md, first that applies decides. Pure: the result depends only on the container and input. */
export function appraiseVendorContainer(c: VendorContainer, input: AppraisalInput): AppraisalResult {
  const detail = parsedDetail(c);
  const decide = (rule: number, status: AppraisalStatus, verdict: VerdictValue, why: string): AppraisalResult => {
    detail.rule = rule;
    return {
      format: "vendor",
      record: verdictRecord(c, input, status, verdict),
      reason: `rule ${rule} (${status}/${verdict}): ${why}`,
      detail,
    };
  };
  const r = c.records;

  if (c.exitCode !== 0) {
    return decide(1, "DeviceError", "Unknown", `the device reported exitCode ${c.exitCode} (${JSON.stringify(c.errString)})`);
  }
  // From here the parser has guaranteed a leaf, a signature and every required record (exitCode = 0).
  const leaf = c.leaf!;
  const result = validateVendorChain(leaf, c.carried, input.trust.vendor, input.now);
  if (!result.ok) return decide(2, "CertificateInvalid", "No", result.reason);
  const chain = result.chain;
  detail.trustAnchor = chain.anchor.summary.subject;
  const scheme = dataSignatureScheme(leaf.x509.publicKey, leaf.publicKeyAlgorithm);
  if (typeof scheme === "string") return decide(2, "CertificateInvalid", "No", scheme);
  detail.signatureScheme = scheme.name;

  const revoked = findRevoked(chain, input.trust.vendor.revocations);
  if (revoked) {
    const { role, summary, entry } = revoked;
    const why = entry.reason ? ` (${entry.reason})` : "";
    return decide(3, "Revoked", "No", `the ${role} ${summary.subject}, serial ${summary.serial}, is ${entry.status}${why}`);
  }
  if (!scheme.verify(c.data, c.signature)) {
    return decide(4, "SignatureInvalid", "No", `the signature over data does not verify (${scheme.name})`);
  }
  if (!challengeMatches(input.nonce, r.nonce!)) {
    return decide(5, "NonceMismatch", "No", "the NONCE record is not the query nonce");
  }
  if (r.tamperBit === 1) return decide(6, "Success", "No", "TAMPER_BIT is 1");

  const pair = `(${JSON.stringify(r.model)}, ${JSON.stringify(r.firmwareVersion)})`;
  const set = findReferenceSet(input.trust.vendor.referenceValues, r.model!, r.firmwareVersion!);
  if (!set) return decide(7, "Success", "Unknown", `no reference values for ${pair}`);
  const difference = measurementDifference(set, r.measurements!);
  return difference
    ? decide(7, "Success", "No", `measurements differ from the reference values for ${pair}: ${difference}`)
    : decide(7, "Success", "Yes", `measurements equal the reference values for ${pair}`);
}

export const vendorContainerFormat: BlobFormat = {
  name: "vendor",
  // The fallback: whatever android-key does not claim is read as a vendor container, which answers
  // BLOB_MALFORMED for anything it cannot read.
  matches: () => true,
  appraise: (input) => appraiseVendorContainer(parseVendorContainer(input.blob), input),
};
