/**
 * The challenge bytes a device may carry for a nonce: the 32 bytes the base64url string encodes, or, since apps
 * often pass the string itself, its ASCII bytes (blob-format.md).
 */
export function challengesForNonce(nonce: string): Buffer[] {
  const out: Buffer[] = [];
  if (nonce.length === 0) return out;
  if (/^[A-Za-z0-9_-]{43}$/.test(nonce)) {
    const decoded = Buffer.from(nonce, "base64url");
    if (decoded.length === 32) out.push(decoded);
  }
  out.push(Buffer.from(nonce, "ascii"));
  return out;
}

/** An empty challenge never matches: it would stand for every nonce, and an empty nonce for none. */
export function challengeMatches(nonce: string, challenge: Uint8Array): boolean {
  if (challenge.length === 0) return false;
  return challengesForNonce(nonce).some((c) => c.length === challenge.length && c.equals(challenge));
}
