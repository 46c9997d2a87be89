import { createPublicKey, verify as verifySignature, type KeyObject } from "node:crypto";
import * as asn1js from "asn1js";
import { APPLE_ROOT_CA_G3_DER } from "../chain/appleRootCaG3.ts";
import {
  CertificateReadError,
  contentBytes,
  decodeDer,
  derViolation,
  encodedBytes,
  readCertificate,
  type CertificateFacts,
} from "./derChain.ts";

/**
 * App Attest receipts (issue 25 item 4; Apple's "Assessing fraud risk"): the receipt that comes in an attestation
 * object's `attStmt.receipt` (type ATTEST) and the one Apple's receipt service answers a refresh with (type
 * RECEIPT, which carries the fraud-risk metric). Pure: bytes, expectations and a time in; a typed record or a
 * typed failure out. No CBOR here: the caller hands the receipt's bytes.
 *
 * A receipt is a CMS SignedData (RFC 5652) as Apple writes it: BER with indefinite lengths, the content a
 * constructed OCTET STRING, one signer identified by issuer and serial, no signed attributes (the signature is
 * over the content itself), ECDSA with SHA-256. The content is a SET OF ReceiptAttribute ::= SEQUENCE { type
 * INTEGER, version INTEGER, value OCTET STRING }.
 *
 * Every byte outside the signed content and the certificates' signed parts is held to one expected shape (the
 * algorithm identifiers, the version, the signer's identity, which certificates may be carried), so that a
 * receipt that verifies has exactly one reading: the fuzz tests hold the module to "no mutant of a valid receipt
 * is valid".
 */

/** Real receipts are under 4 KiB; a refreshed one is the same size. */
export const RECEIPT_MAX_BYTES = 32 * 1024;
/** Apple's content has 8 to 10 attributes; room for new ones, not for a flood. */
const MAX_ATTRIBUTES = 32;
/** leaf, intermediate, and Apple's root, which Apple includes */
const MAX_CERTIFICATES = 4;
const MAX_APP_ID_CHARS = 255;
const MAX_TOKEN_CHARS = 1024;
/** a risk metric is a count of attested keys; nine digits is far beyond any real one and fits an int */
const MAX_RISK_METRIC_DIGITS = 9;
/** how far a receipt's creation time may be ahead of the appraisal time (clocks differ) */
export const DEFAULT_RECEIPT_FUTURE_SKEW_MS = 5 * 60_000;
const DECODE_MAX_DEPTH = 16;
const DECODE_MAX_NODES = 2048;

/** the receipt-attribute types Apple documents */
export const RECEIPT_FIELD = {
  appId: 2,
  attestedCertificate: 3,
  clientHash: 4,
  token: 5,
  receiptType: 6,
  environment: 7,
  creationTime: 12,
  riskMetric: 17,
  notBefore: 19,
  expirationTime: 21,
} as const;

/** the marker extension on Apple's receipt-signing certificate ("Application Attestation Fraud Receipt Signing") */
export const OID_RECEIPT_SIGNING_MARKER = "1.2.840.113635.100.12.15";

const OID_SIGNED_DATA = "1.2.840.113549.1.7.2";
const OID_DATA = "1.2.840.113549.1.7.1";
/** AlgorithmIdentifier DER, with NULL parameters and without: both are in use for SHA-256 */
const SHA256_ALG_WITH_NULL = "300d06096086480165030402010500";
const SHA256_ALG_ABSENT = "300b0609608648016503040201";
const ECDSA_SHA256_ALG = "300a06082a8648ce3d040302";
const CERT_SIGNATURE_DIGESTS: ReadonlyMap<string, string> = new Map([
  ["1.2.840.10045.4.3.2", "sha256"],
  ["1.2.840.10045.4.3.3", "sha384"],
]);
const SIGNER_CURVES = new Set(["prime256v1", "secp384r1"]);

export type ReceiptType = "ATTEST" | "RECEIPT";

