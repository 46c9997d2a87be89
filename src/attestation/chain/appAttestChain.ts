import { X509Certificate } from "node:crypto";
import * as asn1js from "asn1js";
import { decodeDer, derViolation } from "../encoding/derChain.ts";

/**
 * App Attest's certificate path (Apple, "Validating apps that connect to your server", step 1): the credential
 * certificate, issued by "Apple App Attestation CA 1", issued by the App Attestation Root CA — built in
 * (src/trust/appleAppAttestationRootCa.pem) or the operator's `--app-attest-roots`. Every certificate, the root
 * included, must be within its validity at the appraisal time; every issuer a CA; the leaf not a CA and its key EC
 * P-256 (the key App Attest makes in the Secure Enclave). Anything carried beyond the path is refused.
 */

/** The credential certificate's nonce extension (Apple: OID 1.2.840.113635.100.8.2). */
export const APP_ATTEST_NONCE_OID = "1.2.840.113635.100.8.2";

export interface AppAttestChainResult {
  ok: boolean;
  /** why not, in words a tenant may read */
  reason: string;
  leaf?: X509Certificate;
}

interface ParsedRoot {
  cert: X509Certificate;
  der: Uint8Array;
}

const rootCache = new WeakMap<readonly Uint8Array[], ParsedRoot[]>();

function parsedRoots(rootsDer: readonly Uint8Array[]): ParsedRoot[] {
  let out = rootCache.get(rootsDer);
  if (!out) {
    out = [];
    for (const der of rootsDer) {
      try {
        const cert = new X509Certificate(der);
        if (cert.ca) out.push({ cert, der });
      } catch {
        // an unusable root serves nothing; src/trust/ refuses such a file at start-up
      }
    }
    rootCache.set(rootsDer, out);
  }
  return out;
}

function within(cert: X509Certificate, now: Date): boolean {
  return cert.validFromDate.getTime() <= now.getTime() && now.getTime() <= cert.validToDate.getTime();
}

function issued(child: X509Certificate, parent: X509Certificate): boolean {
  try {
    return child.checkIssued(parent) && child.verify(parent.publicKey);
  } catch {
    return false;
  }
}

const fail = (reason: string): AppAttestChainResult => ({ ok: false, reason });

export function validateAppAttestChain(x5c: readonly Uint8Array[], rootsDer: readonly Uint8Array[], now: Date): AppAttestChainResult {
  const roots = parsedRoots(rootsDer);
  if (roots.length === 0) return fail("no App Attestation root is configured");
  const certs: X509Certificate[] = [];
  for (const [i, der] of x5c.entries()) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(der);
    } catch {
      return fail(`x5c[${i}] is not a certificate`);
    }
    if (Buffer.compare(cert.raw, Buffer.from(der)) !== 0) return fail(`x5c[${i}] is not DER (trailing or re-encoded bytes)`);
    if (!within(cert, now)) return fail(`x5c[${i}] (${cert.subject.replaceAll("\n", ", ")}) is not valid at ${now.toISOString()}`);
    certs.push(cert);
  }
  const leaf = certs[0]!;
  if (leaf.ca) return fail("the credential certificate is a CA");
  let key;
  try {
    // OpenSSL parses a certificate whose key it cannot decode; reading the key is where that shows
    key = leaf.publicKey;
  } catch {
    return fail("the credential certificate's public key cannot be read");
  }
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") return fail("the credential certificate's key is not EC P-256");
  for (let i = 0; i + 1 < certs.length; i++) {
    if (!certs[i + 1]!.ca) return fail(`x5c[${i + 1}] is not a CA`);
    if (!issued(certs[i]!, certs[i + 1]!)) return fail(`x5c[${i}] is not issued by x5c[${i + 1}]`);
  }
  const top = certs[certs.length - 1]!;
  for (const root of roots) {
    if (!within(root.cert, now)) continue;
    if (issued(top, root.cert)) return { ok: true, reason: `chain to ${root.cert.subject.replaceAll("\n", ", ")}`, leaf };
  }
  return fail("the chain does not lead to a trusted App Attestation root (valid at the appraisal time)");
}

/**
 * The nonce extension's value: SEQUENCE { [1] EXPLICIT OCTET STRING (32 bytes) }, in DER. Undefined when the leaf
 * has no such extension or it is not that shape.
 */
export function appAttestNonceExtension(leaf: X509Certificate): Uint8Array | undefined {
  const ext = extensionValue(new Uint8Array(leaf.raw), APP_ATTEST_NONCE_OID);
  if (!ext) return undefined;
  const seq = decodeDer(ext);
  if (!seq || derViolation(seq) !== null || !(seq instanceof asn1js.Sequence) || seq.valueBlock.value.length !== 1) return undefined;
  const tagged = seq.valueBlock.value[0]!;
  if (tagged.idBlock.tagClass !== 3 || tagged.idBlock.tagNumber !== 1) return undefined;
  const inner = (tagged as asn1js.Constructed).valueBlock.value;
  if (!inner || inner.length !== 1 || !(inner[0] instanceof asn1js.OctetString)) return undefined;
  const bytes = new Uint8Array(inner[0].valueBlock.valueHexView);
  return bytes.length === 32 ? bytes : undefined;
}

/** The extnValue (the OCTET STRING's content) of the extension `oid`, from a certificate's DER. */
function extensionValue(certDer: Uint8Array, oid: string): Uint8Array | undefined {
  const cert = decodeDer(certDer);
  if (!(cert instanceof asn1js.Sequence)) return undefined;
  const tbs = cert.valueBlock.value[0];
  if (!(tbs instanceof asn1js.Sequence)) return undefined;
  for (const field of tbs.valueBlock.value) {
    if (field.idBlock.tagClass !== 3 || field.idBlock.tagNumber !== 3) continue;
    const exts = (field as asn1js.Constructed).valueBlock.value[0];
    if (!(exts instanceof asn1js.Sequence)) return undefined;
    for (const ext of exts.valueBlock.value) {
      if (!(ext instanceof asn1js.Sequence)) continue;
      const [id, ...rest] = ext.valueBlock.value;
      if (!(id instanceof asn1js.ObjectIdentifier) || id.valueBlock.toString() !== oid) continue;
      const value = rest[rest.length - 1];
      return value instanceof asn1js.OctetString ? new Uint8Array(value.valueBlock.valueHexView) : undefined;
    }
  }
  return undefined;
}

/** The leaf's EC P-256 public key as the uncompressed point (0x04 ‖ x ‖ y), whose SHA-256 is the key id. */
export function uncompressedPoint(cert: X509Certificate): Uint8Array {
  const jwk = cert.publicKey.export({ format: "jwk" });
  return new Uint8Array(Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]));
}
