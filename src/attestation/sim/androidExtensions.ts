import * as asn1js from "asn1js";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  AttestationApplicationId,
  AttestationPackageInfo,
  AuthorizationList,
  IntegerSet,
  KeyDescription,
  RootOfTrust,
  SecurityLevel,
  VerifiedBootState,
} from "@peculiar/asn1-android";

/**
 * The certificate extensions an Android device writes, encoded as devices write them — including the ways real
 * devices get them wrong — for `attestd device-sim --format android-key` and the tests:
 *
 * - the KeyDescription (OID 1.3.6.1.4.1.11129.2.1.17), serialized by the same library the parser reads it with;
 * - Samsung's Knox extension (OID 1.3.6.1.4.1.236.11.3.23.7), by default as Galaxy devices write it: the `[0]`
 *   challenge tagged PrintableString around raw bytes; optionally with unknown elements or the broken outer length
 *   of pre-Android-8 Samsung firmware;
 * - the RKP ProvisioningInfo extension (OID 1.3.6.1.4.1.11129.2.1.30, a CBOR map) that Google's RKP servers put on
 *   the per-device CA certificate.
 */

// The OIDs belong to the modules that read these extensions; re-exported for the simulator's callers.
export { KEY_DESCRIPTION_OID } from "../encoding/keyDescription.ts";
export { KNOX_OID } from "../encoding/knox.ts";
export { PROVISIONING_INFO_OID } from "../chain/provisioning.ts";

export { SecurityLevel, VerifiedBootState };

export interface KeyDescriptionOptions {
  /** attestationChallenge; default 32 bytes of 0x42 */
  challenge?: Uint8Array;
  /** attestationVersion and keyMintVersion (default 300, KeyMint 3) */
  version?: number;
  /** attestationSecurityLevel (default TrustedEnvironment) */
  securityLevel?: SecurityLevel;
  /** keyMintSecurityLevel when it differs from securityLevel */
  keyMintSecurityLevel?: SecurityLevel;
  /** RootOfTrust.deviceLocked (default true) */
  locked?: boolean;
  /** default Verified */
  bootState?: VerifiedBootState;
  /** verifiedBootKey; default 32 bytes of 0x11 */
  bootKey?: Uint8Array;
  /** verifiedBootHash (attestation version ≥ 3); default 32 bytes of 0x22 */
  bootHash?: Uint8Array;
  /** false: no RootOfTrust at all */
  rootOfTrust?: boolean;
  /** key purposes (default [2], SIGN); 7 is ATTEST_KEY */
  purposes?: number[];
  /** the attested key's algorithm, as KeyMint numbers it (default 3, EC; 1 is RSA) */
  algorithm?: number;
  /** the attested key's size in bits (default 256) */
  keySize?: number;
  /**
   * Which list holds the key's authorizations, root of trust included (default "hardware": teeEnforced).
   * "software" puts them in softwareEnforced and leaves teeEnforced empty, as a software-level attestation does.
   */
  enforcement?: "hardware" | "software";
  /** default 150000 */
  osVersion?: number;
  /** YYYYMM (default 202501) */
  osPatchLevel?: number;
  vendorPatchLevel?: number;
  bootPatchLevel?: number;
  /** attestationApplicationId package (default com.example.wallet, version 7) */
  packageName?: string;
  packageVersion?: number;
  /** SHA-256 of the app's signing certificate (default 32 bytes of 0x5a) */
  signatureDigest?: Uint8Array;
  /** attested device ids, hardware-enforced */
  model?: string;
  brand?: string;
  imei?: string;
}

const bytes = (b: Uint8Array | string) => new OctetString(typeof b === "string" ? Buffer.from(b, "utf8") : b);

/** The KeyDescription extension value (extnValue contents). */
export function keyDescriptionDer(o: KeyDescriptionOptions = {}): Buffer {
  const level = o.securityLevel ?? SecurityLevel.trustedEnvironment;
  const version = o.version ?? 300;
  const app = new AttestationApplicationId({
    packageInfos: [new AttestationPackageInfo({
      packageName: bytes(o.packageName ?? "com.example.wallet"),
      version: o.packageVersion ?? 7,
    })],
    signatureDigests: [bytes(o.signatureDigest ?? Buffer.alloc(32, 0x5a))],
  });
  const keyAuthorizations: Partial<AuthorizationList> = {
    purpose: new IntegerSet(o.purposes ?? [2]),
    algorithm: o.algorithm ?? 3,
    keySize: o.keySize ?? 256,
    ...(o.rootOfTrust === false ? {} : {
      rootOfTrust: new RootOfTrust({
        verifiedBootKey: bytes(o.bootKey ?? Buffer.alloc(32, 0x11)),
        deviceLocked: o.locked ?? true,
        verifiedBootState: o.bootState ?? VerifiedBootState.verified,
        ...(version >= 3 ? { verifiedBootHash: bytes(o.bootHash ?? Buffer.alloc(32, 0x22)) } : {}),
      }),
    }),
    osVersion: o.osVersion ?? 150000,
    osPatchLevel: o.osPatchLevel ?? 202501,
    ...(o.brand ? { attestationIdBrand: bytes(o.brand) } : {}),
    ...(o.imei ? { attestationIdImei: bytes(o.imei) } : {}),
    ...(o.model ? { attestationIdModel: bytes(o.model) } : {}),
    ...(o.vendorPatchLevel !== undefined ? { vendorPatchLevel: o.vendorPatchLevel } : {}),
    ...(o.bootPatchLevel !== undefined ? { bootPatchLevel: o.bootPatchLevel } : {}),
  };
  const keystoreAuthorizations: Partial<AuthorizationList> = {
    creationDateTime: 1735689600000,
    attestationApplicationId: new OctetString(AsnConvert.serialize(app)),
  };
  // The schema serializes fields in tag order, so one list can take both groups.
  const software = o.enforcement === "software";
  const kd = new KeyDescription({
    attestationVersion: version,
    attestationSecurityLevel: level,
    keymasterVersion: version,
    keymasterSecurityLevel: o.keyMintSecurityLevel ?? level,
    attestationChallenge: bytes(o.challenge ?? Buffer.alloc(32, 0x42)),
    uniqueId: new OctetString(),
    softwareEnforced: new AuthorizationList(software ? { ...keyAuthorizations, ...keystoreAuthorizations } : keystoreAuthorizations),
    teeEnforced: new AuthorizationList(software ? {} : keyAuthorizations),
  });
  return Buffer.from(AsnConvert.serialize(kd));
}

