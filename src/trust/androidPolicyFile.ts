import { readFileSync } from "node:fs";
import { patchLevelAsDate } from "../attestation/policy/androidPolicy.ts";
import type { AndroidPolicy } from "../attestation/types.ts";
import { parseJsonDocument } from "../attestation/encoding/json.ts";
import { fileProblem, pathMessage } from "../errors/operatorError.ts";

/**
 * The operator's android-key policy: a default and per-tenant overrides (by tenant name), from
 * `--android-policy FILE`:
 *
 *   {"default": {"minOsPatchLevel": 202401, "factoryExpiry": "accept"},
 *    "tenants": {"acme": {"minOsPatchLevel": 202501, "factoryExpiry": "refuse",
 *                         "allowedApps": [{"packageName": "com.acme.app", "signatureDigests": ["<64 hex>"]}]}}}
 *
 * A tenant's fields replace the default's field by field. Strict: an unknown key or a malformed value stops
 * start-up with one line naming it, since a policy silently ignored would pass devices the operator meant to refuse.
 */
export interface AndroidPolicies {
  default: AndroidPolicy;
  tenants: ReadonlyMap<string, AndroidPolicy>;
}

function policyFrom(value: unknown, where: string): AndroidPolicy {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${where}: expected an object`);
  const out: AndroidPolicy = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === "minOsPatchLevel") {
      if (typeof v !== "number" || patchLevelAsDate(v) === undefined) throw new Error(`${where}.minOsPatchLevel: expected YYYYMM or YYYYMMDD`);
      out.minOsPatchLevel = v;
    } else if (key === "allowedApps") {
      if (!Array.isArray(v)) throw new Error(`${where}.allowedApps: expected an array`);
      out.allowedApps = v.map((app, i) => {
        const at = `${where}.allowedApps[${i}]`;
        const { packageName, signatureDigests, ...rest } = (app ?? {}) as Record<string, unknown>;
        if (Object.keys(rest).length) throw new Error(`${at}: unknown key "${Object.keys(rest)[0]}"`);
        if (typeof packageName !== "string" || !/^[A-Za-z0-9_.]{1,255}$/.test(packageName)) {
          throw new Error(`${at}.packageName: expected a package name`);
        }
        if (signatureDigests === undefined) return { packageName };
        if (!Array.isArray(signatureDigests) || !signatureDigests.every((d) => typeof d === "string" && /^[0-9a-fA-F]{64}$/.test(d))) {
          throw new Error(`${at}.signatureDigests: expected SHA-256 digests as 64 hex digits`);
        }
        return { packageName, signatureDigests: signatureDigests.map((d: string) => d.toLowerCase()) };
      });
    } else if (key === "factoryExpiry") {
      if (v !== "accept" && v !== "refuse") throw new Error(`${where}.factoryExpiry: expected "accept" or "refuse"`);
      out.factoryExpiry = v;
    } else {
      throw new Error(`${where}: unknown key "${key}"`);
    }
  }
  return out;
}

export function parseAndroidPolicies(text: string, source = "android policy"): AndroidPolicies {
  const doc = parseJsonDocument(text, source);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new Error(`${source}: expected an object`);
  const { default: dflt, tenants, ...rest } = doc as Record<string, unknown>;
  if (Object.keys(rest).length) throw new Error(`${source}: unknown key "${Object.keys(rest)[0]}"`);
  const tenantPolicies = new Map<string, AndroidPolicy>();
  if (tenants !== undefined) {
    if (typeof tenants !== "object" || tenants === null || Array.isArray(tenants)) throw new Error(`${source}.tenants: expected an object`);
    for (const [name, p] of Object.entries(tenants)) tenantPolicies.set(name, policyFrom(p, `${source}.tenants.${name}`));
  }
  return { default: dflt === undefined ? {} : policyFrom(dflt, `${source}.default`), tenants: tenantPolicies };
}

/** The file (if any) with `--android-min-patch-level` as the default's minimum when the file sets none. */
export function loadAndroidPolicies(file: string | undefined, minPatchLevel: number | undefined): AndroidPolicies {
  let policies: AndroidPolicies = { default: {}, tenants: new Map() };
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new Error(pathMessage("--android-policy FILE", file, fileProblem(e), "a JSON file of android-key policies (docs/android-key.md)"));
    }
    policies = parseAndroidPolicies(text, `--android-policy ${file}`);
  }
  if (minPatchLevel !== undefined && policies.default.minOsPatchLevel === undefined) {
    if (patchLevelAsDate(minPatchLevel) === undefined) throw new Error("--android-min-patch-level: expected YYYYMM or YYYYMMDD");
    policies = { ...policies, default: { ...policies.default, minOsPatchLevel: minPatchLevel } };
  }
  return policies;
}
