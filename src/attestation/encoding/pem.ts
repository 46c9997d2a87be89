/**
 * PEM (RFC 7468) in and out. Strict on what it reads — a BEGIN without its END, a label mismatch or a character
 * outside base64 is an error naming the block — because these files are trust configuration: a half-read bundle
 * must stop start-up, not silently trust fewer roots than the operator meant.
 */

export interface PemBlock {
  label: string;
  der: Uint8Array;
}

const BEGIN = /^-----BEGIN ([\x21-\x2c\x2e-\x7e](?:[- ]?[\x21-\x2c\x2e-\x7e])*)?-----$/;
const END = /^-----END ([\x21-\x2c\x2e-\x7e](?:[- ]?[\x21-\x2c\x2e-\x7e])*)?-----$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Every PEM block in `text`, in order. Text outside blocks (comments, `openssl x509 -text` output) is ignored. */
export function parsePemBlocks(text: string, source = "PEM"): PemBlock[] {
  const blocks: PemBlock[] = [];
  const lines = text.split(/\r?\n/);
  let label: string | undefined;
  let startLine = 0;
  let body: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (label === undefined) {
      const begin = BEGIN.exec(line);
      if (begin) {
        label = begin[1] ?? "";
        startLine = i + 1;
        body = [];
      } else if (END.test(line)) {
        throw new Error(`${source}: line ${i + 1}: END without a BEGIN`);
      }
      continue;
    }
    const end = END.exec(line);
    if (end) {
      if ((end[1] ?? "") !== label) {
        throw new Error(`${source}: block "${label}" opened on line ${startLine} is closed as "${end[1] ?? ""}"`);
      }
      blocks.push({ label, der: decodeBase64Strict(body.join(""), `${source}: block "${label}" on line ${startLine}`) });
      label = undefined;
      continue;
    }
    if (BEGIN.test(line)) throw new Error(`${source}: block "${label}" opened on line ${startLine} has no END`);
    body.push(line);
  }
  if (label !== undefined) throw new Error(`${source}: block "${label}" opened on line ${startLine} has no END`);
  return blocks;
}

/** The DER of every CERTIFICATE block; other blocks (keys, parameters) are skipped. At least one is required. */
export function parsePemBundle(text: string, source = "PEM bundle"): Uint8Array[] {
  const certs = parsePemBlocks(text, source)
    .filter((b) => b.label === "CERTIFICATE")
    .map((b) => b.der);
  if (certs.length === 0) throw new Error(`${source}: no "BEGIN CERTIFICATE" block`);
  return certs;
}

/** PEM text of `der` under `label`, 64 base64 characters a line, ending with a newline. */
export function toPem(der: Uint8Array, label: string): string {
  const b64 = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join("\n")}${lines.length ? "\n" : ""}-----END ${label}-----\n`;
}

/**
 * Standard base64 (RFC 4648 §4, padded), canonical only. Buffer.from(…, "base64") skips characters it does not
 * know and ignores the unused bits of the last character, so two different texts can decode to the same bytes;
 * checking the alphabet, the padding and the round trip first makes every other text an error.
 */
export function decodeBase64Strict(b64: string, where: string): Uint8Array {
  if (b64.length === 0) throw new Error(`${where}: empty`);
  if (/[-_]/.test(b64)) throw new Error(`${where}: base64url, expected standard base64 (RFC 4648 §4)`);
  if (b64.length % 4 !== 0 || !BASE64.test(b64)) throw new Error(`${where}: not valid base64`);
  const bytes = Buffer.from(b64, "base64");
  if (bytes.toString("base64") !== b64) throw new Error(`${where}: not canonical base64 (non-zero padding bits)`);
  return new Uint8Array(bytes);
}
