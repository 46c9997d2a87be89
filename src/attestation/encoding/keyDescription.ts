import { AsnParser } from "@peculiar/asn1-schema";
import {
  AttestationApplicationId,
  AuthorizationList,
  KeyDescription,
  RootOfTrust,
  id_ce_keyDescription,
} from "@peculiar/asn1-android";
import {
  ExtensionError,
  children,
  decodeDer,
  derViolation,
  isSequence,
  readDerHeader,
  screenContextTags,
  withinDecodeLimits,
} from "./derChain.ts";

/**
 * The Android KeyDescription extension (OID 1.3.6.1.4.1.11129.2.1.17), every schema version from Keymaster 2's
 * attestation version 1 to KeyMint's 400 (and 500, whose extra tags are kept as unknown), read with
 * `@peculiar/asn1-android`. The legacy and KeyMint layouts are the same SEQUENCE with renamed fields, so one parse
 * serves both; the result always uses the KeyMint names (keyMintVersion, hardwareEnforced), as Google's own
 * verifier does.
 *
 * Two kinds of failure, told apart because the spec answers them differently:
 * - `der`: the bytes are not readable DER at all (broken lengths, truncation) → the container is malformed.
 * - `semantic`: readable, but not what the schema says: a BER-only encoding (e.g. a BOOLEAN written 0x01),
 *   authorization-list tags out of ascending order or repeated, a value of the wrong type, an enumeration out of
 *   range → the attestation is not trustworthy.
 * Tags the library does not know (blockMode [4], KeyMint 5's additions, ...) are skipped and reported, as Google's
 * verifier does, so newer devices keep parsing.
 */

export const KEY_DESCRIPTION_OID: string = id_ce_keyDescription;

/** KeyMint purpose ATTEST_KEY: the key may sign other keys' attestation certificates. */
export const PURPOSE_ATTEST_KEY = 7;

export type SecurityLevelName = "Software" | "TrustedEnvironment" | "StrongBox";
export type VerifiedBootStateName = "Verified" | "SelfSigned" | "Unverified" | "Failed";

const SECURITY_LEVELS: readonly SecurityLevelName[] = ["Software", "TrustedEnvironment", "StrongBox"];
const BOOT_STATES: readonly VerifiedBootStateName[] = ["Verified", "SelfSigned", "Unverified", "Failed"];


export interface RootOfTrustInfo {
  verifiedBootKey: Buffer;
  deviceLocked: boolean;
  verifiedBootState: VerifiedBootStateName;
  /** absent before attestation version 3 */
  verifiedBootHash?: Buffer;
}

export interface AttestationApplicationIdInfo {
  packages: { name: string; version: number | string }[];
  /** lowercase hex SHA-256 of each signing certificate */
  signatureDigests: string[];
}

/** An integer as a JS number when it is safe, else its decimal string. */
export type IntValue = number | string;

/** One authorization list, with the library's field names. Attestation IDs are decoded as UTF-8 text. */
export interface AuthorizationListInfo {
  purpose?: IntValue[];
  algorithm?: IntValue;
  keySize?: IntValue;
  digest?: IntValue[];
  padding?: IntValue[];
  ecCurve?: IntValue;
  rsaPublicExponent?: IntValue;
  mgfDigest?: IntValue[];
  rollbackResistance?: true;
  earlyBootOnly?: true;
  activeDateTime?: IntValue;
  originationExpireDateTime?: IntValue;
  usageExpireDateTime?: IntValue;
  usageCountLimit?: IntValue;
  noAuthRequired?: true;
  userAuthType?: IntValue;
  authTimeout?: IntValue;
  allowWhileOnBody?: true;
  trustedUserPresenceRequired?: true;
  trustedConfirmationRequired?: true;
  unlockedDeviceRequired?: true;
  allApplications?: true;
  applicationId?: Buffer;
  creationDateTime?: IntValue;
  origin?: IntValue;
  rollbackResistant?: true;
  rootOfTrust?: RootOfTrustInfo;
  osVersion?: IntValue;
  osPatchLevel?: IntValue;
  attestationApplicationId?: AttestationApplicationIdInfo;
  attestationIdBrand?: string;
  attestationIdDevice?: string;
  attestationIdProduct?: string;
  attestationIdSerial?: string;
  attestationIdImei?: string;
  attestationIdMeid?: string;
  attestationIdManufacturer?: string;
  attestationIdModel?: string;
  vendorPatchLevel?: IntValue;
  bootPatchLevel?: IntValue;
  deviceUniqueAttestation?: true;
  attestationIdSecondImei?: string;
  moduleHash?: Buffer;
  /** tags the schema does not know, skipped: [tag, hex of the tagged element] */
  unknownTags: { tag: number; der: string }[];
}

