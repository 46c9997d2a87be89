import type { PlayAppPolicy } from "../attestation/types.ts";

/**
 * A tenant's registered Google Play app (issue 23; mobile-attestation.md, "Per-tenant configuration"): the policy
 * its tokens are appraised by, and how its tokens are opened: with the Play Console's response keys (attestd
 * decrypts and verifies locally) or with a Google service account (Google's decodeIntegrityToken decodes). Secrets
 * are sealed in the store and never leave the service layer once entered; `PlayAppSummary` is what lists show.
 */
export interface RegisteredPlayApp {
  /** opaque id of the registration */
  id: string;
  tenantId: string;
  policy: PlayAppPolicy;
  /** the response keys, when attestd opens the app's tokens itself */
  responseKeys?: PlayResponseKeys;
  /** a Google service account, when Google decodes the app's tokens */
  serviceAccount?: GoogleServiceAccount;
  createdAt: string;
}

/** The two keys the Play Console gives for an app, as bytes (the console shows them base64). */
export interface PlayResponseKeys {
  /** the AES-256 key that unwraps the token's content key (A256KW): 32 bytes */
  decryptionKey: Uint8Array;
  /** the EC P-256 public key that verifies the token's ES256 signature, as X.509 SubjectPublicKeyInfo DER */
  verificationKeySpki: Uint8Array;
}

/** The parts of a Google service account key file the decoder uses. */
export interface GoogleServiceAccount {
  clientEmail: string;
  /** the account's RSA private key, PKCS#8 PEM as in the key file's `private_key` */
  privateKeyPem: string;
  privateKeyId?: string;
  projectId?: string;
}

/** A registration as lists show it: no secret, only which kind of opening it uses. */
export interface PlayAppSummary {
  id: string;
  tenantId: string;
  policy: PlayAppPolicy;
  opensWith: "response-keys" | "service-account";
  /** the service account's email, not secret, so an operator can tell which account it is */
  serviceAccountEmail?: string;
  createdAt: string;
}

/**
 * A registration as the store keeps it: the policy in the clear (operators and the portal read it), the secret
 * (the response keys or the service account, as JSON) sealed by src/services/playApps.ts before the store sees it.
 */
export interface StoredPlayApp extends PlayAppSummary {
  /** `sealed:v1:...` (src/secrets/secretBox.ts), bound to this registration's id */
  sealedSecret: string;
}
