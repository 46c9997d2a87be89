import { createHash } from "node:crypto";
import * as asn1js from "asn1js";
import { AsnParser } from "@peculiar/asn1-schema";
import {
  BasicConstraints,
  Certificate,
  KeyUsage,
  id_ce_basicConstraints,
  id_ce_keyUsage,
  type Name,
} from "@peculiar/asn1-x509";

/**
 * The DER certificate chain of the android-key format: split it, read each certificate's facts, and the DER
 * helpers the extension parsers (keyDescription.ts, knox.ts) share.
 *
 * - `splitDerCertificates` answers "is this body nothing but DER certificates laid end to end?" by walking the
 *   tag/length headers only (no allocation beyond the result, no BER leniency). It is the format's `matches`
 *   test, so it must be cheap and strict: asn1js would accept BER (indefinite and non-minimal lengths), which is
 *   not what blob-format.md asks for.
 * - `decodeDer` is asn1js with embedded parsing off (10x faster on certificates: it does not try to read every
 *   OCTET STRING as nested BER) and with the whole input consumed.
 * - `derViolation` walks an asn1js tree and names the first encoding that BER allows but DER does not
 *   (indefinite or non-minimal lengths, a BOOLEAN that is not 00/FF, a non-minimal INTEGER, a constructed
 *   string). Used to tell "broken DER" (unreadable) from "readable but not DER" (a semantic failure).
 * - `screenContextTags` checks the order of explicitly tagged fields and sets aside tags a schema does not know.
 * - `readCertificate` reads one certificate with `@peculiar/asn1-x509` (over a `decodeDer` tree) into the flat
 *   facts path validation needs, including the raw bytes that a signature and a name link are checked on.
 */

/**
 * A certificate extension that could not be read. `der`: the bytes are not readable DER at all (the container is
 * malformed); `semantic`: readable, but not what the schema says (the attestation is not trustworthy).
 */
export class ExtensionError extends Error {
  readonly kind: "der" | "semantic";
  constructor(kind: "der" | "semantic", message: string) {
    super(message);
    this.name = "ExtensionError";
    this.kind = kind;
  }
}

export interface DerHeader {
  /** the identifier octet (single-byte tags only; high tag numbers are read as one header byte run) */
  tag: number;
  headerLength: number;
  length: number;
}

/** Reads one DER header at `offset`. Returns null on anything that is not definite, minimal DER. */
export function readDerHeader(buf: Uint8Array, offset: number, end: number = buf.length): DerHeader | null {
  if (offset + 2 > end) return null;
  const tag = buf[offset]!;
  let pos = offset + 1;
  if ((tag & 0x1f) === 0x1f) {
    // high tag number: base-128 digits, first digit not 0x80 (minimal), at most 4 digits
    let digits = 0;
    if (buf[pos] === 0x80) return null;
    for (;;) {
      if (pos >= end || digits === 4) return null;
      const b = buf[pos++]!;
      digits++;
      if ((b & 0x80) === 0) break;
    }
  }
  if (pos >= end) return null;
  const first = buf[pos++]!;
  let length: number;
  if (first < 0x80) {
    length = first;
  } else {
    const n = first & 0x7f;
    if (n === 0 || n > 4) return null; // indefinite form, or absurd for our sizes
    if (pos + n > end) return null;
    if (buf[pos] === 0) return null; // leading zero: not minimal
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[pos++]!;
    if (length < 0x80) return null; // long form for a short length: not minimal
  }
  const headerLength = pos - offset;
  if (length > end - pos) return null;
  return { tag, headerLength, length };
}

/**
 * The offsets of one certificate's three parts when its outer shape is SEQUENCE { SEQUENCE tbs, SEQUENCE
 * algorithm, BIT STRING signature } with every length consistent and nothing left over; null otherwise.
 */
function certificateParts(buf: Uint8Array, offset: number, h: DerHeader): [number, number, number] | null {
  if (h.tag !== 0x30) return null;
  let pos = offset + h.headerLength;
  const end = pos + h.length;
  const parts: number[] = [];
  for (const tag of [0x30, 0x30, 0x03]) {
    const inner = readDerHeader(buf, pos, end);
    if (!inner || inner.tag !== tag) return null;
    parts.push(pos);
    pos += inner.headerLength + inner.length;
  }
  return pos === end ? (parts as [number, number, number]) : null;
}

