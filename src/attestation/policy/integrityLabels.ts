import type { AllowedBootKey, IntegrityLabel } from "../types.ts";
import type { KeyDescriptionInfo } from "../encoding/keyDescription.ts";
import { knoxWarrantyVoid, type KnoxInfo } from "../encoding/knox.ts";
import { findAllowedBootKey } from "./bootKeys.ts";
import { patchLevelAsDate } from "./androidPolicy.ts";

/**
 * The android-key integrity labels, in the style of Play Integrity's device recognition verdict. Cumulative: each
 * label needs the one before it. They describe the device alone: the tenant's own policy (a minimum patch level,
 * an app allow-list) decides the verdict, never a label. docs/android-key.md, "Integrity labels", is the contract.
 *
 * - MEETS_BASIC_INTEGRITY: an authenticated attestation (chain to a pinned root, nothing revoked, the challenge is
 *   the nonce) from secure hardware (attestationSecurityLevel = keyMintSecurityLevel, TrustedEnvironment or
 *   StrongBox) whose boot did not fail verification (verifiedBootState is not Failed). An unlocked bootloader or an
 *   unrecognised OS still meets it, as in Play Integrity.
 * - MEETS_DEVICE_INTEGRITY: also a hardware-enforced RootOfTrust with the bootloader locked and verified boot by
 *   the OEM's key (Verified) or an allow-listed one (SelfSigned, honouring the entry's models); no Samsung Knox
 *   warranty bit, and a Knox extension, when there is one, that can be read.
 * - MEETS_STRONG_INTEGRITY: also a hardware-enforced osPatchLevel within the last year of the appraisal time
 *   (`patchWithinYear`).
 */

export interface IntegrityInput {
  /** the attestation authenticated: status Success */
  authenticated: boolean;
  keyDescription: KeyDescriptionInfo;
  knox?: KnoxInfo | undefined;
  allowedBootKeys: readonly AllowedBootKey[];
  now: Date;
}

const HARDWARE_LEVELS = new Set(["TrustedEnvironment", "StrongBox"]);

/**
 * Whether an Android patch level is at most one year old at `now` (UTC). YYYYMMDD compares by day: the same
 * calendar day a year earlier still counts. YYYYMM (how osPatchLevel is reported) compares by month: the same month
 * a year earlier still counts, since a month's level names that whole month's update. Undefined when the value is
 * not a patch level.
 */
export function patchWithinYear(level: number, now: Date): boolean | undefined {
  const date = patchLevelAsDate(level);
  if (date === undefined) return undefined;
  const cutoff = (now.getUTCFullYear() - 1) * 10_000 + (now.getUTCMonth() + 1) * 100 + now.getUTCDate();
  const monthOnly = date % 100 === 0;
  return monthOnly ? Math.floor(date / 100) >= Math.floor(cutoff / 100) : date >= cutoff;
}

/** The hardware-enforced osPatchLevel as a number, when the device attests one. */
export function attestedOsPatchLevel(kd: KeyDescriptionInfo): number | undefined {
  const level = kd.hardwareEnforced.osPatchLevel;
  return typeof level === "number" ? level : undefined;
}

export function integrityLabels(input: IntegrityInput): IntegrityLabel[] {
  const kd = input.keyDescription;
  const hw = kd.hardwareEnforced;
  const rot = hw.rootOfTrust;
  const labels: IntegrityLabel[] = [];

  const hardwareBacked = kd.attestationSecurityLevel === kd.keyMintSecurityLevel && HARDWARE_LEVELS.has(kd.attestationSecurityLevel);
  if (!input.authenticated || !hardwareBacked || rot?.verifiedBootState === "Failed") return labels;
  labels.push("MEETS_BASIC_INTEGRITY");

  const bootAccepted =
    rot?.verifiedBootState === "Verified" ||
    (rot?.verifiedBootState === "SelfSigned" &&
      findAllowedBootKey(input.allowedBootKeys, rot.verifiedBootKey.toString("hex"), hw.attestationIdModel) !== undefined);
  const knoxIntact = !knoxWarrantyVoid(input.knox) && !input.knox?.unreadable;
  if (!rot?.deviceLocked || !bootAccepted || !knoxIntact) return labels;
  labels.push("MEETS_DEVICE_INTEGRITY");

  const level = attestedOsPatchLevel(kd);
  if (level === undefined || patchWithinYear(level, input.now) !== true) return labels;
  labels.push("MEETS_STRONG_INTEGRITY");
  return labels;
}

/** Play Integrity's labels in the order each implies the ones before it. */
const PLAY_LABELS: readonly IntegrityLabel[] = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"];

/**
 * play-integrity: the token's deviceRecognitionVerdict as cumulative labels, as android-key's are: Google's STRONG
 * implies DEVICE implies BASIC, but a token lists only the labels the app opted into (by default DEVICE alone), so
 * each label present brings the ones below it. Other values (MEETS_VIRTUAL_INTEGRITY: an emulator; values Google
 * adds later) are no label. docs/play-integrity.md, "Device labels".
 */
export function playIntegrityLabels(deviceRecognitionVerdict: readonly string[]): IntegrityLabel[] {
  let highest = -1;
  for (const v of deviceRecognitionVerdict) highest = Math.max(highest, PLAY_LABELS.indexOf(v as IntegrityLabel));
  return PLAY_LABELS.slice(0, highest + 1);
}
