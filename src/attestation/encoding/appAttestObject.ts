import { decode, Tag } from "cbor2";

/**
 * App Attest's two bodies (mobile-attestation.md, "Telling the formats apart"), read strictly and bounded:
 * - the attestation object `DCAppAttestService.attestKey` returns: CBOR `{fmt: "apple-appattest", attStmt: {x5c:
 *   [credCert, intermediate], receipt}, authData}`;
 * - an assertion as the relying party posts it: JSON `{"keyId": "<base64>", "assertion": "<base64 of CBOR
 *   {signature, authenticatorData}>"}`.
 *
 * CBOR is decoded by cbor2 with everything App Attest never uses refused: indefinite lengths, duplicate map keys,
 * tags (none are expected: global tags are left undecoded and any Tag is refused), floats, simple values other than
 * booleans and null, and nesting deeper than MAX_CBOR_DEPTH. Sizes are checked before decoding. Every problem is an
 * AppAttestFormatError whose message says what is wrong; the format turns it into BLOB_MALFORMED.
 */

/** Real attestation objects are ~5.3 KB (two certificates and a ~3.7 KB receipt); this leaves room and no more. */
export const MAX_ATTESTATION_BYTES = 16 * 1024;
/** An assertion's JSON is ~250 characters; its CBOR ~110 bytes. */
export const MAX_ASSERTION_BODY_BYTES = 4 * 1024;
export const MAX_ASSERTION_CBOR_BYTES = 1024;
/** Deepest real structure: map → attStmt map → x5c array → bytes. */
export const MAX_CBOR_DEPTH = 4;
/** Apple's certificate path is leaf + "Apple App Attestation CA 1"; the root is built in, never carried. */
export const MAX_X5C = 4;
export const MAX_RECEIPT_BYTES = 12 * 1024;

export const APP_ATTEST_FMT = "apple-appattest";
export const AAGUID_PRODUCTION = Buffer.from("appattest\0\0\0\0\0\0\0", "latin1");
export const AAGUID_DEVELOPMENT = Buffer.from("appattestdevelop", "latin1");

export class AppAttestFormatError extends Error {}

const bad = (why: string) => new AppAttestFormatError(why);

/** Strict, bounded CBOR: one item, nothing after it. */
export function decodeStrictCbor(bytes: Uint8Array, what: string): unknown {
  let value: unknown;
  try {
    value = decode(bytes, {
      rejectDuplicateKeys: true,
      rejectStreaming: true,
      ignoreGlobalTags: true,
      preferMap: true,
      rejectUndefined: true,
      rejectFloats: true,
      rejectSimple: true,
      rejectBigInts: true,
      rejectLargeNegatives: true,
      // preferred serialization only (shortest lengths): one meaning, one encoding, as every App Attest encoder writes
      requirePreferred: true,
      maxDepth: MAX_CBOR_DEPTH,
    });
  } catch (e) {
    throw bad(`${what}: not strict CBOR (${(e as Error).message.slice(0, 120)})`);
  }
  refuseTags(value, what, 0);
  return value;
}

function refuseTags(v: unknown, what: string, depth: number): void {
  if (depth > MAX_CBOR_DEPTH) throw bad(`${what}: nested deeper than ${MAX_CBOR_DEPTH}`);
  if (v instanceof Tag) throw bad(`${what}: CBOR tag ${String(v.tag)} is not expected`);
  if (v instanceof Map) {
    for (const [k, x] of v) {
      refuseTags(k, what, depth + 1);
      refuseTags(x, what, depth + 1);
    }
  } else if (Array.isArray(v)) {
    for (const x of v) refuseTags(x, what, depth + 1);
  }
}

const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
const copy = (v: Uint8Array): Uint8Array => new Uint8Array(v);

/** The map's text keys exactly `keys` (in any order). */
function exactMap(v: unknown, keys: readonly string[], what: string): Map<string, unknown> {
  if (!(v instanceof Map)) throw bad(`${what} is not a CBOR map`);
  for (const k of v.keys()) {
    if (typeof k !== "string" || !keys.includes(k)) throw bad(`${what} has an unexpected key ${JSON.stringify(typeof k === "string" ? k : String(k))}`);
  }
  for (const k of keys) if (!v.has(k)) throw bad(`${what} has no "${k}"`);
  return v as Map<string, unknown>;
}

/** authenticatorData as WebAuthn lays it out (App Attest reuses it), with the attested credential when asked. */
export interface AuthenticatorData {
  rpIdHash: Uint8Array;
  flags: number;
  counter: number;
  /** present for an attestation (flag AT): AAGUID, credential id and the COSE key */
  credential?: { aaguid: Uint8Array; credentialId: Uint8Array; publicKey: { x: Uint8Array; y: Uint8Array } };
}

const FLAG_AT = 0x40;
const FLAG_ED = 0x80;

