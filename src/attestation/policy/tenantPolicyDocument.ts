import type { AllowedBootKey, AndroidPolicy, IntegrityLabel } from "../types.ts";
import type { AndroidPolicySection, TenantPolicyDocument } from "../../domain/tenantPolicy.ts";

/**
 * The one strict parser of a tenant's policy document (docs/policy.md), shared by the admin API, the CLI, the portal
 * and the seeding from `--android-policy`. Every problem is named by its field path and what the field must be
 * (`android.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD`); an unknown key is a problem too, since a field
 * silently ignored would pass devices the tenant meant to refuse. All problems are reported, not only the first.
 */

export interface PolicyProblem {
  /** the field's path, e.g. `android.allowedApps[0].packageName` ("" for the document itself) */
  path: string;
  message: string;
}

export type PolicyParse = { ok: true; document: TenantPolicyDocument } | { ok: false; problems: PolicyProblem[] };

export const MAX_ALLOWED_APPS = 200;
export const MAX_DIGESTS_PER_APP = 20;
export const MAX_BOOT_KEYS = 100;
export const INTEGRITY_LABELS: readonly IntegrityLabel[] = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"];

const PATCH_LEVEL = /^(\d{4})-(\d{2})(?:-(\d{2}))?$/;
const PACKAGE_NAME = /^[A-Za-z0-9_.]{1,255}$/;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const BOOT_KEY_HEX = /^(?:[0-9a-fA-F]{2}){16,64}$/;

/** `YYYY-MM` / `YYYY-MM-DD` → the number Android reports (YYYYMM / YYYYMMDD); undefined when it is not a date. */
export function patchLevelNumber(text: string): number | undefined {
  const m = PATCH_LEVEL.exec(text);
  if (!m) return undefined;
  const [, y, mo, d] = m;
  const month = Number(mo);
  if (Number(y) < 1000 || month < 1 || month > 12) return undefined;
  if (d === undefined) return Number(y) * 100 + month;
  const day = Number(d);
  if (day < 1 || day > 31) return undefined;
  return (Number(y) * 100 + month) * 100 + day;
}

