import { derChainProblem, splitDerCertificates } from "./derChain.ts";
import { decodeBase64Strict, parsePemBlocks } from "./pem.ts";

/**
 * The three ways integrators hand over an Android certificate chain, leaf first:
 *
 * - `der`: DER certificates laid end to end (what `KeyStore.getCertificateChain()` gives, concatenated);
 * - `pem`: a PEM bundle of CERTIFICATE blocks (text outside the blocks, such as `openssl` output, is ignored);
 * - `x5c`: a JSON object `{"x5c": ["<base64 DER>", ...]}` (RFC 7515 §4.1.6, as WebAuthn's attStmt carries it;
 *   other keys, e.g. `alg` and `sig`, are ignored and reported).
 *
 * Which one a body is, is decided by its bytes alone. The two text forms are recognised only when the whole body
 * is text (no control bytes but tab, CR and LF): JSON when it starts, after whitespace, with `{` or `[`, PEM when it
 * holds a `-----BEGIN` line anywhere. A vendor container is never text: its version byte (0x01 or 0x02) is a
 * control byte. Decoding is strict (canonical
 * base64, every block or entry exactly one DER certificate), so two different bodies never decode to one chain
 * unless they differ only in layout (whitespace, line breaks, text around PEM blocks, other JSON keys).
 */

export const CHAIN_ENCODINGS = ["der", "pem", "x5c"] as const;
export type ChainEncoding = (typeof CHAIN_ENCODINGS)[number];

/** How reasons name each encoding: `android-key (PEM bundle): ...`. */
export const CHAIN_ENCODING_NAMES: Readonly<Record<ChainEncoding, string>> = {
  der: "DER certificates",
  pem: "PEM bundle",
  x5c: "x5c JSON",
};

/** The body claims an encoding (by its first bytes) but breaks its rules; the message says which rule. */
export class ChainInputError extends Error {
  override readonly name = "ChainInputError";
  constructor(readonly encoding: ChainEncoding, message: string) {
    super(message);
  }
}

export interface ChainInput {
  encoding: ChainEncoding;
  /** views into the body (der) or fresh copies (pem, x5c), leaf first */
  ders: Uint8Array[];
  /** x5c only: top-level keys other than "x5c", ignored */
  ignoredKeys?: string[];
}

/** The offset of the first byte that text does not hold (a control byte but tab, CR, LF), or -1. */
function firstControlByte(body: Uint8Array): number {
  for (let i = 0; i < body.length; i++) {
    const b = body[i]!;
    if (b < 0x20 ? b !== 0x09 && b !== 0x0a && b !== 0x0d : b === 0x7f) return i;
  }
  return -1;
}

function firstNonSpace(body: Uint8Array): number {
  let i = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0; // a UTF-8 byte-order mark
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x09 || body[i] === 0x0a || body[i] === 0x0d)) i++;
  return i;
}

const BEGIN = Buffer.from("-----BEGIN");

function startsJson(body: Uint8Array): boolean {
  const c = body[firstNonSpace(body)];
  return c === 0x7b || c === 0x5b;
}

function holdsPemBlock(body: Uint8Array): boolean {
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength).includes(BEGIN);
}

/**
 * The encoding `body` is written in, or undefined when it is none of them. Cheap: DER headers, or a byte scan
 * that stops at the first control byte (a vendor container's first or second byte).
 */
export function chainEncodingOf(body: Uint8Array, maxCount: number): ChainEncoding | undefined {
  if (body[0] === 0x30) return splitDerCertificates(body, maxCount) ? "der" : undefined;
  if (body.length === 0 || firstControlByte(body) !== -1) return undefined;
  if (startsJson(body)) return "x5c";
  return holdsPemBlock(body) ? "pem" : undefined;
}

/**
 * Why a body that no encoding recognised is not an android-key chain, for a reason that must say what was tried:
 * a phrase when the body looks like an attempt at one (it starts like DER, or is text, or starts like PEM/JSON but
 * holds control bytes), undefined for other binary bodies.
 */