export interface KeyDescriptionInfo {
  attestationVersion: number;
  attestationSecurityLevel: SecurityLevelName;
  /** keymasterVersion before attestation version 100 */
  keyMintVersion: number;
  keyMintSecurityLevel: SecurityLevelName;
  attestationChallenge: Buffer;
  uniqueId: Buffer;
  softwareEnforced: AuthorizationListInfo;
  /** teeEnforced before attestation version 100 */
  hardwareEnforced: AuthorizationListInfo;
}

type FieldKind = "int" | "intSet" | "null" | "bytes" | "text" | "rot" | "appId";

/**
 * The tags `@peculiar/asn1-android`'s AuthorizationList knows, with how each is presented. Anything else is an
 * unknown tag (skipped). test/android/keyDescription.test.ts checks this table against the library.
 */
export const AUTHORIZATION_TAGS: ReadonlyMap<number, readonly [keyof AuthorizationList, FieldKind]> = new Map([
  [1, ["purpose", "intSet"]],
  [2, ["algorithm", "int"]],
  [3, ["keySize", "int"]],
  [5, ["digest", "intSet"]],
  [6, ["padding", "intSet"]],
  [10, ["ecCurve", "int"]],
  [200, ["rsaPublicExponent", "int"]],
  [203, ["mgfDigest", "intSet"]],
  [303, ["rollbackResistance", "null"]],
  [305, ["earlyBootOnly", "null"]],
  [400, ["activeDateTime", "int"]],
  [401, ["originationExpireDateTime", "int"]],
  [402, ["usageExpireDateTime", "int"]],
  [405, ["usageCountLimit", "int"]],
  [503, ["noAuthRequired", "null"]],
  [504, ["userAuthType", "int"]],
  [505, ["authTimeout", "int"]],
  [506, ["allowWhileOnBody", "null"]],
  [507, ["trustedUserPresenceRequired", "null"]],
  [508, ["trustedConfirmationRequired", "null"]],
  [509, ["unlockedDeviceRequired", "null"]],
  [600, ["allApplications", "null"]],
  [601, ["applicationId", "bytes"]],
  [701, ["creationDateTime", "int"]],
  [702, ["origin", "int"]],
  [703, ["rollbackResistant", "null"]],
  [704, ["rootOfTrust", "rot"]],
  [705, ["osVersion", "int"]],
  [706, ["osPatchLevel", "int"]],
  [709, ["attestationApplicationId", "appId"]],
  [710, ["attestationIdBrand", "text"]],
  [711, ["attestationIdDevice", "text"]],
  [712, ["attestationIdProduct", "text"]],
  [713, ["attestationIdSerial", "text"]],
  [714, ["attestationIdImei", "text"]],
  [715, ["attestationIdMeid", "text"]],
  [716, ["attestationIdManufacturer", "text"]],
  [717, ["attestationIdModel", "text"]],
  [718, ["vendorPatchLevel", "int"]],
  [719, ["bootPatchLevel", "int"]],
  [720, ["deviceUniqueAttestation", "null"]],
  [723, ["attestationIdSecondImei", "text"]],
  [724, ["moduleHash", "bytes"]],
]);

