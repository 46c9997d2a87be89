import { constants, createHash, sign, type KeyObject } from "node:crypto";
import { VENDOR_CONTAINER_VERSION, VendorRecordType as T, luhnValid } from "../encoding/vendorContainer.ts";
import { decodeNonce } from "../../nonces/nonce.ts";
import type { ReferenceValue } from "../types.ts";
import { issueDeviceLeaf, type CertifiedKey, type DevCa, type KeyType } from "./devCa.ts";

/**
 * Writes vendor-container blobs as a device would (blob-format.md), for `attestd device-sim`, the tests, the fuzzer
 * and the benchmark. Two levels:
 * - `encodeContainer` lays out any fields, including wrong lengths and counts, to craft malformed blobs;
 * - `encodeVendorBlob` / `buildVendorBlob` make the blob of a (possibly misbehaving) device.
 * Deterministic given its inputs, except key generation and ECDSA signatures (OpenSSL picks a random k).
 */

export interface TlvRecord {
  type: number;
  value: Uint8Array;
  /** write this length instead of value.length (malformed blobs only) */
  length?: number;
}

export interface ContainerFields {
  exitCode?: number;
  errString?: string | Uint8Array;
  version?: number;
  /** raw data bytes, or records to encode in order */
  data?: Uint8Array | readonly TlvRecord[];
  signature?: Uint8Array;
  certificates?: readonly Uint8Array[];
  /** Overrides of what is written in the length and count fields; the bytes that follow are unchanged. */
  errLen?: number;
  dataLen?: number;
  sigLen?: number;
  certCount?: number;
  certLengths?: readonly (number | undefined)[];
  /** bytes appended after the last certificate */
  trailing?: Uint8Array;
}

function u8(n: number, field: string): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xff) throw new RangeError(`${field} ${n} does not fit one byte`);
  return Uint8Array.of(n);
}

function u16(n: number, field: string): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff) throw new RangeError(`${field} ${n} does not fit two bytes`);
  return Uint8Array.of(n >> 8, n & 0xff);
}

export function encodeTlv(records: readonly TlvRecord[]): Uint8Array {
  return Buffer.concat(
    records.flatMap((r) => [u8(r.type, "record type"), u16(r.length ?? r.value.length, "record length"), r.value]),
  );
}

/** The container layout exactly: exitCode, errLen, errString, version, dataLen, data, sigLen, sig, certCount, certs. */
export function encodeContainer(f: ContainerFields): Uint8Array {
  const err = typeof f.errString === "string" ? Buffer.from(f.errString, "latin1") : (f.errString ?? Buffer.from("Success"));
  const data = f.data === undefined ? new Uint8Array() : f.data instanceof Uint8Array ? f.data : encodeTlv(f.data);
  const sig = f.signature ?? new Uint8Array();
  const certs = f.certificates ?? [];
  return Buffer.concat([
    u8(f.exitCode ?? 0, "exitCode"),
    u8(f.errLen ?? err.length, "errLen"),
    err,
    u8(f.version ?? VENDOR_CONTAINER_VERSION, "version"),
    u16(f.dataLen ?? data.length, "dataLen"),
    data,
    u16(f.sigLen ?? sig.length, "sigLen"),
    sig,
    u8(f.certCount ?? certs.length, "certCount"),
    ...certs.flatMap((c, i) => [u16(f.certLengths?.[i] ?? c.length, `certificate ${i} length`), c]),
    f.trailing ?? new Uint8Array(),
  ]);
}

/** The signature a device makes over the data bytes, by its key type (blob-format.md). */
export function signVendorData(key: KeyObject, data: Uint8Array): Uint8Array {
  switch (key.asymmetricKeyType) {
    case "rsa":
      return sign("sha256", data, { key, padding: constants.RSA_PKCS1_PADDING });
    case "ec":
      return sign("sha256", data, { key, dsaEncoding: "der" });
    case "ed25519":
      return sign(null, data, key);
    default:
      throw new Error(`a device cannot sign with a ${key.asymmetricKeyType} key`);
  }
}

