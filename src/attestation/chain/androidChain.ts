import { createHash, createPublicKey, verify as verifySignature, type KeyObject } from "node:crypto";
import type { AndroidTrust, StatusEntry, StatusList } from "../types.ts";
import { ExtensionError, readCertificate, type CertificateFacts } from "../encoding/derChain.ts";
import {
  KEY_DESCRIPTION_OID,
  PURPOSE_ATTEST_KEY,
  hasPurpose,
  sameRootOfTrust,
  type KeyDescriptionInfo,
} from "../encoding/keyDescription.ts";
import { KNOX_OID } from "../encoding/knox.ts";
import { KEY_USAGE_KEY_CERT_SIGN, OID_BASIC_CONSTRAINTS, OID_KEY_USAGE } from "../encoding/certificateExtensions.ts";
import { provisioningOf, type Provisioning } from "./provisioning.ts";
import { normalizeSerial } from "./statusList.ts";

/**
 * Path validation of an Android key-attestation chain (leaf first) to a root pinned by its public key.
 *
 * Rules (docs/android-key.md explains why):
 * - Anchor: the last certificate's SubjectPublicKeyInfo is pinned, or the last certificate is issued (name and
 *   signature) by a pinned root the operator supplied (RKP chains often leave the root out).
 * - Links: each certificate's issuer name equals the next one's subject (DER), and its signature verifies with
 *   the next one's key; inner and outer signature algorithms agree.
 * - Chain extension: a KeyDescription may appear on the leaf, and on position 1 only when that certificate is an
 *   ATTEST_KEY key (purpose 7) whose root of trust and security level agree with the leaf's. Every other issuer
 *   is a CA (basicConstraints cA, keyCertSign when keyUsage is present, path length respected), except a factory
 *   batch certificate at position 1 that carries no KeyDescription.
 * - A carried root that is not byte for byte one of the configured roots must be self-issued and self-signed: it
 *   is a container for a pinned key, but every byte of the chain is either signed or checked.
 * - Dates: certificates that carry a KeyDescription (leaf, attest key) are device-made and their validity is
 *   meaningless; the carried root is only a container for a pinned key; every other certificate (batch, RKP and
 *   factory intermediates) must have started its validity at the appraisal time, and must not have ended it —
 *   except in a factory-provisioned chain (provisioning.ts) under the policy `factoryExpiry: accept` (the
 *   default), where expiry is accepted and reported: factory keys cannot be rotated, and Google let their
 *   certificates expire with the 2016 root on 2026-05-24 while the devices stay in use.
 * - Unknown critical extensions, an extension repeated in one certificate, and a signature BIT STRING with
 *   unused bits (not DER) fail the chain (RFC 5280 4.2, X.690 11.2).
 *
 * Caching: what depends only on the trust (the pinned roots, parsed, with their keys) is built once per
 * `rootsDer` array; certificates that validated as intermediates or batch certificates are cached by the SHA-256
 * of their DER together with the issuers their signature was verified against, so the next chain that carries
 * them skips the parse and the signature (never the date check). Nothing about a leaf or an attest key is cached.
 * Entries are added only after a whole chain validated to a pinned root, so a caller cannot fill the cache with
 * certificates of its own making.
 */

export type CertificateRole = "leaf" | "attestKey" | "batch" | "intermediate" | "root";

export interface ChainCertificate {
  facts: CertificateFacts;
  /** true when the facts came from the intermediate cache */
  cached: boolean;
}

export interface ChainAnchor {
  /** lowercase hex SHA-256 of the pinned SubjectPublicKeyInfo */
  spkiSha256: string;
  subject: string;
  /** true when the chain carries the root itself, false when the operator's copy completed it */
  carried: boolean;
}

/** A certificate past its notAfter that a factory chain was accepted with. */
export interface ExpiredCertificate {
  index: number;
  subject: string;
  notAfter: string;
}

export type ChainResult =
  | {
    ok: true;
    anchor: ChainAnchor;
    roles: CertificateRole[];
    provisioning: Provisioning;
    /** expired factory certificates accepted under `factoryExpiry: accept`; empty when none */
    expiredAccepted: ExpiredCertificate[];
  }
  | { ok: false; reason: string; roles: CertificateRole[] };

const MAX_CACHED_CERTS = 4096;

interface CachedCert {
  facts: CertificateFacts;
  key?: KeyObject;
  /** sha256 of the issuer certificates this certificate's signature verified against */
  verifiedBy: Set<string>;
}

interface PinnedRoot {
  facts: CertificateFacts;
  key: KeyObject;
}

interface TrustIndex {
  pinned: ReadonlySet<string>;
  roots: PinnedRoot[];
  certs: Map<string, CachedCert>;
  /** SHA-256 of carried roots whose self-signature verified (or that are configured roots, byte for byte) */
  carriedRoots: Set<string>;
}

