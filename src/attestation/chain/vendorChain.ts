import { X509Certificate, createHash, type KeyObject } from "node:crypto";
import { AsnConvert } from "@peculiar/asn1-schema";
import {
  BasicConstraints,
  Certificate,
  KeyUsage,
  id_ce_basicConstraints,
  id_ce_keyUsage,
} from "@peculiar/asn1-x509";
import type { StatusEntry, StatusList, VendorTrust } from "../types.ts";
import {
  CertificateStructureError,
  KEY_USAGE_DIGITAL_SIGNATURE,
  KEY_USAGE_KEY_CERT_SIGN,
  OID_BASIC_CONSTRAINTS,
  OID_KEY_USAGE,
  UNDERSTOOD_CRITICAL,
  decodeBasicConstraintsCa,
  decodeKeyUsage,
  readCertificateFields,
  type PublicKeyAlgorithm,
} from "../encoding/certificateExtensions.ts";
import { signatureUnusedBits } from "../encoding/derChain.ts";
import { normalizeSerial } from "./statusList.ts";

/**
 * Path validation of a vendor-container chain (blob-format.md, appraisal rules 2 and 3): the leaf, the
 * intermediates the device carried, and one of the operator's vendor roots.
 *
 * Division of labour: OpenSSL (node:crypto X509Certificate) parses, verifies signatures and links names
 * (`checkIssued`: issuer/subject name, authority key id, the issuer's keyUsage). @peculiar/asn1-x509 reads what
 * node does not expose — basicConstraints, keyUsage, critical extensions, the signature algorithm — for issuers,
 * which are few and repeat, so that reading is cached. The leaf's extensions (critical ones, keyUsage,
 * basicConstraints) are read on every call by the header-only walk of encoding/certificateExtensions.ts, a few µs.
 *
 * Speed: the steady state is one leaf parse and one leaf-signature verify. Everything about the issuer part (the
 * carried certificates and the root they lead to) is time-independent once validated, and is cached per trust
 * object keyed by the SHA-256 of each carried certificate; validity periods are compared on every call. Nothing
 * about the leaf is ever cached.
 */

/** The DER of a certificate could not be read; the container parser turns this into BLOB_MALFORMED. */
export class CertificateEncodingError extends Error {
  override readonly name = "CertificateEncodingError";
}

/** Names for reasons and detail: one line, the way OpenSSL prints them. */
export interface CertificateSummary {
  subject: string;
  issuer: string;
  /** lowercase hex, leading zeros stripped (the revocation list's form) */
  serial: string;
  notBefore: string;
  notAfter: string;
}

/** An issuer certificate read once: what path validation needs, precomputed. */
export interface InspectedCertificate {
  readonly sha256: string;
  readonly x509: X509Certificate;
  readonly publicKey: KeyObject;
  readonly summary: CertificateSummary;
  readonly notBefore: number;
  readonly notAfter: number;
  readonly selfIssued: boolean;
  /** subject Name DER (hex) and SubjectPublicKeyInfo SHA-256: how a carried root is matched to an operator's */
  readonly subjectHex: string;
  readonly spkiSha256: string;
  readonly pathLen: number | undefined;
  /** Why this certificate may not issue others, or undefined. */
  readonly issuerProblem: string | undefined;
  /** Why its own signature must not be trusted even if it verifies (weak algorithm), or undefined. */
  readonly signatureProblem: string | undefined;
}

/** The device certificate: parsed on every call, never cached (it is the per-device part). */
export interface LeafCertificate {
  readonly x509: X509Certificate;
  readonly summary: CertificateSummary;
  readonly notBefore: number;
  readonly notAfter: number;
  /** basicConstraints cA as encoded (OpenSSL's `x509.ca` also wants keyCertSign, so it alone would miss some) */
  readonly assertsCA: boolean;
  /** Why the leaf's extensions make it unfit to sign device data (rule 2), or undefined. */
  readonly extensionProblem: string | undefined;
  /** its subjectPublicKeyInfo's algorithm and named curve, as encoded */
  readonly publicKeyAlgorithm: PublicKeyAlgorithm;
  /** its subjectPublicKeyInfo DER, a view into the blob (what a device pin hashes: deviceFacts.ts) */
  readonly subjectPublicKeyInfo: Uint8Array;
}

export interface ValidatedChain {
  readonly leaf: LeafCertificate;
  /** carried certificates other than the anchor, leaf's issuer first */
  readonly intermediates: readonly InspectedCertificate[];
  readonly anchor: InspectedCertificate;
}

