import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Rng } from "../clock.ts";

/**
 * API key layout: `atd_<keyId>_<secret>`. The prefix makes a leaked key recognisable to secret scanners; the
 * keyId (10 base32 chars) finds the record without a scan; the secret is 32 CSPRNG bytes (base64url). Only
 * SHA-256(secret) is stored: a 256-bit random secret needs no slow hash, and lookups stay cheap.
 */
export const API_KEY_PREFIX = "atd_";
const KEY_RE = /^atd_([a-z2-7]{10})_([A-Za-z0-9_-]{43})$/;

export interface NewApiKey {
  key: string;
  keyId: string;
  secretHash: string;
}

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

export function generateApiKey(rng: Rng): NewApiKey {
  const idBytes = rng.bytes(10);
  const keyId = Array.from(idBytes, (b) => BASE32[b & 31]).join("");
  const secret = rng.bytes(32).toString("base64url");
  return { key: `${API_KEY_PREFIX}${keyId}_${secret}`, keyId, secretHash: hashSecret(secret) };
}

// crypto.hash is the one-shot form: no Hash object per call, which on the per-request path cost more than the
// SHA-256 itself.
export function hashSecret(secret: string): string {
  return hash("sha256", secret, "hex");
}

/**
 * The stored hash an unknown id's secret is compared with (API keys, Part B client identifiers and access
 * tokens), so that answering "no such id" costs the same hashing and comparison as "wrong secret": the answer
 * time must not tell an attacker which ids exist. It is the hash of a secret nobody holds, made at start-up.
 */
export const UNKNOWN_SECRET_HASH: string = hashSecret(randomBytes(32).toString("base64url"));

export function parseApiKey(key: string): { keyId: string; secret: string } | undefined {
  const m = KEY_RE.exec(key);
  return m ? { keyId: m[1]!, secret: m[2]! } : undefined;
}

/**
 * Constant-time comparison of the presented secret's hash with the stored one (hex, or its bytes when the caller
 * keeps them decoded).
 */
export function secretMatches(secret: string, storedHash: string | Buffer): boolean {
  const presented = hash("sha256", secret, "buffer") as unknown as Buffer;
  const stored = typeof storedHash === "string" ? Buffer.from(storedHash, "hex") : storedHash;
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
