import { createPublicKey, createSecretKey, type KeyObject } from "node:crypto";
import { compactDecrypt, compactVerify } from "jose";
import type { PlayIntegrityEvidence } from "../types.ts";
import type { PlayResponseKeys, RegisteredPlayApp } from "../../domain/playApps.ts";

/**
 * A Play Integrity token as the app receives it (mobile-attestation.md, "Telling the formats apart"): a compact JWE
 * (A256KW, A256GCM) whose plaintext is a compact JWS (ES256) over the verdict JSON. This module owns recognising
 * it by the bytes, its strict structure, opening it with an app's response keys (jose, algorithms pinned, never
 * taken from the token), and reading the keys as the Play Console gives them. docs/play-integrity.md, "Limits".
 */

/** The whole token, surrounding whitespace left out. Real tokens are 1–4 KiB; the bound is four times that. */
export const MAX_TOKEN_CHARS = 16_384;
/** The JWE protected header as base64url; Google's is `{"alg":"A256KW","enc":"A256GCM"}`, 43 characters. */
export const MAX_HEADER_CHARS = 512;
/** The decrypted JWS and its payload are bounded by the ciphertext, itself bounded by MAX_TOKEN_CHARS. */
export const MAX_PAYLOAD_BYTES = 12_288;
/** How many registered apps' response keys one token is tried with (each failed try is one AES key unwrap). */
export const MAX_APPS_TRIED = 32;

/** A256KW wraps the 32-byte content key into 40 bytes; A256GCM's IV is 96 bits and its tag 128. */
const ENCRYPTED_KEY_BYTES = 40;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** JWE header parameters a token may carry; `zip` and `crit` are refused by name, anything else unknown too. */
const JWE_HEADER_KEYS = new Set(["alg", "enc", "kid", "typ", "cty"]);
const JWS_HEADER_KEYS = new Set(["alg", "kid", "typ"]);

const B64URL = /^[A-Za-z0-9_-]+$/;
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** Why a token is not a well-formed Play Integrity token; the format turns it into BLOB_MALFORMED. */
export class PlayTokenError extends Error {}

/** Why a token did not open with one app's keys (wrong keys, tampered, not ES256 …): a verdict, not an error. */
export class PlayOpenError extends Error {}

/** Why response keys are unusable (the CLI, the registry and the admin API report it to the operator). */
export class PlayResponseKeyError extends Error {}

/** The token's text without surrounding ASCII whitespace, or undefined when a byte is not ASCII. */
function trimmedAscii(blob: Uint8Array): string | undefined {
  let start = 0;
  let end = blob.length;
  while (start < end && WHITESPACE.has(blob[start]!)) start++;
  while (end > start && WHITESPACE.has(blob[end - 1]!)) end--;
  for (let i = start; i < end; i++) if (blob[i]! > 0x7e || blob[i]! < 0x20) return undefined;
  return Buffer.from(blob.buffer, blob.byteOffset + start, end - start).toString("latin1");
}

/** base64url without padding, canonical (re-encodes to itself: no stray bits, no impossible length). */
function decodePart(part: string, name: string): Buffer {
  if (!B64URL.test(part)) throw new PlayTokenError(`${name}: not base64url`);
  const bytes = Buffer.from(part, "base64url");
  if (bytes.toString("base64url") !== part) throw new PlayTokenError(`${name}: not canonical base64url`);
  return bytes;
}