/** The number of the policy file (YYYYMM or YYYYMMDD) as the document writes it. */
export function patchLevelText(level: number): string {
  const s = String(level);
  return s.length === 8 ? `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6)}` : `${s.slice(0, 4)}-${s.slice(4, 6)}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

class Checker {
  readonly problems: PolicyProblem[] = [];
  fail(path: string, message: string): undefined {
    this.problems.push({ path, message });
    return undefined;
  }
  /** the object at `path`, its unknown keys reported */
  object(v: unknown, path: string, keys: readonly string[]): Record<string, unknown> | undefined {
    if (!isObject(v)) return this.fail(path, "must be an object");
    for (const k of Object.keys(v)) if (!keys.includes(k)) this.fail(join(path, k), `unknown field (known: ${keys.join(", ")})`);
    return v;
  }
  oneOf<T extends string>(v: unknown, path: string, values: readonly T[]): T | undefined {
    return typeof v === "string" && (values as readonly string[]).includes(v) ? (v as T) : this.fail(path, `must be one of ${values.join(", ")}`);
  }
  array(v: unknown, path: string, max: number, what: string): unknown[] | undefined {
    if (!Array.isArray(v)) return this.fail(path, `must be a list of ${what}`);
    if (v.length > max) return this.fail(path, `must list at most ${max} ${what}`);
    return v;
  }
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

function androidSection(c: Checker, v: unknown): AndroidPolicySection | undefined {
  const o = c.object(v, "android", ["allowedApps", "minOsPatchLevel", "requiredSecurityLevel", "factoryExpiry", "allowedBootKeys"]);
  if (!o) return undefined;
  const out: AndroidPolicySection = {};
  if (o.allowedApps !== undefined) {
    const apps = c.array(o.allowedApps, "android.allowedApps", MAX_ALLOWED_APPS, "apps");
    if (apps) {
      const seen = new Set<string>();
      out.allowedApps = apps.flatMap((app, i) => {
        const at = `android.allowedApps[${i}]`;
        const a = c.object(app, at, ["packageName", "signatureDigests"]);
        if (!a) return [];
        if (typeof a.packageName !== "string" || !PACKAGE_NAME.test(a.packageName)) {
          c.fail(`${at}.packageName`, "must be a package name (1-255 of A-Z a-z 0-9 _ .)");
          return [];
        }
        if (seen.has(a.packageName)) c.fail(`${at}.packageName`, `${a.packageName} is listed twice`);
        seen.add(a.packageName);
        if (a.signatureDigests === undefined) return [{ packageName: a.packageName }];
        const digests = c.array(a.signatureDigests, `${at}.signatureDigests`, MAX_DIGESTS_PER_APP, "digests");
        if (!digests) return [];
        if (digests.length === 0) c.fail(`${at}.signatureDigests`, "must list at least one digest (leave it out for any signing certificate)");
        const good = digests.flatMap((d, j) => {
          if (typeof d === "string" && SHA256_HEX.test(d)) return [d.toLowerCase()];
          c.fail(`${at}.signatureDigests[${j}]`, "must be a SHA-256 digest as 64 hex digits");
          return [];
        });
        return [{ packageName: a.packageName, signatureDigests: good }];
      });
    }
  }
  if (o.minOsPatchLevel !== undefined) {
    if (typeof o.minOsPatchLevel === "string" && patchLevelNumber(o.minOsPatchLevel) !== undefined) out.minOsPatchLevel = o.minOsPatchLevel;
    else c.fail("android.minOsPatchLevel", "must be YYYY-MM or YYYY-MM-DD");
  }
  if (o.requiredSecurityLevel !== undefined) {
    const level = c.oneOf(o.requiredSecurityLevel, "android.requiredSecurityLevel", ["TrustedEnvironment", "StrongBox"] as const);
    if (level) out.requiredSecurityLevel = level;
  }
  if (o.factoryExpiry !== undefined) {
    const fe = c.oneOf(o.factoryExpiry, "android.factoryExpiry", ["accept", "refuse"] as const);
    if (fe) out.factoryExpiry = fe;
  }
  if (o.allowedBootKeys !== undefined) {
    const keys = c.array(o.allowedBootKeys, "android.allowedBootKeys", MAX_BOOT_KEYS, "boot keys");
    if (keys) {
      const seen = new Set<string>();
      out.allowedBootKeys = keys.flatMap((k, i) => {
        const at = `android.allowedBootKeys[${i}]`;
        const e = c.object(k, at, ["key", "label", "models"]);
        if (!e) return [];
        let ok = true;
        if (typeof e.key !== "string" || !BOOT_KEY_HEX.test(e.key)) ok = !!c.fail(`${at}.key`, "must be hex of 16 to 64 bytes (the verifiedBootKey)");
        else if (seen.has(e.key.toLowerCase())) ok = !!c.fail(`${at}.key`, "is listed twice");
        if (typeof e.label !== "string" || e.label.trim() === "" || e.label.length > 200) ok = !!c.fail(`${at}.label`, "must be 1 to 200 characters");
        let models: string[] | undefined;
        if (e.models !== undefined) {
          if (!Array.isArray(e.models) || e.models.length === 0 || e.models.some((m) => typeof m !== "string" || m === "" || m.length > 200)) {
            ok = !!c.fail(`${at}.models`, "must be a non-empty list of model names (1 to 200 characters each)");
          } else models = [...(e.models as string[])];
        }
        if (!ok) return [];
        const key = (e.key as string).toLowerCase();
        seen.add(key);
        return [{ key, label: e.label as string, ...(models ? { models } : {}) }];
      });
    }
  }
  return out;
}

/** Parses a policy document (already JSON-decoded). */
export function parseTenantPolicy(value: unknown): PolicyParse {
  const c = new Checker();
  const o = c.object(value, "", ["android", "playIntegrity", "appAttest"]);
  const document: TenantPolicyDocument = {};
  if (o) {
    if (o.android !== undefined) {
      const a = androidSection(c, o.android);
      if (a) document.android = a;
    }
    if (o.playIntegrity !== undefined) {
      const p = c.object(o.playIntegrity, "playIntegrity", ["minDeviceVerdict"]);
      if (p) {
        document.playIntegrity = {};
        if (p.minDeviceVerdict !== undefined) {
          const floor = c.oneOf(p.minDeviceVerdict, "playIntegrity.minDeviceVerdict", INTEGRITY_LABELS);
          if (floor) document.playIntegrity.minDeviceVerdict = floor;
        }
      }
    }
    if (o.appAttest !== undefined) {
      const a = c.object(o.appAttest, "appAttest", ["environments"]);
      if (a) {
        document.appAttest = {};
        if (a.environments !== undefined) {
          const envs = c.array(a.environments, "appAttest.environments", 2, "environments");
          if (envs) {
            if (envs.length === 0) c.fail("appAttest.environments", "must name production, development or both");
            const good = envs.flatMap((e, i) => {
              const env = c.oneOf(e, `appAttest.environments[${i}]`, ["production", "development"] as const);
              return env ? [env] : [];
            });
            if (new Set(good).size !== good.length) c.fail("appAttest.environments", "names an environment twice");
            document.appAttest.environments = good;
          }
        }
      }
    }
  }
  return c.problems.length ? { ok: false, problems: c.problems } : { ok: true, document };
}

/** The problems as one line: `android.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD; ...` */
export function policyProblemsText(problems: readonly PolicyProblem[]): string {
  return problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join("; ");
}

/** The document's android section as the appraisal's AndroidPolicy (laid over the operator's default). */
export function androidPolicyOf(section: AndroidPolicySection): AndroidPolicy {
  const out: AndroidPolicy = {};
  if (section.allowedApps) out.allowedApps = section.allowedApps.map((a) => ({ ...a }));
  if (section.minOsPatchLevel !== undefined) out.minOsPatchLevel = patchLevelNumber(section.minOsPatchLevel)!;
  if (section.requiredSecurityLevel) out.requiredSecurityLevel = section.requiredSecurityLevel;
  if (section.factoryExpiry) out.factoryExpiry = section.factoryExpiry;
  return out;
}

/** The file's policy (--android-policy) as the document's android section: how a tenant is seeded. */
export function androidSectionOf(policy: AndroidPolicy): AndroidPolicySection {
  const out: AndroidPolicySection = {};
  if (policy.allowedApps) out.allowedApps = policy.allowedApps.map((a) => ({ ...a }));
  if (policy.minOsPatchLevel !== undefined) out.minOsPatchLevel = patchLevelText(policy.minOsPatchLevel);
  if (policy.requiredSecurityLevel) out.requiredSecurityLevel = policy.requiredSecurityLevel;
  if (policy.factoryExpiry) out.factoryExpiry = policy.factoryExpiry;
  return out;
}

/** The tenant's boot keys, as the appraisal's list entries. */
export function bootKeysOf(section: AndroidPolicySection | undefined): AllowedBootKey[] {
  return (section?.allowedBootKeys ?? []).map((k) => ({ key: k.key, label: k.label, ...(k.models ? { models: [...k.models] } : {}) }));
}