/** A receipt whose signature and chain verified. Dates are the receipt's own; bytes are copies. */
export interface AppAttestReceipt {
  type: ReceiptType;
  /** field 2: TEAMID.BUNDLEID */
  appId: string;
  /** field 3: the credential certificate (DER) the receipt was issued for */
  attestedCertificate: Uint8Array;
  /** field 4 */
  clientHash: Uint8Array;
  /** field 5: Apple's opaque token */
  token: string;
  /** field 7, undocumented: "sandbox" in development; absent or another word in production */
  environment?: string;
  /** field 12 */
  createdAt: Date;
  /** field 19 (refreshed receipts): before it Apple answers a refresh with this same receipt (HTTP 304) */
  notBefore?: Date;
  /** field 21 */
  expiresAt: Date;
  /** field 17 (refreshed receipts): how many keys the device attested for the app in the last 30 days */
  riskMetric?: number;
  /** attribute types present that Apple does not document (kept, not interpreted) */
  otherFields: number[];
  /** the certificate that signed it */
  signer: { subject: string; serialHex: string; notAfter: Date };
}

/**
 * Why a receipt was refused, one id per rule: `too-large`, `malformed` (not a receipt in Apple's CMS shape),
 * `untrusted-signer` (the signer's chain does not lead to the root, or is not valid at the time),
 * `signature-invalid`, `content-malformed` (signed, but not the attribute set Apple documents), then the content
 * checks: `app-id-mismatch`, `certificate-mismatch`, `type-mismatch`, `created-in-future`, `expired`.
 */
export type ReceiptFailureReason =
  | "too-large"
  | "malformed"
  | "untrusted-signer"
  | "signature-invalid"
  | "content-malformed"
  | "app-id-mismatch"
  | "certificate-mismatch"
  | "type-mismatch"
  | "created-in-future"
  | "expired";

export type ReceiptResult =
  | { ok: true; receipt: AppAttestReceipt }
  | { ok: false; reason: ReceiptFailureReason; message: string };

export interface ReceiptTrust {
  /** when the chain must be valid */
  at: Date;
  /** trusted roots (DER); default Apple Root CA - G3. Tests inject their own. */
  roots?: readonly Uint8Array[];
}

/**
 * The key a receipt must be for: the credential certificate (DER, x5c[0] of the attestation), compared byte for
 * byte with field 3; or, for a stored key that kept only its public key, that key as an uncompressed EC point
 * (65 bytes), compared with the key field 3 certifies.
 */
export type CredentialReference =
  | { credentialCertificate: Uint8Array; credentialPublicKey?: undefined }
  | { credentialPublicKey: Uint8Array; credentialCertificate?: undefined };

export type ReceiptExpectations = ReceiptTrust &
  CredentialReference & {
    /** the app id the key was attested for (TEAMID.BUNDLEID) */
    appId: string;
    /** which type is expected; default either */
    type?: ReceiptType;
    /** default DEFAULT_RECEIPT_FUTURE_SKEW_MS */
    maxFutureSkewMs?: number;
  };

class ReceiptFailure extends Error {
  constructor(
    readonly reason: ReceiptFailureReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads `bytes` as a receipt, verifies its signature and that the signer chains to one of `trust.roots` (valid at
 * `trust.at`), and reads the content. Checks nothing about what the content says: `verifyAppAttestReceipt` does.
 */
export function openAppAttestReceipt(bytes: Uint8Array, trust: ReceiptTrust): ReceiptResult {
  try {
    return { ok: true, receipt: open(bytes, trust) };
  } catch (e) {
    if (e instanceof ReceiptFailure) return { ok: false, reason: e.reason, message: e.message };
    throw e;
  }
}

/**
 * `openAppAttestReceipt`, then the content: the app id, the credential certificate (byte for byte), the type,
 * a creation time not ahead of `at` by more than the skew, an expiration time after `at`. `notBefore` is not a
 * validity start (Apple sets it a day after a refresh, as the earliest next refresh) and is not judged here.
 */
export function verifyAppAttestReceipt(bytes: Uint8Array, expect: ReceiptExpectations): ReceiptResult {
  const opened = openAppAttestReceipt(bytes, expect);
  if (!opened.ok) return opened;
  const r = opened.receipt;
  const fail = (reason: ReceiptFailureReason, message: string): ReceiptResult => ({ ok: false, reason, message });
  if (r.appId !== expect.appId) return fail("app-id-mismatch", `the receipt is for app ${r.appId}, not ${expect.appId}`);
  if (expect.credentialCertificate !== undefined) {
    if (!Buffer.from(r.attestedCertificate).equals(Buffer.from(expect.credentialCertificate))) {
      return fail("certificate-mismatch", "the receipt was issued for another credential certificate than the attested key's");
    }
  } else {
    const point = certifiedPoint(r.attestedCertificate);
    if (!point || !point.equals(Buffer.from(expect.credentialPublicKey))) {
      return fail("certificate-mismatch", "the receipt was issued for a credential certificate of another key than the attested one");
    }
  }
  if (expect.type && r.type !== expect.type) return fail("type-mismatch", `the receipt is of type ${r.type}, not ${expect.type}`);
  const at = expect.at.getTime();
  const skew = expect.maxFutureSkewMs ?? DEFAULT_RECEIPT_FUTURE_SKEW_MS;
  if (r.createdAt.getTime() > at + skew) {
    return fail("created-in-future", `the receipt was created at ${r.createdAt.toISOString()}, after ${expect.at.toISOString()} (allowing ${skew / 1000} s)`);
  }
  if (r.expiresAt.getTime() <= at) return fail("expired", `the receipt expired at ${r.expiresAt.toISOString()}`);
  return opened;
}

/** the uncompressed EC point a certificate certifies, or undefined when it is unreadable or not an EC key */
function certifiedPoint(certificateDer: Uint8Array): Buffer | undefined {
  try {
    const jwk = createPublicKey({ key: readCertificate(certificateDer).spkiDer, format: "der", type: "spki" }).export({ format: "jwk" });
    if (jwk.kty !== "EC" || !jwk.x || !jwk.y) return undefined;
    return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]);
  } catch {
    return undefined;
  }
}

