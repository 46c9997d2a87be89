import { existsSync } from "node:fs";
import { cryptoRng, type Rng } from "../clock.ts";
import type { SecretsStore } from "../store/types.ts";
import { generateKeyFile, readKeyFile, secretsKeyFileOf, type SecretsSettings } from "./keyFile.ts";
import { SecretBox, SecretsError, sealContext } from "./secretBox.ts";

export interface OpenedSecrets {
  box: SecretBox;
  keyFile: string;
  /** this call made the key file (first start) */
  generated: boolean;
  /** values this call sealed or resealed in the store (plaintext from before sealing, or an older key's) */
  resealed: number;
}

/**
 * Start-up of sealed secrets, for `serve` and the operator commands that seal or open one: reads (or, on the
 * store's first start, makes) the key file, checks it is the key the store's secrets are sealed with, and seals
 * every value in the store that is not sealed with its current key. Never silently: a missing key file the store
 * needs, a wrong key, or a value that does not open throws SecretsError, one line saying which and what to do.
 */
export async function openSecrets(store: SecretsStore, s: SecretsSettings, rng: Rng = cryptoRng): Promise<OpenedSecrets> {
  const keyFile = secretsKeyFileOf(s);
  const recorded = await store.sealingKeyId();
  let generated = false;
  if (!existsSync(keyFile)) {
    if (s.secretsKeyFile !== undefined) throw new SecretsError(`--secrets-key-file ${keyFile} does not exist`);
    if (recorded !== undefined) {
      throw new SecretsError(
        `the store's secrets are sealed with key ${recorded} and there is no key file at ${keyFile}: ` +
          "restore it there, or give it with --secrets-key-file",
      );
    }
    generated = generateKeyFile(keyFile, rng);
  }
  const box = new SecretBox(readKeyFile(keyFile), rng);
  const mismatch = (storeKey: string) =>
    new SecretsError(
      `the store's secrets are sealed with key ${storeKey}, but ${keyFile} holds ${box.keyIds.join(", ")}: ` +
        "give every instance and command the key file they were sealed with (--secrets-key-file)",
    );
  if (recorded !== undefined && !box.has(recorded)) throw mismatch(recorded);
  const sealed = await store.sealAll({
    keyId: box.currentKeyId,
    sealedPrefix: box.currentPrefix,
    reseal: (value, purpose, recordId) => box.reseal(value, sealContext(purpose, recordId)),
    accepts: (id) => box.has(id),
  });
  // another process recorded another key between the read above and sealAll's transaction
  if (sealed.outcome === "conflict") throw mismatch(sealed.recordedKeyId);
  return { box, keyFile, generated, resealed: sealed.resealed };
}

/** The start-up lines: which key seals the store's secrets and where it is; a new key and sealed plaintext said so. */
export function logSecrets(log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }, s: OpenedSecrets): void {
  const facts = { keyFile: s.keyFile, keyId: s.box.currentKeyId };
  if (s.generated) log.warn(facts, "secrets key generated (mode 0600): back it up apart from the database, whose sealed secrets cannot be read without it");
  else log.info(facts, "secrets key in use");
  if (s.resealed > 0) log.info({ ...facts, resealed: s.resealed }, "secrets in the store sealed with this key (plaintext or an older key's before)");
}