export function whyNotChainInput(body: Uint8Array): string | undefined {
  if (body.length === 0) return undefined;
  if (body[0] === 0x30) return `not android-key DER certificates either: ${derChainProblem(body, 4096)}`;
  const at = firstControlByte(body);
  if (at === -1) {
    return "not android-key either: the body is text, and android-key text is a PEM bundle " +
      "(-----BEGIN CERTIFICATE-----) or JSON {\"x5c\": [\"<base64 DER>\", ...]}";
  }
  if (startsJson(body) || holdsPemBlock(body)) {
    return `not android-key either: a PEM bundle or x5c JSON is plain text, and byte ${at} is the control byte ` +
      `0x${body[at]!.toString(16).padStart(2, "0")}`;
  }
  return undefined;
}

/** One DER certificate, exactly, or why not. */
function oneCertificate(der: Uint8Array): string | null {
  const certs = splitDerCertificates(der, 2);
  if (certs && certs.length === 1) return null;
  return certs ? "holds more than one certificate" : `is not one DER certificate (${derChainProblem(der, 2)})`;
}

function readPem(text: string, maxCount: number): Uint8Array[] {
  let blocks;
  try {
    blocks = parsePemBlocks(text, "the bundle");
  } catch (e) {
    throw new ChainInputError("pem", (e as Error).message);
  }
  if (blocks.length > maxCount) throw new ChainInputError("pem", `more than ${maxCount} certificates`);
  return blocks.map((b, i) => {
    if (b.label !== "CERTIFICATE") {
      throw new ChainInputError("pem", `block ${i} is "${b.label}"; only CERTIFICATE blocks belong in a chain`);
    }
    const problem = oneCertificate(b.der);
    if (problem) throw new ChainInputError("pem", `block ${i} ${problem}`);
    return b.der;
  });
}

function readX5c(text: string, maxCount: number): { ders: Uint8Array[]; ignoredKeys: string[] } {
  const fail = (message: string) => new ChainInputError("x5c", message);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw fail(`not JSON (${(e as Error).message})`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw fail(`expected an object {"x5c": ["<base64 DER>", ...]}, got ${Array.isArray(doc) ? "an array" : typeof doc}`);
  }
  const x5c = (doc as Record<string, unknown>).x5c;
  if (!Array.isArray(x5c)) throw fail(`"x5c" must be an array of base64 certificates, leaf first`);
  if (x5c.length === 0) throw fail(`"x5c" is empty`);
  if (x5c.length > maxCount) throw fail(`more than ${maxCount} certificates`);
  const ders = x5c.map((entry: unknown, i) => {
    if (typeof entry !== "string") throw fail(`x5c[${i}] is not a string`);
    let der: Uint8Array;
    try {
      der = decodeBase64Strict(entry, `x5c[${i}]`);
    } catch (e) {
      throw fail((e as Error).message);
    }
    const problem = oneCertificate(der);
    if (problem) throw fail(`x5c[${i}] ${problem}`);
    return der;
  });
  return { ders, ignoredKeys: Object.keys(doc).filter((k) => k !== "x5c") };
}

/**
 * Decodes a body that `chainEncodingOf` recognised. Throws ChainInputError naming the encoding and the rule
 * broken; more than `maxCount` certificates is such an error too.
 */
export function readChainInput(body: Uint8Array, encoding: ChainEncoding, maxCount: number): ChainInput {
  if (encoding === "der") {
    const ders = splitDerCertificates(body, maxCount + 1);
    if (!ders) throw new ChainInputError("der", derChainProblem(body, maxCount + 1) ?? "not DER certificates");
    if (ders.length > maxCount) throw new ChainInputError("der", `more than ${maxCount} certificates`);
    return { encoding, ders };
  }
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  if (encoding === "pem") return { encoding, ders: readPem(text, maxCount) };
  return { encoding, ...readX5c(text, maxCount) };
}