// The reference device: the values the conformance suite's own encoder uses, so a blob from the simulator and one
// from ../shared/conformance agree, and `demoReferenceValues` makes the default blob appraise as Yes.
export const DEFAULT_MODEL = "SM-X100";
export const DEFAULT_FIRMWARE = "X100XXU1AAA1";
export const UNKNOWN_FIRMWARE = "X100XXU9ZZZ9";
export const DEFAULT_MEASUREMENTS: readonly Uint8Array[] = Array.from({ length: 7 }, (_, i) =>
  createHash("sha256").update(`component-${i}`).digest(),
);
export const DEFAULT_IMEI = withLuhnDigit("35123456789012");
export const DEFAULT_MAC = Uint8Array.from(Buffer.from("0a1b2c3d4e5f", "hex"));
export const DEFAULT_CHIP_ID = Uint8Array.from(Buffer.from("c0ffee0123456789", "hex"));
export const DEFAULT_SERIAL = Uint8Array.of(0x00, 0x00, 0x12, 0x34);

/** `digits` followed by the Luhn check digit that makes it valid (14 digits → a 15-digit IMEI). */
export function withLuhnDigit(digits: string): string {
  const d = [..."0123456789"].find((c) => luhnValid(digits + c));
  return digits + d!; // exactly one of ten digits completes a Luhn sum
}

/** Reference values under which a default simulator blob appraises as Yes. */
export function demoReferenceValues(): ReferenceValue[] {
  return [
    {
      model: DEFAULT_MODEL,
      firmwareVersion: DEFAULT_FIRMWARE,
      measurements: DEFAULT_MEASUREMENTS.map((m) => Buffer.from(m).toString("hex")),
    },
  ];
}

export interface DeviceErrorOptions {
  /** non-zero (default 1) */
  exitCode?: number;
  /** default "TEE unavailable" */
  errString?: string;
  /** a failed device may send no data, no signature, no certificates */
  omitData?: boolean;
  omitSignature?: boolean;
  omitCertificates?: boolean;
}

export interface VendorBlobOptions {
  /** the nonce string from POST /v2/nonces */
  nonce: string;
  /** device clock: TIMESTAMP record and the leaf's validity when one is issued (default now) */
  now?: Date;
  model?: string;
  firmwareVersion?: string;
  /** 32-byte digests, default DEFAULT_MEASUREMENTS (which demoReferenceValues knows) */
  measurements?: readonly Uint8Array[];
  tamper?: boolean;
  /** a NONCE record that is not this nonce */
  wrongNonce?: boolean;
  /** NONCE carries the nonce string's ASCII bytes instead of its 32 decoded bytes */
  asciiNonce?: boolean;
  /** flip a bit of the signature */
  badSignature?: boolean;
  /** null leaves the record out; the IMEI and CHIP_ID defaults are both sent */
  imei?: string | null;
  chipId?: Uint8Array | null;
  mac?: Uint8Array | null;
  serial?: Uint8Array | null;
  deviceVerdict?: string | null;
  /** ms since the epoch; default `now`; null leaves the record out */
  timestamp?: bigint | null;
  deviceError?: DeviceErrorOptions;
  /** container version byte (default 2) */
  version?: number;
  /** records appended after the standard ones, e.g. unknown types or a repeated type */
  extraRecords?: readonly TlvRecord[];
  /** types of standard records to leave out */
  omitRecords?: readonly number[];
  /** certificates after the leaf; default [the issuing intermediate] (+ the root with includeRoot) */
  chain?: readonly Uint8Array[];
  includeRoot?: boolean;
}

export interface SignedVendorBlobOptions extends VendorBlobOptions {
  /** the device's certified key */
  leaf: CertifiedKey;
  /** the dev CA, for the default chain */
  ca?: DevCa;
}

/**
 * The challenge a simulated device embeds for `nonce` (either format): its 32 base64url-decoded bytes, or with
 * `asciiNonce` the nonce string's ASCII bytes, as apps that pass the string send; `wrongNonce` makes it another.
 */
export function simulatedChallenge(nonce: string, opts: { wrongNonce?: boolean; asciiNonce?: boolean } = {}): Buffer {
  const decoded = decodeNonce(nonce);
  if (!decoded) {
    throw new Error("nonce must be 43 base64url characters (32 bytes), as POST /v2/nonces returns it");
  }
  // Every bit flipped: certainly not the nonce, and the same for the same nonce.
  const challenge = opts.wrongNonce ? Buffer.from(decoded.map((b) => b ^ 0xff)) : decoded;
  return opts.asciiNonce ? Buffer.from(challenge.toString("base64url"), "ascii") : challenge;
}

