import * as asn1js from "asn1js";
import {
  ExtensionError,
  children,
  contentBytes,
  contextTag,
  decodeDer,
  derViolation,
  encodedBytes,
  isSequence,
} from "./derChain.ts";

/**
 * Samsung Knox attestation extension (OID 1.3.6.1.4.1.236.11.3.23.7), carried by the leaf of a Knox-capable
 * Samsung device next to the KeyDescription. Samsung's layout (explicit context tags, every element optional):
 *
 *   KnoxAttestation ::= SEQUENCE {
 *     challenge              [0] OCTET STRING,
 *     idAttest               [4] ANY,
 *     integrityStatus        [5] IntegrityStatus,
 *     attestationRecordHash  [6] OCTET STRING }
 *   IntegrityStatus ::= SEQUENCE {
 *     trustBoot [0] ENUMERATED, warranty [1] ENUMERATED, icd [2] ENUMERATED,
 *     kernelStatus [3] ENUMERATED, systemStatus [4] ENUMERATED,    -- 0 normal, 1 abnormal, 2 not supported
 *     authResult [5] ANY }
 *
 * The verdict needs one value of it, the warranty (e-fuse) bit in `[5]`, so the reading is split in two:
 *
 * - `[5]` integrityStatus is read strictly: DER, a SEQUENCE of explicitly tagged values in ascending order, each
 *   ENUMERATED (or INTEGER) 0, 1 or 2, present at most once. Anything else throws ExtensionError("semantic"):
 *   a warranty value attestd cannot read unambiguously must not decide a verdict either way.
 * - Everything else is recorded, never failed: real devices do not write Samsung's schema. Galaxy S9/S9+,
 *   S10/S10e, S20, Note10, A40/A51 and Tab chains tag the `[0]` challenge PrintableString around raw bytes; that
 *   and any other off-schema encoding (another string type, unknown elements, repeats or order of elements other
 *   than `[5]`, BER-only encodings outside `[5]`) becomes a line in `findings`, and unknown elements are also kept
 *   in `unknownTags`.
 * - An extension that is not readable at all (not DER — pre-Android-8 Samsung firmware writes inconsistent
 *   lengths — or not a SEQUENCE) is returned with `unreadable` set. The policy then refuses the device (its
 *   warranty bit cannot be read), with status Success: the certificate itself is genuine.
 * Nothing here throws for broken DER: a chain never becomes BLOB_MALFORMED because of this extension.
 */

export const KNOX_OID = "1.3.6.1.4.1.236.11.3.23.7";

/** Knox integrity values. */
export const KNOX_NORMAL = 0;
export const KNOX_ABNORMAL = 1;
export const KNOX_NOT_SUPPORTED = 2;

export interface KnoxIntegrityInfo {
  trustBoot?: number;
  warranty?: number;
  icd?: number;
  kernelStatus?: number;
  systemStatus?: number;
  /** a status value, or the hex DER of Samsung's caller/package result SEQUENCE (not interpreted) */
  authResult?: number | string;
}

export interface KnoxInfo {
  /** why the extension could not be read at all; nothing else is then set */
  unreadable?: string;
  challenge?: Buffer;
  /** DER of idAttest's inner element, kept as is */
  idAttest?: Buffer;
  integrityStatus?: KnoxIntegrityInfo;
  attestationRecordHash?: Buffer;
  /** elements Samsung's layout does not name, skipped */
  unknownTags: { where: "extension" | "integrityStatus"; tag: number; der: string }[];
  /** off-schema encodings the verdict does not depend on, tolerated and reported */
  findings: string[];
}

const semantic = (message: string) => new ExtensionError("semantic", message);

const STATUS_FIELDS = ["trustBoot", "warranty", "icd", "kernelStatus", "systemStatus"] as const;

/** Universal string types a device might put where Samsung's schema says OCTET STRING. */
const STRING_TYPES: ReadonlyMap<number, string> = new Map([
  [12, "UTF8String"], [19, "PrintableString"], [20, "TeletexString"], [22, "IA5String"], [26, "VisibleString"],
  [28, "UniversalString"], [30, "BMPString"],
]);

