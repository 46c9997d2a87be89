import * as asn1js from "asn1js";
import { AsnParser, AsnProp, AsnPropTypes, AsnType, AsnTypeTypes, OctetString } from "@peculiar/asn1-schema";
import {
  ExtensionError,
  children,
  decodeDer,
  derViolation,
  isSequence,
  screenContextTags,
} from "./derChain.ts";

/**
 * Samsung Knox attestation extension (OID 1.3.6.1.4.1.236.11.3.23.7), carried by the leaf of a Knox-capable
 * Samsung device next to the KeyDescription. Layout (as Samsung's own parser reads it: explicit context tags,
 * unknown tags skipped):
 *
 *   KnoxAttestation ::= SEQUENCE {
 *     challenge              [0] OCTET STRING OPTIONAL,
 *     idAttest               [4] ANY OPTIONAL,
 *     integrityStatus        [5] IntegrityStatus OPTIONAL,
 *     attestationRecordHash  [6] OCTET STRING OPTIONAL }
 *   IntegrityStatus ::= SEQUENCE {
 *     trustBoot [0] ENUMERATED, warranty [1] ENUMERATED, icd [2] ENUMERATED,
 *     kernelStatus [3] ENUMERATED, systemStatus [4] ENUMERATED,    -- 0 normal, 1 abnormal, 2 not supported
 *     authResult [5] ANY }  -- a status value, or SEQUENCE { [0] callerAuthResult, [1] callingPackage,
 *                           --   [2] callingPackageSigs, [3] callingPackageAuthResult }
 *   (every field OPTIONAL)
 *
 * The classes below are the asn1-schema description (also used by tests to build a synthetic certificate).
 */

export const KNOX_OID = "1.3.6.1.4.1.236.11.3.23.7";

/** Knox integrity values. */
export const KNOX_NORMAL = 0;
export const KNOX_ABNORMAL = 1;
export const KNOX_NOT_SUPPORTED = 2;

@AsnType({ type: AsnTypeTypes.Sequence })
export class KnoxAuthResult {
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 0, optional: true })
  callerAuthResult?: number;
  @AsnProp({ type: OctetString, context: 1, optional: true })
  callingPackage?: OctetString;
  @AsnProp({ type: OctetString, context: 2, optional: true })
  callingPackageSigs?: OctetString;
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 3, optional: true })
  callingPackageAuthResult?: number;

  constructor(params: Partial<KnoxAuthResult> = {}) {
    Object.assign(this, params);
  }
}

@AsnType({ type: AsnTypeTypes.Sequence })
export class KnoxIntegrityStatus {
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 0, optional: true })
  trustBoot?: number;
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 1, optional: true })
  warranty?: number;
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 2, optional: true })
  icd?: number;
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 3, optional: true })
  kernelStatus?: number;
  @AsnProp({ type: AsnPropTypes.Enumerated, context: 4, optional: true })
  systemStatus?: number;
  /** DER of the inner element: an ENUMERATED/INTEGER status, or a KnoxAuthResult SEQUENCE */
  @AsnProp({ type: AsnPropTypes.Any, context: 5, optional: true })
  authResult?: ArrayBuffer;

  constructor(params: Partial<KnoxIntegrityStatus> = {}) {
    Object.assign(this, params);
  }
}

@AsnType({ type: AsnTypeTypes.Sequence })
export class KnoxAttestation {
  @AsnProp({ type: OctetString, context: 0, optional: true })
  challenge?: OctetString;
  /** DER of the inner element, kept as is */
  @AsnProp({ type: AsnPropTypes.Any, context: 4, optional: true })
  idAttest?: ArrayBuffer;
  @AsnProp({ type: KnoxIntegrityStatus, context: 5, optional: true })
  integrityStatus?: KnoxIntegrityStatus;
  @AsnProp({ type: OctetString, context: 6, optional: true })
  attestationRecordHash?: OctetString;

  constructor(params: Partial<KnoxAttestation> = {}) {
    Object.assign(this, params);
  }
}

export interface KnoxAuthResultInfo {
  callerAuthResult?: number;
  callingPackage?: string;
  callingPackageSigs?: Buffer;
  callingPackageAuthResult?: number;
}

export interface KnoxIntegrityInfo {
  trustBoot?: number;
  warranty?: number;
  icd?: number;
  kernelStatus?: number;
  systemStatus?: number;
  authResult?: number | KnoxAuthResultInfo;
}

export interface KnoxInfo {
  challenge?: Buffer;
  /** DER of idAttest */
  idAttest?: Buffer;
  integrityStatus?: KnoxIntegrityInfo;
  attestationRecordHash?: Buffer;
  /** tags Samsung's layout does not name, skipped */
  unknownTags: { where: "extension" | "integrityStatus" | "authResult"; tag: number; der: string }[];
}