function open(bytes: Uint8Array, trust: ReceiptTrust): AppAttestReceipt {
  if (bytes.length > RECEIPT_MAX_BYTES) throw new ReceiptFailure("too-large", `a receipt of ${bytes.length} bytes is over the ${RECEIPT_MAX_BYTES}-byte bound`);
  const signed = readSignedData(bytes);
  const signer = validateSigner(signed, trust);
  if (!verifyEcdsa("sha256", signed.content, publicKeyOf(signer)!, signed.signature)) {
    throw new ReceiptFailure("signature-invalid", "the receipt's signature does not verify with its signing certificate");
  }
  return { ...readContent(signed.content), signer: { subject: signer.subject, serialHex: signer.serialHex, notAfter: signer.notAfter } };
}

interface SignedDataParts {
  content: Uint8Array;
  certificates: Uint8Array[];
  signerIssuer: Uint8Array;
  signerSerial: Uint8Array;
  signature: Uint8Array;
}

const malformed = (what: string) => new ReceiptFailure("malformed", `not an App Attest receipt: ${what}`);

/** The ContentInfo / SignedData / SignerInfo walk: one shape, every other encoding refused. */
function readSignedData(bytes: Uint8Array): SignedDataParts {
  const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // asn1js tolerates lengths that overrun their parent and end-of-contents with content; the strict walk first,
  // so that what asn1js reads is the one reading the bytes have
  const problem = berProblem(view);
  if (problem) throw malformed(problem);
  let parsed: ReturnType<typeof asn1js.fromBER>;
  try {
    parsed = asn1js.fromBER(view, { parseEmbedded: false, copyInput: false, maxDepth: DECODE_MAX_DEPTH, maxNodes: DECODE_MAX_NODES });
  } catch {
    throw malformed("unreadable BER");
  }
  if (parsed.offset === -1 || parsed.result.error) throw malformed("unreadable BER");
  if (parsed.offset !== view.length) throw malformed("bytes after the receipt");
  checkTree(parsed.result);

  const contentInfo = expectUniversal(parsed.result, 16, "ContentInfo");
  const [contentType, explicitContent] = exactly(contentInfo, 2, "ContentInfo");
  if (oidOf(contentType, "ContentInfo.contentType") !== OID_SIGNED_DATA) throw malformed("the content type is not SignedData");
  const [signedData] = exactly(expectContext(explicitContent, 0, "ContentInfo.content"), 1, "ContentInfo.content");
  const sd = children(expectUniversal(signedData!, 16, "SignedData"));
  // version, digestAlgorithms, encapContentInfo, [0] certificates, signerInfos: no CRLs
  if (sd.length !== 5) throw malformed(`SignedData has ${sd.length} fields, not 5`);
  if (smallInteger(sd[0]!, "SignedData.version") !== 1) throw malformed("SignedData.version is not 1");
  const digests = children(expectUniversal(sd[1]!, 17, "digestAlgorithms"));
  if (digests.length !== 1 || !isSha256(digests[0]!)) throw malformed("digestAlgorithms is not SHA-256 alone");

  const [eContentType, eContentWrap] = exactly(expectUniversal(sd[2]!, 16, "encapContentInfo"), 2, "encapContentInfo");
  if (oidOf(eContentType, "eContentType") !== OID_DATA) throw malformed("the encapsulated content is not id-data");
  const [eContent] = exactly(expectContext(eContentWrap, 0, "eContent"), 1, "eContent");
  const content = octets(eContent!, "eContent");

  const certs = children(expectContext(sd[3]!, 0, "certificates"));
  if (certs.length === 0 || certs.length > MAX_CERTIFICATES) throw malformed(`${certs.length} certificates carried`);
  const certificates = certs.map((c, i) => {
    expectUniversal(c, 16, `certificate ${i}`);
    const der = encodedBytes(c);
    const violation = derViolation(c);
    if (violation) throw malformed(`certificate ${i} is not DER (${violation})`);
    return der;
  });

  const signerInfos = children(expectUniversal(sd[4]!, 17, "signerInfos"));
  if (signerInfos.length !== 1) throw malformed(`${signerInfos.length} signers, not 1`);
  const si = children(expectUniversal(signerInfos[0]!, 16, "SignerInfo"));
  // version, sid, digestAlgorithm, signatureAlgorithm, signature: no signed or unsigned attributes
  if (si.length !== 5) throw malformed(`SignerInfo has ${si.length} fields, not 5 (signed attributes are not used by Apple)`);
  if (smallInteger(si[0]!, "SignerInfo.version") !== 1) throw malformed("SignerInfo.version is not 1 (issuer and serial)");
  const [issuer, serial] = exactly(expectUniversal(si[1]!, 16, "SignerInfo.sid"), 2, "SignerInfo.sid");
  expectUniversal(issuer!, 16, "SignerInfo.sid.issuer");
  expectUniversal(serial!, 2, "SignerInfo.sid.serialNumber");
  if (!isSha256(si[2]!)) throw malformed("SignerInfo.digestAlgorithm is not SHA-256");
  if (hex(encodedBytes(si[3]!)) !== ECDSA_SHA256_ALG) throw malformed("SignerInfo.signatureAlgorithm is not ecdsa-with-SHA256");
  const signature = octets(expectUniversal(si[4]!, 4, "SignerInfo.signature"), "SignerInfo.signature");
  if (si[4]!.idBlock.isConstructed) throw malformed("SignerInfo.signature is a constructed OCTET STRING");
  return { content, certificates, signerIssuer: encodedBytes(issuer!), signerSerial: contentBytes(serial!), signature };
}

