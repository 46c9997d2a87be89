import { constants, createPrivateKey, createPublicKey, generateKeyPair, privateDecrypt, publicEncrypt, type KeyObject } from "node:crypto";
import { promisify } from "node:util";
import type { Clock } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { TenantKeyRecord } from "../domain/enrollment.ts";
import { sealContext, type SecretBox } from "../secrets/secretBox.ts";
import { TENANT_PRIVATE_KEY_PURPOSE } from "../store/sealedColumns.ts";
import type { EnrollmentStore } from "../store/types.ts";

const generateRsa = promisify(generateKeyPair);

export const ENCRYPTION_ALGORITHM = "RSA-OAEP-256" as const;
const MAX_CIPHERTEXT_B64 = 1024;

/** What a client does with GET /svc/v1/tenant/encryption-key: RSA-OAEP with SHA-256 (MGF1 SHA-256), base64. */
export function encryptForTenant(publicKeyB64: string, plaintext: string): string {
  const key = createPublicKey({ key: Buffer.from(publicKeyB64, "base64"), format: "der", type: "spki" });
  return publicEncrypt(
    { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
    Buffer.from(plaintext, "utf8"),
  ).toString("base64");
}

/**
 * One RSA key pair per tenant for fields clients encrypt (userPassword). Made on first use and kept in the
 * enrollment store, the private key sealed with the operator's secrets key (src/secrets/); it never leaves the
 * server. Two instances racing to make a tenant's first key both end up with whichever the store kept
 * (putTenantKeyIfAbsent).
 */
export class TenantKeyService {
  private readonly privateKeys = new Map<string, KeyObject>();
  private readonly making = new Map<string, Promise<TenantKeyRecord>>();

  constructor(
    private readonly store: EnrollmentStore,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly modulusLength = 3072,
  ) {}

  /** The tenant's public key (base64 SPKI DER), making the pair on first use. */
  async publicKey(tenantId: string): Promise<string> {
    const existing = await this.store.getTenantKey(tenantId);
    if (existing) return existing.publicKey;
    let pending = this.making.get(tenantId);
    if (!pending) {
      pending = this.make(tenantId).finally(() => this.making.delete(tenantId));
      this.making.set(tenantId, pending);
    }
    return (await pending).publicKey;
  }

  private async make(tenantId: string): Promise<TenantKeyRecord> {
    const { publicKey, privateKey } = await generateRsa("rsa", {
      modulusLength: this.modulusLength,
      publicKeyEncoding: { type: "spki", format: "der" },
      privateKeyEncoding: { type: "pkcs8", format: "der" },
    });
    return this.store.putTenantKeyIfAbsent({
      tenantId,
      publicKey: publicKey.toString("base64"),
      privateKey: this.secrets.seal(privateKey.toString("base64"), sealContext(TENANT_PRIVATE_KEY_PURPOSE, tenantId)),
      createdAt: new Date(this.clock.nowMs()).toISOString(),
    });
  }

  /** Decrypts a base64 RSA-OAEP-256 ciphertext made with the tenant's public key; 500 RSA_DECRYPTION_FAIL otherwise. */
  async decrypt(tenantId: string, ciphertextB64: string, field = "text"): Promise<Buffer> {
    const fail = () => new AppError(catalog.RSA_DECRYPTION_FAIL, `The ${field} could not be decrypted with the tenant's key`);
    if (ciphertextB64.length === 0 || ciphertextB64.length > MAX_CIPHERTEXT_B64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(ciphertextB64)) {
      throw fail();
    }
    const key = await this.privateKey(tenantId);
    if (!key) throw fail();
    try {
      return privateDecrypt(
        { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
        Buffer.from(ciphertextB64, "base64"),
      );
    } catch {
      throw fail();
    }
  }

  private async privateKey(tenantId: string): Promise<KeyObject | undefined> {
    let key = this.privateKeys.get(tenantId);
    if (!key) {
      const rec = await this.store.getTenantKey(tenantId);
      if (!rec) return undefined;
      let pkcs8: string;
      try {
        pkcs8 = this.secrets.open(rec.privateKey, sealContext(TENANT_PRIVATE_KEY_PURPOSE, tenantId));
      } catch (e) {
        // the operator's problem (a row altered or copied from another tenant), told to the activity log only
        throw new AppError(catalog.INTERNAL_SERVER_ERROR, "The tenant's encryption key cannot be used", {}, (e as Error).message);
      }
      key = createPrivateKey({ key: Buffer.from(pkcs8, "base64"), format: "der", type: "pkcs8" });
      if (this.privateKeys.size >= 10_000) this.privateKeys.clear();
      this.privateKeys.set(tenantId, key);
    }
    return key;
  }
}