function isCertificateShape(buf: Uint8Array, offset: number, h: DerHeader): boolean {
  return certificateParts(buf, offset, h) !== null;
}

/**
 * The unused-bits octet of a certificate's signature BIT STRING, or undefined when `der` is not a certificate's
 * outer shape or the BIT STRING is empty. DER signatures are whole octets, so anything but 0 is a second encoding
 * of the same certificate (parsers drop the octet), which both formats refuse.
 */
export function signatureUnusedBits(der: Uint8Array): number | undefined {
  const h = readDerHeader(der, 0);
  const parts = h && certificateParts(der, 0, h);
  if (!parts) return undefined;
  const bits = readDerHeader(der, parts[2])!;
  return bits.length === 0 ? undefined : der[parts[2] + bits.headerLength];
}

/**
 * Splits a body made only of DER X.509 certificates, leaf first. Returns null when the body is anything else:
 * empty, a first byte other than 0x30, an inconsistent length, a non-certificate element, trailing bytes, or more
 * than `maxCount` certificates. The returned arrays are views into `body`.
 */
export function splitDerCertificates(body: Uint8Array, maxCount = 16): Uint8Array[] | null {
  const walk = walkDerCertificates(body, maxCount);
  return typeof walk === "string" ? null : walk;
}

/** Why `body` is not DER certificates laid end to end (one phrase for an error reason), or null when it is. */
export function derChainProblem(body: Uint8Array, maxCount = 16): string | null {
  const walk = walkDerCertificates(body, maxCount);
  return typeof walk === "string" ? walk : null;
}

function walkDerCertificates(body: Uint8Array, maxCount: number): Uint8Array[] | string {
  if (body.length === 0) return "the body is empty";
  if (body[0] !== 0x30) return `it starts with byte 0x${body[0]!.toString(16).padStart(2, "0")}, not 0x30 (SEQUENCE)`;
  const out: Uint8Array[] = [];
  let pos = 0;
  while (pos < body.length) {
    if (out.length === maxCount) return `more than ${maxCount} certificates`;
    const h = readDerHeader(body, pos);
    if (!h) {
      return `certificate ${out.length} at byte ${pos}: its length is not definite, minimal DER or runs past the ` +
        `end of the body (${body.length - pos} bytes left)`;
    }
    if (!isCertificateShape(body, pos, h)) {
      return `certificate ${out.length} at byte ${pos} is not SEQUENCE { SEQUENCE, SEQUENCE, BIT STRING }`;
    }
    const next = pos + h.headerLength + h.length;
    out.push(body.subarray(pos, next));
    pos = next;
  }
  return out;
}

const DECODE_MAX_DEPTH = 32;
const DECODE_MAX_NODES = 4096;
/** Larger certificates go to the general reader (none real comes near: Android certificates are < 2 kB). */
const DECODE_FAST_MAX_BYTES = 16_384;

/**
 * asn1js decode of exactly `bytes` (no trailing data, no embedded parsing). Returns null when unreadable. The
 * tree's views point into `bytes` (no copy): callers pass bytes they own.
 */
export function decodeDer(bytes: Uint8Array): asn1js.AsnType | null {
  // asn1js's fast path wants a plain Uint8Array (a Node Buffer has another prototype).
  const view = Object.getPrototypeOf(bytes) === Uint8Array.prototype
    ? bytes
    : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let parsed: ReturnType<typeof asn1js.fromBER>;
  try {
    parsed = asn1js.fromBER(view, { parseEmbedded: false, copyInput: false, maxDepth: DECODE_MAX_DEPTH, maxNodes: DECODE_MAX_NODES });
  } catch {
    return null;
  }
  if (parsed.offset === -1 || parsed.offset !== view.length || parsed.result.error) return null;
  return parsed.result;
}

function minimalLengthBytes(length: number): number {
  if (length < 0x80) return 1;
  let n = 0;
  for (let l = length; l > 0; l = Math.floor(l / 256)) n++;
  return 1 + n;
}

