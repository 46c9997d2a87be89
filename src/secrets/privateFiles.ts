import { chmodSync, closeSync, existsSync, linkSync, mkdirSync, openSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * Files only the service's user can read. The data directory holds the SQLite store (tenants' keys, the activity
 * log), the secrets key and the dev TLS key, so it is made 0700 and what is secret in it 0600, whatever the umask.
 * Existing ones are left as the operator set them: start-up warns about each that is looser (`looseModes`).
 */

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Makes `dir` (and any missing parent) 0700; an existing directory keeps its mode. */
export function ensurePrivateDir(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates `file` empty and 0600 unless it exists. SQLite makes its -wal and -shm files with the database file's
 * mode, so creating the database this way before SQLite opens it makes all three private.
 */
export function ensurePrivateFile(file: string): void {
  ensurePrivateDir(path.dirname(file));
  closeSync(openSync(file, "a", PRIVATE_FILE_MODE));
}

/** Writes `file` (made or replaced) and leaves it 0600, whatever mode it had. */
export function writePrivateFile(file: string, content: string | Buffer): void {
  ensurePrivateDir(path.dirname(file));
  writeFileSync(file, content, { mode: PRIVATE_FILE_MODE });
  chmodSync(file, PRIVATE_FILE_MODE);
}

/**
 * Creates `file` 0600 with `content` only if it does not exist, atomically: a reader never sees half of it, and of
 * processes racing to create it (cluster workers on their first start) exactly one wins. False when it existed.
 */
export function createPrivateFileExclusively(file: string, content: string): boolean {
  ensurePrivateDir(path.dirname(file));
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, content, { mode: PRIVATE_FILE_MODE, flag: "wx" });
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  } finally {
    unlinkSync(tmp);
  }
}

export interface LooseMode {
  path: string;
  /** e.g. "0644" */
  mode: string;
  /** e.g. "0600" */
  expected: string;
}

const octal = (m: number) => "0" + m.toString(8).padStart(3, "0");

/** Those of `paths` that exist and let anyone but their owner in (group or other bits beyond `max`). */
export function looseModes(paths: readonly { path: string; max: number }[]): LooseMode[] {
  const out: LooseMode[] = [];
  for (const p of paths) {
    let mode: number;
    try {
      mode = statSync(p.path).mode & 0o777;
    } catch {
      continue; // not there (a -wal between checkpoints, dev TLS not in use): nothing to protect
    }
    if ((mode & ~p.max) !== 0) out.push({ path: p.path, mode: octal(mode), expected: octal(p.max) });
  }
  return out;
}
