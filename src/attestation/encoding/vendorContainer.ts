import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import {
  CertificateEncodingError,
  inspectCarriedCertificate,
  parseLeafCertificate,
  type InspectedCertificate,
  type LeafCertificate,
} from "../chain/vendorChain.ts";
import type { VerdictValue } from "../types.ts";
import { isNonceShaped } from "../../nonces/nonce.ts";

/**
 * The vendor container's bytes, version 2 (blob-format.md "Vendor container"): the header fields, their length
 * ranges, the TLV records and the rules for each record's value, and the certificates — everything that decides
 * BLOB_MALFORMED or NOT_IMPLEMENTED for a vendor blob, so that formats/vendorContainer.ts only ever appraises a
 * container that was read completely.
 *
 * The parser reads only views into the blob (never a copy sized by a length field), in one forward pass, so no
 * input can make it allocate more than the blob or loop longer than its length. It throws only AppError
 * BLOB_MALFORMED, or NOT_IMPLEMENTED for version 1, and every reason starts "vendor container:". The certificates
 * are read by chain/vendorChain.ts (OpenSSL's parse and the DER checks, with the issuer cache); this module turns
 * what it cannot read into BLOB_MALFORMED.
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
      if (v.length !== VENDOR_LIMITS.nonceLen && !isNonceShaped(printableAscii(v) ?? "")) {
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
