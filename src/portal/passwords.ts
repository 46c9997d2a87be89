import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { COMMON_PASSWORDS } from "./commonPasswords.ts";

/**
 * Portal passwords: scrypt, a 16-byte random salt per user, stored as `scrypt$N$r$p$salt$hash` so the parameters
 * can be raised without breaking old hashes: a hash of weaker parameters is replaced at its user's next sign-in
 * (PortalAccounts.signIn). scrypt rather than argon2id: node:crypto's argon2 is new in Node 24 (24.7) and is
 * missing from a Node built against a system OpenSSL older than 3.2, so it is not on every Node that package.json's
 * engines admit; scrypt is.
 */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/**
 * OWASP's minimum for scrypt (Password Storage Cheat Sheet): N=2^17, r=8, p=1. Each hash holds 128·N·r = 128 MiB
 * while it runs, ~260 ms on an idle core of this project's CI machine (measured), off the event loop in node's pool.
 */
export const PASSWORD_COST: ScryptCost = { N: 2 ** 17, r: 8, p: 1 };

/**
 * At most this many hashes run at once in a process, the rest wait their turn: a burst of sign-ins costs time,
 * never more than 2 × 128 MiB. (node's pool has 4 threads, which the Part A path shares.)
 */
export const HASHING_CONCURRENCY = 2;

/** The most a stored hash may ask for: a tampered row must not make one verification allocate gigabytes. */
const MAX_COST: ScryptCost = { N: 2 ** 20, r: 16, p: 4 };

const KEY_BYTES = 32;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

/** A counting semaphore: the process-wide bound on hashes in flight, whatever PasswordHasher asks. */
class HashingGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** the most ever in flight at once, and how many ever began: what the tests count instead of timing */
  peak = 0;
  started = 0;
  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    this.peak = Math.max(this.peak, this.running);
    this.started++;
    try {
      return await fn();
    } finally {
      // the slot passes straight to the next in line, so `running` never dips and lets a newcomer overtake
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

export const hashingGate = new HashingGate(HASHING_CONCURRENCY);

function derive(password: string, salt: Buffer, o: ScryptCost): Promise<Buffer> {
  // scrypt refuses to use more than maxmem; twice 128·N·r leaves room for node's bookkeeping
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: 256 * o.N * o.r };
  return hashingGate.run(
    () => new Promise((resolve, reject) => scrypt(password.normalize("NFC"), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)))),
  );
}

function parse(stored: string): { cost: ScryptCost; salt: Buffer; key: Buffer } | undefined {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((x) => Number.isInteger(x) && x > 0) || N > MAX_COST.N || r > MAX_COST.r || p > MAX_COST.p) return undefined;
  return { cost: { N, r, p }, salt: Buffer.from(parts[4]!, "base64url"), key: Buffer.from(parts[5]!, "base64url") };
}

/**
 * Hashes and checks portal passwords at one cost: PASSWORD_COST in production. Tests of other things give a
 * cheaper one (RuntimeOptions.passwordCost); every hasher shares the process's one HashingGate.
 */
export class PasswordHasher {
  private dummy: Promise<string> | undefined;
  constructor(readonly cost: ScryptCost = PASSWORD_COST) {}

  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const key = await derive(password, salt, this.cost);
    return ["scrypt", this.cost.N, this.cost.r, this.cost.p, salt.toString("base64url"), key.toString("base64url")].join("$");
  }

  /** Constant-time comparison of the derived key; a malformed stored hash never matches. */
  async verify(password: string, stored: string): Promise<boolean> {
    const h = parse(stored);
    if (!h) return false;
    const key = await derive(password, h.salt, h.cost);
    return h.key.length === key.length && timingSafeEqual(h.key, key);
  }

  /** A stored hash made with other parameters than this hasher's, to be replaced once the password is known. */
  needsRehash(stored: string): boolean {
    const h = parse(stored);
    return !h || h.cost.N !== this.cost.N || h.cost.r !== this.cost.r || h.cost.p !== this.cost.p;
  }

  /**
   * Verifies against a hash of nothing anyone knows, when the email is unknown (or has no password yet), so a
   * wrong email costs the same scrypt as a wrong password and the time of the answer does not say which it was.
   */
  async verifyAgainstNothing(password: string): Promise<false> {
    this.dummy ??= this.hash(randomBytes(24).toString("base64url"));
    await this.verify(password, await this.dummy);
    return false;
  }
}

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string, email: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `a password needs at least ${MIN_PASSWORD_LENGTH} characters`;
  if (length > MAX_PASSWORD_LENGTH) return `a password has at most ${MAX_PASSWORD_LENGTH} characters`;
  // twelve spaces pass the length rule but are the first thing a guesser tries, and look empty to the person
  if (password.trim() === "") return "a password must not be only spaces";
  const lower = password.toLowerCase();
  if (COMMON_PASSWORDS.has(lower)) return "this password is one of the most common ones; choose another";
  const mail = email.toLowerCase();
  if (lower === mail || lower === mail.split("@")[0]) return "a password must not be the email address";
  return undefined;
}
