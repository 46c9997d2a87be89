import type { AllowedBootKey } from "../types.ts";
import { parseJsonDocument } from "../encoding/json.ts";

/**
 * The operator's allow-list of verified-boot keys for alternative operating systems it trusts (a device that
 * boots a SelfSigned image, e.g. GrapheneOS, reports the SHA-256 of its AVB key as verifiedBootKey):
 *
 *   [{"key": "<hex>", "label": "GrapheneOS Pixel 9", "models": ["Pixel 9"]}]
 *
 * Parsed strictly: an unknown field, a key that is not hex, a repeated key or an empty label stops start-up with
 * one line naming the entry, instead of silently trusting less (or more) than the operator meant.
 */
export function parseAllowedBootKeys(text: string, source = "allowed boot keys"): AllowedBootKey[] {
  const doc = parseJsonDocument(text, source);
  if (!Array.isArray(doc)) throw new Error(`${source}: expected a JSON array of {key, label, models?}`);
  const seen = new Set<string>();
  return doc.map((item: unknown, i) => {
    const where = `${source}: entry ${i}`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw new Error(`${where} is not an object`);
    const extra = Object.keys(item).filter((k) => k !== "key" && k !== "label" && k !== "models");
    if (extra.length > 0) throw new Error(`${where} has unknown field(s) ${extra.join(", ")}`);
    const { key, label, models } = item as { key?: unknown; label?: unknown; models?: unknown };
    if (typeof key !== "string" || !/^(?:[0-9a-fA-F]{2}){16,64}$/.test(key)) {
      throw new Error(`${where}: "key" must be hex of 16 to 64 bytes (the verifiedBootKey, e.g. 64 hex digits)`);
    }
    const normalized = key.toLowerCase();
    if (seen.has(normalized)) throw new Error(`${where}: key ${normalized} is listed twice`);
    seen.add(normalized);
    if (typeof label !== "string" || label.trim() === "") throw new Error(`${where}: "label" must be a non-empty string`);
    const out: AllowedBootKey = { key: normalized, label };
    if (models !== undefined) {
      if (!Array.isArray(models) || models.length === 0 || models.some((m) => typeof m !== "string" || m === "")) {
        throw new Error(`${where}: "models" must be a non-empty array of non-empty strings`);
      }
      out.models = [...(models as string[])];
    }
    return out;
  });
}

/**
 * The allow-list entry for a boot key, honouring its `models` restriction: an entry with models applies only when
 * the device attested its model (attestationIdModel, hardware-enforced) and it is one of them.
 */
export function findAllowedBootKey(
  list: readonly AllowedBootKey[],
  verifiedBootKeyHex: string,
  attestedModel: string | undefined,
): AllowedBootKey | undefined {
  const key = verifiedBootKeyHex.toLowerCase();
  return list.find((e) => e.key === key && (!e.models || (attestedModel !== undefined && e.models.includes(attestedModel))));
}
