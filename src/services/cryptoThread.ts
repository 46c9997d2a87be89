/**
 * A crypto thread's code (CryptoThreads, cryptoThreads.ts): the per-request signature work of two formats, off the
 * event loop. Each message is a `ThreadRequest`: a Play Integrity token to open with one app's response keys
 * (`openTokenWithKeys`), or an App Attest assertion's signature to check against the key's point
 * (`firstVerifying`). The answer is `{ id, opened }`, `{ id, verified }` or `{ id, error }` with the error's kind, so
 * the caller rebuilds the same error classes the inline call throws.
 */
import { parentPort } from "node:worker_threads";
import { appAttestKeyObject, firstVerifying } from "../attestation/formats/appAttest.ts";
import { openTokenWithKeys, PlayOpenError, PlayResponseKeyError, PlayTokenError, type OpenedToken } from "../attestation/encoding/playIntegrityToken.ts";
import type { PlayResponseKeys } from "../domain/playApps.ts";

/** Work sent to a thread. */
export type ThreadRequest =
  /** a Play Integrity token to open with one app's keys */
  | { id: number; kind: "play-open"; token: string; keys: PlayResponseKeys }
  /** an App Attest assertion's signature, and the messages it may be over, against the key's point (base64) */
  | { id: number; kind: "app-attest-signature"; publicKey: string; messages: Uint8Array[]; signature: Uint8Array };

/** A thread's answer: what the work gave, or the kind of error it threw and its message. */
export interface ThreadAnswer {
  id: number;
  opened?: OpenedToken;
  /** firstVerifying's index */
  verified?: number;
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

function kindOf(e: unknown): NonNullable<ThreadAnswer["error"]>["kind"] {
  if (e instanceof PlayOpenError) return "open";
  if (e instanceof PlayTokenError) return "token";
  if (e instanceof PlayResponseKeyError) return "keys";
  return "other";
}

const failed = (id: number, e: unknown): ThreadAnswer => ({ id, error: { kind: kindOf(e), message: e instanceof Error ? e.message : String(e) } });

parentPort!.on("message", (m: ThreadRequest) => {
  if (m.kind === "app-attest-signature") {
    let answer: ThreadAnswer;
    try {
      answer = { id: m.id, verified: firstVerifying(appAttestKeyObject(m.publicKey), m.messages, m.signature) };
    } catch (e) {
      answer = failed(m.id, e);
    }
    parentPort!.postMessage(answer);
    return;
  }
  openTokenWithKeys(m.token, sameKeys(m.keys)).then(
    (opened) => parentPort!.postMessage({ id: m.id, opened } satisfies ThreadAnswer),
    (e: unknown) => parentPort!.postMessage(failed(m.id, e)),
  );
});