/** `value`, the default when undefined, nothing when null. */
function orDefault<V>(value: V | null | undefined, dflt: V): V | null {
  return value === null ? null : (value ?? dflt);
}

/** The records a device sends, in type order (the conformance encoder's order), before extraRecords and omissions. */
export function vendorRecords(opts: VendorBlobOptions): TlvRecord[] {
  const ascii = (s: string) => Buffer.from(s, "latin1");
  const optional = (type: number, value: Uint8Array | null): TlvRecord[] => (value === null ? [] : [{ type, value }]);
  const timestamp = orDefault(opts.timestamp, BigInt((opts.now ?? new Date()).getTime()));
  const deviceVerdict = orDefault(opts.deviceVerdict, "Yes");
  const imei = orDefault(opts.imei, DEFAULT_IMEI);
  return [
    { type: T.MEASUREMENTS, value: Buffer.concat(opts.measurements ?? DEFAULT_MEASUREMENTS) },
    ...optional(T.DEVICE_VERDICT, deviceVerdict === null ? null : ascii(deviceVerdict)),
    { type: T.NONCE, value: simulatedChallenge(opts.nonce, opts) },
    ...optional(T.SERIAL, orDefault(opts.serial, DEFAULT_SERIAL)),
    { type: T.TAMPER_BIT, value: Uint8Array.of(opts.tamper ? 1 : 0) },
    ...optional(T.IMEI, imei === null ? null : ascii(imei)),
    ...optional(T.MAC, orDefault(opts.mac, DEFAULT_MAC)),
    ...optional(T.CHIP_ID, orDefault(opts.chipId, DEFAULT_CHIP_ID)),
    { type: T.MODEL, value: ascii(opts.model ?? DEFAULT_MODEL) },
    { type: T.FIRMWARE_VERSION, value: ascii(opts.firmwareVersion ?? DEFAULT_FIRMWARE) },
    ...optional(T.TIMESTAMP, timestamp === null ? null : bigUint64(timestamp)),
  ];
}

function bigUint64(n: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(n);
  return b;
}

/** The blob of a device whose certified key is given. Synchronous: for tests, fuzzing and benchmarks. */
export function encodeVendorBlob(opts: SignedVendorBlobOptions): Uint8Array {
  const omit = new Set(opts.omitRecords ?? []);
  const err = opts.deviceError;
  const records = [...vendorRecords(opts).filter((r) => !omit.has(r.type)), ...(opts.extraRecords ?? [])];
  const data = err?.omitData ? new Uint8Array() : encodeTlv(records);
  let signature: Uint8Array = err?.omitSignature ? new Uint8Array() : signVendorData(opts.leaf.privateKey, data);
  if (opts.badSignature && signature.length) {
    signature = Uint8Array.from(signature);
    signature[signature.length >> 1]! ^= 0x01;
  }
  const carried =
    opts.chain ??
    (opts.ca ? [opts.ca.intermediate.certDer, ...(opts.includeRoot ? [opts.ca.root.certDer] : [])] : []);
  return encodeContainer({
    exitCode: err ? (err.exitCode ?? 1) : 0,
    errString: err ? (err.errString ?? "TEE unavailable") : "Success",
    version: opts.version ?? VENDOR_CONTAINER_VERSION,
    data,
    signature,
    certificates: err?.omitCertificates ? [] : [opts.leaf.certDer, ...carried],
  });
}

export interface BuildVendorBlobOptions extends VendorBlobOptions {
  /** issues the device leaf (from its intermediate) unless `leaf` is given */
  ca: DevCa;
  leaf?: CertifiedKey;
  /** key type of a newly issued leaf: "ec" (P-256, default), "rsa", "ed25519", or the test-only ones */
  leafKeyType?: KeyType;
}

/** A blob as a device would make it: a fresh device key certified by the dev CA unless `leaf` is given. */
export async function buildVendorBlob(opts: BuildVendorBlobOptions): Promise<Uint8Array> {
  const leaf =
    opts.leaf ??
    (await issueDeviceLeaf(opts.ca, {
      keyType: opts.leafKeyType ?? "ec",
      ...(opts.now ? { now: opts.now } : {}),
    }));
  return encodeVendorBlob({ ...opts, leaf });
}