export function readAuthenticatorData(bytes: Uint8Array, attested: boolean): AuthenticatorData {
  if (bytes.length < 37) throw bad(`authenticator data: ${bytes.length} bytes, at least 37`);
  const rpIdHash = copy(bytes.subarray(0, 32));
  const flags = bytes[32]!;
  const counter = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).readUInt32BE(33);
  if (flags & FLAG_ED) throw bad("authenticator data: extensions (flag ED) are not used by App Attest");
  if (!attested) {
    if (flags & FLAG_AT) throw bad("assertion authenticator data: carries an attested credential (flag AT)");
    if (bytes.length !== 37) throw bad(`assertion authenticator data: ${bytes.length} bytes, expected 37`);
    return { rpIdHash, flags, counter };
  }
  if (!(flags & FLAG_AT)) throw bad("attestation authData: no attested credential (flag AT clear)");
  if (bytes.length < 55) throw bad(`attestation authData: ${bytes.length} bytes, too short for an attested credential`);
  const aaguid = copy(bytes.subarray(37, 53));
  const idLen = (bytes[53]! << 8) | bytes[54]!;
  if (idLen !== 32) throw bad(`attestation authData: credential id of ${idLen} bytes, App Attest's is 32 (the key id)`);
  if (bytes.length < 55 + idLen + 1) throw bad("attestation authData: truncated before the credential public key");
  const credentialId = copy(bytes.subarray(55, 55 + idLen));
  const cose = decodeStrictCbor(bytes.subarray(55 + idLen), "credential public key");
  return { rpIdHash, flags, counter, credential: { aaguid, credentialId, publicKey: readCoseP256(cose) } };
}

/** A COSE_Key of kty EC2, alg ES256, crv P-256 (RFC 9053): exactly those five entries. */
function readCoseP256(v: unknown): { x: Uint8Array; y: Uint8Array } {
  if (!(v instanceof Map)) throw bad("credential public key: not a CBOR map");
  const want = new Map<number, unknown>([[1, 2], [3, -7], [-1, 1]]);
  for (const k of v.keys()) {
    if (typeof k !== "number" || ![1, 3, -1, -2, -3].includes(k)) throw bad(`credential public key: unexpected entry ${String(k)}`);
  }
  for (const [k, expected] of want) {
    if (v.get(k) !== expected) throw bad(`credential public key: entry ${k} is not ${String(expected)} (EC2 / ES256 / P-256)`);
  }
  const x = v.get(-2);
  const y = v.get(-3);
  if (!isBytes(x) || x.length !== 32 || !isBytes(y) || y.length !== 32) throw bad("credential public key: x and y are not 32 bytes each");
  return { x: copy(x), y: copy(y) };
}

export interface AppAttestAttestation {
  /** DER, leaf (the credential certificate) first */
  x5c: Uint8Array[];
  /** Apple's receipt as the device got it (PKCS#7); kept with the key, checked by the receipt module */
  receipt: Uint8Array;
  authData: Uint8Array;
  auth: AuthenticatorData & { credential: NonNullable<AuthenticatorData["credential"]> };
}

/** The text key `fmt` followed by the text `apple-appattest`, as every attestation object encodes them. */
const FMT_MARK = Buffer.concat([Buffer.from([0x63]), Buffer.from("fmt"), Buffer.from([0x6f]), Buffer.from(APP_ATTEST_FMT)]);

/**
 * By the bytes alone: a CBOR map (definite, up to 23 entries) that holds the text pair `fmt: "apple-appattest"`.
 * Neither a DER chain (0x30), text nor a vendor container can look so; a broken one is then app-attest's to refuse.
 */
export function looksLikeAppAttestAttestation(blob: Uint8Array): boolean {
  if (blob.length < FMT_MARK.length + 1 || blob[0]! < 0xa1 || blob[0]! > 0xb7) return false;
  return Buffer.from(blob.buffer, blob.byteOffset, Math.min(blob.byteLength, MAX_ATTESTATION_BYTES)).includes(FMT_MARK);
}

/**
 * For a body every format refused that begins as a CBOR map: why it is not an App Attest attestation object (the
 * vendor reader's BLOB_MALFORMED then names app-attest as tried too). Undefined for any other body.
 */
export function whyNotAppAttest(blob: Uint8Array): string | undefined {
  if (blob.length === 0 || blob[0]! < 0xa0 || blob[0]! > 0xbf) return undefined;
  return 'not app-attest either: an attestation object is a CBOR map holding fmt "apple-appattest"';
}