export type ChainResult = { ok: true; chain: ValidatedChain } | { ok: false; reason: string };

export interface RevokedCertificate {
  role: "leaf" | "intermediate" | "root";
  summary: CertificateSummary;
  entry: StatusEntry;
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing

/**
 * node:crypto accepts PEM text, trailing bytes and BER lengths around a certificate; `raw` is OpenSSL's DER
 * re-encoding, so requiring it to equal the input is what makes "each certificate is DER" true. (The signed
 * TBSCertificate is kept as signed by OpenSSL, so this costs no re-encoding of what the signature covers.)
 */
function parseX509(der: Uint8Array): X509Certificate {
  // First, with its own reason: OpenSSL re-encodes a BIT STRING from its last byte's trailing zeros, so the `raw`
  // comparison below catches only some of these.
  const unused = signatureUnusedBits(der);
  if (unused !== undefined && unused !== 0) {
    throw new CertificateEncodingError(`not DER (its signature BIT STRING declares ${unused} unused bits)`);
  }
  let x: X509Certificate;
  try {
    x = new X509Certificate(der);
  } catch {
    throw new CertificateEncodingError("not an X.509 certificate");
  }
  if (!x.raw.equals(der)) {
    throw new CertificateEncodingError("not DER (PEM text, trailing bytes or a non-minimal length)");
  }
  return x;
}

/** The leaf, parsed afresh on every call. Throws CertificateEncodingError when it is not DER. */
export function parseLeafCertificate(der: Uint8Array): LeafCertificate {
  const x509 = parseX509(der);
  return { x509, ...describeCertificate(x509), ...leafExtensions(der) };
}

/**
 * RFC 5280 on the leaf's extensions, without a full parse: no critical extension we do not process, no extension
 * twice, a keyUsage (when present) that allows digitalSignature — the leaf key signs the device data — and its
 * basicConstraints cA. A structure that is not DER throws CertificateEncodingError (→ BLOB_MALFORMED), as for
 * carried certificates; an extension value that cannot be read is a chain failure, as for issuers.
 */
function leafExtensions(
  der: Uint8Array,
): Pick<LeafCertificate, "assertsCA" | "extensionProblem" | "publicKeyAlgorithm" | "subjectPublicKeyInfo"> {
  let extensions: ReturnType<typeof readCertificateFields>["extensions"];
  let publicKeyAlgorithm: PublicKeyAlgorithm;
  let subjectPublicKeyInfo: Uint8Array;
  try {
    ({ extensions, publicKeyAlgorithm, subjectPublicKeyInfo } = readCertificateFields(der));
  } catch (e) {
    if (e instanceof CertificateStructureError) throw new CertificateEncodingError(`not DER (${e.message})`);
    throw e;
  }
  let assertsCA = false;
  const problems: string[] = [];
  for (let i = 0; i < extensions.length; i++) {
    const ext = extensions[i]!;
    for (let j = 0; j < i; j++) {
      if (extensions[j]!.oid === ext.oid) problems.push(`extension ${ext.oid} appears twice`);
    }
    if (ext.critical && !UNDERSTOOD_CRITICAL.has(ext.oid)) {
      problems.push(`unsupported critical extension ${ext.known ? `${ext.known.name} (${ext.oid})` : ext.oid}`);
    }
    if (ext.oid === OID_KEY_USAGE) {
      const usage = decodeKeyUsage(ext.value);
      if (usage === undefined) problems.push("extension keyUsage cannot be read");
      else if ((usage & KEY_USAGE_DIGITAL_SIGNATURE) === 0) problems.push("a keyUsage without digitalSignature (its key signs the device data)");
    } else if (ext.oid === OID_BASIC_CONSTRAINTS) {
      const ca = decodeBasicConstraintsCa(ext.value);
      if (ca === undefined) problems.push("extension basicConstraints cannot be read");
      else assertsCA ||= ca;
    }
  }
  return { assertsCA, extensionProblem: problems.length ? problems.join("; ") : undefined, publicKeyAlgorithm, subjectPublicKeyInfo };
}

/** The summary plus the validity period in ms since the epoch (NaN when OpenSSL's text cannot be read). */
export function describeCertificate(x: X509Certificate): { summary: CertificateSummary; notBefore: number; notAfter: number } {
  const notBefore = parseOpensslTime(x.validFrom);
  const notAfter = parseOpensslTime(x.validTo);
  return {
    summary: {
      subject: oneLine(x.subject),
      issuer: oneLine(x.issuer),
      serial: normalizeSerial(x.serialNumber),
      notBefore: Number.isNaN(notBefore) ? x.validFrom : new Date(notBefore).toISOString(),
      notAfter: Number.isNaN(notAfter) ? x.validTo : new Date(notAfter).toISOString(),
    },
    notBefore,
    notAfter,
  };
}

function oneLine(name: string): string {
  return name.replace(/\n/g, ", ");
}

const MONTHS: Record<string, number> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};
const OPENSSL_TIME = /^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)? (\d{4}) GMT$/;

