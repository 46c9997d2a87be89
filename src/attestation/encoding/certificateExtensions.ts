import { readDerHeader, type DerHeader } from "./derChain.ts";

/**
 * The extensions of one DER certificate, read by walking TLV headers only — no asn1js tree, no schema, no copy.
 * Costs a few µs where asn1js / asn1-schema cost 120–170 µs, so it can run on every appraisal for the device
 * leaf (which is never cached).
 *
 *   Certificate SEQUENCE { tbsCertificate SEQUENCE, signatureAlgorithm SEQUENCE, signature BIT STRING }
 *   tbsCertificate: [0] version OPTIONAL, serial INTEGER, signature SEQUENCE, issuer SEQUENCE, validity SEQUENCE,
 *                   subject SEQUENCE, subjectPublicKeyInfo SEQUENCE, [1] issuerUniqueID OPTIONAL,
 *                   [2] subjectUniqueID OPTIONAL, [3] EXPLICIT Extensions OPTIONAL — in that order, nothing after
 *   Extension:      SEQUENCE { OBJECT IDENTIFIER, BOOLEAN critical DEFAULT FALSE, OCTET STRING extnValue }
 *
 * Every header goes through `readDerHeader` (definite, minimal lengths, nested within their parent). Anything else
 * — a wrong tag, an element missing or out of order, bytes left over, a length that overruns its parent, a BOOLEAN
 * that is not 00/FF, an OBJECT IDENTIFIER that is not minimally encoded — throws CertificateStructureError: the
 * bytes are not a DER certificate. The contents of fields the walk skips (names, key, dates) are not examined.
 * One leniency, as elsewhere in this code base (`derViolation`): an explicitly encoded `critical FALSE` is read as
 * non-critical, although DER would omit the default.
 *
 * The known extensions are recognised by their encoded OID bytes; KNOWN_EXTENSIONS is also the one list of which
 * extensions a vendor chain honours when critical (issuers and the leaf alike).
 */

/** The certificate's bytes are not a DER X.509 certificate (structure, not meaning). */
export class CertificateStructureError extends Error {
  override readonly name = "CertificateStructureError";
}

export interface KnownExtension {
  readonly name: string;
  /** dotted OID */
  readonly oid: string;
  /**
   * true: path validation processes it, or it restricts nothing there, so a critical instance is accepted.
   * false: recognised (and named in reasons) but not enforced, so a critical instance fails the chain — RFC 5280
   * §4.2: a certificate with a critical extension the relying party does not process must be rejected.
   */
  readonly honouredWhenCritical: boolean;
}

export const OID_BASIC_CONSTRAINTS = "2.5.29.19";
export const OID_KEY_USAGE = "2.5.29.15";

/** keyUsage bits as `1 << bit number` (the numbering of @peculiar/asn1-x509's KeyUsageFlags). */
export const KEY_USAGE_DIGITAL_SIGNATURE = 1;
export const KEY_USAGE_KEY_CERT_SIGN = 32;

export const KNOWN_EXTENSIONS: readonly KnownExtension[] = [
  { name: "basicConstraints", oid: OID_BASIC_CONSTRAINTS, honouredWhenCritical: true },
  { name: "keyUsage", oid: OID_KEY_USAGE, honouredWhenCritical: true },
  // OpenSSL's checkIssued reads the key identifiers; the rest restrict nothing in a vendor chain's validation
  // (no policy inputs, no name forms to check, no purpose defined for attestation keys).
  { name: "extKeyUsage", oid: "2.5.29.37", honouredWhenCritical: true },
  { name: "subjectKeyIdentifier", oid: "2.5.29.14", honouredWhenCritical: true },
  { name: "authorityKeyIdentifier", oid: "2.5.29.35", honouredWhenCritical: true },
  { name: "subjectAltName", oid: "2.5.29.17", honouredWhenCritical: true },
  { name: "certificatePolicies", oid: "2.5.29.32", honouredWhenCritical: true },
  // Critical means "process me": no CRL is fetched and no name constraint is enforced, so these fail when critical.
  // (authorityInfoAccess MUST be non-critical, RFC 5280 §4.2.2.1; nameConstraints belongs on CAs only.)
  { name: "cRLDistributionPoints", oid: "2.5.29.31", honouredWhenCritical: false },
  { name: "authorityInfoAccess", oid: "1.3.6.1.5.5.7.1.1", honouredWhenCritical: false },
  { name: "nameConstraints", oid: "2.5.29.30", honouredWhenCritical: false },
];

/** Dotted OIDs of the extensions a vendor chain honours when critical (from KNOWN_EXTENSIONS). */
export const UNDERSTOOD_CRITICAL: ReadonlySet<string> = new Set(
  KNOWN_EXTENSIONS.filter((e) => e.honouredWhenCritical).map((e) => e.oid),
);