function universalName(block: asn1js.AsnType): string {
  const id = (block as asn1js.BaseBlock).idBlock;
  if (id.tagClass === 1 && id.tagNumber === 4) return "OCTET STRING";
  if (id.tagClass === 1 && STRING_TYPES.has(id.tagNumber)) return STRING_TYPES.get(id.tagNumber)!;
  const cls = ["", "universal", "application", "context", "private"][id.tagClass] ?? "?";
  return `${id.isConstructed ? "constructed" : "primitive"} ${cls} tag ${id.tagNumber}`;
}

function isUniversal(block: asn1js.AsnType, tagNumber: number): boolean {
  const id = (block as asn1js.BaseBlock).idBlock;
  return id.tagClass === 1 && id.tagNumber === tagNumber && !id.isConstructed;
}

function isString(block: asn1js.AsnType): boolean {
  const id = (block as asn1js.BaseBlock).idBlock;
  return id.tagClass === 1 && !id.isConstructed && STRING_TYPES.has(id.tagNumber);
}

/** The one element inside an explicit context tag, or undefined when the tag does not hold exactly one. */
function explicitContent(item: asn1js.AsnType): asn1js.AsnType | undefined {
  const inner = children(item);
  return (item as asn1js.BaseBlock).idBlock.isConstructed && inner.length === 1 ? inner[0] : undefined;
}

const hex = (block: asn1js.AsnType) => Buffer.from(encodedBytes(block)).toString("hex");

