import { createHash, X509Certificate, type KeyObject } from "node:crypto";
import { CertificateStructureError, readCertificateFields, type CertificateFields } from "../encoding/certificateExtensions.ts";
import { readDerHeader } from "../encoding/derChain.ts";

/**
 * App Attest's certificate path (Apple, "Validating apps that connect to your server", step 1): the credential
 * certificate, issued by "Apple App Attestation CA 1", issued by the App Attestation Root CA — built in
 * (src/trust/appleAppAttestationRootCa.pem) or the operator's `--app-attest-roots`. Every certificate, the root
 * included, must be within its validity at the appraisal time; every issuer a CA; the leaf not a CA and its key EC
 * P-256 (the key App Attest makes in the Secure Enclave). Anything carried beyond the path is refused.
 *
 * Every attestation carries the same intermediate. As the Android chains do (androidChain.ts), an intermediate is
 * parsed, and its signature by the root checked, once: a chain that validated leaves its CA certificates and the
 * links it verified in a per-roots index, and a later chain carrying the same bytes takes them from there (its
 * validity and CA flag are still checked at each appraisal). Only a chain that validated to a configured root
 * adds to the index, so a sender cannot fill it. The leaf is never cached.
 */

/** The credential certificate's nonce extension (Apple: OID 1.2.840.113635.100.8.2). */
export const APP_ATTEST_NONCE_OID = "1.2.840.113635.100.8.2";

const EC_PUBLIC_KEY_OID = "1.2.840.10045.2.1";
const P256_OID = "1.2.840.10045.3.1.7";

/** The credential certificate, as the later steps of the appraisal read it. */
export interface CredentialCertificate {
  cert: X509Certificate;
  /** its extensions and key, read by the TLV walk that also proved it DER */
  fields: CertificateFields;
  /** its public key (reading it is where an undecodable point shows) */
  key: KeyObject;
}

export interface AppAttestChainResult {
  ok: boolean;
  /** why not, in words a tenant may read */
  reason: string;
  leaf?: CredentialCertificate;
}

/** A CA certificate of the path (a root, or an intermediate seen in a chain that validated). */
interface CaCertificate {
  der: Uint8Array;
  sha256: string;
  cert: X509Certificate;
  key: KeyObject;
}

interface RootsIndex {
  roots: CaCertificate[];
  /** CA certificates of chains that validated, by the SHA-256 of their DER */
  cas: Map<string, CaCertificate>;
  /** `child > parent` (their SHA-256s) for each CA-to-CA link whose signature verified */
  verifiedLinks: Set<string>;
}

/** Past this many cached CA certificates the index starts over (Apple has one intermediate; this is a bound). */
const CACHED_CAS_MAX = 64;

const indexes = new WeakMap<readonly Uint8Array[], RootsIndex>();

const sha256Hex = (der: Uint8Array): string => createHash("sha256").update(der).digest("hex");

function indexOf(rootsDer: readonly Uint8Array[]): RootsIndex {
  let index = indexes.get(rootsDer);
  if (!index) {
    const roots: CaCertificate[] = [];
    for (const der of rootsDer) {
      try {
        const cert = new X509Certificate(der);
        if (cert.ca) roots.push({ der, sha256: sha256Hex(der), cert, key: cert.publicKey });
      } catch {
        // an unusable root serves nothing; src/trust/ refuses such a file at start-up
      }
    }
    index = { roots, cas: new Map(), verifiedLinks: new Set() };
    indexes.set(rootsDer, index);
  }
  return index;
}

function within(cert: X509Certificate, now: Date): boolean {
  return cert.validFromDate.getTime() <= now.getTime() && now.getTime() <= cert.validToDate.getTime();
}

function issued(child: X509Certificate, parent: CaCertificate): boolean {
  try {
    return child.checkIssued(parent.cert) && child.verify(parent.key);
  } catch {
    return false;
  }
}

const fail = (reason: string): AppAttestChainResult => ({ ok: false, reason });

/** One certificate of x5c: parsed by OpenSSL and walked as DER; a reason when it is neither. */
function parseCertificate(der: Uint8Array, i: number): { cert: X509Certificate; fields: CertificateFields } | string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch {
    return `x5c[${i}] is not a certificate`;
  }
  try {
    return { cert, fields: readCertificateFields(der) };
  } catch (e) {
    if (e instanceof CertificateStructureError) return `x5c[${i}] is not DER (${e.message})`;
    throw e;
  }
}