const indexes = new WeakMap<readonly Uint8Array[], TrustIndex>();

function buildIndex(trust: AndroidTrust): TrustIndex {
  const roots: PinnedRoot[] = [];
  for (const der of trust.rootsDer) {
    try {
      const facts = readCertificate(der);
      if (!trust.pinnedRootSpkiSha256.has(facts.spkiSha256)) continue;
      roots.push({ facts, key: createPublicKey({ key: facts.spkiDer, format: "der", type: "spki" }) });
    } catch {
      // the trust loader validated these; an unreadable one simply anchors nothing
    }
  }
  return {
    pinned: trust.pinnedRootSpkiSha256,
    roots,
    certs: new Map(),
    carriedRoots: new Set(roots.map((r) => r.facts.sha256)),
  };
}

/** The per-trust index (parsed pinned roots, intermediate cache), built on first use. */
function indexFor(trust: AndroidTrust): TrustIndex {
  let index = indexes.get(trust.rootsDer);
  if (!index || index.pinned !== trust.pinnedRootSpkiSha256) {
    index = buildIndex(trust);
    indexes.set(trust.rootsDer, index);
  }
  return index;
}

/**
 * Reads the chain's certificates, taking intermediates from the trust's cache when their DER was seen in a chain
 * that validated before. Throws CertificateReadError for a certificate that is not X.509.
 */
export function readChain(ders: readonly Uint8Array[], trust: AndroidTrust): ChainCertificate[] {
  const index = indexFor(trust);
  return ders.map((der, i) => {
    if (i > 0) {
      const hit = index.certs.get(sha256Of(der));
      if (hit && Buffer.from(hit.facts.der).equals(der)) return { facts: hit.facts, cached: true };
    }
    return { facts: readCertificate(der), cached: false };
  });
}

// The cache key is the SHA-256 that readCertificate would compute; computing it here first avoids the parse.
function sha256Of(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("hex");
}

/** Signature algorithms accepted on chain certificates: OID → [digest, key type]. */
const SIGNATURE_ALGORITHMS: ReadonlyMap<string, readonly [string | null, string]> = new Map([
  ["1.2.840.113549.1.1.11", ["sha256", "rsa"]],
  ["1.2.840.113549.1.1.12", ["sha384", "rsa"]],
  ["1.2.840.113549.1.1.13", ["sha512", "rsa"]],
  ["1.2.840.10045.4.3.2", ["sha256", "ec"]],
  ["1.2.840.10045.4.3.3", ["sha384", "ec"]],
  ["1.2.840.10045.4.3.4", ["sha512", "ec"]],
  ["1.3.101.112", [null, "ed25519"]],
]);

/** Verifies `cert`'s signature with `key`. Returns a reason when it does not verify. */
function checkSignature(cert: CertificateFacts, key: KeyObject): string | null {
  if (!cert.signatureAlgorithmsAgree) return "inner and outer signature algorithms differ";
  const alg = SIGNATURE_ALGORITHMS.get(cert.signatureAlgorithm);
  if (!alg) return `unsupported signature algorithm ${cert.signatureAlgorithm}`;
  const [digest, keyType] = alg;
  if (key.asymmetricKeyType !== keyType) return `a ${key.asymmetricKeyType ?? "?"} key cannot check ${cert.signatureAlgorithm}`;
  try {
    return verifySignature(digest, cert.tbsDer, key, cert.signature) ? null : "signature does not verify";
  } catch (e) {
    return `signature does not verify (${(e as Error).message})`;
  }
}

function keyOf(c: ChainCertificate, index: TrustIndex): KeyObject {
  const cached = c.cached ? index.certs.get(c.facts.sha256) : undefined;
  if (cached?.key) return cached.key;
  const key = createPublicKey({ key: c.facts.spkiDer, format: "der", type: "spki" });
  if (cached) cached.key = key;
  return key;
}

/** Critical extensions this validator acts on; any other critical extension fails the chain (RFC 5280 6.1.4). */
const KNOWN_CRITICAL = new Set([OID_KEY_USAGE, OID_BASIC_CONSTRAINTS, KEY_DESCRIPTION_OID, KNOX_OID]);

function hasKeyDescription(c: ChainCertificate): boolean {
  return c.facts.extensions.some((e) => e.oid === KEY_DESCRIPTION_OID);
}

function validityText(f: CertificateFacts): string {
  return `${f.notBefore.toISOString()} .. ${f.notAfter.toISOString()}`;
}

export interface ChainInput {
  certs: readonly ChainCertificate[];
  /** the leaf's parsed KeyDescription */
  leaf: KeyDescriptionInfo;
  /** position 1's KeyDescription (parsed, or why not) when that certificate carries one */
  attestKey?: KeyDescriptionInfo | ExtensionError;
}

