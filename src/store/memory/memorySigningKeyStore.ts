import type { SigningKeyRecord } from "../../domain/signingKeys.ts";
import type { SigningKeyStore } from "../types.ts";

/** Result signing keys in process memory: for tests and single-process use. */
export class MemorySigningKeyStore implements SigningKeyStore {
  private keys: SigningKeyRecord[] = [];

  async listSigningKeys(nowIso: string): Promise<SigningKeyRecord[]> {
    return this.keys
      .filter((k) => k.retiresAt === null || k.retiresAt > nowIso)
      .sort((a, b) => (a.createdAt === b.createdAt ? (a.kid < b.kid ? -1 : 1) : a.createdAt > b.createdAt ? -1 : 1))
      .map((k) => ({ ...k }));
  }

  async putFirstSigningKey(k: SigningKeyRecord): Promise<SigningKeyRecord> {
    const current = this.keys.find((x) => x.retiresAt === null);
    if (current) return { ...current };
    this.keys.push({ ...k, retiresAt: null });
    return { ...k, retiresAt: null };
  }

  async rotateSigningKey(k: SigningKeyRecord, retiresAt: string): Promise<{ retired: string | null }> {
    const current = this.keys.find((x) => x.retiresAt === null);
    if (current) current.retiresAt = retiresAt;
    this.keys.push({ ...k, retiresAt: null });
    return { retired: current?.kid ?? null };
  }
}