const semantic = (message: string) => new ExtensionError("semantic", message);

function intValue(v: unknown): IntValue {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  const s = String(v);
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : s;
}

function bytesOf(v: { buffer: ArrayBuffer } | ArrayBuffer): Buffer {
  return Buffer.from(v instanceof ArrayBuffer ? v : v.buffer);
}

function enumName<T>(names: readonly T[], value: number, what: string): T {
  const name = names[value];
  if (name === undefined) throw semantic(`${what} ${value} is out of range`);
  return name;
}

function parseAppId(bytes: Buffer): AttestationApplicationIdInfo {
  const tree = decodeDer(bytes);
  if (!tree) throw new ExtensionError("der", "attestationApplicationId is not readable DER");
  const v = derViolation(tree);
  if (v) throw semantic(`attestationApplicationId is not DER (${v})`);
  let app: AttestationApplicationId;
  try {
    app = AsnParser.fromASN(tree, AttestationApplicationId);
  } catch (e) {
    throw semantic(`attestationApplicationId does not match its schema (${(e as Error).message})`);
  }
  return {
    packages: (app.packageInfos ?? []).map((p) => ({
      name: bytesOf(p.packageName).toString("utf8"),
      version: intValue(p.version),
    })),
    // an empty SET OF comes back undefined from the library
    signatureDigests: (app.signatureDigests ?? []).map((d) => bytesOf(d).toString("hex")),
  };
}

function rootOfTrust(r: RootOfTrust): RootOfTrustInfo {
  const out: RootOfTrustInfo = {
    verifiedBootKey: bytesOf(r.verifiedBootKey),
    deviceLocked: r.deviceLocked === true,
    verifiedBootState: enumName(BOOT_STATES, Number(r.verifiedBootState), "verifiedBootState"),
  };
  if (r.verifiedBootHash !== undefined) out.verifiedBootHash = bytesOf(r.verifiedBootHash);
  return out;
}

function authorizationList(list: AuthorizationList, unknownTags: { tag: number; der: string }[]): AuthorizationListInfo {
  const out: Record<string, unknown> = {};
  for (const [name, kind] of AUTHORIZATION_TAGS.values()) {
    const v = list[name] as unknown;
    if (v === undefined) continue;
    switch (kind) {
      case "int": out[name] = intValue(v); break;
      case "intSet": out[name] = Array.from(v as Iterable<unknown>, intValue); break;
      case "null": out[name] = true; break;
      case "bytes": out[name] = bytesOf(v as ArrayBuffer); break;
      case "text": out[name] = bytesOf(v as ArrayBuffer).toString("utf8"); break;
      case "rot": out[name] = rootOfTrust(v as RootOfTrust); break;
      case "appId": out[name] = parseAppId(bytesOf(v as ArrayBuffer)); break;
    }
  }
  return { ...(out as Omit<AuthorizationListInfo, "unknownTags">), unknownTags };
}

/** Parses the extnValue contents of a KeyDescription extension. Throws ExtensionError ("der" | "semantic"). */
export function parseKeyDescription(extnValue: Uint8Array): KeyDescriptionInfo {
  return parseKeyDescriptionFast(extnValue) ?? parseKeyDescriptionGeneral(extnValue);
}

