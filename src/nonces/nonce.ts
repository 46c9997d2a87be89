import type { Rng } from "../clock.ts";

/**
 * What a nonce is, as a string and as the challenge bytes it stands for: its shape, its generation and its
 * decoding. Pure (no store, no clock, no randomness of its own), so that src/attestation/ can import it; the
 * issuing and spending over a store are in nonceService.ts.
 */

/** a nonce is this many CSPRNG bytes */
export const NONCE_BYTES = 32;

/**
 * base64url of NONCE_BYTES bytes, unpadded: the only shape a nonce this service issued can have. A string so
 * that TypeBox response schemas can carry it as their `pattern`.
 */
export const NONCE_PATTERN = "^[A-Za-z0-9_-]{43}$";

const NONCE_RE = new RegExp(NONCE_PATTERN);

export function isNonceShaped(s: string): boolean {
  return NONCE_RE.test(s);
}

export function newNonce(rng: Rng): string {
  return rng.bytes(NONCE_BYTES).toString("base64url");
}

/** The NONCE_BYTES bytes a nonce-shaped string encodes; undefined for any other string. */
export function decodeNonce(nonce: string): Buffer | undefined {
  if (!isNonceShaped(nonce)) return undefined;
  const decoded = Buffer.from(nonce, "base64url");
  return decoded.length === NONCE_BYTES ? decoded : undefined;
}

/**
 * The challenge bytes a device may carry for a nonce: the 32 bytes the base64url string encodes, or, since apps
 * often pass the string itself, its ASCII bytes (blob-format.md).
 */
export function challengesForNonce(nonce: string): Buffer[] {
  const out: Buffer[] = [];
  if (nonce.length === 0) return out;
  const decoded = decodeNonce(nonce);
  if (decoded) out.push(decoded);
  out.push(Buffer.from(nonce, "ascii"));
  return out;
}

/** An empty challenge never matches: it would stand for every nonce, and an empty nonce for none. */
export function challengeMatches(nonce: string, challenge: Uint8Array): boolean {
  if (challenge.length === 0) return false;
  return challengesForNonce(nonce).some((c) => c.length === challenge.length && c.equals(challenge));
}