export interface CertificateExtensionEntry {
  /** dotted OID */
  readonly oid: string;
  /** the KNOWN_EXTENSIONS entry when recognised */
  readonly known: KnownExtension | undefined;
  readonly critical: boolean;
  /** extnValue contents: a view into the certificate (copy it before keeping it beyond the call) */
  readonly value: Uint8Array;
}

/** Content octets of an OBJECT IDENTIFIER (no tag, no length). */
export function encodeOid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map((a) => {
    if (!/^(0|[1-9]\d*)$/.test(a)) throw new Error(`not a dotted OID: ${dotted}`);
    return BigInt(a);
  });
  if (arcs.length < 2 || arcs[0]! > 2n || (arcs[0]! < 2n && arcs[1]! > 39n)) throw new Error(`not a dotted OID: ${dotted}`);
  const subids = [arcs[0]! * 40n + arcs[1]!, ...arcs.slice(2)];
  const out: number[] = [];
  for (const s of subids) {
    const digits = [Number(s & 0x7fn)];
    for (let v = s >> 7n; v > 0n; v >>= 7n) digits.unshift(Number(v & 0x7fn) | 0x80);
    out.push(...digits);
  }
  return Uint8Array.from(out);
}

const KNOWN_BY_BYTES: readonly { bytes: Uint8Array; ext: KnownExtension }[] = KNOWN_EXTENSIONS.map((ext) => ({
  bytes: encodeOid(ext.oid),
  ext,
}));

function knownAt(buf: Uint8Array, start: number, length: number): KnownExtension | undefined {
  outer: for (const k of KNOWN_BY_BYTES) {
    const b = k.bytes;
    if (b.length !== length) continue;
    for (let i = 0; i < length; i++) if (buf[start + i] !== b[i]) continue outer;
    return k.ext;
  }
  return undefined;
}

/** Dotted form of a minimally encoded OID's contents, or undefined when the encoding is not DER. */
function decodeOid(buf: Uint8Array, start: number, end: number): string | undefined {
  if (start >= end || (buf[end - 1]! & 0x80) !== 0) return undefined;
  let out = "";
  let first = true;
  for (let pos = start; pos < end;) {
    if (buf[pos] === 0x80) return undefined; // leading zero digit: not minimal
    let v = 0;
    let big: bigint | undefined;
    for (;;) {
      const b = buf[pos++]!;
      if (big === undefined && v < 2 ** 45) v = v * 128 + (b & 0x7f);
      else big = (big ?? BigInt(v)) * 128n + BigInt(b & 0x7f);
      if ((b & 0x80) === 0) break;
    }
    const arc = big === undefined ? String(v) : String(big);
    if (first) {
      first = false;
      if (big === undefined && v < 80) out = `${Math.floor(v / 40)}.${v % 40}`;
      else out = `2.${big === undefined ? v - 80 : String(big - 80n)}`;
    } else {
      out += `.${arc}`;
    }
  }
  return out;
}

/** The header of the element at `pos`, required to have `tag`; throws otherwise. */
function expect(buf: Uint8Array, pos: number, end: number, tag: number, what: string): DerHeader {
  const h = readDerHeader(buf, pos, end);
  if (!h) throw new CertificateStructureError(`${what}: no DER element at offset ${pos}`);
  if (h.tag !== tag) {
    throw new CertificateStructureError(
      `${what}: expected tag 0x${tag.toString(16)} at offset ${pos}, found 0x${h.tag.toString(16)}`,
    );
  }
  return h;
}

const TBS_FIELDS: readonly [number, string][] = [
  [0x02, "serialNumber"],
  [0x30, "signature"],
  [0x30, "issuer"],
  [0x30, "validity"],
  [0x30, "subject"],
  [0x30, "subjectPublicKeyInfo"],
];

/** The subjectPublicKeyInfo's AlgorithmIdentifier, as far as choosing a signature scheme needs it. */
export interface PublicKeyAlgorithm {
  /** dotted OID of the key algorithm (1.2.840.10045.2.1 for EC) */
  readonly oid: string;
  /**
   * dotted OID of the parameters when they are one (an EC key's named curve); undefined when absent, NULL or
   * anything else (explicit curve parameters)
   */
  readonly parameterOid: string | undefined;
}

export interface CertificateFields {
  readonly extensions: CertificateExtensionEntry[];
  readonly publicKeyAlgorithm: PublicKeyAlgorithm;
  /** the subjectPublicKeyInfo's DER as the certificate carries it: a view into the certificate */
  readonly subjectPublicKeyInfo: Uint8Array;
}

/**
 * The extensions of a DER certificate, in certificate order ([] when it has none). Throws
 * CertificateStructureError, and nothing else, when `der` is not exactly one DER certificate. `value`s are views
 * into `der`.
 */
