import { createCipheriv, createHash, randomBytes, sign, type KeyObject } from "node:crypto";

/**
 * A second JOSE implementation, for tests only: compact JWS (ES256) inside compact JWE (A256KW, A256GCM), built
 * from node:crypto primitives alone (RFC 3394 key wrap, AES-256-GCM, ECDSA P-256 with the IEEE P1363 signature
 * encoding JWS uses), never from jose. Tokens it makes must appraise exactly as jose-made ones do, so a bug shared
 * by jose's encoder and decoder cannot hide in the tests (issue 23, item 6).
 */

const b64u = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");

/** RFC 7515 §3.1, ES256 (RFC 7518 §3.4): the signature is r ‖ s, 32 bytes each. */
export function independentJws(payload: unknown, signingKey: KeyObject, header: Record<string, unknown> = { alg: "ES256" }): string {
  const input = `${b64u(JSON.stringify(header))}.${b64u(typeof payload === "string" ? payload : JSON.stringify(payload))}`;
  const signature = sign("sha256", Buffer.from(input, "ascii"), { key: signingKey, dsaEncoding: "ieee-p1363" });
  return `${input}.${b64u(signature)}`;
}

/**
 * RFC 7516 §3.1: A256KW wraps a fresh content key (RFC 3394, default IV A6A6A6A6A6A6A6A6), A256GCM encrypts the
 * plaintext with the protected header's ASCII as additional data.
 */
export function independentJwe(plaintext: string, kek: Uint8Array, header: Record<string, unknown> = { alg: "A256KW", enc: "A256GCM" }): string {
  const cek = randomBytes(32);
  const wrap = createCipheriv("id-aes256-wrap", Buffer.from(kek), Buffer.from("A6A6A6A6A6A6A6A6", "hex"));
  const encryptedKey = Buffer.concat([wrap.update(cek), wrap.final()]);
  const protectedHeader = b64u(JSON.stringify(header));
  const iv = randomBytes(12);
  const gcm = createCipheriv("aes-256-gcm", cek, iv);
  gcm.setAAD(Buffer.from(protectedHeader, "ascii"));
  const ciphertext = Buffer.concat([gcm.update(Buffer.from(plaintext, "utf8")), gcm.final()]);
  return [protectedHeader, b64u(encryptedKey), b64u(iv), b64u(ciphertext), b64u(gcm.getAuthTag())].join(".");
}

/** A Play Integrity token as Google makes one: the payload signed, then encrypted. */
export function independentPlayToken(payload: unknown, keys: { decryptionKey: Uint8Array; signingKey: KeyObject }): string {
  return independentJwe(independentJws(payload, keys.signingKey), keys.decryptionKey);
}

/** sha256 helper for fixtures: the base64url digest Google puts in certificateSha256Digest. */
export function certDigestB64u(certBytes: string): string {
  return createHash("sha256").update(certBytes).digest("base64url");
}