function parseJsonObject(bytes: Buffer, name: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new PlayTokenError(`${name}: not UTF-8 JSON`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new PlayTokenError(`${name}: not a JSON object`);
  return v as Record<string, unknown>;
}

/** The JWE header's own rules: exactly A256KW / A256GCM, no compression, no critical extension, nothing unknown. */
function checkJweHeader(h: Record<string, unknown>): void {
  if ("zip" in h) throw new PlayTokenError("protected header: compressed (zip) tokens are refused");
  if ("crit" in h) throw new PlayTokenError("protected header: critical extensions (crit) are refused");
  if (h.alg !== "A256KW" || h.enc !== "A256GCM") {
    throw new PlayTokenError(`protected header: alg ${JSON.stringify(h.alg)} / enc ${JSON.stringify(h.enc)}, expected A256KW / A256GCM`);
  }
  const unknown = Object.keys(h).filter((k) => !JWE_HEADER_KEYS.has(k));
  if (unknown.length > 0) throw new PlayTokenError(`protected header: unknown parameter(s) ${unknown.slice(0, 4).join(", ")}`);
}

/** The first part of `text` as a protected header, when it is one that says A256KW / A256GCM. */
function headerSays(text: string): boolean {
  const dot = text.indexOf(".");
  if (dot <= 0 || dot > MAX_HEADER_CHARS) return false;
  try {
    const h = parseJsonObject(decodePart(text.slice(0, dot), "protected header"), "protected header");
    return h.alg === "A256KW" && h.enc === "A256GCM";
  } catch {
    return false;
  }
}

/**
 * Whether the body is a Play Integrity token by the bytes alone: printable ASCII (surrounding whitespace
 * ignored), five dot-separated parts, and a first part that decodes to a JSON header saying A256KW / A256GCM.
 * Sizes and the other parts are `readPlayIntegrityToken`'s: a body shaped like a token is refused as one, with a
 * reason naming what is wrong, rather than handed to the vendor reader. Linear in the body (≤ maxBlobBytes).
 */
export function looksLikePlayIntegrityToken(blob: Uint8Array): boolean {
  const text = trimmedAscii(blob);
  if (text === undefined || text.split(".", 6).length !== 5) return false;
  return headerSays(text);
}

/**
 * For a body no format accepted: why it is not a Play Integrity token either, when it looks like an attempt at
 * one (dot-separated base64url text), else undefined. appraise.ts adds it to the BLOB_MALFORMED reason.
 */
export function whyNotPlayIntegrityToken(blob: Uint8Array): string | undefined {
  const text = trimmedAscii(blob);
  if (text === undefined || !/^[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]*)+$/.test(text)) return undefined;
  const parts = text.split(".").length;
  if (parts !== 5) return `not play-integrity either: a compact JWE has 5 dot-separated parts, this text has ${parts}`;
  return "not play-integrity either: its protected header does not say alg A256KW, enc A256GCM";
}

/** The five parts of a token, decoded and checked: what both the opener and the appraisal rely on. */
export interface PlayTokenParts {
  /** the compact serialization, whitespace left out */
  compact: string;
  header: Record<string, unknown>;
  ciphertextBytes: number;
}

/** Strict structure (no key needed): throws PlayTokenError naming the first rule the token breaks. */
export function readPlayIntegrityToken(blob: Uint8Array): PlayTokenParts {
  const text = trimmedAscii(blob);
  if (text === undefined) throw new PlayTokenError("not printable ASCII");
  if (text.length > MAX_TOKEN_CHARS) throw new PlayTokenError(`${text.length} characters, more than ${MAX_TOKEN_CHARS}`);
  const parts = text.split(".");
  if (parts.length !== 5) throw new PlayTokenError(`${parts.length} dot-separated parts, expected 5 (compact JWE)`);
  const [h, k, iv, ct, tag] = parts as [string, string, string, string, string];
  if (h.length > MAX_HEADER_CHARS) throw new PlayTokenError(`protected header: more than ${MAX_HEADER_CHARS} characters`);
  const header = parseJsonObject(decodePart(h, "protected header"), "protected header");
  checkJweHeader(header);
  const sized = (part: string, name: string, bytes: number) => {
    const b = decodePart(part, name);
    if (b.length !== bytes) throw new PlayTokenError(`${name}: ${b.length} bytes, expected ${bytes}`);
  };
  sized(k, "encrypted key", ENCRYPTED_KEY_BYTES);
  sized(iv, "iv", IV_BYTES);
  const ciphertext = decodePart(ct, "ciphertext");
  sized(tag, "tag", TAG_BYTES);
  return { compact: text, header, ciphertextBytes: ciphertext.length };
}

interface ImportedKeys {
  decryption: KeyObject;
  verification: KeyObject;
}

// Importing a P-256 key costs tens of µs; a registration's keys object is reused across tokens.
const imported = new WeakMap<PlayResponseKeys, ImportedKeys>();