/** The general reader: asn1js and @peculiar/asn1-android, which also say what is wrong with a broken one. */
export function parseKeyDescriptionGeneral(extnValue: Uint8Array): KeyDescriptionInfo {
  const tree = decodeDer(extnValue);
  if (!tree) throw new ExtensionError("der", "KeyDescription is not readable DER");
  const violation = derViolation(tree);
  if (violation) throw semantic(`KeyDescription is not DER (${violation})`);
  const top = children(tree);
  if (!isSequence(tree) || top.length !== 8 || !isSequence(top[6]!) || !isSequence(top[7]!)) {
    throw semantic("KeyDescription is not a SEQUENCE of eight elements");
  }
  const known = (tag: number) => AUTHORIZATION_TAGS.has(tag);
  const unknownSw = screenContextTags(top[6]!, known, "softwareEnforced");
  const unknownHw = screenContextTags(top[7]!, known, "hardwareEnforced");
  let kd: KeyDescription;
  try {
    kd = AsnParser.fromASN(tree, KeyDescription);
  } catch (e) {
    throw semantic(`KeyDescription does not match its schema (${(e as Error).message})`);
  }
  try {
    return convert(kd, unknownSw, unknownHw);
  } catch (e) {
    if (e instanceof ExtensionError) throw e;
    throw semantic(`KeyDescription holds an unexpected value (${(e as Error).message})`);
  }
}

function convert(
  kd: KeyDescription,
  unknownSw: { tag: number; der: string }[],
  unknownHw: { tag: number; der: string }[],
): KeyDescriptionInfo {
  return {
    attestationVersion: Number(intValue(kd.attestationVersion)),
    attestationSecurityLevel: enumName(SECURITY_LEVELS, Number(kd.attestationSecurityLevel), "attestationSecurityLevel"),
    keyMintVersion: Number(intValue(kd.keymasterVersion)),
    keyMintSecurityLevel: enumName(SECURITY_LEVELS, Number(kd.keymasterSecurityLevel), "keyMintSecurityLevel"),
    attestationChallenge: bytesOf(kd.attestationChallenge),
    uniqueId: bytesOf(kd.uniqueId),
    softwareEnforced: authorizationList(kd.softwareEnforced, unknownSw),
    hardwareEnforced: authorizationList(kd.teeEnforced, unknownHw),
  };
}

function jsonValue(v: unknown): unknown {
  if (v === null || typeof v !== "object") return v;
  if (Buffer.isBuffer(v)) return v.toString("hex");
  if (Array.isArray(v)) return v.map(jsonValue);
  // a plain loop (not Object.fromEntries over entries): this runs on every appraisal; key order is kept
  const out: Record<string, unknown> = {};
  for (const k in v) out[k] = jsonValue((v as Record<string, unknown>)[k]);
  return out;
}

/** JSON-safe form (bytes as lowercase hex) for the stored detail. */
export function keyDescriptionToJson(kd: KeyDescriptionInfo): Record<string, unknown> {
  return {
    schema: kd.attestationVersion >= 100 ? "KeyMint" : "Keymaster",
    ...(jsonValue(kd) as Record<string, unknown>),
  };
}

export function hasPurpose(list: AuthorizationListInfo, purpose: number): boolean {
  return (list.purpose ?? []).some((p) => p === purpose);
}

/** Two roots of trust agree when every field they carry is equal. */
export function sameRootOfTrust(a: RootOfTrustInfo | undefined, b: RootOfTrustInfo | undefined): boolean {
  if (!a || !b) return false;
  return a.deviceLocked === b.deviceLocked &&
    a.verifiedBootState === b.verifiedBootState &&
    a.verifiedBootKey.equals(b.verifiedBootKey) &&
    (a.verifiedBootHash === undefined) === (b.verifiedBootHash === undefined) &&
    (a.verifiedBootHash === undefined || a.verifiedBootHash.equals(b.verifiedBootHash!));
}

// ---------------------------------------------------------------------------------------------------------------
// The fast path (issue 15): the general reader costs ~10 signature checks per KeyDescription in asn1js and
// asn1-schema objects. This one reads the strict DER of a KeyDescription whose every authorization tag is known,
// with plain offsets, and gives up (undefined) on anything else — BER, an unknown or out-of-order tag, a negative
// or large INTEGER, an enumeration out of range, any other shape — so that the general reader decides and words
// every failure, and unknown tags are reported as before. It returns only what the general reader returns, with
// the same key order (the stored detail is its JSON): test/android/fastPath.test.ts compares both on every
// vector and on mutations of them.