export function readCertificateExtensions(der: Uint8Array): CertificateExtensionEntry[] {
  return walkCertificate(der, false).extensions;
}

/**
 * subjectPublicKeyInfo.algorithm: SEQUENCE { OBJECT IDENTIFIER, parameters ANY OPTIONAL }. Read here because
 * OpenSSL 3 answers `KeyObject.asymmetricKeyDetails` for an EC key by converting it to a legacy key first, which
 * cost more per appraisal than this whole walk.
 */
function readPublicKeyAlgorithm(der: Uint8Array, spkiPos: number, spki: DerHeader): PublicKeyAlgorithm {
  const spkiEnd = spkiPos + spki.headerLength + spki.length;
  const algPos = spkiPos + spki.headerLength;
  const alg = expect(der, algPos, spkiEnd, 0x30, "subjectPublicKeyInfo algorithm");
  const algEnd = algPos + alg.headerLength + alg.length;
  const id = expect(der, algPos + alg.headerLength, algEnd, 0x06, "subjectPublicKeyInfo algorithm OID");
  const idStart = algPos + alg.headerLength + id.headerLength;
  const oid = decodeOid(der, idStart, idStart + id.length);
  if (oid === undefined) throw new CertificateStructureError("subjectPublicKeyInfo: algorithm is not a DER OBJECT IDENTIFIER");
  let parameterOid: string | undefined;
  const paramPos = idStart + id.length;
  if (paramPos < algEnd && der[paramPos] === 0x06) {
    const p = expect(der, paramPos, algEnd, 0x06, "subjectPublicKeyInfo parameters");
    const start = paramPos + p.headerLength;
    if (start + p.length !== algEnd) throw new CertificateStructureError("subjectPublicKeyInfo: elements after the parameters");
    parameterOid = decodeOid(der, start, start + p.length);
    if (parameterOid === undefined) throw new CertificateStructureError("subjectPublicKeyInfo: parameters are not a DER OBJECT IDENTIFIER");
  }
  return { oid, parameterOid };
}

/**
 * readCertificateExtensions plus the public key's algorithm, in the same single walk (which then also requires
 * the subjectPublicKeyInfo to start with a DER AlgorithmIdentifier).
 */
export function readCertificateFields(der: Uint8Array): CertificateFields {
  const { extensions, publicKeyAlgorithm, subjectPublicKeyInfo } = walkCertificate(der, true);
  return { extensions, publicKeyAlgorithm: publicKeyAlgorithm!, subjectPublicKeyInfo: subjectPublicKeyInfo! };
}