/**
 * Returns a description of the first BER-only encoding in `block`'s tree (only `block` itself when `deep` is
 * false), or null when it is DER.
 * (SET OF ordering is not checked: devices emit purposes unsorted and nothing downstream depends on it.)
 */
export function derViolation(block: asn1js.AsnType, path = "$", deep = true): string | null {
  const b = block as asn1js.BaseBlock;
  const lenBlock = b.lenBlock;
  if (lenBlock.isIndefiniteForm) return `${path}: indefinite length`;
  if (lenBlock.blockLength !== minimalLengthBytes(lenBlock.length)) return `${path}: non-minimal length`;
  const id = b.idBlock;
  if (id.tagClass === 1) {
    const content = (b.valueBeforeDecodeView ?? new Uint8Array()).subarray(id.blockLength + lenBlock.blockLength);
    switch (id.tagNumber) {
      case 1: // BOOLEAN
        if (content.length !== 1 || (content[0] !== 0x00 && content[0] !== 0xff)) {
          return `${path}: BOOLEAN encoded as ${Buffer.from(content).toString("hex") || "(empty)"}, DER wants 00 or ff`;
        }
        break;
      case 2: // INTEGER
      case 10: // ENUMERATED
        if (content.length === 0) return `${path}: empty INTEGER`;
        if (content.length > 1 && ((content[0] === 0x00 && (content[1]! & 0x80) === 0) ||
          (content[0] === 0xff && (content[1]! & 0x80) !== 0))) {
          return `${path}: non-minimal INTEGER`;
        }
        break;
      case 3: // BIT STRING
      case 4: // OCTET STRING
      case 12: case 19: case 22: case 26: // string types
        if (id.isConstructed) return `${path}: constructed string`;
        break;
      case 5: // NULL
        if (content.length !== 0) return `${path}: NULL with content`;
        break;
    }
  }
  const value = (b as { valueBlock?: { value?: unknown } }).valueBlock?.value;
  if (deep && id.isConstructed && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = derViolation(value[i] as asn1js.AsnType, `${path}/${i}`);
      if (v) return v;
    }
  }
  return null;
}

/** The bytes a decoded block was read from (identifier, length and content). */
export function encodedBytes(block: asn1js.AsnType): Uint8Array {
  return (block as asn1js.BaseBlock).valueBeforeDecodeView;
}

/** The content octets of a decoded block (without identifier and length). */
export function contentBytes(block: asn1js.AsnType): Uint8Array {
  const b = block as asn1js.BaseBlock;
  return b.valueBeforeDecodeView.subarray(b.idBlock.blockLength + b.lenBlock.blockLength);
}

/** Context-specific tag number of a block, or undefined when it is not context-specific. */
export function contextTag(block: asn1js.AsnType): number | undefined {
  const id = (block as asn1js.BaseBlock).idBlock;
  return id.tagClass === 3 ? id.tagNumber : undefined;
}

/** Children of a constructed block (SEQUENCE, SET, or a constructed context tag). */
export function children(block: asn1js.AsnType): asn1js.AsnType[] {
  const value = (block as { valueBlock?: { value?: unknown } }).valueBlock?.value;
  return Array.isArray(value) ? (value as asn1js.AsnType[]) : [];
}

/**
 * Checks the context tags of a SEQUENCE of explicitly tagged fields (strictly ascending, as DER of the schemas
 * used here requires: no repeats, no reordering) and removes the tags `known` rejects, returning them with the
 * hex of their element, so that asn1-schema can then read the known ones. Throws ExtensionError("semantic").
 */
export function screenContextTags(
  seq: asn1js.AsnType,
  known: (tag: number) => boolean,
  name: string,
): { tag: number; der: string }[] {
  const unknown: { tag: number; der: string }[] = [];
  const kept: asn1js.AsnType[] = [];
  let last = -1;
  for (const item of children(seq)) {
    const tag = contextTag(item);
    if (tag === undefined) throw new ExtensionError("semantic", `${name}: an element is not context-tagged`);
    if (tag <= last) {
      throw new ExtensionError("semantic", tag === last
        ? `${name}: tag [${tag}] repeated`
        : `${name}: tags not in ascending order ([${tag}] after [${last}])`);
    }
    last = tag;
    if (known(tag)) kept.push(item);
    else unknown.push({ tag, der: Buffer.from(encodedBytes(item)).toString("hex") });
  }
  if (unknown.length > 0) (seq as unknown as { valueBlock: { value: asn1js.AsnType[] } }).valueBlock.value = kept;
  return unknown;
}

