import type { ReferenceValue } from "../types.ts";
import { parseJsonDocument } from "../encoding/json.ts";

/**
 * Reference values: the known-good measurement sets per (model, firmwareVersion), blob-format.md rule 7.
 *
 * The parser is strict and names the item at fault, because a typo here ("firmware" for "firmwareVersion", 63 hex
 * digits) would otherwise turn every device of that model into `Unknown` without anyone noticing.
 */

/** Bounds a blob can carry (blob-format.md): an item outside them could never match, so it is an operator error. */
const MAX_DIGESTS = 16;
const MAX_NAME = 64;
const DIGEST = /^[0-9a-fA-F]{64}$/;
const PRINTABLE = /^[\x20-\x7e]+$/;
const KEYS = new Set(["model", "firmwareVersion", "measurements"]);

export function parseReferenceValues(text: string, source = "reference values"): ReferenceValue[] {
  const doc = parseJsonDocument(text, source);
  return validateReferenceValues(doc, source);
}

/** The same checks for a document already parsed (e.g. an admin API body). Returns normalised copies. */
export function validateReferenceValues(doc: unknown, source = "reference values"): ReferenceValue[] {
  if (!Array.isArray(doc)) throw new Error(`${source}: expected a JSON array of {model, firmwareVersion, measurements}`);
  const seen = new Map<string, number>();
  return doc.map((item: unknown, i): ReferenceValue => {
    const at = `${source}: item ${i}`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw new Error(`${at}: expected an object`);
    const o = item as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => !KEYS.has(k));
    if (extra.length) throw new Error(`${at}: unknown key(s) ${extra.map((k) => JSON.stringify(k)).join(", ")}`);
    const model = nameField(o.model, "model", at);
    const firmwareVersion = nameField(o.firmwareVersion, "firmwareVersion", `${at} (model ${JSON.stringify(model)})`);
    const label = `${at} (${JSON.stringify(model)} / ${JSON.stringify(firmwareVersion)})`;
    const m = o.measurements;
    if (!Array.isArray(m) || m.length < 1 || m.length > MAX_DIGESTS) {
      throw new Error(`${label}: "measurements" must be an array of 1..${MAX_DIGESTS} digests`);
    }
    const measurements = m.map((d: unknown, j) => {
      if (typeof d !== "string" || !DIGEST.test(d)) {
        throw new Error(`${label}: measurements[${j}] is not 64 hex digits (a SHA-256 digest)`);
      }
      return d.toLowerCase();
    });
    const key = pairKey(model, firmwareVersion);
    const first = seen.get(key);
    if (first !== undefined) throw new Error(`${label}: duplicates item ${first}; one set per (model, firmwareVersion)`);
    seen.set(key, i);
    return { model, firmwareVersion, measurements };
  });
}

function nameField(v: unknown, name: string, at: string): string {
  if (typeof v !== "string" || v.length < 1 || v.length > MAX_NAME || !PRINTABLE.test(v)) {
    throw new Error(`${at}: "${name}" must be 1..${MAX_NAME} printable ASCII characters, as a blob carries it`);
  }
  return v;
}

/** What rule 7 compares: the digests of one set, lowercase hex concatenated in order (each is exactly 64 chars). */
export interface ReferenceSet {
  readonly value: ReferenceValue;
  readonly concatenatedHex: string;
}

export type ReferenceIndex = ReadonlyMap<string, ReferenceSet>;

/** NUL cannot occur in either field (printable ASCII), so the key is unambiguous. */
function pairKey(model: string, firmwareVersion: string): string {
  return `${model}\u0000${firmwareVersion}`;
}

// Appraisal is per request; the values change only when the operator reloads them (a new array), so the index is
// built once per array. The first set wins for a repeated pair, which parseReferenceValues never produces.
const indexes = new WeakMap<readonly ReferenceValue[], ReferenceIndex>();

export function referenceIndex(values: readonly ReferenceValue[]): ReferenceIndex {
  let index = indexes.get(values);
  if (!index) {
    const built = new Map<string, ReferenceSet>();
    for (const value of values) {
      const key = pairKey(value.model, value.firmwareVersion);
      if (!built.has(key)) built.set(key, { value, concatenatedHex: value.measurements.join("").toLowerCase() });
    }
    index = built;
    indexes.set(values, index);
  }
  return index;
}

export function findReferenceSet(
  values: readonly ReferenceValue[],
  model: string,
  firmwareVersion: string,
): ReferenceSet | undefined {
  return referenceIndex(values).get(pairKey(model, firmwareVersion));
}

/**
 * undefined when `digestsHex` (lowercase, in blob order) equals the set — same count, same order — else one line
 * saying where they differ, for the appraisal's reason.
 */
export function measurementDifference(set: ReferenceSet, digestsHex: readonly string[]): string | undefined {
  if (digestsHex.join("") === set.concatenatedHex) return undefined;
  const expected = set.value.measurements;
  if (digestsHex.length !== expected.length) {
    return `the blob has ${digestsHex.length} digest(s), the reference set ${expected.length}`;
  }
  const i = digestsHex.findIndex((d, j) => d !== expected[j]?.toLowerCase());
  const elsewhere = expected.findIndex((e) => e.toLowerCase() === digestsHex[i]);
  return elsewhere >= 0
    ? `digest ${i} is reference digest ${elsewhere}: the order differs`
    : `digest ${i} is not in the reference set`;
}