export function readAppAttestAttestation(blob: Uint8Array): AppAttestAttestation {
  if (blob.length > MAX_ATTESTATION_BYTES) throw bad(`attestation object: ${blob.length} bytes, more than ${MAX_ATTESTATION_BYTES}`);
  const top = exactMap(decodeStrictCbor(blob, "attestation object"), ["fmt", "attStmt", "authData"], "attestation object");
  if (top.get("fmt") !== APP_ATTEST_FMT) throw bad(`attestation object: fmt is not "${APP_ATTEST_FMT}"`);
  const stmt = exactMap(top.get("attStmt"), ["x5c", "receipt"], "attStmt");
  const x5c = stmt.get("x5c");
  if (!Array.isArray(x5c) || x5c.length < 2 || x5c.length > MAX_X5C || !x5c.every(isBytes)) {
    throw bad(`attStmt.x5c: not an array of 2..${MAX_X5C} DER certificates`);
  }
  const receipt = stmt.get("receipt");
  if (!isBytes(receipt) || receipt.length === 0 || receipt.length > MAX_RECEIPT_BYTES) throw bad(`attStmt.receipt: not 1..${MAX_RECEIPT_BYTES} bytes`);
  const authData = top.get("authData");
  if (!isBytes(authData)) throw bad("authData is not a byte string");
  const auth = readAuthenticatorData(authData, true) as AppAttestAttestation["auth"];
  return { x5c: x5c.map(copy), receipt: copy(receipt), authData: copy(authData), auth };
}

export interface AppAttestAssertion {
  keyId: Uint8Array;
  signature: Uint8Array;
  authenticatorData: Uint8Array;
  auth: AuthenticatorData;
}

/** Strict base64 (standard or url-safe alphabet, padding optional, no whitespace), canonical: re-encodes to itself. */
export function strictBase64(text: unknown, what: string, maxBytes: number): Uint8Array {
  if (typeof text !== "string" || text.length === 0 || text.length > Math.ceil(maxBytes / 3) * 4) throw bad(`${what}: not 1..${maxBytes} bytes of base64`);
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) throw bad(`${what}: not base64`);
  const urlSafe = /[-_]/.test(text);
  if (urlSafe && /[+/]/.test(text)) throw bad(`${what}: mixes the two base64 alphabets`);
  const bytes = Buffer.from(text, urlSafe ? "base64url" : "base64");
  const again = bytes.toString(urlSafe ? "base64url" : "base64");
  if (again.replace(/=+$/, "") !== text.replace(/=+$/, "") || (text.includes("=") && again !== text)) throw bad(`${what}: not canonical base64`);
  if (bytes.length > maxBytes) throw bad(`${what}: more than ${maxBytes} bytes`);
  return new Uint8Array(bytes);
}

function jsonText(blob: Uint8Array): string | undefined {
  if (blob.length > MAX_ASSERTION_BODY_BYTES) return undefined;
  let i = 0;
  while (i < blob.length && (blob[i] === 0x20 || blob[i] === 0x09 || blob[i] === 0x0a || blob[i] === 0x0d)) i++;
  if (blob[i] !== 0x7b) return undefined;
  return new TextDecoder("utf-8", { fatal: false }).decode(blob);
}

/**
 * By the bytes alone: a JSON object (≤ 4 KiB) with a member "keyId" or "assertion" and no "x5c" (android-key's JSON
 * form has x5c, and ignores other members): a broken assertion is then app-attest's to refuse, with its reason.
 */
export function looksLikeAppAttestAssertion(blob: Uint8Array): boolean {
  const text = jsonText(blob);
  if (text === undefined || (!text.includes('"keyId"') && !text.includes('"assertion"'))) return false;
  try {
    const o = JSON.parse(text) as unknown;
    return typeof o === "object" && o !== null && !Array.isArray(o) && !("x5c" in o) && ("keyId" in o || "assertion" in o);
  } catch {
    return false;
  }
}

export function readAppAttestAssertion(blob: Uint8Array): AppAttestAssertion {
  const text = jsonText(blob);
  if (text === undefined) throw bad(`assertion body: not a JSON object of at most ${MAX_ASSERTION_BODY_BYTES} bytes`);
  let o: unknown;
  try {
    o = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(blob));
  } catch {
    throw bad("assertion body: not UTF-8 JSON");
  }
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw bad("assertion body: not a JSON object");
  const keys = Object.keys(o);
  if (keys.length !== 2 || !keys.includes("keyId") || !keys.includes("assertion")) throw bad('assertion body: members other than exactly "keyId" and "assertion"');
  const rec = o as Record<string, unknown>;
  const keyId = strictBase64(rec.keyId, "keyId", 32);
  if (keyId.length !== 32) throw bad(`keyId: ${keyId.length} bytes, a key id is 32 (SHA-256 of the key)`);
  const cbor = strictBase64(rec.assertion, "assertion", MAX_ASSERTION_CBOR_BYTES);
  const m = exactMap(decodeStrictCbor(cbor, "assertion"), ["signature", "authenticatorData"], "assertion");
  const signature = m.get("signature");
  const authenticatorData = m.get("authenticatorData");
  if (!isBytes(signature) || signature.length < 8 || signature.length > 72) throw bad("assertion.signature: not a DER ECDSA signature's size (8..72 bytes)");
  if (!isBytes(authenticatorData)) throw bad("assertion.authenticatorData is not a byte string");
  const auth = readAuthenticatorData(authenticatorData, false);
  return { keyId, signature: copy(signature), authenticatorData: copy(authenticatorData), auth };
}