/** Samsung's integrity values: 0 normal, 1 abnormal, 2 not supported. */
export interface KnoxIntegrityOptions {
  trustBoot?: number;
  warranty?: number;
  icd?: number;
  kernelStatus?: number;
  systemStatus?: number;
  /** a plain status value in [5] */
  authResult?: number;
}

export interface KnoxExtensionOptions {
  /** the Knox challenge; default 32 bytes of 0x42 */
  challenge?: Uint8Array;
  /**
   * How `[0]` tags it. Galaxy S9 … S20, Note10, A40/A51 and Tab devices write a PrintableString holding raw bytes
   * (the default here, as in the field); Samsung's schema says OCTET STRING.
   */
  challengeEncoding?: "printableString" | "octetString";
  /** `[5]` integrityStatus; null leaves it out. Default: every value 0 (normal). */
  integrity?: KnoxIntegrityOptions | null;
  /** `[6]` attestationRecordHash; null leaves it out. Default 32 bytes of 0x03. */
  attestationRecordHash?: Uint8Array | null;
  /** further explicitly tagged elements, appended in the order given (e.g. tags Samsung's schema does not name) */
  extraElements?: readonly { tag: number; value: asn1js.AsnType }[];
  /**
   * Pre-Android-8 Samsung firmware: the outer SEQUENCE's length says more bytes than follow, so the extension is
   * not readable DER at all.
   */
  brokenLength?: boolean;
}

function explicit(tag: number, value: asn1js.AsnType): asn1js.Constructed {
  return new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: tag }, value: [value] });
}

/** The Knox extension value (extnValue contents). */
export function knoxExtensionDer(o: KnoxExtensionOptions = {}): Buffer {
  const challenge = o.challenge ?? Buffer.alloc(32, 0x42);
  const elements: asn1js.AsnType[] = [
    explicit(0, (o.challengeEncoding ?? "printableString") === "printableString"
      ? new asn1js.Primitive({ idBlock: { tagClass: 1, tagNumber: 19 }, valueHex: challenge })
      : new asn1js.OctetString({ valueHex: challenge })),
  ];
  if (o.integrity !== null) {
    const i = { trustBoot: 0, warranty: 0, icd: 0, kernelStatus: 0, systemStatus: 0, ...(o.integrity ?? {}) };
    const status = [i.trustBoot, i.warranty, i.icd, i.kernelStatus, i.systemStatus]
      .map((v, tag) => explicit(tag, new asn1js.Enumerated({ value: v })));
    if (i.authResult !== undefined) status.push(explicit(5, new asn1js.Enumerated({ value: i.authResult })));
    elements.push(explicit(5, new asn1js.Sequence({ value: status })));
  }
  if (o.attestationRecordHash !== null) {
    elements.push(explicit(6, new asn1js.OctetString({ valueHex: o.attestationRecordHash ?? Buffer.alloc(32, 0x03) })));
  }
  for (const e of o.extraElements ?? []) elements.push(explicit(e.tag, e.value));
  const der = Buffer.from(new asn1js.Sequence({ value: elements }).toBER());
  if (o.brokenLength) {
    // Short and long form alike: the last length octet is the low byte of the length; claim two bytes too many.
    const lengthAt = der[1]! < 0x80 ? 1 : 1 + (der[1]! & 0x7f);
    der[lengthAt] = der[lengthAt]! + 2;
  }
  return der;
}

/**
 * The ProvisioningInfo extension value: a CBOR map {1: certsIssued}. attestd does not read its contents; its
 * presence on an issuing certificate is what marks a chain as remotely provisioned (RKP).
 */
export function provisioningInfoDer(certsIssued = 1): Buffer {
  if (!Number.isInteger(certsIssued) || certsIssued < 0 || certsIssued > 23) {
    throw new RangeError("certsIssued must be 0..23 (one CBOR byte)");
  }
  return Buffer.from([0xa1, 0x01, certsIssued]);
}
