import type { CertificateFacts } from "../encoding/derChain.ts";

/**
 * How the device's attestation key was provisioned, read from the chain's shape — the same distinction Google's
 * verifier (android/keyattestation, KeyAttestationCertPath.provisioningMethod) draws, because the two kinds of
 * chain age differently (docs/android-key.md, "Date policy"):
 *
 * - `rkp`: Remote Key Provisioning. Google's RKP servers certify a per-device CA for weeks at a time and mark it
 *   with the ProvisioningInfo extension; the certificate under the root is Google's "Droid CA2".
 * - `factory`: the key was burned in at the factory (devices before RKP). The certificate under the root is a
 *   factory intermediate, which Google names by a serialNumber attribute (with title TEE or StrongBox since
 *   2018, without a title on the oldest, e.g. Sony and Pixel 2 chains), and nothing carries ProvisioningInfo.
 * - `unknown`: neither shape; such a chain gets no allowance.
 *
 * A chain cannot pass itself off as the other kind: every name and extension read here is inside certificates
 * whose signatures the validator checks up to a pinned root.
 */
export type Provisioning = "factory" | "rkp" | "unknown";

export const PROVISIONING_INFO_OID = "1.3.6.1.4.1.11129.2.1.30";

const SERIAL_NUMBER = "2.5.4.5";
const COMMON_NAME = "2.5.4.3";
const ORGANIZATION = "2.5.4.10";

/**
 * SubjectPublicKeyInfo SHA-256 of roots that only ever anchor RKP chains: Google's EC P-384 "Key Attestation
 * CA1" (2025), which came after factory provisioning ended. A factory-shaped chain to it is not a factory chain.
 */
export const RKP_ONLY_ROOT_SPKI_SHA256: ReadonlySet<string> = new Set([
  "3ee44512a1af2beb39c889490c60ea3f82e43f5d5a5532f5ab9419f676cd07ec",
]);

function attribute(c: CertificateFacts, type: string): string | undefined {
  return c.subjectAttributes.find((a) => a.type === type)?.value;
}

/**
 * The provisioning of a chain whose issuing certificates are `issuers` (every certificate that is neither the
 * device's key nor an attest key nor the root, leaf side first) and whose anchor key is `anchorSpkiSha256`.
 */
export function provisioningOf(issuers: readonly CertificateFacts[], anchorSpkiSha256: string): Provisioning {
  const top = issuers[issuers.length - 1];
  if (!top) return "unknown";
  const rkp =
    issuers.some((c) => c.extensions.some((e) => e.oid === PROVISIONING_INFO_OID)) ||
    (attribute(top, COMMON_NAME) === "Droid CA2" && attribute(top, ORGANIZATION) === "Google LLC");
  if (rkp) return "rkp";
  if (attribute(top, SERIAL_NUMBER) !== undefined && !RKP_ONLY_ROOT_SPKI_SHA256.has(anchorSpkiSha256)) return "factory";
  return "unknown";
}
