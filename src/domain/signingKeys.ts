/** The keys attestd signs its results (EARs) with: one current, the previous ones published until they retire. */

/** JWS algorithms a result may be signed with (`--ear-alg`); ES256 by default. */
export const EAR_ALGORITHMS = ["ES256", "ES384", "PS256"] as const;
export type EarAlgorithm = (typeof EAR_ALGORITHMS)[number];

export interface SigningKeyRecord {
  /** the key's RFC 7638 JWK thumbprint (base64url SHA-256): the `kid` of its results and of the JWKS entry */
  kid: string;
  alg: EarAlgorithm;
  /** the public key as a JWK (JSON text), as GET /.well-known/jwks.json publishes it */
  publicJwk: string;
  /**
   * The private key, PKCS#8 PEM. The one secret of this record: only the store keeps it (an at-rest encryption
   * wraps this field in a SigningKeyStore decorator), and nothing outside src/results/ reads it.
   */
  privateKey: string;
  createdAt: string;
  /** null for the current key; for a previous one, when it stops being published (ISO 8601) */
  retiresAt: string | null;
}