/**
 * node:crypto gives validity as OpenSSL prints it ("Jan  1 00:00:00 2026 GMT"). Parsed here rather than with
 * Date.parse, whose handling of that form is engine-specific; NaN (→ CertificateInvalid) if it is anything else.
 */
export function parseOpensslTime(s: string): number {
  const m = OPENSSL_TIME.exec(s);
  const month = m ? MONTHS[m[1]!] : undefined;
  if (!m || month === undefined) return NaN;
  return Date.UTC(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
}

// Extensions whose criticality we honour: UNDERSTOOD_CRITICAL (encoding/certificateExtensions.ts), one list for
// issuers and the leaf. Any other critical one makes a certificate unusable (RFC 5280 §4.2).

/** Certificate signature algorithms accepted on carried certificates: SHA-2 and EdDSA families only. */
const ACCEPTED_SIGNATURE_ALGORITHMS = new Map([
  ["1.2.840.113549.1.1.11", "sha256WithRSAEncryption"],
  ["1.2.840.113549.1.1.12", "sha384WithRSAEncryption"],
  ["1.2.840.113549.1.1.13", "sha512WithRSAEncryption"],
  ["1.2.840.113549.1.1.10", "RSASSA-PSS"],
  ["1.2.840.10045.4.3.2", "ecdsa-with-SHA256"],
  ["1.2.840.10045.4.3.3", "ecdsa-with-SHA384"],
  ["1.2.840.10045.4.3.4", "ecdsa-with-SHA512"],
  ["1.3.101.112", "Ed25519"],
  ["1.3.101.113", "Ed448"],
]);

const ISSUER_CURVES = new Set(["prime256v1", "secp384r1", "secp521r1"]);

/** Why a key must not sign certificates, or undefined. */
function issuerKeyProblem(key: KeyObject): string | undefined {
  const type = key.asymmetricKeyType;
  if (type === "rsa" || type === "rsa-pss") {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    return bits >= 2048 ? undefined : `its RSA key has ${bits} bits (at least 2048 required)`;
  }
  if (type === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve ?? "unknown";
    return ISSUER_CURVES.has(curve) ? undefined : `its EC key is on ${curve} (P-256, P-384 or P-521 required)`;
  }
  if (type === "ed25519" || type === "ed448") return undefined;
  return `its ${type ?? "unknown"} key is not an accepted issuer key`;
}

/** Reads a certificate completely: OpenSSL's parse plus the extensions. Throws CertificateEncodingError. */
function inspect(der: Uint8Array, sha256: string): InspectedCertificate {
  const x509 = parseX509(der);
  let asn: Certificate;
  try {
    asn = AsnConvert.parse(der, Certificate);
  } catch {
    throw new CertificateEncodingError("its structure is not an X.509 Certificate");
  }
  const tbs = asn.tbsCertificate;
  const extensionProblems: string[] = [];
  const seen = new Set<string>();
  let isCA = false;
  let pathLen: number | undefined;
  let keyUsage: number | undefined;
  for (const ext of tbs.extensions ?? []) {
    if (seen.has(ext.extnID)) extensionProblems.push(`extension ${ext.extnID} appears twice`);
    seen.add(ext.extnID);
    try {
      if (ext.extnID === id_ce_basicConstraints) {
        const bc = AsnConvert.parse(ext.extnValue, BasicConstraints);
        isCA = bc.cA;
        pathLen = bc.pathLenConstraint;
      } else if (ext.extnID === id_ce_keyUsage) {
        keyUsage = AsnConvert.parse(ext.extnValue, KeyUsage).toNumber();
      }
    } catch {
      extensionProblems.push(`extension ${ext.extnID} cannot be read`);
    }
    if (ext.critical && !UNDERSTOOD_CRITICAL.has(ext.extnID)) {
      extensionProblems.push(`unsupported critical extension ${ext.extnID}`);
    }
  }
  const publicKey = x509.publicKey;
  const keyProblem = issuerKeyProblem(publicKey);
  const issuerProblem = !isCA
    ? "is not a CA (basicConstraints cA is not set)"
    : keyUsage !== undefined && (keyUsage & KEY_USAGE_KEY_CERT_SIGN) === 0
      ? "has a keyUsage without keyCertSign"
      : extensionProblems.length
        ? `has ${extensionProblems.join("; ")}`
        : keyProblem;
  const sigOid = asn.signatureAlgorithm.algorithm;
  const subjectHex = Buffer.from(AsnConvert.serialize(tbs.subject)).toString("hex");
  return {
    sha256,
    x509,
    publicKey,
    ...describeCertificate(x509),
    selfIssued: subjectHex === Buffer.from(AsnConvert.serialize(tbs.issuer)).toString("hex"),
    subjectHex,
    spkiSha256: sha256Hex(publicKey.export({ type: "spki", format: "der" })),
    pathLen,
    issuerProblem,
    signatureProblem: ACCEPTED_SIGNATURE_ALGORITHMS.has(sigOid)
      ? undefined
      : `is signed with algorithm ${sigOid} (SHA-2 RSA/ECDSA or EdDSA required)`,
  };
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

// Issuers repeat across devices (a vendor has a handful of intermediates), so their reading is cached by content.
// Bounded and FIFO-evicted: certificates from blobs are attacker-chosen, and a flood of distinct ones must cost
// only re-parsing, never memory.
const INSPECTED_MAX = 1024;
const inspected = new Map<string, InspectedCertificate>();

/** A certificate the container carries after the leaf. Throws CertificateEncodingError when it is not DER. */
export function inspectCarriedCertificate(der: Uint8Array): InspectedCertificate {
  const sha256 = sha256Hex(der);
  const hit = inspected.get(sha256);
  if (hit) return hit;
  // A copy: `der` is a view into the request body, which the cache must not keep alive.
  const cert = inspect(Buffer.from(der), sha256);
  if (inspected.size >= INSPECTED_MAX) inspected.delete(inspected.keys().next().value!);
  inspected.set(sha256, cert);
  return cert;
}

// ---------------------------------------------------------------------------------------------------------------
// Trust anchors and the cached issuer part

interface TrustState {
  /** usable operator roots, in configuration order */
  readonly anchors: readonly InspectedCertificate[];
  /** one line per configured root that cannot serve (unreadable, not a CA, weak key ...) */
  readonly problems: readonly string[];
  /** validated issuer parts by the carried certificates' SHA-256s */
  readonly paths: Map<string, IssuerPath>;
}

/** The time-independent result of validating the carried certificates up to an operator root. */
interface IssuerPath {
  readonly intermediates: readonly InspectedCertificate[];
  /** operator roots that complete the path (several only when roots share name and key, e.g. a re-issued root) */
  readonly anchors: readonly InspectedCertificate[];
}

// Keyed by the roots array, the only part of the trust the state depends on: every tenant's VendorTrust (they
// differ in reference values alone) shares the one array, so they share the parsed roots and the path cache.
const trustStates = new WeakMap<readonly Uint8Array[], TrustState>();
const PATHS_MAX = 256;

function trustState(trust: VendorTrust): TrustState {
  let state = trustStates.get(trust.rootsDer);
  if (!state) {
    const anchors: InspectedCertificate[] = [];
    const problems: string[] = [];
    trust.rootsDer.forEach((der, i) => {
      try {
        const root = inspect(der, sha256Hex(der));
        if (root.issuerProblem) problems.push(`vendor root ${i} (${root.summary.subject}) ${root.issuerProblem}`);
        else anchors.push(root);
      } catch (e) {
        problems.push(`vendor root ${i} cannot be read: ${(e as Error).message}`);
      }
    });
    state = { anchors, problems, paths: new Map() };
    trustStates.set(trust.rootsDer, state);
  }
  return state;
}

/**
 * Configured vendor roots that cannot serve as trust anchors, one line each, for start-up to log or refuse.
 * Appraisal ignores them (fail closed: a chain to an unusable root is CertificateInvalid).
 */
export function vendorTrustProblems(trust: VendorTrust): readonly string[] {
  return trustState(trust).problems;
}

/**
 * A carried certificate stands for an operator root when it is that root byte for byte, or another certificate
 * of the same name and key (a re-issued root) that is genuinely self-signed: the operator's copy is then used,
 * but no byte of what the device sent goes unchecked. (Only successes are cached, keyed by the carried DER.)
 */
function isOperatorRoot(anchor: InspectedCertificate, cert: InspectedCertificate): boolean {
  if (anchor.sha256 === cert.sha256) return true;
  return anchor.spkiSha256 === cert.spkiSha256 && anchor.subjectHex === cert.subjectHex &&
    cert.selfIssued && verifies(cert.x509, cert.publicKey);
}

/** Why `issuer` did not issue `child`, or undefined. Issuer-level fitness is checked by the caller. */
function linkProblem(child: X509Certificate, childName: string, issuer: InspectedCertificate): string | undefined {
  if (!child.checkIssued(issuer.x509)) {
    return `${childName} does not name ${issuer.summary.subject} as its issuer (issuer name or key identifier differs)`;
  }
  if (!verifies(child, issuer.publicKey)) {
    return `the signature on ${childName} does not verify with the key of ${issuer.summary.subject}`;
  }
  return undefined;
}

function verifies(child: X509Certificate, key: KeyObject): boolean {
  try {
    return child.verify(key);
  } catch {
    return false;
  }
}

/** Non-self-issued certificates count towards a pathLenConstraint (RFC 5280 §4.2.1.9); the leaf never does. */
function countsTowardsPathLen(certs: readonly InspectedCertificate[]): number {
  return certs.reduce((n, c) => n + (c.selfIssued ? 0 : 1), 0);
}

function pathLenProblem(issuer: InspectedCertificate, below: readonly InspectedCertificate[]): string | undefined {
  const n = countsTowardsPathLen(below);
  return issuer.pathLen !== undefined && n > issuer.pathLen
    ? `${issuer.summary.subject} allows ${issuer.pathLen} intermediate(s) below it (pathLenConstraint), the chain has ${n}`
    : undefined;
}

function buildIssuerPath(carried: readonly InspectedCertificate[], state: TrustState): IssuerPath | string {
  const last = carried[carried.length - 1]!;
  const carriedRoots = state.anchors.filter((a) => isOperatorRoot(a, last));
  const anchorCarried = carriedRoots.length > 0;
  const intermediates = anchorCarried ? carried.slice(0, -1) : carried;
  // The most telling failure first: the device ends its chain with a root, and it is not the operator's.
  if (!anchorCarried && last.selfIssued) {
    return `the carried root ${last.summary.subject} is not one of the operator's vendor roots`;
  }

  for (let i = 0; i < intermediates.length; i++) {
    const c = intermediates[i]!;
    const problem =
      (c.issuerProblem && `intermediate ${c.summary.subject} ${c.issuerProblem}`) ||
      (c.signatureProblem && `intermediate ${c.summary.subject} ${c.signatureProblem}`) ||
      pathLenProblem(c, intermediates.slice(0, i));
    if (problem) return problem;
    const parent = intermediates[i + 1];
    if (parent) {
      const link = linkProblem(c.x509, `intermediate ${c.summary.subject}`, parent);
      if (link) return link;
    }
  }

  let anchors: InspectedCertificate[];
  if (anchorCarried) {
    anchors = carriedRoots;
  } else {
    const named = state.anchors.filter((a) => last.x509.checkIssued(a.x509));
    if (named.length === 0) {
      const unusable = state.problems.length ? ` (${state.problems.length} configured root(s) unusable)` : "";
      return `no operator vendor root issued ${last.summary.subject} (issuer ${last.summary.issuer})${unusable}`;
    }
    anchors = named;
  }
  const top = intermediates[intermediates.length - 1];
  if (top) {
    const linked = anchors.filter((a) => top.x509.checkIssued(a.x509) && verifies(top.x509, a.publicKey));
    if (linked.length === 0) return linkProblem(top.x509, `intermediate ${top.summary.subject}`, anchors[0]!)!;
    anchors = linked;
  }
  const withinPathLen = anchors.filter((a) => !pathLenProblem(a, intermediates));
  if (withinPathLen.length === 0) return pathLenProblem(anchors[0]!, intermediates)!;
  return { intermediates, anchors: withinPathLen };
}

function cachedIssuerPath(carried: readonly InspectedCertificate[], state: TrustState): IssuerPath | string {
  const key = carried.map((c) => c.sha256).join(",");
  const hit = state.paths.get(key);
  if (hit) return hit;
  const path = buildIssuerPath(carried, state);
  // Only successes are cached: they can be produced only with the operator's roots, so the cache cannot be
  // flooded by strangers, while failures stay cheap (at most a few verifies) and are recomputed.
  if (typeof path !== "string") {
    if (state.paths.size >= PATHS_MAX) state.paths.delete(state.paths.keys().next().value!);
    state.paths.set(key, path);
  }
  return path;
}

function validityProblem(role: string, summary: CertificateSummary, from: number, to: number, now: number) {
  if (Number.isNaN(from) || Number.isNaN(to)) return `${role} ${summary.subject} has an unreadable validity period`;
  if (now < from) return `${role} ${summary.subject} is not valid before ${summary.notBefore}`;
  if (now > to) return `${role} ${summary.subject} expired at ${summary.notAfter}`;
  return undefined;
}

const withinValidity = (c: InspectedCertificate, now: number) => now >= c.notBefore && now <= c.notAfter;

/**
 * Rule 2: does the leaf, with the certificates carried after it (in order, each issuing the one before), validate
 * to one of the operator's vendor roots at `now`? Never throws for a bad chain; the reason says what failed.
 */
export function validateVendorChain(
  leafCert: LeafCertificate,
  carried: readonly InspectedCertificate[],
  trust: VendorTrust,
  now: Date,
): ChainResult {
  const fail = (reason: string): ChainResult => ({ ok: false, reason });
  const state = trustState(trust);
  if (state.anchors.length === 0) {
    return fail(`no usable vendor root is configured${state.problems.length ? `: ${state.problems[0]}` : ""}`);
  }
  const t = now.getTime();
  const { x509: leaf, summary: leafSummary } = leafCert;

  let path: IssuerPath;
  if (carried.length === 0) {
    // Issued directly by a root: nothing carried to cache, the candidates are the roots that name the leaf's issuer.
    const anchors = state.anchors.filter((a) => leaf.checkIssued(a.x509));
    if (anchors.length === 0) return fail(`no operator vendor root issued the leaf (issuer ${leafSummary.issuer})`);
    path = { intermediates: [], anchors };
  } else {
    const built = cachedIssuerPath(carried, state);
    if (typeof built === "string") return fail(built);
    path = built;
  }

  // A device key is an end entity; a leaf that may sign certificates is how chain-extension forgeries start.
  // (assertsCA is basicConstraints cA as encoded, a superset of OpenSSL's `x509.ca`, which also wants keyCertSign.)
  if (leafCert.assertsCA) {
    return fail(`the leaf ${leafSummary.subject} asserts basicConstraints cA (a device key must not be a CA)`);
  }
  if (leafCert.extensionProblem) return fail(`the leaf ${leafSummary.subject} has ${leafCert.extensionProblem}`);
  const leafTime = validityProblem("leaf", leafSummary, leafCert.notBefore, leafCert.notAfter, t);
  if (leafTime) return fail(leafTime);
  for (const c of path.intermediates) {
    const p = validityProblem("intermediate", c.summary, c.notBefore, c.notAfter, t);
    if (p) return fail(p);
  }
  const anchorsNow = path.anchors.filter((a) => withinValidity(a, t));
  if (anchorsNow.length === 0) {
    const a = path.anchors[0]!;
    return fail(validityProblem("vendor root", a.summary, a.notBefore, a.notAfter, t)!);
  }

  const direct = path.intermediates[0];
  let anchor: InspectedCertificate;
  if (direct) {
    const link = linkProblem(leaf, "the leaf", direct);
    if (link) return fail(link);
    anchor = anchorsNow[0]!;
  } else {
    const issuing = anchorsNow.find((a) => !linkProblem(leaf, "the leaf", a));
    if (!issuing) return fail(linkProblem(leaf, "the leaf", anchorsNow[0]!)!);
    anchor = issuing;
  }
  return { ok: true, chain: { leaf: leafCert, intermediates: path.intermediates, anchor } };
}

/**
 * Rule 3: the first certificate of the validated chain (leaf, then intermediates, then the root) whose serial is on
 * the operator's revocation list. Looked up on every call, never cached, so a reloaded list takes effect at once.
 */
export function findRevoked(chain: ValidatedChain, revocations: StatusList): RevokedCertificate | undefined {
  if (revocations.size === 0) return undefined;
  const check = (role: RevokedCertificate["role"], summary: CertificateSummary) => {
    const entry = revocations.get(summary.serial);
    return entry ? { role, summary, entry } : undefined;
  };
  return (
    check("leaf", chain.leaf.summary) ??
    chain.intermediates.map((c) => check("intermediate", c.summary)).find((r) => r !== undefined) ??
    check("root", chain.anchor.summary)
  );
}