/** True when `block` is a universal SEQUENCE. */
export function isSequence(block: asn1js.AsnType): boolean {
  const id = (block as asn1js.BaseBlock).idBlock;
  return id.tagClass === 1 && id.tagNumber === 16 && id.isConstructed;
}

// ---------------------------------------------------------------------------------------------------------------
// Certificates

/** One certificate extension: OID, critical flag, the extnValue contents. */
export interface CertificateExtension {
  oid: string;
  critical: boolean;
  value: Uint8Array;
}

/** What path validation and the appraisal need from one certificate. Plain data; safe to cache by `sha256`. */
export interface CertificateFacts {
  der: Uint8Array;
  /** lowercase hex SHA-256 of `der` */
  sha256: string;
  /** lowercase hex of the serial INTEGER's content octets, as encoded (e.g. "01") */
  serialHex: string;
  subject: string;
  issuer: string;
  /** the subject's attributes in order (type OID, value as text): how Google's chains name their roles */
  subjectAttributes: readonly { type: string; value: string }[];
  subjectDer: Buffer;
  issuerDer: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** SubjectPublicKeyInfo DER and its lowercase hex SHA-256 */
  spkiDer: Buffer;
  spkiSha256: string;
  /** the signed bytes, the outer signature algorithm OID, the signature (BIT STRING contents, no unused-bits byte) */
  tbsDer: Uint8Array;
  signatureAlgorithm: string;
  signature: Buffer;
  /** the signature BIT STRING's unused-bits octet (signatureUnusedBits): anything but 0 fails the chain */
  signatureUnusedBits: number;
  /** false when the outer AlgorithmIdentifier differs from the one inside the TBSCertificate */
  signatureAlgorithmsAgree: boolean;
  /** basicConstraints: undefined when absent */
  ca?: boolean;
  pathLen?: number;
  /** keyUsage flags (KeyUsageFlags bits); undefined when absent */
  keyUsage?: number;
  extensions: CertificateExtension[];
}

export class CertificateReadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CertificateReadError";
  }
}

const NAME_LABELS: Record<string, string> = {
  "2.5.4.3": "CN", "2.5.4.5": "serialNumber", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST",
  "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.12": "title",
};

/** A readable rendering of a Name for logs and detail (never compared: links compare the DER). */
export function nameToString(name: Name): string {
  return name
    .map((rdn) => rdn.map((atv) => {
      const value = atv.value.anyValue ? Buffer.from(atv.value.anyValue).toString("hex") : atv.value.toString();
      return `${NAME_LABELS[atv.type] ?? atv.type}=${value}`;
    }).join("+"))
    .join(", ");
}

const sha256Hex = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

/**
 * Reads one DER certificate. Throws CertificateReadError when it is not an X.509 certificate. The facts own a
 * copy of the bytes (never a view into the caller's buffer, which may be pooled and reused), so they can be
 * cached.
 */
export function readCertificate(input: Uint8Array): CertificateFacts {
  const der = new Uint8Array(input);
  return readCertificateFast(der) ?? readCertificateGeneral(der);
}

