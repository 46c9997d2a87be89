import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { COMMON_PASSWORDS } from "./commonPasswords.ts";

/**
 * Portal passwords: scrypt (memory-hard: each guess costs 128·N·r bytes = 32 MiB here), a 16-byte random salt per
 * user, stored as `scrypt$N$r$p$salt$hash` so the parameters can be raised later without breaking old hashes.
 * One hash takes ~90 ms on this project's 2-core CI machine (measured), run off the event loop by node's thread pool.
 */
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
/** scrypt refuses to use more than maxmem; 128·N·r is 32 MiB, so twice that leaves room for node's bookkeeping */
const MAXMEM = 64 * 1024 * 1024;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: Math.max(MAXMEM, 256 * o.N * o.r) };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P });
  return ["scrypt", N, R, P, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** Constant-time comparison of the derived key; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![n, r, p].every((x) => Number.isInteger(x) && x > 0)) return false;
  const expected = Buffer.from(parts[5]!, "base64url");
  const key = await derive(password, Buffer.from(parts[4]!, "base64url"), { N: n, r, p });
  return expected.length === key.length && timingSafeEqual(expected, key);
}

/**
 * A hash of nothing anyone knows, verified when the email is unknown (or has no password yet), so a wrong email
 * costs the same scrypt as a wrong password and the time of the answer does not say which it was.
 */
let dummy: Promise<string> | undefined;
export async function verifyAgainstNothing(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(24).toString("base64url"));
  await verifyPassword(password, await dummy);
  return false;
}

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string, email: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `a password needs at least ${MIN_PASSWORD_LENGTH} characters`;
  if (length > MAX_PASSWORD_LENGTH) return `a password has at most ${MAX_PASSWORD_LENGTH} characters`;
  const lower = password.toLowerCase();
  if (COMMON_PASSWORDS.has(lower)) return "this password is one of the most common ones; choose another";
  const mail = email.toLowerCase();
  if (lower === mail || lower === mail.split("@")[0]) return "a password must not be the email address";
  return undefined;
}
