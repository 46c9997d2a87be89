/**
 * A Play Integrity token thread's code (PlayTokenThreads, playTokenThreads.ts): opens tokens with response keys
 * off the event loop. Each message is `{ id, token, keys }`; the answer is `{ id, opened }` (payload and structure) or `{ id, error }`
 * with the error's kind, so the caller rebuilds the same error classes `openTokenWithKeys` throws inline.
 */
import { parentPort } from "node:worker_threads";
import { openTokenWithKeys, PlayOpenError, PlayResponseKeyError, PlayTokenError, type OpenedToken } from "../attestation/encoding/playIntegrityToken.ts";
import type { PlayResponseKeys } from "../domain/playApps.ts";

/** A token to open with one app's keys, as sent to a thread. */
export interface OpenRequest {
  id: number;
  token: string;
  keys: PlayResponseKeys;
}

/** A thread's answer: the opened token, or the kind of error `openTokenWithKeys` threw and its message. */
export interface OpenAnswer {
  id: number;
  opened?: OpenedToken;
  error?: { kind: "open" | "token" | "keys" | "other"; message: string };
}

// The imported keys are cached by the keys object (importResponseKeys' WeakMap); messages bring fresh copies, so
// the thread keeps one copy per distinct key pair (an app's keys change only when it is registered again).
const MAX_KEY_PAIRS = 1_024;
const keyPairs = new Map<string, PlayResponseKeys>();

function sameKeys(keys: PlayResponseKeys): PlayResponseKeys {
  const id = `${Buffer.from(keys.decryptionKey).toString("base64")}.${Buffer.from(keys.verificationKeySpki).toString("base64")}`;
  const known = keyPairs.get(id);
  if (known) return known;
  if (keyPairs.size >= MAX_KEY_PAIRS) keyPairs.clear();
  keyPairs.set(id, keys);
  return keys;
}

function kindOf(e: unknown): NonNullable<OpenAnswer["error"]>["kind"] {
  if (e instanceof PlayOpenError) return "open";
  if (e instanceof PlayTokenError) return "token";
  if (e instanceof PlayResponseKeyError) return "keys";
  return "other";
}

parentPort!.on("message", (m: OpenRequest) => {
  openTokenWithKeys(m.token, sameKeys(m.keys)).then(
    (opened) => parentPort!.postMessage({ id: m.id, opened } satisfies OpenAnswer),
    (e: unknown) => parentPort!.postMessage({ id: m.id, error: { kind: kindOf(e), message: e instanceof Error ? e.message : String(e) } } satisfies OpenAnswer),
  );
});