/** The keys as node KeyObjects, refusing anything but a 32-byte AES key and an EC P-256 SubjectPublicKeyInfo. */
export function importResponseKeys(keys: PlayResponseKeys): ImportedKeys {
  const cached = imported.get(keys);
  if (cached) return cached;
  if (keys.decryptionKey.length !== 32) {
    throw new PlayResponseKeyError(`decryption key: ${keys.decryptionKey.length} bytes, expected 32 (AES-256)`);
  }
  let verification: KeyObject;
  try {
    verification = createPublicKey({ key: Buffer.from(keys.verificationKeySpki), format: "der", type: "spki" });
  } catch {
    throw new PlayResponseKeyError("verification key: not an X.509 SubjectPublicKeyInfo (DER)");
  }
  const details = verification.asymmetricKeyDetails;
  if (verification.asymmetricKeyType !== "ec" || details?.namedCurve !== "prime256v1") {
    throw new PlayResponseKeyError(
      `verification key: ${verification.asymmetricKeyType}${details?.namedCurve ? ` ${details.namedCurve}` : ""}, expected EC P-256 (ES256)`,
    );
  }
  // the DER must be the key's own encoding: no trailing bytes, no alternative encodings of the same key
  if (!verification.export({ format: "der", type: "spki" }).equals(Buffer.from(keys.verificationKeySpki))) {
    throw new PlayResponseKeyError("verification key: not the canonical DER of an EC P-256 SubjectPublicKeyInfo");
  }
  const out = { decryption: createSecretKey(Buffer.from(keys.decryptionKey)), verification };
  imported.set(keys, out);
  return out;
}

/** Standard base64 as the Play Console shows it (padding optional, surrounding whitespace ignored), canonical. */
function consoleBase64(value: string, name: string): Buffer {
  const s = value.trim().replace(/=+$/, "");
  if (s.length === 0 || !/^[A-Za-z0-9+/]+$/.test(s)) throw new PlayResponseKeyError(`${name}: not base64`);
  const bytes = Buffer.from(s, "base64");
  if (bytes.toString("base64").replace(/=+$/, "") !== s) throw new PlayResponseKeyError(`${name}: not canonical base64`);
  return bytes;
}

/**
 * The response keys as the Play Console gives them (Play Console → App integrity → response encryption): the
 * base64 AES-256 decryption key and the base64 EC P-256 verification key (SubjectPublicKeyInfo). Throws
 * PlayResponseKeyError with a one-line reason naming the key and what is wrong.
 */
export function parsePlayResponseKeys(decryptionKeyB64: string, verificationKeyB64: string): PlayResponseKeys {
  const keys: PlayResponseKeys = {
    decryptionKey: consoleBase64(decryptionKeyB64, "decryption key"),
    verificationKeySpki: consoleBase64(verificationKeyB64, "verification key"),
  };
  importResponseKeys(keys);
  return keys;
}

const jsonText = new TextDecoder("utf-8", { fatal: true });

/**
 * Decrypts the token with the app's AES key (A256KW / A256GCM only) and verifies the JWS inside with its P-256 key
 * (ES256 only), returning the payload JSON object. Throws PlayTokenError when the token's structure is broken and
 * PlayOpenError when these keys do not open it (another app's token, a tampered one, a nested or odd JWS).
 */
export async function openWithResponseKeys(token: string, keys: PlayResponseKeys): Promise<unknown> {
  return (await openTokenWithKeys(token, keys)).payload;
}

/** What opening a token gives: the payload, and the token's structure as the opening read it. */
export interface OpenedToken {
  payload: unknown;
  /** the protected header and the ciphertext's size, which the verdict's detail reports */
  token: Pick<PlayTokenParts, "header" | "ciphertextBytes">;
}

/**
 * `openWithResponseKeys`, also answering the structure it read, so the appraisal need not read the token again
 * (the opening may run on another thread: services/cryptoThreads.ts).
 */