const semantic = (message: string) => new ExtensionError("semantic", message);
const TOP_TAGS = new Set([0, 4, 5, 6]);
const STATUS_TAGS = new Set([0, 1, 2, 3, 4, 5]);
const AUTH_TAGS = new Set([0, 1, 2, 3]);

function authResult(der: ArrayBuffer, unknownTags: KnoxInfo["unknownTags"]): number | KnoxAuthResultInfo {
  const tree = decodeDer(new Uint8Array(der));
  if (!tree) throw new ExtensionError("der", "Knox authResult is not readable DER");
  if (tree instanceof asn1js.Enumerated || tree instanceof asn1js.Integer) {
    const n = tree.valueBlock.valueDec;
    if (!Number.isSafeInteger(n)) throw semantic("Knox authResult is out of range");
    return n;
  }
  if (!isSequence(tree)) throw semantic("Knox authResult is neither a status value nor a SEQUENCE");
  for (const u of screenContextTags(tree, (t) => AUTH_TAGS.has(t), "Knox authResult")) {
    unknownTags.push({ where: "authResult", ...u });
  }
  const r = AsnParser.fromASN(tree, KnoxAuthResult);
  const out: KnoxAuthResultInfo = {};
  if (r.callerAuthResult !== undefined) out.callerAuthResult = r.callerAuthResult;
  if (r.callingPackage !== undefined) out.callingPackage = Buffer.from(r.callingPackage.buffer).toString("utf8");
  if (r.callingPackageSigs !== undefined) out.callingPackageSigs = Buffer.from(r.callingPackageSigs.buffer);
  if (r.callingPackageAuthResult !== undefined) out.callingPackageAuthResult = r.callingPackageAuthResult;
  return out;
}

/** Parses the extnValue contents of the Knox extension. Throws ExtensionError ("der" | "semantic"). */
export function parseKnoxExtension(extnValue: Uint8Array): KnoxInfo {
  const tree = decodeDer(extnValue);
  if (!tree) throw new ExtensionError("der", "Knox extension is not readable DER");
  const violation = derViolation(tree);
  if (violation) throw semantic(`Knox extension is not DER (${violation})`);
  if (!isSequence(tree)) throw semantic("Knox extension is not a SEQUENCE");
  const unknownTags: KnoxInfo["unknownTags"] = screenContextTags(tree, (t) => TOP_TAGS.has(t), "Knox extension")
    .map((u) => ({ where: "extension", ...u }));
  for (const item of children(tree)) {
    // the integrity status [5] wraps a SEQUENCE whose own tags are screened the same way
    const inner = children(item)[0];
    if ((item as asn1js.BaseBlock).idBlock.tagNumber === 5 && inner && isSequence(inner)) {
      for (const u of screenContextTags(inner, (t) => STATUS_TAGS.has(t), "Knox integrityStatus")) {
        unknownTags.push({ where: "integrityStatus", ...u });
      }
    }
  }
  try {
    const k = AsnParser.fromASN(tree, KnoxAttestation);
    const out: KnoxInfo = { unknownTags };
    if (k.challenge !== undefined) out.challenge = Buffer.from(k.challenge.buffer);
    if (k.idAttest !== undefined) out.idAttest = Buffer.from(k.idAttest);
    if (k.attestationRecordHash !== undefined) out.attestationRecordHash = Buffer.from(k.attestationRecordHash.buffer);
    const s = k.integrityStatus;
    if (s !== undefined) {
      const st: KnoxIntegrityInfo = {};
      for (const f of ["trustBoot", "warranty", "icd", "kernelStatus", "systemStatus"] as const) {
        if (s[f] !== undefined) st[f] = s[f];
      }
      if (s.authResult !== undefined) st.authResult = authResult(s.authResult, unknownTags);
      out.integrityStatus = st;
    }
    return out;
  } catch (e) {
    if (e instanceof ExtensionError) throw e;
    throw semantic(`Knox extension does not match its schema (${(e as Error).message})`);
  }
}

/** The warranty (e-fuse) bit is set: the device has run unofficial software at some point. */
export function knoxWarrantyVoid(k: KnoxInfo | undefined): boolean {
  return k?.integrityStatus?.warranty === KNOX_ABNORMAL;
}

export function knoxToJson(k: KnoxInfo): Record<string, unknown> {
  const hex = (b: Buffer | undefined) => b?.toString("hex");
  const s = k.integrityStatus;
  const auth = s?.authResult;
  return {
    challenge: hex(k.challenge),
    idAttest: hex(k.idAttest),
    integrityStatus: s && {
      ...s,
      authResult: typeof auth === "object" ? { ...auth, callingPackageSigs: hex(auth.callingPackageSigs) } : auth,
    },
    attestationRecordHash: hex(k.attestationRecordHash),
    unknownTags: k.unknownTags,
  };
}
