import { X509Certificate, createPrivateKey, createPublicKey } from "node:crypto";
import { rootCertificates } from "node:tls";

function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

function isSelfSigned(c: X509Certificate): boolean {
  return c.subject === c.issuer && c.verify(c.publicKey);
}

/**
 * The start-up refusals of attestation-api.md for an operator-supplied certificate: returns undefined when the
 * chain is fit to serve, else one line naming the problem. The chain file must hold the leaf first, then every
 * intermediate; the last certificate's issuer must be in the file or in Node's bundled public roots.
 */
export function checkServerChain(certPem: string, keyPem: string, now = new Date()): string | undefined {
  const pems = splitPem(certPem);
  if (pems.length === 0) return "TLS certificate file holds no PEM certificate";
  let certs: X509Certificate[];
  try {
    certs = pems.map((p) => new X509Certificate(p));
  } catch (e) {
    return `TLS certificate file has an unreadable certificate: ${(e as Error).message}`;
  }
  const leaf = certs[0]!;
  if (isSelfSigned(leaf)) return `TLS leaf certificate "${leaf.subject.replace(/\n/g, ", ")}" is self-signed`;
  for (const [i, c] of certs.entries()) {
    if (new Date(c.validTo) <= now) return `TLS certificate ${i} ("${c.subject.replace(/\n/g, ", ")}") expired on ${c.validTo}`;
    if (new Date(c.validFrom) > now) return `TLS certificate ${i} ("${c.subject.replace(/\n/g, ", ")}") is not valid before ${c.validFrom}`;
  }
  for (let i = 0; i + 1 < certs.length; i++) {
    const child = certs[i]!;
    const parent = certs[i + 1]!;
    if (!child.checkIssued(parent) || !child.verify(parent.publicKey)) {
      return `TLS chain link ${i} → ${i + 1} does not verify: certificate ${i + 1} did not issue certificate ${i}`;
    }
  }
  const last = certs[certs.length - 1]!;
  if (!isSelfSigned(last)) {
    const issuer = rootCertificates.map((p) => new X509Certificate(p)).find((r) => last.checkIssued(r) && last.verify(r.publicKey));
    if (!issuer) {
      return `TLS chain is incomplete: the issuer of "${last.subject.replace(/\n/g, ", ")}" is neither in the file nor a public root (append the intermediates, and the private root if any)`;
    }
  }
  try {
    const key = createPrivateKey(keyPem);
    if (!createPublicKey(key).export({ format: "der", type: "spki" }).equals(leaf.publicKey.export({ format: "der", type: "spki" }))) {
      return "TLS private key does not match the leaf certificate";
    }
  } catch (e) {
    return `TLS private key is unreadable: ${(e as Error).message}`;
  }
  return undefined;
}