export async function openTokenWithKeys(token: string, keys: PlayResponseKeys): Promise<OpenedToken> {
  const parts = readPlayIntegrityToken(Buffer.from(token, "latin1"));
  const { decryption, verification } = importResponseKeys(keys);
  let jws: Uint8Array;
  try {
    ({ plaintext: jws } = await compactDecrypt(parts.compact, decryption, {
      keyManagementAlgorithms: ["A256KW"],
      contentEncryptionAlgorithms: ["A256GCM"],
    }));
  } catch {
    throw new PlayOpenError("does not decrypt with the app's decryption key");
  }
  if (jws.length > MAX_PAYLOAD_BYTES * 2) throw new PlayOpenError(`the signed token inside is more than ${MAX_PAYLOAD_BYTES * 2} bytes`);
  const inner = Buffer.from(jws).toString("latin1");
  const innerParts = inner.split(".");
  // Google signs once: a JWE (five parts) or anything else inside is a nesting we refuse, not one we unwrap
  if (innerParts.length !== 3 || !innerParts.every((p) => B64URL.test(p))) {
    throw new PlayOpenError(`the decrypted content is not a compact JWS (${innerParts.length} parts)`);
  }
  let jwsHeader: Record<string, unknown>;
  try {
    jwsHeader = parseJsonObject(decodePart(innerParts[0]!, "JWS header"), "JWS header");
  } catch (e) {
    throw new PlayOpenError((e as Error).message);
  }
  if (jwsHeader.alg !== "ES256") throw new PlayOpenError(`JWS header: alg ${JSON.stringify(jwsHeader.alg)}, expected ES256`);
  const unknown = Object.keys(jwsHeader).filter((k) => !JWS_HEADER_KEYS.has(k));
  if (unknown.length > 0) throw new PlayOpenError(`JWS header: refused parameter(s) ${unknown.slice(0, 4).join(", ")}`);
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(inner, verification, { algorithms: ["ES256"] }));
  } catch {
    throw new PlayOpenError("decrypts with the app's decryption key, but its signature does not verify with the app's verification key");
  }
  if (payload.length > MAX_PAYLOAD_BYTES) throw new PlayOpenError(`payload: more than ${MAX_PAYLOAD_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(jsonText.decode(payload));
  } catch {
    throw new PlayOpenError("payload: signed, but not UTF-8 JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new PlayOpenError("payload: signed, but not a JSON object");
  return { payload: value, token: { header: parts.header, ciphertextBytes: parts.ciphertextBytes } };
}

/**
 * Opens a token with the response keys of the tenant's registered apps, in the order given (at most
 * MAX_APPS_TRIED of them): the first whose keys decrypt and verify it gives `opened` evidence (decodedBy "local").
 * Otherwise `no-app` when the tenant registered none, else `not-opened`, whose reason says what the keys found
 * and how many apps are left to Google's decoding (service account). Never throws for a bad token.
 *
 * The caller combines: when this answers `not-opened` and the tenant has apps decoded by Google, it asks Google's
 * decoder (another module) for those and uses its evidence instead; the appraisal judges whichever it gets.
 */
export async function openWithApps(
  token: string,
  apps: readonly RegisteredPlayApp[],
  open: (token: string, keys: PlayResponseKeys) => Promise<OpenedToken> = openTokenWithKeys,
): Promise<PlayIntegrityEvidence> {
  if (apps.length === 0) return { opened: false, why: "no-app", reason: "the tenant registered no Play app" };
  const withKeys = apps.filter((a) => a.responseKeys);
  const byGoogle = apps.length - withKeys.length;
  const tried = withKeys.slice(0, MAX_APPS_TRIED);
  // the structure is read once: by the first app's open (which throws PlayTokenError for it), or here when no app
  // has keys to open with
  const malformed = (e: unknown) => ({ opened: false as const, why: "not-opened" as const, reason: `not a well-formed token: ${(e as Error).message}` });
  if (tried.length === 0) {
    try {
      readPlayIntegrityToken(Buffer.from(token, "latin1"));
    } catch (e) {
      return malformed(e);
    }
  }
  const findings: string[] = [];
  for (const app of tried) {
    try {
      const opened = await open(token, app.responseKeys!);
      return { opened: true, app: app.policy, payload: opened.payload, token: opened.token, decodedBy: "local" };
    } catch (e) {
      if (e instanceof PlayTokenError) return malformed(e);
      if (e instanceof PlayOpenError) {
        findings.push(`${app.policy.packageName}: ${e.message}`);
        continue;
      }
      // unusable stored keys are that app's problem, not the token's: say so and try the others
      if (e instanceof PlayResponseKeyError) {
        findings.push(`${app.policy.packageName}: its registered keys are unusable (${e.message})`);
        continue;
      }
      throw e;
    }
  }
  // a wrong key fails the same way for every app; say so once rather than once per app
  const decrypting = findings.filter((f) => !f.endsWith(": does not decrypt with the app's decryption key"));
  const parts: string[] = [];
  if (tried.length > 0) {
    parts.push(decrypting.length > 0 ? decrypting.join("; ") : `no registered app's response keys decrypt it (${tried.length} tried)`);
  }
  if (withKeys.length > tried.length) parts.push(`${withKeys.length - tried.length} app(s) beyond the first ${MAX_APPS_TRIED} not tried`);
  if (byGoogle > 0) parts.push(`${byGoogle} app(s) are decoded by Google (service account), not with response keys`);
  return { opened: false, why: "not-opened", reason: parts.join("; ") };
}
