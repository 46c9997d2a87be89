/**
 * The Play Integrity *floor*: the work no verifier of a Play Integrity token can skip, for the bare baseline server
 * (baseline/server.ts), so the bench can say how far attestd's POST /v2/blobs is from it (issue 23 item 6):
 *
 *   1. decrypt the compact JWE with the app's AES-256 response key (A256KW + A256GCM);
 *   2. verify the compact JWS inside with the app's P-256 verification key (ES256);
 *   3. parse the payload and compare requestDetails.requestHash (or .nonce) with the nonce.
 *
 * With jose, as attestd's `openWithResponseKeys` (src/attestation/encoding/playIntegrityToken.ts) does, so the
 * crypto compared is the same code on both sides; the keys are imported once (attestd caches them per registration).
 * No structure checks, no header rules, no package, freshness or verdict rules, no tenant's apps, no record: what it
 * skips is what attestd adds.
 */
import { compactDecrypt, compactVerify } from "jose";
import { createPublicKey, createSecretKey, type KeyObject } from "node:crypto";

export interface PlayFloorKeys {
  decryption: KeyObject;
  verification: KeyObject;
}

/** The response keys as the Play Console shows them (base64), imported once. */
export function playFloorKeys(decryptionKeyB64: string, verificationKeyB64: string): PlayFloorKeys {
  return {
    decryption: createSecretKey(Buffer.from(decryptionKeyB64, "base64")),
    verification: createPublicKey({ key: Buffer.from(verificationKeyB64, "base64"), format: "der", type: "spki" }),
  };
}

/** The payload's fields the floor reads (and the baseline's answer echoes). */
export interface PlayFloorPayload {
  requestDetails?: { requestHash?: string; nonce?: string };
  appIntegrity?: { certificateSha256Digest?: string[]; versionCode?: string };
}

/**
 * The floor's whole job for one token: the payload when it decrypts, its signature verifies and it answers
 * `nonce`; undefined otherwise.
 */
export async function playIntegrityFloor(token: string, nonce: string, keys: PlayFloorKeys): Promise<PlayFloorPayload | undefined> {
  try {
    const { plaintext } = await compactDecrypt(token, keys.decryption, { keyManagementAlgorithms: ["A256KW"], contentEncryptionAlgorithms: ["A256GCM"] });
    const { payload } = await compactVerify(plaintext, keys.verification, { algorithms: ["ES256"] });
    const p = JSON.parse(Buffer.from(payload).toString("utf8")) as PlayFloorPayload;
    const said = p.requestDetails?.requestHash ?? p.requestDetails?.nonce;
    return said === nonce ? p : undefined;
  } catch {
    return undefined;
  }
}
