import type { AllowedBootKey, AndroidPolicy } from "../types.ts";
import type { AuthorizationListInfo, KeyDescriptionInfo } from "../encoding/keyDescription.ts";
import { knoxWarrantyVoid, type KnoxInfo } from "../encoding/knox.ts";
import { findAllowedBootKey } from "./bootKeys.ts";

/**
 * The verdict rules for an authenticated android-key attestation (blob-format.md): every rule is checked and
 * every failure named, so `attestd appraise` and the log can say all that is wrong at once.
 *
 * Yes needs:
 * - attestationSecurityLevel = keyMintSecurityLevel, and TrustedEnvironment or StrongBox;
 * - a hardware-enforced RootOfTrust with deviceLocked = true;
 * - verifiedBootState Verified, or SelfSigned with a verifiedBootKey on the operator's allow-list;
 * - no Samsung Knox warranty bit, and a Knox extension, when the leaf carries one, that can be read (pre-Android-8
 *   Samsung firmware writes one with broken lengths: its warranty bit is unknown, so the device is refused);
 * - when the policy sets them: StrongBox as the required security level; osPatchLevel at least the minimum; an allowed app (package name, and one of its
 *   signing-certificate digests when the entry lists digests).
 * Only hardware-enforced values count for the device state (a software-enforced RootOfTrust is a claim of the
 * OS, not of the secure hardware); the attestationApplicationId is software-enforced by design (Keystore fills
 * it in) and is read from either list.
 */

export interface AndroidPolicyInput {
  keyDescription: KeyDescriptionInfo;
  knox?: KnoxInfo;
  allowedBootKeys: readonly AllowedBootKey[];
  policy: AndroidPolicy;
}

export interface AndroidPolicyDecision {
  verdict: "Yes" | "No";
  /** why the verdict is No (empty for Yes) */
  failures: string[];
  /** the allow-list entry that admitted a SelfSigned boot */
  bootKey?: AllowedBootKey;
  /** whether osPatchLevel met the policy's minimum; undefined when the policy sets none */
  patchMinimumMet?: boolean;
  /** whether the app allow-list admitted the attested app; undefined when the policy has no allow-list */
  appAllowed?: boolean;
}

const HARDWARE_LEVELS = new Set(["TrustedEnvironment", "StrongBox"]);

/** YYYYMM or YYYYMMDD → YYYYMMDD (a month-only level counts as day 00, i.e. before any day of that month). */
export function patchLevelAsDate(level: number): number | undefined {
  if (!Number.isSafeInteger(level) || level <= 0) return undefined;
  const withDay = level < 1_000_000 ? level * 100 : level; // YYYYMM → YYYYMM00
  if (withDay < 1000_01_00 || withDay > 9999_12_31) return undefined;
  const month = Math.floor(withDay / 100) % 100;
  const day = withDay % 100;
  return month >= 1 && month <= 12 && day <= 31 ? withDay : undefined;
}

function appAllowed(
  sw: AuthorizationListInfo,
  hw: AuthorizationListInfo,
  allowed: NonNullable<AndroidPolicy["allowedApps"]>,
): string | null {
  const app = sw.attestationApplicationId ?? hw.attestationApplicationId;
  if (!app) return "no attestationApplicationId to check against the app allow-list";
  const digests = new Set(app.signatureDigests);
  for (const rule of allowed) {
    if (!app.packages.some((p) => p.name === rule.packageName)) continue;
    if (!rule.signatureDigests || rule.signatureDigests.some((d) => digests.has(d.toLowerCase()))) return null;
  }
  const names = app.packages.map((p) => p.name).join(", ") || "(none)";
  return `app ${names} (signing digests ${app.signatureDigests.join(", ") || "none"}) is not on the app allow-list`;
}

export function evaluateAndroidPolicy(input: AndroidPolicyInput): AndroidPolicyDecision {
  const kd = input.keyDescription;
  const hw = kd.hardwareEnforced;
  const failures: string[] = [];
  let bootKey: AllowedBootKey | undefined;

  if (kd.attestationSecurityLevel !== kd.keyMintSecurityLevel) {
    failures.push(`attestationSecurityLevel ${kd.attestationSecurityLevel} differs from keyMintSecurityLevel ${kd.keyMintSecurityLevel}`);
  } else if (!HARDWARE_LEVELS.has(kd.attestationSecurityLevel)) {
    failures.push(`security level ${kd.attestationSecurityLevel} is not TrustedEnvironment or StrongBox`);
  } else if (input.policy.requiredSecurityLevel === "StrongBox" && kd.attestationSecurityLevel !== "StrongBox") {
    failures.push(`security level ${kd.attestationSecurityLevel} is below the policy's required StrongBox`);
  }

  const rot = hw.rootOfTrust;
  if (!rot) {
    failures.push("no hardware-enforced RootOfTrust");
  } else {
    if (!rot.deviceLocked) failures.push("bootloader unlocked (deviceLocked = false)");
    if (rot.verifiedBootState === "SelfSigned") {
      bootKey = findAllowedBootKey(input.allowedBootKeys, rot.verifiedBootKey.toString("hex"), hw.attestationIdModel);
      if (!bootKey) failures.push(`SelfSigned boot with key ${rot.verifiedBootKey.toString("hex")}, not on the allow-list`);
    } else if (rot.verifiedBootState !== "Verified") {
      failures.push(`verifiedBootState ${rot.verifiedBootState}`);
    }
  }

  if (knoxWarrantyVoid(input.knox)) failures.push("Samsung Knox warranty bit set");
  if (input.knox?.unreadable) {
    failures.push(`Samsung Knox extension unreadable (${input.knox.unreadable}): its warranty bit cannot be read`);
  }

  let patchMinimumMet: boolean | undefined;
  const min = input.policy.minOsPatchLevel;
  if (min !== undefined) {
    const want = patchLevelAsDate(min);
    const have = typeof hw.osPatchLevel === "number" ? patchLevelAsDate(hw.osPatchLevel) : undefined;
    const before = failures.length;
    if (want === undefined) failures.push(`policy minOsPatchLevel ${min} is not YYYYMM or YYYYMMDD`);
    else if (have === undefined) failures.push(`no usable hardware-enforced osPatchLevel (minimum ${min})`);
    else if (have < want) failures.push(`osPatchLevel ${hw.osPatchLevel} is older than the minimum ${min}`);
    patchMinimumMet = failures.length === before;
  }

  let appAdmitted: boolean | undefined;
  if (input.policy.allowedApps !== undefined) {
    const why = appAllowed(kd.softwareEnforced, hw, input.policy.allowedApps);
    if (why) failures.push(why);
    appAdmitted = why === null;
  }

  const decision: AndroidPolicyDecision = { verdict: failures.length === 0 ? "Yes" : "No", failures };
  if (bootKey && failures.length === 0) decision.bootKey = bootKey;
  if (patchMinimumMet !== undefined) decision.patchMinimumMet = patchMinimumMet;
  if (appAdmitted !== undefined) decision.appAllowed = appAdmitted;
  return decision;
}

/** The record's tamperBit: "1" when the bootloader is unlocked or the Knox warranty bit is set. */
export function androidTamperBit(kd: KeyDescriptionInfo, knox: KnoxInfo | undefined): "0" | "1" {
  const unlocked = kd.hardwareEnforced.rootOfTrust?.deviceLocked !== true;
  return unlocked || knoxWarrantyVoid(knox) ? "1" : "0";
}