/**
 * The signer (the certificate the SignerInfo names) chains to a trusted root through exactly one carried
 * intermediate, as Apple's receipts do; every carried certificate is the signer, that intermediate, or a trusted
 * root byte for byte. All valid at `trust.at`.
 */
function validateSigner(signed: SignedDataParts, trust: ReceiptTrust): CertificateFacts {
  const untrusted = (what: string) => new ReceiptFailure("untrusted-signer", `the receipt's signer is not trusted: ${what}`);
  let carried: CertificateFacts[];
  try {
    carried = signed.certificates.map((der) => readCertificate(der));
  } catch (e) {
    if (e instanceof CertificateReadError) throw malformed(`a carried certificate is unreadable (${e.message})`);
    throw e;
  }
  const roots = (trust.roots ?? [APPLE_ROOT_CA_G3_DER]).map((der) => readCertificate(der));
  const isTrustedRoot = (c: CertificateFacts) => roots.some((r) => r.sha256 === c.sha256);
  const named = carried.filter(
    (c) => Buffer.from(c.issuerDer).equals(Buffer.from(signed.signerIssuer)) && Buffer.from(c.serialHex, "hex").equals(Buffer.from(signed.signerSerial)),
  );
  if (named.length !== 1) throw malformed(named.length === 0 ? "the signer's certificate is not carried" : "the signer's certificate is carried twice");
  const leaf = named[0]!;
  const others = carried.filter((c) => c !== leaf && !isTrustedRoot(c));
  if (others.length !== 1) throw untrusted(`${others.length} intermediates carried, not 1 (or a carried root that is not a trusted one)`);
  const intermediate = others[0]!;
  if (new Set(carried.map((c) => c.sha256)).size !== carried.length) throw malformed("a certificate is carried twice");

  if (leaf.ca === true) throw untrusted("the signing certificate is a CA");
  if (leaf.keyUsage !== undefined && (leaf.keyUsage & 1) === 0) throw untrusted("the signing certificate's key usage lacks digitalSignature");
  // the intermediate signs more than receipts: only the certificate Apple marks as its receipt signer may sign one
  if (!leaf.extensions.some((e) => e.oid === OID_RECEIPT_SIGNING_MARKER)) {
    throw untrusted("the signing certificate is not Apple's receipt-signing certificate (marker extension missing)");
  }
  if (intermediate.ca !== true) throw untrusted(`${intermediate.subject} is not a CA`);
  if (intermediate.keyUsage !== undefined && (intermediate.keyUsage & 32) === 0) throw untrusted(`${intermediate.subject} may not sign certificates`);
  const root = roots.find((r) => Buffer.from(r.subjectDer).equals(intermediate.issuerDer));
  if (!root) throw untrusted(`${intermediate.subject} was not issued by a trusted root (${intermediate.issuer})`);
  if (!Buffer.from(intermediate.subjectDer).equals(leaf.issuerDer)) throw untrusted(`the signing certificate was not issued by ${intermediate.subject}`);
  const linkProblem = certificateSignatureProblem(leaf, intermediate) ?? certificateSignatureProblem(intermediate, root);
  if (linkProblem) throw untrusted(linkProblem);
  const at = trust.at.getTime();
  for (const c of [leaf, intermediate, root]) {
    if (at < c.notBefore.getTime() || at > c.notAfter.getTime()) {
      throw untrusted(`${c.subject} is valid ${c.notBefore.toISOString()} .. ${c.notAfter.toISOString()}, not at ${trust.at.toISOString()}`);
    }
  }
  const key = publicKeyOf(leaf);
  if (key?.asymmetricKeyType !== "ec" || !SIGNER_CURVES.has(key.asymmetricKeyDetails?.namedCurve ?? "")) {
    throw untrusted("the signing key is not an EC P-256 or P-384 key");
  }
  return leaf;
}