interface El {
  /** identifier octet; for a context tag, its tag number in `n` */
  tag: number;
  n: number;
  pos: number;
  start: number;
  end: number;
}

/** Strict DER elements tiling [pos, end), or undefined. */
function elements(buf: Uint8Array, pos: number, end: number): El[] | undefined {
  const out: El[] = [];
  while (pos < end) {
    const h = readDerHeader(buf, pos, end);
    if (!h) return undefined;
    let n = h.tag & 0x1f;
    if (n === 0x1f) {
      n = 0;
      for (let p = pos + 1; ; p++) {
        n = n * 128 + (buf[p]! & 0x7f);
        if ((buf[p]! & 0x80) === 0) break;
      }
      if (n < 0x1f) return undefined; // high form for a low number: not DER
    }
    const start = pos + h.headerLength;
    out.push({ tag: h.tag, n, pos, start, end: start + h.length });
    pos = start + h.length;
  }
  return out;
}

const inner = (buf: Uint8Array, e: El) => elements(buf, e.start, e.end);
const bytesAt = (buf: Uint8Array, e: El) => Buffer.from(buf.subarray(e.start, e.end));

/** A non-negative INTEGER (or ENUMERATED) below 2^48 in minimal DER, else undefined. */
function uintAt(buf: Uint8Array, e: El | undefined, tag = 0x02): number | undefined {
  if (!e || e.tag !== tag) return undefined;
  const len = e.end - e.start;
  if (len === 0 || len > 6 || (buf[e.start]! & 0x80) !== 0) return undefined;
  if (len > 1 && buf[e.start] === 0 && (buf[e.start + 1]! & 0x80) === 0) return undefined;
  let v = 0;
  for (let p = e.start; p < e.end; p++) v = v * 256 + buf[p]!;
  return v;
}

function enumAt<T>(buf: Uint8Array, e: El | undefined, names: readonly T[]): T | undefined {
  const v = uintAt(buf, e, 0x0a);
  return v === undefined ? undefined : names[v];
}

function fastRootOfTrust(buf: Uint8Array, e: El): RootOfTrustInfo | undefined {
  const f = e.tag === 0x30 ? inner(buf, e) : undefined;
  if (!f || f.length < 3 || f.length > 4 || f[0]!.tag !== 0x04 || f[1]!.tag !== 0x01) return undefined;
  const locked = f[1]!;
  if (locked.end - locked.start !== 1 || (buf[locked.start] !== 0 && buf[locked.start] !== 0xff)) return undefined;
  const state = enumAt(buf, f[2], BOOT_STATES);
  if (state === undefined) return undefined;
  const out: RootOfTrustInfo = { verifiedBootKey: bytesAt(buf, f[0]!), deviceLocked: buf[locked.start] === 0xff, verifiedBootState: state };
  if (f[3]) {
    if (f[3].tag !== 0x04) return undefined;
    out.verifiedBootHash = bytesAt(buf, f[3]);
  }
  return out;
}

function fastAppId(octets: Uint8Array): AttestationApplicationIdInfo | undefined {
  if (!withinDecodeLimits(octets)) return undefined;
  const top = elements(octets, 0, octets.length);
  const f = top?.length === 1 && top[0]!.tag === 0x30 ? inner(octets, top[0]!) : undefined;
  if (!f || f.length !== 2 || f[0]!.tag !== 0x31 || f[1]!.tag !== 0x31) return undefined;
  const infos = inner(octets, f[0]!);
  const digests = inner(octets, f[1]!);
  if (!infos || !digests) return undefined;
  const packages: { name: string; version: number }[] = [];
  for (const info of infos) {
    const p = info.tag === 0x30 ? inner(octets, info) : undefined;
    if (!p || p.length !== 2 || p[0]!.tag !== 0x04) return undefined;
    const version = uintAt(octets, p[1]);
    if (version === undefined) return undefined;
    packages.push({ name: Buffer.from(octets.subarray(p[0]!.start, p[0]!.end)).toString("utf8"), version });
  }
  const signatureDigests: string[] = [];
  for (const d of digests) {
    if (d.tag !== 0x04) return undefined;
    signatureDigests.push(Buffer.from(octets.subarray(d.start, d.end)).toString("hex"));
  }
  return { packages, signatureDigests };
}

