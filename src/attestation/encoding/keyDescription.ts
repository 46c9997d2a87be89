import { AsnParser } from "@peculiar/asn1-schema";
import {
  AttestationApplicationId,
  AuthorizationList,
  KeyDescription,
  RootOfTrust,
  id_ce_keyDescription,
} from "@peculiar/asn1-android";
import { ExtensionError, children, decodeDer, derViolation, isSequence, screenContextTags } from "./derChain.ts";

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
  if (Buffer.isBuffer(v)) return v.toString("hex");
  if (Array.isArray(v)) return v.map(jsonValue);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonValue(x)]));
  }
  return v;
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