function certificateSignatureProblem(cert: CertificateFacts, issuer: CertificateFacts): string | undefined {
  if (!cert.signatureAlgorithmsAgree) return `${cert.subject}: inner and outer signature algorithms differ`;
  if (cert.signatureUnusedBits !== 0) return `${cert.subject}: its signature BIT STRING declares unused bits`;
  const digest = CERT_SIGNATURE_DIGESTS.get(cert.signatureAlgorithm);
  if (!digest) return `${cert.subject}: signature algorithm ${cert.signatureAlgorithm} is not ECDSA with SHA-256 or SHA-384`;
  const key = publicKeyOf(issuer);
  if (key?.asymmetricKeyType !== "ec") return `${issuer.subject}: not a readable EC key`;
  return verifyEcdsa(digest, cert.tbsDer, key, cert.signature) ? undefined : `${cert.subject}: its signature by ${issuer.subject} does not verify`;
}

function publicKeyOf(cert: CertificateFacts): KeyObject | undefined {
  try {
    return createPublicKey({ key: cert.spkiDer, format: "der", type: "spki" });
  } catch {
    return undefined;
  }
}

function verifyEcdsa(digest: string, data: Uint8Array, key: KeyObject, signature: Uint8Array): boolean {
  try {
    // OpenSSL re-encodes a DER ECDSA signature and refuses one that differs: one encoding per signature
    return verifySignature(digest, data, key, signature);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The signed content

const contentMalformed = (what: string) => new ReceiptFailure("content-malformed", `the receipt's content is not Apple's attribute set: ${what}`);

function readContent(content: Uint8Array): Omit<AppAttestReceipt, "signer"> {
  const tree = decodeDer(content);
  if (!tree) throw contentMalformed("unreadable");
  const set = tree as asn1js.BaseBlock;
  if (!isUniversal(set, 17)) throw contentMalformed("not a SET");
  const attributes = children(set);
  if (attributes.length > MAX_ATTRIBUTES) throw contentMalformed(`${attributes.length} attributes, more than ${MAX_ATTRIBUTES}`);
  const values = new Map<number, Uint8Array>();
  for (const [i, attribute] of attributes.entries()) {
    if (!isUniversal(attribute, 16)) throw contentMalformed(`attribute ${i} is not a SEQUENCE`);
    const parts = children(attribute);
    if (parts.length !== 3 || !isUniversal(parts[0]!, 2) || !isUniversal(parts[1]!, 2) || !isUniversal(parts[2]!, 4) || parts[2]!.idBlock.isConstructed) {
      throw contentMalformed(`attribute ${i} is not SEQUENCE { INTEGER, INTEGER, OCTET STRING }`);
    }
    const type = unsignedSmall(contentBytes(parts[0]!));
    if (type === undefined) throw contentMalformed(`attribute ${i} has a type out of range`);
    if (values.has(type)) throw contentMalformed(`attribute type ${type} appears twice`);
    values.set(type, contentBytes(parts[2]!));
  }
  const required = (type: number, name: string): Uint8Array => {
    const v = values.get(type);
    if (!v) throw contentMalformed(`no ${name} (field ${type})`);
    return v;
  };
  const text = (type: number, name: string, max: number, pattern: RegExp): string | undefined => {
    const v = values.get(type);
    if (v === undefined) return undefined;
    if (v.length > max) throw contentMalformed(`${name} (field ${type}) is over ${max} bytes`);
    const s = Buffer.from(v).toString("latin1");
    if (!pattern.test(s)) throw contentMalformed(`${name} (field ${type}) is not in the expected form`);
    return s;
  };
  const time = (type: number, name: string): Date | undefined => {
    const s = text(type, name, 40, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/);
    if (s === undefined) return undefined;
    const d = new Date(s);
    if (Number.isNaN(d.getTime())) throw contentMalformed(`${name} (field ${type}) is not a valid time`);
    return d;
  };
  required(RECEIPT_FIELD.appId, "app id");
  const appId = text(RECEIPT_FIELD.appId, "app id", MAX_APP_ID_CHARS, /^[A-Z0-9]{10}\.[\x21-\x7e]+$/)!;
  const attestedCertificate = required(RECEIPT_FIELD.attestedCertificate, "attested certificate");
  if (attestedCertificate.length > 8192) throw contentMalformed("the attested certificate is over 8 KiB");
  const clientHash = required(RECEIPT_FIELD.clientHash, "client hash");
  if (clientHash.length > 64) throw contentMalformed("the client hash is over 64 bytes");
  required(RECEIPT_FIELD.token, "token");
  const token = text(RECEIPT_FIELD.token, "token", MAX_TOKEN_CHARS, /^[\x21-\x7e]+$/)!;
  required(RECEIPT_FIELD.receiptType, "receipt type");
  const type = text(RECEIPT_FIELD.receiptType, "receipt type", 16, /^(ATTEST|RECEIPT)$/) as ReceiptType;
  const environment = text(RECEIPT_FIELD.environment, "environment", 32, /^[a-z]+$/);
  required(RECEIPT_FIELD.creationTime, "creation time");
  const createdAt = time(RECEIPT_FIELD.creationTime, "creation time")!;
  required(RECEIPT_FIELD.expirationTime, "expiration time");
  const expiresAt = time(RECEIPT_FIELD.expirationTime, "expiration time")!;
  const notBefore = time(RECEIPT_FIELD.notBefore, "not-before time");
  const metricText = text(RECEIPT_FIELD.riskMetric, "risk metric", MAX_RISK_METRIC_DIGITS, /^(0|[1-9]\d*)$/);
  const known = new Set<number>(Object.values(RECEIPT_FIELD));
  return {
    type,
    appId,
    attestedCertificate: new Uint8Array(attestedCertificate),
    clientHash: new Uint8Array(clientHash),
    token,
    ...(environment !== undefined ? { environment } : {}),
    createdAt,
    ...(notBefore ? { notBefore } : {}),
    expiresAt,
    ...(metricText !== undefined ? { riskMetric: Number(metricText) } : {}),
    otherFields: [...values.keys()].filter((t) => !known.has(t)).sort((a, b) => a - b),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// BER helpers (the receipt is BER: Apple writes indefinite lengths and a chunked content)

type Block = asn1js.BaseBlock;

/**
 * Why `bytes` is not one BER element read strictly, or null: single-byte tags, minimal definite lengths (up to 4
 * octets), indefinite lengths on constructed elements only and closed by exactly 00 00, children that fill their
 * parent exactly, no end-of-contents elsewhere, nothing after the element, depth and element count bounded.
 * Iterative, no allocation beyond the stack of open elements.
 */
function berProblem(bytes: Uint8Array): string | null {
  /** end offset of each open element; -1 for an indefinite one */
  const open: number[] = [];
  let pos = 0;
  let nodes = 0;
  for (;;) {
    const end = open.length === 0 ? bytes.length : open[open.length - 1]!;
    if (end >= 0 && pos === end) {
      if (open.length === 0) return pos === 0 ? "empty" : null;
      open.pop();
      if (open.length === 0) return pos === bytes.length ? null : "bytes after the element";
      continue;
    }
    if (open.length === 0 && pos > 0) return "bytes after the element";
    if (pos + 2 > bytes.length) return `element at byte ${pos} runs past the end`;
    const tag = bytes[pos]!;
    const first = bytes[pos + 1]!;
    if (end === -1 && tag === 0 && first === 0) {
      open.pop();
      pos += 2;
      if (open.length === 0) return pos === bytes.length ? null : "bytes after the element";
      continue;
    }
    if (tag === 0) return `end-of-contents out of place at byte ${pos}`;
    if ((tag & 0x1f) === 0x1f) return `multi-byte tag at byte ${pos}`;
    if (++nodes > DECODE_MAX_NODES) return "too many elements";
    const constructed = (tag & 0x20) !== 0;
    let length: number;
    let header = 2;
    if (first < 0x80) length = first;
    else if (first === 0x80) {
      if (!constructed) return `indefinite length on a primitive element at byte ${pos}`;
      length = -1;
    } else {
      const n = first & 0x7f;
      if (n > 4 || pos + 2 + n > bytes.length) return `length at byte ${pos} is too long or runs past the end`;
      if (bytes[pos + 2] === 0) return `non-minimal length at byte ${pos}`;
      length = 0;
      for (let i = 0; i < n; i++) length = length * 256 + bytes[pos + 2 + i]!;
      if (length < 0x80 || (n > 1 && length < 1 << (8 * (n - 1)))) return `non-minimal length at byte ${pos}`;
      header = 2 + n;
    }
    const start = pos + header;
    const limit = end === -1 ? bytes.length : end;
    if (length >= 0 && start + length > limit) return `element at byte ${pos} overruns its parent`;
    if (constructed) {
      if (open.length >= DECODE_MAX_DEPTH) return "nested too deeply";
      open.push(length === -1 ? -1 : start + length);
      pos = start;
    } else {
      pos = start + length;
    }
  }
}

/**
 * asn1js warns of what it tolerates; only this one is expected (serials and signature integers are longer than
 * it decodes to a number). Any other (a missing end-of-contents, a non-minimal length or tag) refuses the receipt.
 */
const HARMLESS_WARNINGS = new Set(["Too big Integer for decoding, hex only"]);

/** Every node decoded without warnings, every indefinite length closed by its end-of-contents. */
function checkTree(root: asn1js.AsnType): void {
  const stack: Block[] = [root as Block];
  while (stack.length > 0) {
    const b = stack.pop()!;
    for (const part of [b, b.idBlock, b.lenBlock, (b as { valueBlock?: Block["valueBlock"] }).valueBlock]) {
      if (!part) continue;
      if (part.error) throw malformed(part.error);
      const warning = part.warnings?.find((w) => !HARMLESS_WARNINGS.has(w));
      if (warning) throw malformed(warning);
    }
    if (b.idBlock.tagClass === 1 && b.idBlock.tagNumber === 0) throw malformed("a stray end-of-contents");
    for (const c of children(b)) stack.push(c);
  }
}

/** the elements of a constructed block; none for a primitive one (an OID's valueBlock.value holds its arcs) */
function children(block: asn1js.AsnType): Block[] {
  if (!(block as Block).idBlock.isConstructed) return [];
  const value = (block as { valueBlock?: { value?: unknown } }).valueBlock?.value;
  return Array.isArray(value) ? (value as Block[]) : [];
}

function isUniversal(block: asn1js.AsnType, tagNumber: number): boolean {
  const id = (block as Block).idBlock;
  return id.tagClass === 1 && id.tagNumber === tagNumber;
}

function expectUniversal(block: asn1js.AsnType | undefined, tagNumber: number, name: string): Block {
  if (!block || !isUniversal(block, tagNumber)) throw malformed(`${name} is not the expected type`);
  const constructed = tagNumber === 16 || tagNumber === 17;
  if (constructed !== (block as Block).idBlock.isConstructed && tagNumber !== 4) throw malformed(`${name} is not the expected type`);
  return block as Block;
}

function expectContext(block: asn1js.AsnType | undefined, tagNumber: number, name: string): Block {
  const id = (block as Block | undefined)?.idBlock;
  if (!id || id.tagClass !== 3 || id.tagNumber !== tagNumber || !id.isConstructed) throw malformed(`${name} is not [${tagNumber}]`);
  return block as Block;
}

function exactly(block: asn1js.AsnType, n: number, name: string): Block[] {
  const c = children(block);
  if (c.length !== n) throw malformed(`${name} has ${c.length} elements, not ${n}`);
  return c;
}

function oidOf(block: asn1js.AsnType | undefined, name: string): string {
  if (!block || !(block instanceof asn1js.ObjectIdentifier)) throw malformed(`${name} is not an OBJECT IDENTIFIER`);
  return block.valueBlock.toString();
}

function isSha256(block: asn1js.AsnType): boolean {
  const h = hex(encodedBytes(block));
  return h === SHA256_ALG_WITH_NULL || h === SHA256_ALG_ABSENT;
}

function smallInteger(block: asn1js.AsnType, name: string): number {
  if (!isUniversal(block, 2) || (block as Block).idBlock.isConstructed) throw malformed(`${name} is not an INTEGER`);
  const v = unsignedSmall(contentBytes(block));
  if (v === undefined) throw malformed(`${name} is out of range`);
  return v;
}

/** a minimal, non-negative INTEGER of at most 3 content bytes, else undefined */
function unsignedSmall(content: Uint8Array): number | undefined {
  if (content.length === 0 || content.length > 3 || (content[0]! & 0x80) !== 0) return undefined;
  if (content.length > 1 && content[0] === 0 && (content[1]! & 0x80) === 0) return undefined;
  let v = 0;
  for (const b of content) v = v * 256 + b;
  return v;
}

/** An OCTET STRING's octets: primitive, or constructed of primitive chunks (BER), concatenated. */
function octets(block: asn1js.AsnType, name: string): Uint8Array {
  if (!isUniversal(block, 4)) throw malformed(`${name} is not an OCTET STRING`);
  const b = block as Block;
  if (!b.idBlock.isConstructed) return contentBytes(b);
  const chunks = children(b).map((c) => {
    if (!isUniversal(c, 4) || (c as Block).idBlock.isConstructed) throw malformed(`${name} has a chunk that is not a primitive OCTET STRING`);
    return contentBytes(c);
  });
  return Buffer.concat(chunks);
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

// ---------------------------------------------------------------------------------------------------------------
// The appraisal's seam

/**
 * The check an App Attest attestation's appraisal runs on the receipt it carries: the receipt must be Apple's
 * (or `opts.roots`'), of type ATTEST, for the app the attestation proved and its credential certificate, current
 * at `now`. Shaped as the appraisal's receipt seam (`AppAttestReceiptCheck`: receipt bytes and what the
 * attestation proved in, `{ok}` or `{ok: false, reason}` out); `reasonId` and `receipt` ride along for `detail`.
 */
export function appAttestReceiptCheck(opts: { roots?: readonly Uint8Array[]; maxFutureSkewMs?: number } = {}) {
  return (
    receipt: Uint8Array,
    attested: { appId: string; credentialCertDer: Uint8Array; now: Date },
  ): { ok: true; receipt: AppAttestReceipt } | { ok: false; reason: string; reasonId: ReceiptFailureReason } => {
    const r = verifyAppAttestReceipt(receipt, {
      appId: attested.appId,
      credentialCertificate: attested.credentialCertDer,
      at: attested.now,
      type: "ATTEST",
      ...(opts.roots ? { roots: opts.roots } : {}),
      ...(opts.maxFutureSkewMs !== undefined ? { maxFutureSkewMs: opts.maxFutureSkewMs } : {}),
    });
    return r.ok ? r : { ok: false, reason: `${r.reason}: ${r.message}`, reasonId: r.reason };
  };
}
