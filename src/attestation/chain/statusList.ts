import type { StatusEntry, StatusList } from "../types.ts";
import { parseJsonDocument } from "../encoding/json.ts";

/**
 * Parses Google's attestation status-list JSON, `{"entries": {"<hex serial>": {"status", "reason"}}}`, which is
 * also the shape of the operator's vendor revocation list. Throws with a message naming what is wrong, so a bad
 * file stops start-up with one clear line instead of silently trusting everything.
 */
export function parseStatusList(text: string, source = "status list"): StatusList {
  const doc = parseJsonDocument(text, source);
  const entries = (doc as { entries?: unknown } | null)?.entries;
  if (typeof entries !== "object" || entries === null || Array.isArray(entries)) {
    throw new Error(`${source}: expected an object with an "entries" object`);
  }
  const out = new Map<string, StatusEntry>();
  for (const [serial, value] of Object.entries(entries as Record<string, unknown>)) {
    if (!/^[0-9a-fA-F]+$/.test(serial)) throw new Error(`${source}: serial "${serial}" is not hex`);
    const status = (value as { status?: unknown } | null)?.status;
    if (status !== "REVOKED" && status !== "SUSPENDED") {
      throw new Error(`${source}: serial ${serial} has status ${JSON.stringify(status)}, expected REVOKED or SUSPENDED`);
    }
    const reason = (value as { reason?: unknown }).reason;
    out.set(normalizeSerial(serial), typeof reason === "string" ? { status, reason } : { status });
  }
  return out;
}

/** Serials compare as lowercase hex without leading zeros, since lists and DER differ in padding. */
export function normalizeSerial(hex: string): string {
  const s = hex.toLowerCase().replace(/^0+/, "");
  return s === "" ? "0" : s;
}

export const EMPTY_STATUS_LIST: StatusList = new Map();