/** Validates the chain at `now`. Pure given (input, trust, now); only the caches change. */
export function validateAndroidChain(input: ChainInput, trust: AndroidTrust, now: Date): ChainResult {
  const { certs } = input;
  const n = certs.length;
  const roles: CertificateRole[] = certs.map((c, i) => {
    if (i === 0) return "leaf";
    if (i === 1 && hasKeyDescription(c)) return "attestKey";
    if (i === n - 1 && trust.pinnedRootSpkiSha256.has(c.facts.spkiSha256)) return "root";
    if (i === 1 && c.facts.ca !== true) return "batch";
    return "intermediate";
  });
  const fail = (reason: string): ChainResult => ({ ok: false, reason, roles });
  const index = indexFor(trust);

  // 1. Where a KeyDescription may be (chain-extension defence).
  for (let i = 1; i < n; i++) {
    if (roles[i] === "attestKey") {
      const kd = input.attestKey;
      if (kd === undefined || kd instanceof ExtensionError) {
        return fail(`certificate 1 carries an unreadable KeyDescription (${kd?.message ?? "missing"})`);
      }
      if (!hasPurpose(kd.hardwareEnforced, PURPOSE_ATTEST_KEY)) {
        return fail("certificate 1 carries a KeyDescription but is not an ATTEST_KEY key (chain extension)");
      }
      if (!sameRootOfTrust(kd.hardwareEnforced.rootOfTrust, input.leaf.hardwareEnforced.rootOfTrust)) {
        return fail("the attest key's root of trust differs from the leaf's");
      }
      if (kd.attestationSecurityLevel !== input.leaf.attestationSecurityLevel) {
        return fail("the attest key's security level differs from the leaf's");
      }
    } else if (hasKeyDescription(certs[i]!)) {
      return fail(`certificate ${i} carries a KeyDescription (chain extension)`);
    }
  }

  // 2. Encoding, issuer rules, critical extensions, dates.
  let casBelow = 0;
  const expired: number[] = [];
  for (let i = 0; i < n; i++) {
    const f = certs[i]!.facts;
    const role = roles[i]!;
    if (f.signatureUnusedBits !== 0) {
      return fail(`certificate ${i}'s signature BIT STRING declares ${f.signatureUnusedBits} unused bits (not DER)`);
    }
    const unknown = f.extensions.find((e) => e.critical && !KNOWN_CRITICAL.has(e.oid));
    if (unknown) return fail(`certificate ${i} has an unknown critical extension ${unknown.oid}`);
    const repeated = f.extensions.find((e, k) => f.extensions.findIndex((x) => x.oid === e.oid) !== k);
    if (repeated) return fail(`certificate ${i} carries extension ${repeated.oid} twice`);
    if (role === "intermediate" || role === "root") {
      if (f.ca !== true) return fail(`certificate ${i} issues certificate ${i - 1} but is not a CA`);
      if (f.keyUsage !== undefined && (f.keyUsage & KEY_USAGE_KEY_CERT_SIGN) === 0) {
        return fail(`certificate ${i} issues certificates but its key usage lacks keyCertSign`);
      }
      if (role === "intermediate") {
        // Only CAs count: an attest key or a batch certificate is an end entity that issues one certificate.
        if (f.pathLen !== undefined && casBelow > f.pathLen) {
          return fail(`certificate ${i} allows ${f.pathLen} CA certificates below it, the chain has ${casBelow}`);
        }
        casBelow++;
      }
    }
    if (role === "intermediate" || role === "batch") {
      if (now.getTime() < f.notBefore.getTime()) {
        return fail(`certificate ${i} (${f.subject}) is not valid at ${now.toISOString()} (${validityText(f)})`);
      }
      // Whether expiry fails the chain depends on its provisioning, known once the anchor is (step 5).
      if (now.getTime() > f.notAfter.getTime()) expired.push(i);
    }
  }

  // 3. Name links and signatures, leaf upwards.
  for (let i = 0; i + 1 < n; i++) {
    const child = certs[i]!;
    const parent = certs[i + 1]!;
    if (!child.facts.issuerDer.equals(parent.facts.subjectDer)) {
      return fail(`certificate ${i} names issuer "${child.facts.issuer}", certificate ${i + 1} is "${parent.facts.subject}"`);
    }
    if (child.cached && index.certs.get(child.facts.sha256)?.verifiedBy.has(parent.facts.sha256)) continue;
    let key: KeyObject;
    try {
      key = keyOf(parent, index);
    } catch (e) {
      return fail(`certificate ${i + 1}'s public key is unusable (${(e as Error).message})`);
    }
    const bad = checkSignature(child.facts, key);
    if (bad) return fail(`certificate ${i}: ${bad} with certificate ${i + 1}'s key`);
  }

  // 4. The anchor.
  const last = certs[n - 1]!;
  let anchor: ChainAnchor;
  let anchorRoot: PinnedRoot | undefined;
  if (roles[n - 1] === "root" && n > 1) {
    if (!index.carriedRoots.has(last.facts.sha256)) {
      if (!last.facts.issuerDer.equals(last.facts.subjectDer)) {
        return fail(`certificate ${n - 1} carries a pinned key but is not self-issued, nor one of the configured roots`);
      }
      let key: KeyObject;
      try {
        key = keyOf(last, index);
      } catch (e) {
        return fail(`certificate ${n - 1}'s public key is unusable (${(e as Error).message})`);
      }
      const bad = checkSignature(last.facts, key);
      if (bad) return fail(`certificate ${n - 1} carries a pinned key but is not self-signed (${bad})`);
      if (index.carriedRoots.size >= MAX_CACHED_CERTS) index.carriedRoots.clear();
      index.carriedRoots.add(last.facts.sha256);
    }
    anchor = { spkiSha256: last.facts.spkiSha256, subject: last.facts.subject, carried: true };
  } else {
    if (index.roots.length === 0) return fail("no pinned root is available");
    const cached = last.cached ? index.certs.get(last.facts.sha256) : undefined;
    let why = `certificate ${n - 1} is issued by "${last.facts.issuer}", which is not a pinned root`;
    for (const root of index.roots) {
      if (!last.facts.issuerDer.equals(root.facts.subjectDer)) continue;
      if (cached?.verifiedBy.has(root.facts.sha256)) {
        anchorRoot = root;
        break;
      }
      const bad = checkSignature(last.facts, root.key);
      if (!bad) {
        anchorRoot = root;
        break;
      }
      why = `certificate ${n - 1}: ${bad} with the pinned root "${root.facts.subject}"`;
    }
    if (!anchorRoot) return fail(why);
    anchor = { spkiSha256: anchorRoot.facts.spkiSha256, subject: anchorRoot.facts.subject, carried: false };
  }

  // 5. Provisioning, and with it whether expired issuers fail the chain.
  const issuers = certs.filter((_, i) => roles[i] === "intermediate" || roles[i] === "batch").map((c) => c.facts);
  const provisioning = provisioningOf(issuers, anchor.spkiSha256);
  const expiredAccepted: ExpiredCertificate[] = [];
  if (expired.length > 0) {
    const i = expired[0]!;
    const f = certs[i]!.facts;
    const notValid = `certificate ${i} (${f.subject}) is not valid at ${now.toISOString()} (${validityText(f)})`;
    if (provisioning !== "factory") return fail(notValid);
    if (trust.policy.factoryExpiry === "refuse") {
      return fail(`${notValid}: an expired factory-provisioned chain, refused by the policy factoryExpiry: refuse`);
    }
    for (const k of expired) {
      const c = certs[k]!.facts;
      expiredAccepted.push({ index: k, subject: c.subject, notAfter: c.notAfter.toISOString() });
    }
  }

  // 6. Remember what validated: issuers (never the leaf or an attest key) and the links they passed.
  for (let i = 1; i < n; i++) {
    const role = roles[i]!;
    if (role === "attestKey") continue;
    const f = certs[i]!.facts;
    let entry = index.certs.get(f.sha256);
    if (!entry) {
      if (index.certs.size >= MAX_CACHED_CERTS) {
        const oldest = index.certs.keys().next().value;
        if (oldest !== undefined) index.certs.delete(oldest);
      }
      entry = { facts: f, verifiedBy: new Set() };
      index.certs.set(f.sha256, entry);
    }
    if (i + 1 < n) entry.verifiedBy.add(certs[i + 1]!.facts.sha256);
    else if (anchorRoot) entry.verifiedBy.add(anchorRoot.facts.sha256);
  }
  return { ok: true, anchor, roles, provisioning, expiredAccepted };
}

/**
 * The first certificate of the chain whose serial the status list names. Leaf and attest-key certificates are
 * skipped: their serials are chosen by the app (almost always 1), while the list names Google's and the
 * factories' keys (batch certificates, intermediates).
 */
export function findRevoked(
  certs: readonly ChainCertificate[],
  roles: readonly CertificateRole[],
  status: StatusList,
): { index: number; serial: string; entry: StatusEntry } | undefined {
  if (status.size === 0) return undefined;
  for (let i = 0; i < certs.length; i++) {
    if (roles[i] === "leaf" || roles[i] === "attestKey") continue;
    const serial = normalizeSerial(certs[i]!.facts.serialHex);
    const entry = status.get(serial);
    if (entry) return { index: i, serial, entry };
  }
  return undefined;
}