function smallNumber(block: asn1js.AsnType): number | undefined {
  if (!(block instanceof asn1js.Enumerated || block instanceof asn1js.Integer)) return undefined;
  const n = block.valueBlock.valueDec;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `[5]` integrityStatus, read strictly (see the module comment). Throws ExtensionError("semantic"). */
function readIntegrity(block: asn1js.AsnType, info: KnoxInfo): KnoxIntegrityInfo {
  if (!isSequence(block)) throw semantic(`Knox integrityStatus [5] is a ${universalName(block)}, not a SEQUENCE`);
  const header = derViolation(block, "integrityStatus", false);
  if (header) throw semantic(`Knox integrityStatus is not DER (${header})`);
  const out: KnoxIntegrityInfo = {};
  let last = -1;
  for (const item of children(block)) {
    const tag = contextTag(item);
    if (tag === undefined) throw semantic("Knox integrityStatus: an element is not context-tagged");
    if (tag <= last) {
      throw semantic(tag === last
        ? `Knox integrityStatus: [${tag}] repeated`
        : `Knox integrityStatus: tags not in ascending order ([${tag}] after [${last}])`);
    }
    last = tag;
    const value = explicitContent(item);
    if (tag > 5) {
      info.unknownTags.push({ where: "integrityStatus", tag, der: hex(item) });
      info.findings.push(`integrityStatus [${tag}] is not in Samsung's schema; skipped`);
      continue;
    }
    if (tag === 5) {
      // authResult is Samsung's report on the calling app; the verdict does not use it.
      const n = value && smallNumber(value);
      if (value && n !== undefined && !derViolation(value, "authResult")) out.authResult = n;
      else if (value) out.authResult = hex(value);
      else info.findings.push("integrityStatus [5] authResult is not one explicitly tagged element; skipped");
      continue;
    }
    const name = STATUS_FIELDS[tag]!;
    if (!value) throw semantic(`Knox integrityStatus ${name} [${tag}] is not one explicitly tagged element`);
    const violation = derViolation(item, `integrityStatus.${name}`);
    if (violation) throw semantic(`Knox integrityStatus is not DER (${violation})`);
    const n = smallNumber(value);
    if (n === undefined) throw semantic(`Knox integrityStatus ${name} is a ${universalName(value)}, not ENUMERATED`);
    if (n !== KNOX_NORMAL && n !== KNOX_ABNORMAL && n !== KNOX_NOT_SUPPORTED) {
      throw semantic(`Knox integrityStatus ${name} is ${n}, expected 0, 1 or 2`);
    }
    out[name] = n;
  }
  return out;
}

/**
 * Reads the extnValue contents of the Knox extension. Never throws for an encoding: only a malformed `[5]`
 * integrityStatus throws ExtensionError("semantic").
 */
export function parseKnoxExtension(extnValue: Uint8Array): KnoxInfo {
  const info: KnoxInfo = { unknownTags: [], findings: [] };
  const tree = decodeDer(extnValue);
  if (!tree) return { ...info, unreadable: "not readable DER (its lengths are inconsistent)" };
  if (!isSequence(tree)) return { ...info, unreadable: `a ${universalName(tree)}, not a SEQUENCE` };
  const header = derViolation(tree, "$", false);
  if (header) info.findings.push(`the extension is not DER (${header})`);
  const seen = new Set<number>();
  let last = -1;
  children(tree).forEach((item, i) => {
    const tag = contextTag(item);
    if (tag === undefined) {
      info.findings.push(`element ${i} is a ${universalName(item)}, not a context-tagged element; skipped`);
      return;
    }
    if (seen.has(tag)) {
      if (tag === 5) throw semantic("Knox extension: integrityStatus [5] appears twice");
      info.findings.push(`[${tag}] repeated; the first is kept`);
      return;
    }
    if (tag < last) info.findings.push(`[${tag}] after [${last}]: elements not in ascending order`);
    seen.add(tag);
    last = Math.max(last, tag);
    const value = explicitContent(item);
    if (tag === 5) {
      if (!value) throw semantic("Knox integrityStatus [5] is not one explicitly tagged element");
      info.integrityStatus = readIntegrity(value, info);
      return;
    }
    if (tag !== 0 && tag !== 4 && tag !== 6) {
      info.unknownTags.push({ where: "extension", tag, der: hex(item) });
      info.findings.push(`[${tag}] is not in Samsung's schema; skipped`);
      return;
    }
    if (!value) {
      info.findings.push(`[${tag}] is not one explicitly tagged element; skipped`);
      return;
    }
    const violation = derViolation(item, `[${tag}]`);
    if (violation) info.findings.push(`[${tag}] is not DER (${violation})`);
    if (tag === 4) {
      info.idAttest = Buffer.from(encodedBytes(value));
    } else if (tag === 6) {
      if (isUniversal(value, 4)) info.attestationRecordHash = Buffer.from(contentBytes(value));
      else info.findings.push(`attestationRecordHash [6] is a ${universalName(value)}, not an OCTET STRING; skipped`);
    } else if (isUniversal(value, 4)) {
      info.challenge = Buffer.from(contentBytes(value));
    } else if (isString(value)) {
      info.challenge = Buffer.from(contentBytes(value));
      info.findings.push(`challenge [0] is a ${universalName(value)}, Samsung's schema says OCTET STRING (as Galaxy devices write it); read as its raw bytes`);
    } else {
      info.findings.push(`challenge [0] is a ${universalName(value)}, not a string; skipped`);
    }
  });
  return info;
}

/** The warranty (e-fuse) bit is set: the device has run unofficial software at some point. */
export function knoxWarrantyVoid(k: KnoxInfo | undefined): boolean {
  return k?.integrityStatus?.warranty === KNOX_ABNORMAL;
}

export function knoxToJson(k: KnoxInfo): Record<string, unknown> {
  const toHex = (b: Buffer | undefined) => b?.toString("hex");
  return {
    ...(k.unreadable ? { unreadable: k.unreadable } : {}),
    challenge: toHex(k.challenge),
    idAttest: toHex(k.idAttest),
    integrityStatus: k.integrityStatus,
    attestationRecordHash: toHex(k.attestationRecordHash),
    unknownTags: k.unknownTags,
    findings: k.findings,
  };
}
