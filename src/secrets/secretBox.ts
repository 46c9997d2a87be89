import { createCipheriv, createDecipheriv, createHmac } from "node:crypto";
import { cryptoRng, type Rng } from "../clock.ts";
import { OperatorError } from "../errors/operatorError.ts";

/**
 * Sealing of secrets kept at rest (tenants' RSA private keys, and any record's secret column): AES-256-GCM under a
 * key the operator holds outside the store (`--secrets-key-file`, see keyFile.ts).
 *
 * A sealed value is text: `sealed:v1:<key id>:<base64url of 12-byte nonce | ciphertext | 16-byte tag>`.
 * - `v1` is the format; a later format gets another prefix, and both can be read during a migration.
 * - The key id (16 hex digits derived from the key, never the key) says which key sealed it, so a key file may hold
 *   the new key and the old ones while values are resealed (rotation), and a wrong key is named, not guessed at.
 * - The additional authenticated data binds the value to where it belongs (`context`, e.g. the purpose and the
 *   record's id), so a sealed value copied into another record does not open there.
 * Anything without the prefix is a plaintext value from before sealing (`isSealed`).
 */

export const SEALED_PREFIX = "sealed:v1:";
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_RE = /^[0-9a-f]{16}$/;

/** A problem with the secrets key or a sealed value: start-up prints it as one line. */
export class SecretsError extends OperatorError {}

export function keyIdOf(key: Buffer): string {
  return createHmac("sha256", key).update("attestd secrets key id").digest("hex").slice(0, 16);
}

export function isSealed(value: string): boolean {
  return value.startsWith(SEALED_PREFIX);
}

/** The id of the key `value` is sealed with; undefined for a plaintext value. */
export function sealedKeyId(value: string): string | undefined {
  if (!isSealed(value)) return undefined;
  const id = value.slice(SEALED_PREFIX.length, SEALED_PREFIX.length + 16);
  return KEY_ID_RE.test(id) && value[SEALED_PREFIX.length + 16] === ":" ? id : undefined;
}

/** The additional authenticated data of a sealed value: what it is and whose. */
export function sealContext(purpose: string, recordId: string): string {
  return `${purpose}:${recordId}`;
}

/**
 * The keyring: the current key seals, every key opens what it sealed. Keys are 32 bytes; the first is current.
 * Holds no I/O: keyFile.ts reads and writes the file, openSecrets.ts checks the keyring against the store.
 */
export class SecretBox {
  private readonly keys = new Map<string, Buffer>();
  readonly currentKeyId: string;

  /** `rng` draws the GCM nonces (96 random bits each: at most a few thousand values per key, far from collision) */
  constructor(
    keys: readonly Buffer[],
    private readonly rng: Rng = cryptoRng,
  ) {
    if (keys.length === 0) throw new SecretsError("a secrets keyring needs at least one key");
    for (const k of keys) {
      if (k.length !== KEY_BYTES) throw new SecretsError(`a secrets key is ${KEY_BYTES} bytes, not ${k.length}`);
      this.keys.set(keyIdOf(k), Buffer.from(k));
    }
    this.currentKeyId = keyIdOf(keys[0]!);
  }

  /** how every value sealed with the current key begins */
  get currentPrefix(): string {
    return `${SEALED_PREFIX}${this.currentKeyId}:`;
  }

  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /** Seals `plaintext` with the current key, bound to `context`. */
  seal(plaintext: string, context: string): string {
    const head = this.currentPrefix;
    const nonce = this.rng.bytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.keys.get(this.currentKeyId)!, nonce);
    cipher.setAAD(Buffer.from(head + context, "utf8"));
    const body = Buffer.concat([nonce, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return head + body.toString("base64url");
  }

  /** Opens a sealed value; throws SecretsError when it is not sealed, its key is not in the ring, or it was altered. */
  open(sealed: string, context: string): string {
    const keyId = sealedKeyId(sealed);
    if (!keyId) throw new SecretsError(`the ${context} value is not sealed`);
    const key = this.keys.get(keyId);
    if (!key) throw new SecretsError(`the ${context} value is sealed with key ${keyId}, which the secrets key file does not hold`);
    const head = `${SEALED_PREFIX}${keyId}:`;
    const body = Buffer.from(sealed.slice(head.length), "base64url");
    if (body.length < NONCE_BYTES + TAG_BYTES) throw new SecretsError(`the ${context} value is truncated`);
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, body.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(head + context, "utf8"));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw new SecretsError(`the ${context} value does not open with key ${keyId}: altered, or moved from another record`);
    }
  }

  /** What a value should become under the current key: a plaintext sealed, an older key's value resealed. */
  reseal(value: string, context: string): string {
    return this.seal(isSealed(value) ? this.open(value, context) : value, context);
  }
}