function fastAuthorizationList(buf: Uint8Array, e: El): AuthorizationListInfo | undefined {
  const items = e.tag === 0x30 ? inner(buf, e) : undefined;
  if (!items) return undefined;
  const out: Record<string, unknown> = {};
  let last = -1;
  for (const item of items) {
    // a constructed context tag, explicitly tagging one known field, in ascending order
    if ((item.tag & 0xe0) !== 0xa0 || item.n <= last) return undefined;
    last = item.n;
    const field = AUTHORIZATION_TAGS.get(item.n);
    const v = inner(buf, item);
    if (!field || !v || v.length !== 1) return undefined;
    const [name, kind] = field;
    const x = v[0]!;
    let value: unknown;
    switch (kind) {
      case "int": value = uintAt(buf, x); break;
      case "intSet": {
        const members = x.tag === 0x31 ? inner(buf, x) : undefined;
        const ints = members?.map((m) => uintAt(buf, m));
        // an empty SET OF comes back from the library otherwise than as []: leave it to the general reader
        value = ints && ints.length > 0 && ints.every((i) => i !== undefined) ? ints : undefined;
        break;
      }
      case "null": value = x.tag === 0x05 && x.end === x.start ? true : undefined; break;
      case "bytes": value = x.tag === 0x04 ? bytesAt(buf, x) : undefined; break;
      case "text": value = x.tag === 0x04 ? bytesAt(buf, x).toString("utf8") : undefined; break;
      case "rot": value = fastRootOfTrust(buf, x); break;
      case "appId": value = x.tag === 0x04 ? fastAppId(buf.subarray(x.start, x.end)) : undefined; break;
    }
    if (value === undefined) return undefined;
    out[name] = value;
  }
  return { ...(out as Omit<AuthorizationListInfo, "unknownTags">), unknownTags: [] };
}

/** The KeyDescription of the common strict-DER shape, or undefined to leave it to the general reader. */
export function parseKeyDescriptionFast(extnValue: Uint8Array): KeyDescriptionInfo | undefined {
  if (!withinDecodeLimits(extnValue)) return undefined;
  const top = elements(extnValue, 0, extnValue.length);
  const f = top?.length === 1 && top[0]!.tag === 0x30 ? inner(extnValue, top[0]!) : undefined;
  if (!f || f.length !== 8 || f[4]!.tag !== 0x04 || f[5]!.tag !== 0x04) return undefined;
  const attestationVersion = uintAt(extnValue, f[0]);
  const attestationSecurityLevel = enumAt(extnValue, f[1], SECURITY_LEVELS);
  const keyMintVersion = uintAt(extnValue, f[2]);
  const keyMintSecurityLevel = enumAt(extnValue, f[3], SECURITY_LEVELS);
  if (attestationVersion === undefined || attestationSecurityLevel === undefined || keyMintVersion === undefined ||
    keyMintSecurityLevel === undefined) return undefined;
  const softwareEnforced = fastAuthorizationList(extnValue, f[6]!);
  const hardwareEnforced = softwareEnforced && fastAuthorizationList(extnValue, f[7]!);
  if (!softwareEnforced || !hardwareEnforced) return undefined;
  return {
    attestationVersion,
    attestationSecurityLevel,
    keyMintVersion,
    keyMintSecurityLevel,
    attestationChallenge: bytesAt(extnValue, f[4]!),
    uniqueId: bytesAt(extnValue, f[5]!),
    softwareEnforced,
    hardwareEnforced,
  };
}
