import { readFileSync } from "node:fs";
import path from "node:path";
import { cryptoRng, type Rng } from "../clock.ts";
import { createPrivateFileExclusively } from "./privateFiles.ts";
import { SecretsError } from "./secretBox.ts";

/**
 * The secrets key file: one 32-byte key per line in base64, the first the current one (it seals), the others older
 * keys kept while what they sealed is resealed (rotation: put a new key on the first line, start once, then drop
 * the old line). `#` lines are comments. `openssl rand -base64 32` makes a key.
 */

export interface SecretsSettings {
  /** --secrets-key-file; undefined = `<dataDir>/secrets.key`, made on first start */
  secretsKeyFile?: string | undefined;
  dataDir: string;
}

/** The key file the settings name: --secrets-key-file, or secrets.key in the data directory. */
export function secretsKeyFileOf(s: SecretsSettings): string {
  return path.resolve(s.secretsKeyFile ?? path.join(s.dataDir, "secrets.key"));
}

const KEY_LINE = /^(?:[A-Za-z0-9+/]{43}=|[A-Za-z0-9_-]{43})$/;

/** The keys of a key file, current first; SecretsError naming the file and line when it holds none or a bad one. */
export function readKeyFile(file: string): Buffer[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new SecretsError(`secrets key file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const keys: Buffer[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    if (!KEY_LINE.test(line)) {
      throw new SecretsError(`secrets key file ${file} line ${i + 1}: not a 32-byte key in base64 (openssl rand -base64 32 makes one)`);
    }
    keys.push(Buffer.from(line, line.includes("-") || line.includes("_") ? "base64url" : "base64"));
  }
  if (keys.length === 0) throw new SecretsError(`secrets key file ${file} holds no key`);
  return keys;
}

/** Makes a new key file 0600 unless one exists (another process may have made it first); true when this call made it. */
export function generateKeyFile(file: string, rng: Rng = cryptoRng): boolean {
  const text = [
    "# attestd secrets key (AES-256-GCM): it seals the secrets kept in the store, such as tenants' private keys.",
    "# Back it up apart from the database: without it those secrets cannot be read. Every instance and operator",
    "# command on the same store needs this same file (--secrets-key-file). To rotate, put a new key on the first",
    "# line, keep this one below it for one start (which reseals everything), then remove this one.",
    rng.bytes(32).toString("base64"),
    "",
  ].join("\n");
  return createPrivateFileExclusively(file, text);
}