function walkCertificate(
  der: Uint8Array,
  readKeyAlgorithm: boolean,
): { extensions: CertificateExtensionEntry[]; publicKeyAlgorithm: PublicKeyAlgorithm | undefined; subjectPublicKeyInfo: Uint8Array | undefined } {
  const end = der.length;
  const cert = expect(der, 0, end, 0x30, "Certificate");
  if (cert.headerLength + cert.length !== end) {
    throw new CertificateStructureError("Certificate: bytes after the certificate");
  }
  const tbsStart = cert.headerLength;
  const tbs = expect(der, tbsStart, end, 0x30, "tbsCertificate");
  const tbsEnd = tbsStart + tbs.headerLength + tbs.length;
  // The outer shape after the tbsCertificate: signatureAlgorithm, signature, nothing more.
  const alg = expect(der, tbsEnd, end, 0x30, "signatureAlgorithm");
  const sigStart = tbsEnd + alg.headerLength + alg.length;
  const sig = expect(der, sigStart, end, 0x03, "signatureValue");
  if (sigStart + sig.headerLength + sig.length !== end) {
    throw new CertificateStructureError("Certificate: elements after signatureValue");
  }

  let pos = tbsStart + tbs.headerLength;
  let h = readDerHeader(der, pos, tbsEnd);
  if (h && h.tag === 0xa0) {
    pos += h.headerLength + h.length; // [0] EXPLICIT version
  }
  let publicKeyAlgorithm: PublicKeyAlgorithm | undefined;
  let subjectPublicKeyInfo: Uint8Array | undefined;
  for (const [tag, what] of TBS_FIELDS) {
    h = expect(der, pos, tbsEnd, tag, what);
    if (readKeyAlgorithm && what === "subjectPublicKeyInfo") {
      publicKeyAlgorithm = readPublicKeyAlgorithm(der, pos, h);
      subjectPublicKeyInfo = new Uint8Array(der.buffer, der.byteOffset + pos, h.headerLength + h.length);
    }
    pos += h.headerLength + h.length;
  }
  // [1] issuerUniqueID, [2] subjectUniqueID: IMPLICIT BIT STRING, hence primitive in DER
  for (const tag of [0x81, 0x82]) {
    if (pos < tbsEnd && der[pos] === tag) {
      h = expect(der, pos, tbsEnd, tag, tag === 0x81 ? "issuerUniqueID" : "subjectUniqueID");
      pos += h.headerLength + h.length;
    }
  }
  const out: CertificateExtensionEntry[] = [];
  const fields = { extensions: out, publicKeyAlgorithm, subjectPublicKeyInfo };
  if (pos === tbsEnd) return fields;

  const wrapper = expect(der, pos, tbsEnd, 0xa3, "tbsCertificate [3] extensions");
  const wrapperEnd = pos + wrapper.headerLength + wrapper.length;
  if (wrapperEnd !== tbsEnd) throw new CertificateStructureError("tbsCertificate: elements after the extensions");
  pos += wrapper.headerLength;
  const seq = expect(der, pos, wrapperEnd, 0x30, "Extensions");
  if (pos + seq.headerLength + seq.length !== wrapperEnd) {
    throw new CertificateStructureError("[3] extensions: more than the Extensions SEQUENCE");
  }
  pos += seq.headerLength;
  while (pos < wrapperEnd) {
    const ext = expect(der, pos, wrapperEnd, 0x30, `Extension ${out.length}`);
    const extEnd = pos + ext.headerLength + ext.length;
    let p = pos + ext.headerLength;
    const id = expect(der, p, extEnd, 0x06, `Extension ${out.length} extnID`);
    const oidStart = p + id.headerLength;
    const known = knownAt(der, oidStart, id.length);
    const oid = known?.oid ?? decodeOid(der, oidStart, oidStart + id.length);
    if (oid === undefined) throw new CertificateStructureError(`Extension ${out.length}: extnID is not a DER OBJECT IDENTIFIER`);
    p = oidStart + id.length;
    let critical = false;
    if (p < extEnd && der[p] === 0x01) {
      const b = expect(der, p, extEnd, 0x01, `Extension ${out.length} critical`);
      const v = der[p + b.headerLength];
      if (b.length !== 1 || (v !== 0x00 && v !== 0xff)) {
        throw new CertificateStructureError(`Extension ${out.length} (${oid}): critical is not a DER BOOLEAN`);
      }
      critical = v === 0xff;
      p += b.headerLength + 1;
    }
    const value = expect(der, p, extEnd, 0x04, `Extension ${out.length} (${oid}) extnValue`);
    const valueStart = p + value.headerLength;
    if (valueStart + value.length !== extEnd) {
      throw new CertificateStructureError(`Extension ${out.length} (${oid}): elements after extnValue`);
    }
    // A plain Uint8Array view: Buffer#subarray (the usual input is a Buffer) goes through the species lookup and
    // costs several times the rest of the walk.
    out.push({ oid, known, critical, value: new Uint8Array(der.buffer, der.byteOffset + valueStart, value.length) });
    pos = extEnd;
  }
  return fields;
}

/**
 * keyUsage extnValue (a BIT STRING) as flags, bit n of the named list → `1 << n` (digitalSignature = 1,
 * keyCertSign = 32, decipherOnly = 256). Undefined when the value is not a readable BIT STRING.
 */
export function decodeKeyUsage(value: Uint8Array): number | undefined {
  const h = readDerHeader(value, 0);
  if (!h || h.tag !== 0x03 || h.headerLength + h.length !== value.length || h.length === 0) return undefined;
  const unused = value[h.headerLength]!;
  if (unused > 7 || (h.length === 1 && unused !== 0)) return undefined;
  let flags = 0;
  // Named bits 0..8 live in the first two content bytes; bit n is the (7 - n % 8)th bit of byte n / 8.
  const bytes = Math.min(h.length - 1, 2);
  for (let i = 0; i < bytes; i++) {
    const byte = value[h.headerLength + 1 + i]!;
    for (let bit = 0; bit < 8; bit++) if (byte & (0x80 >> bit)) flags |= 1 << (i * 8 + bit);
  }
  return flags & 0x1ff; // bits past decipherOnly (8) name nothing
}

/** basicConstraints extnValue: its cA flag; undefined when the value is not a readable BasicConstraints. */
export function decodeBasicConstraintsCa(value: Uint8Array): boolean | undefined {
  const h = readDerHeader(value, 0);
  if (!h || h.tag !== 0x30 || h.headerLength + h.length !== value.length) return undefined;
  let pos = h.headerLength;
  let ca = false;
  if (pos < value.length && value[pos] === 0x01) {
    const b = readDerHeader(value, pos);
    const v = value[pos + 2];
    if (!b || b.length !== 1 || (v !== 0x00 && v !== 0xff)) return undefined;
    ca = v === 0xff;
    pos += 3;
  }
  if (pos < value.length) {
    const n = readDerHeader(value, pos); // pathLenConstraint INTEGER
    if (!n || n.tag !== 0x02 || n.length === 0 || pos + n.headerLength + n.length !== value.length) return undefined;
  }
  return ca;
}