export function validateAppAttestChain(x5c: readonly Uint8Array[], rootsDer: readonly Uint8Array[], now: Date): AppAttestChainResult {
  const index = indexOf(rootsDer);
  if (index.roots.length === 0) return fail("no App Attestation root is configured");
  if (x5c.length === 0) return fail("x5c is empty");

  const leafParsed = parseCertificate(x5c[0]!, 0);
  if (typeof leafParsed === "string") return fail(leafParsed);
  const issuers: CaCertificate[] = [];
  const fresh: CaCertificate[] = [];
  for (let i = 1; i < x5c.length; i++) {
    const der = x5c[i]!;
    const sha256 = sha256Hex(der);
    let ca = index.cas.get(sha256);
    if (!ca || !Buffer.from(ca.der).equals(der)) {
      const parsed = parseCertificate(der, i);
      if (typeof parsed === "string") return fail(parsed);
      if (!parsed.cert.ca) return fail(`x5c[${i}] is not a CA`);
      let key: KeyObject;
      try {
        key = parsed.cert.publicKey;
      } catch {
        return fail(`x5c[${i}]'s public key cannot be read`);
      }
      ca = { der: new Uint8Array(der), sha256, cert: parsed.cert, key };
      fresh.push(ca);
    }
    issuers.push(ca);
  }
  const certs = [leafParsed.cert, ...issuers.map((c) => c.cert)];
  for (const [i, cert] of certs.entries()) {
    if (!within(cert, now)) return fail(`x5c[${i}] (${cert.subject.replaceAll("\n", ", ")}) is not valid at ${now.toISOString()}`);
  }

  const leaf = leafParsed.cert;
  if (leaf.ca) return fail("the credential certificate is a CA");
  const algorithm = leafParsed.fields.publicKeyAlgorithm;
  if (algorithm.oid !== EC_PUBLIC_KEY_OID || algorithm.parameterOid !== P256_OID) return fail("the credential certificate's key is not EC P-256");
  let key: KeyObject;
  try {
    // OpenSSL parses a certificate whose key it cannot decode; reading the key is where that shows
    key = leaf.publicKey;
  } catch {
    return fail("the credential certificate's public key cannot be read");
  }

  const newLinks: string[] = [];
  const linked = (child: X509Certificate, childSha256: string | undefined, parent: CaCertificate): boolean => {
    // the leaf (no hash) is always checked; a CA's link is checked once
    const link = childSha256 === undefined ? undefined : `${childSha256}>${parent.sha256}`;
    if (link !== undefined && index.verifiedLinks.has(link)) return true;
    if (!issued(child, parent)) return false;
    if (link !== undefined) newLinks.push(link);
    return true;
  };
  for (let i = 0; i < issuers.length; i++) {
    if (!linked(certs[i]!, i === 0 ? undefined : issuers[i - 1]!.sha256, issuers[i]!)) return fail(`x5c[${i}] is not issued by x5c[${i + 1}]`);
  }
  const top = issuers.length === 0 ? undefined : issuers[issuers.length - 1]!;
  for (const root of index.roots) {
    if (!within(root.cert, now)) continue;
    if (linked(top?.cert ?? leaf, top?.sha256, root)) {
      remember(index, fresh, newLinks);
      return { ok: true, reason: `chain to ${root.cert.subject.replaceAll("\n", ", ")}`, leaf: { cert: leaf, fields: leafParsed.fields, key } };
    }
  }
  return fail("the chain does not lead to a trusted App Attestation root (valid at the appraisal time)");
}

function remember(index: RootsIndex, cas: readonly CaCertificate[], links: readonly string[]): void {
  if (cas.length === 0 && links.length === 0) return;
  if (index.cas.size + cas.length > CACHED_CAS_MAX) {
    index.cas.clear();
    index.verifiedLinks.clear();
  }
  for (const ca of cas) index.cas.set(ca.sha256, ca);
  for (const link of links) index.verifiedLinks.add(link);
}

/**
 * The nonce extension's value: SEQUENCE { [1] EXPLICIT OCTET STRING (32 bytes) }, in DER. Undefined when the leaf
 * has no such extension or it is not exactly that shape.
 */
export function appAttestNonceExtension(leaf: CredentialCertificate): Uint8Array | undefined {
  const value = leaf.fields.extensions.find((e) => e.oid === APP_ATTEST_NONCE_OID)?.value;
  if (!value) return undefined;
  const seq = readDerHeader(value, 0);
  if (!seq || seq.tag !== 0x30 || seq.headerLength + seq.length !== value.length) return undefined;
  const tagged = readDerHeader(value, seq.headerLength);
  if (!tagged || tagged.tag !== 0xa1 || seq.headerLength + tagged.headerLength + tagged.length !== value.length) return undefined;
  const octetsAt = seq.headerLength + tagged.headerLength;
  const octets = readDerHeader(value, octetsAt);
  if (!octets || octets.tag !== 0x04 || octetsAt + octets.headerLength + octets.length !== value.length || octets.length !== 32) return undefined;
  return value.slice(octetsAt + octets.headerLength);
}

/**
 * The leaf's EC P-256 public key as the uncompressed point (0x04 ‖ x ‖ y), whose SHA-256 is the key id. Read from
 * the certificate's subjectPublicKeyInfo when it carries the point uncompressed (as Apple's do), else from the key.
 */
export function uncompressedPoint(leaf: CredentialCertificate): Uint8Array {
  const spki = leaf.fields.subjectPublicKeyInfo;
  // SEQUENCE { AlgorithmIdentifier (21 bytes for EC P-256), BIT STRING { 00, 04 ‖ x ‖ y } }: the last 65 bytes
  if (spki.length === 91 && spki[spki.length - 68] === 0x03 && spki[spki.length - 67] === 0x42 && spki[spki.length - 66] === 0x00 && spki[spki.length - 65] === 0x04) {
    return spki.slice(spki.length - 65);
  }
  const jwk = leaf.key.export({ format: "jwk" });
  return new Uint8Array(Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]));
}