/** The general reader: asn1js + @peculiar/asn1-x509, which also says what is wrong with a broken certificate. */
export function readCertificateGeneral(der: Uint8Array): CertificateFacts {
  const tree = decodeDer(der);
  if (!tree) throw new CertificateReadError("certificate is not readable DER");
  let cert: Certificate;
  try {
    cert = AsnParser.fromASN(tree, Certificate);
  } catch (e) {
    throw new CertificateReadError(`not an X.509 certificate (${(e as Error).message})`);
  }
  try {
    const top = children(tree);
    const tbs = top[0]!;
    const fields = children(tbs);
    const i = contextTag(fields[0]!) === 0 ? 1 : 0; // optional [0] version
    const serial = contentBytes(fields[i]!);
    const tbsAlg = encodedBytes(fields[i + 1]!);
    const issuerDer = Buffer.from(encodedBytes(fields[i + 2]!));
    const subjectDer = Buffer.from(encodedBytes(fields[i + 4]!));
    const spkiDer = Buffer.from(encodedBytes(fields[i + 5]!));
    const outerAlg = encodedBytes(top[1]!);
    const t = cert.tbsCertificate;
    // Array.from: plain arrays (the library's Extensions and Name subclasses would carry over through map)
    const extensions: CertificateExtension[] = Array.from(t.extensions ?? [], (e) => ({
      oid: e.extnID,
      critical: e.critical === true,
      value: new Uint8Array(e.extnValue.buffer),
    }));
    const facts: CertificateFacts = {
      der,
      sha256: sha256Hex(der),
      serialHex: Buffer.from(serial).toString("hex"),
      subject: nameToString(t.subject),
      issuer: nameToString(t.issuer),
      subjectAttributes: Array.from(t.subject.flatMap((rdn) => rdn.map((atv) => ({ type: atv.type, value: atv.value.toString() })))),
      subjectDer,
      issuerDer,
      notBefore: t.validity.notBefore.getTime(),
      notAfter: t.validity.notAfter.getTime(),
      spkiDer,
      spkiSha256: sha256Hex(spkiDer),
      tbsDer: encodedBytes(tbs),
      signatureAlgorithm: cert.signatureAlgorithm.algorithm,
      signature: Buffer.from(cert.signatureValue),
      signatureUnusedBits: signatureUnusedBits(der) ?? 0,
      signatureAlgorithmsAgree: Buffer.from(tbsAlg).equals(outerAlg),
      extensions,
    };
    for (const e of extensions) {
      if (e.oid === id_ce_basicConstraints) {
        const bc = AsnParser.parse(e.value, BasicConstraints);
        facts.ca = bc.cA === true;
        if (bc.pathLenConstraint !== undefined) facts.pathLen = bc.pathLenConstraint;
      } else if (e.oid === id_ce_keyUsage) {
        facts.keyUsage = AsnParser.parse(e.value, KeyUsage).toNumber();
      }
    }
    return facts;
  } catch (e) {
    if (e instanceof CertificateReadError) throw e;
    throw new CertificateReadError(`certificate fields are unreadable (${(e as Error).message})`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The fast path (issue 15). The general reader spends ~20x a signature check building asn1js and asn1-schema
// objects. This one walks the strict DER of the common certificate shape with plain offsets and gives up
// (undefined) on anything else: BER, an unusual string or time type, issuer/subject unique IDs, a tree deeper or
// larger than decodeDer allows, an INTEGER or BIT STRING it would have to interpret differently. On a give-up
// the general reader runs, so every certificate is read exactly as before: the fast path only ever returns what
// the general one returns (test/android/fastPath.test.ts compares both on every vector certificate).

/** One strict DER element: first identifier octet, where its header starts, its content's [start, end). */
interface Tlv {
  tag: number;
  pos: number;
  start: number;
  end: number;
}

function tlvAt(buf: Uint8Array, pos: number, end: number): Tlv | undefined {
  const h = readDerHeader(buf, pos, end);
  if (!h) return undefined;
  const start = pos + h.headerLength;
  return { tag: h.tag, pos, start, end: start + h.length };
}

/** The elements of a constructed element's content, or undefined when they do not tile it exactly. */
function tlvChildren(buf: Uint8Array, t: Tlv): Tlv[] | undefined {
  const out: Tlv[] = [];
  for (let p = t.start; p < t.end;) {
    const c = tlvAt(buf, p, t.end);
    if (!c) return undefined;
    out.push(c);
    p = c.end;
  }
  return out;
}

/**
 * True when `buf` is strict DER elements within the limits decodeDer gives asn1js (with a margin: past it, asn1js
 * decides), made only of types asn1js decodes without complaint: SEQUENCE, SET, constructed tags of other classes,
 * and a few primitives each checked as asn1js checks them (a BIT STRING's unused bits ≤ 7, an OID's last octet, a
 * time's form). So the fast paths accept nothing decodeDer would refuse; anything else goes to the general reader.
 */
export function withinDecodeLimits(buf: Uint8Array): boolean {
  // iterative, allocation-free: this runs on every certificate and KeyDescription the fast paths read
  const ends: number[] = [buf.length];
  let nodes = 0;
  let pos = 0;
  while (ends.length > 0) {
    const end = ends[ends.length - 1]!;
    if (pos === end) {
      ends.pop();
      continue;
    }
    const h = readDerHeader(buf, pos, end);
    // a margin below asn1js's limits, whose counting need not be matched exactly: past it, asn1js decides
    if (!h || ++nodes > DECODE_MAX_NODES - 8) return false;
    const tag = h.tag;
    const start = pos + h.headerLength;
    const universal = (tag & 0xc0) === 0;
    if (universal && (tag & 0x1f) === 0x1f) return false;
    if (tag & 0x20) {
      if (universal && tag !== 0x30 && tag !== 0x31) return false; // constructed strings: BER
      if (ends.length > DECODE_MAX_DEPTH - 4) return false;
      ends.push(start + h.length);
      pos = start;
      continue;
    }
    if (universal && !plainPrimitive(buf, { tag, pos, start, end: start + h.length })) return false;
    pos = start + h.length;
  }
  return true;
}

function plainPrimitive(buf: Uint8Array, t: Tlv): boolean {
  const len = t.end - t.start;
  switch (t.tag) {
    case 0x01: return len === 1;
    case 0x02: case 0x0a: return len > 0;
    case 0x03: return len > 0 && buf[t.start]! <= 7;
    case 0x04: case 0x0c: case 0x13: case 0x16: return true;
    case 0x05: return len === 0;
    case 0x06: return oidText(buf, t) !== undefined;
    case 0x17: case 0x18: return fastTime(buf, t) !== undefined;
    default: return false;
  }
}

function oidText(buf: Uint8Array, t: Tlv): string | undefined {
  if (t.tag !== 0x06 || t.end === t.start || (buf[t.end - 1]! & 0x80) !== 0) return undefined;
  const arcs: number[] = [];
  let v = 0;
  for (let p = t.start; p < t.end; p++) {
    const b = buf[p]!;
    if (v === 0 && b === 0x80) return undefined; // non-minimal arc
    v = v * 128 + (b & 0x7f);
    if (v > Number.MAX_SAFE_INTEGER / 128) return undefined;
    if ((b & 0x80) === 0) {
      if (arcs.length === 0) arcs.push(v < 40 ? 0 : v < 80 ? 1 : 2, v < 80 ? v % 40 : v - 80);
      else arcs.push(v);
      v = 0;
    }
  }
  return arcs.join(".");
}

/** AlgorithmIdentifier ::= SEQUENCE { OID, parameters ANY OPTIONAL }: the OID, or undefined for another shape. */
function algorithmOid(buf: Uint8Array, t: Tlv): string | undefined {
  const parts = t.tag === 0x30 ? tlvChildren(buf, t) : undefined;
  return parts && parts.length >= 1 && parts.length <= 2 ? oidText(buf, parts[0]!) : undefined;
}

/** PrintableString, IA5String and ASCII-only UTF8String, the types every decoder reads alike. */
function asciiString(buf: Uint8Array, t: Tlv): string | undefined {
  if (t.tag !== 0x13 && t.tag !== 0x16 && t.tag !== 0x0c) return undefined;
  for (let p = t.start; p < t.end; p++) if (buf[p]! >= 0x80) return undefined;
  return Buffer.from(buf.buffer, buf.byteOffset + t.start, t.end - t.start).toString("latin1");
}

/** Name ::= SEQUENCE OF SET OF AttributeTypeAndValue, rendered as nameToString does. */
function fastName(buf: Uint8Array, t: Tlv): { text: string; attributes: { type: string; value: string }[] } | undefined {
  const rdns = t.tag === 0x30 ? tlvChildren(buf, t) : undefined;
  if (!rdns) return undefined;
  const attributes: { type: string; value: string }[] = [];
  const parts: string[] = [];
  for (const rdn of rdns) {
    const atvs = rdn.tag === 0x31 ? tlvChildren(buf, rdn) : undefined;
    if (!atvs || atvs.length === 0) return undefined;
    const texts: string[] = [];
    for (const atv of atvs) {
      const tv = atv.tag === 0x30 ? tlvChildren(buf, atv) : undefined;
      if (!tv || tv.length !== 2) return undefined;
      const type = oidText(buf, tv[0]!);
      const value = asciiString(buf, tv[1]!);
      if (type === undefined || value === undefined) return undefined;
      attributes.push({ type, value });
      texts.push(`${NAME_LABELS[type] ?? type}=${value}`);
    }
    parts.push(texts.join("+"));
  }
  return { text: parts.join(", "), attributes };
}

/** UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ; anything else (fractions, offsets) → undefined. */
function fastTime(buf: Uint8Array, t: Tlv): Date | undefined {
  const len = t.end - t.start;
  if (!((t.tag === 0x17 && len === 13) || (t.tag === 0x18 && len === 15)) || buf[t.end - 1] !== 0x5a) return undefined;
  const digits: number[] = [];
  for (let p = t.start; p < t.end - 1; p++) {
    const d = buf[p]! - 0x30;
    if (d < 0 || d > 9) return undefined;
    digits.push(d);
  }
  const n = (i: number) => digits[i]! * 10 + digits[i + 1]!;
  let year: number;
  let i: number;
  if (t.tag === 0x17) {
    year = n(0) < 50 ? 2000 + n(0) : 1900 + n(0);
    i = 2;
  } else {
    year = n(0) * 100 + n(2);
    i = 4;
  }
  const [mo, d, h, mi, s] = [n(i), n(i + 2), n(i + 4), n(i + 6), n(i + 8)];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59) return undefined;
  const date = new Date(Date.UTC(year, mo - 1, d, h, mi, s));
  return date.getUTCDate() === d ? date : undefined;
}

/** A non-negative INTEGER that fits a safe JS number, or undefined. */
function smallUint(buf: Uint8Array, t: Tlv): number | undefined {
  const len = t.end - t.start;
  if (t.tag !== 0x02 || len === 0 || len > 6 || (buf[t.start]! & 0x80) !== 0) return undefined;
  if (len > 1 && buf[t.start] === 0 && (buf[t.start + 1]! & 0x80) === 0) return undefined;
  let v = 0;
  for (let p = t.start; p < t.end; p++) v = v * 256 + buf[p]!;
  return v;
}

function fastExtensions(buf: Uint8Array, t: Tlv, facts: CertificateFacts): boolean {
  const list = t.tag === 0xa3 ? tlvChildren(buf, t) : undefined;
  const seq = list?.length === 1 && list[0]!.tag === 0x30 ? tlvChildren(buf, list[0]!) : undefined;
  if (!seq) return false;
  for (const ext of seq) {
    const parts = ext.tag === 0x30 ? tlvChildren(buf, ext) : undefined;
    if (!parts || parts.length < 2 || parts.length > 3) return false;
    const oid = oidText(buf, parts[0]!);
    if (oid === undefined) return false;
    let critical = false;
    if (parts.length === 3) {
      const c = parts[1]!;
      // DER encodes a critical flag only as TRUE (DEFAULT FALSE is left out)
      if (c.tag !== 0x01 || c.end - c.start !== 1 || buf[c.start] !== 0xff) return false;
      critical = true;
    }
    const v = parts[parts.length - 1]!;
    if (v.tag !== 0x04) return false;
    const value = buf.subarray(v.start, v.end);
    facts.extensions.push({ oid, critical, value });
    if (oid === id_ce_basicConstraints) {
      const bcSeq = tlvAt(value, 0, value.length);
      const bc = bcSeq && bcSeq.tag === 0x30 && bcSeq.end === value.length ? tlvChildren(value, bcSeq) : undefined;
      if (!bc || bc.length > 2) return false;
      let k = 0;
      facts.ca = false;
      if (bc[k]?.tag === 0x01) {
        const b = bc[k++]!;
        if (b.end - b.start !== 1 || value[b.start] !== 0xff) return false;
        facts.ca = true;
      }
      if (k < bc.length) {
        const pl = smallUint(value, bc[k++]!);
        if (pl === undefined) return false;
        facts.pathLen = pl;
      }
      if (k !== bc.length) return false;
    } else if (oid === id_ce_keyUsage) {
      const ku = tlvAt(value, 0, value.length);
      if (!ku || ku.tag !== 0x03 || ku.end !== value.length || ku.end - ku.start < 2) return false;
      const unused = value[ku.start]!;
      if (unused > 7) return false;
      // KeyUsage.toNumber(): bit i of the BIT STRING (first octet's high bit = 0) is 2^i
      const bits = (ku.end - ku.start - 1) * 8 - unused;
      let n = 0;
      for (let i = 0; i < bits; i++) if (value[ku.start + 1 + (i >> 3)]! & (0x80 >> (i & 7))) n += 2 ** i;
      facts.keyUsage = n;
    }
  }
  return true;
}

/** The facts of a certificate of the common strict-DER shape, or undefined to leave it to the general reader. */
export function readCertificateFast(der: Uint8Array): CertificateFacts | undefined {
  if (der.length > DECODE_FAST_MAX_BYTES || !withinDecodeLimits(der)) return undefined;
  const outer = tlvAt(der, 0, der.length);
  if (!outer || outer.end !== der.length) return undefined;
  const top = certificateParts(der, 0, { tag: outer.tag, headerLength: outer.start, length: outer.end - outer.start });
  if (!top) return undefined;
  const tbs = tlvAt(der, top[0], der.length)!;
  const outerAlg = tlvAt(der, top[1], der.length)!;
  const sig = tlvAt(der, top[2], der.length)!;
  const f = tlvChildren(der, tbs);
  if (!f) return undefined;
  let i = 0;
  if (f[0]?.tag === 0xa0) {
    const v = tlvChildren(der, f[0]);
    if (!v || v.length !== 1 || smallUint(der, v[0]!) === undefined) return undefined;
    i = 1;
  }
  if (f.length < i + 6 || f.length > i + 7) return undefined;
  const [serial, alg, issuer, validity, subject, spki] = f.slice(i, i + 6) as [Tlv, Tlv, Tlv, Tlv, Tlv, Tlv];
  const ext = f[i + 6];
  if (serial.tag !== 0x02 || serial.end === serial.start || alg.tag !== 0x30 || validity.tag !== 0x30 || spki.tag !== 0x30) {
    return undefined;
  }
  const algOid = algorithmOid(der, outerAlg);
  const spkiParts = tlvChildren(der, spki);
  if (algorithmOid(der, alg) === undefined || spkiParts?.length !== 2 || algorithmOid(der, spkiParts[0]!) === undefined ||
    spkiParts[1]!.tag !== 0x03) return undefined;
  const times = tlvChildren(der, validity);
  const notBefore = times?.length === 2 ? fastTime(der, times[0]!) : undefined;
  const notAfter = times?.length === 2 ? fastTime(der, times[1]!) : undefined;
  const issuerName = fastName(der, issuer);
  const subjectName = fastName(der, subject);
  if (!algOid || !notBefore || !notAfter || !issuerName || !subjectName || sig.end === sig.start) return undefined;
  const whole = (t: Tlv) => der.subarray(t.pos, t.end);
  const spkiDer = Buffer.from(whole(spki));
  const facts: CertificateFacts = {
    der,
    sha256: sha256Hex(der),
    serialHex: Buffer.from(der.buffer, der.byteOffset + serial.start, serial.end - serial.start).toString("hex"),
    subject: subjectName.text,
    issuer: issuerName.text,
    subjectAttributes: subjectName.attributes,
    subjectDer: Buffer.from(whole(subject)),
    issuerDer: Buffer.from(whole(issuer)),
    notBefore,
    notAfter,
    spkiDer,
    spkiSha256: sha256Hex(spkiDer),
    tbsDer: der.subarray(top[0], tbs.end),
    signatureAlgorithm: algOid,
    signature: Buffer.from(der.subarray(sig.start + 1, sig.end)),
    signatureUnusedBits: der[sig.start]!,
    signatureAlgorithmsAgree: Buffer.from(whole(alg)).equals(der.subarray(top[1], outerAlg.end)),
    extensions: [],
  };
  if (ext && !fastExtensions(der, ext, facts)) return undefined;
  return facts;
}

/** The contents of the first extension with `oid`, or undefined. */
export function findExtension(cert: CertificateFacts, oid: string): CertificateExtension | undefined {
  return cert.extensions.find((e) => e.oid === oid);
}
