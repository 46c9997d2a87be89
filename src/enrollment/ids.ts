import { hashSecret, secretMatches, UNKNOWN_SECRET_HASH } from "../auth/apiKeys.ts";
import type { Rng } from "../clock.ts";

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** `prefix` + `n` random base32 characters (5 bits each, from the CSPRNG). */
export function randomId(rng: Rng, prefix: string, n = 16): string {
  return prefix + Array.from(rng.bytes(n), (b) => BASE32[b & 31]).join("");
}

/**
 * Bearer secrets of Part B (client identifiers, access tokens) share the API keys' layout: `<id>.<secret>`. The id
 * finds the record with an indexed lookup; the 256-bit secret is kept only as SHA-256 and compared in constant
 * time, so neither a database leak nor response timing gives the secret away.
 */
export interface SecretToken {
  token: string;
  id: string;
  hash: string;
}

export function newSecretToken(rng: Rng, idPrefix: string): SecretToken {
  const id = randomId(rng, idPrefix);
  const secret = rng.bytes(32).toString("base64url");
  return { token: `${id}.${secret}`, id, hash: hashSecret(secret) };
}

export function parseSecretToken(token: string, idPrefix: string): { id: string; secret: string } | undefined {
  if (token.length !== idPrefix.length + 16 + 1 + 43 || !token.startsWith(idPrefix)) return undefined;
  const m = /^([a-z0-9_]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m || !/^[a-z2-7]{16}$/.test(m[1]!.slice(idPrefix.length))) return undefined;
  return { id: m[1]!, secret: m[2]! };
}

export { secretMatches, UNKNOWN_SECRET_HASH };

export const CLIENT_ID_PREFIX = "cl_";
export const ACCESS_TOKEN_PREFIX = "at_";
