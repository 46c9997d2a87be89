import { createHash } from "node:crypto";
import type { CertificateRole, ChainCertificate } from "./chain/androidChain.ts";
import type { Provisioning } from "./chain/provisioning.ts";
import type { AuthorizationListInfo, IntValue, KeyDescriptionInfo } from "./encoding/keyDescription.ts";
import type { DeviceFacts } from "./types.ts";

/**
 * The facts of an authenticated attestation that a relying party may pin to a device it names (trust on first
 * use, docs/devices.md), per format. Only what stays put on an honest device is identity; what an update moves
 * forward is a level. Pure, like the rest of the appraisal: the service layer compares them with the pin.
 */

/** The names of every fact, so docs, tests and the comparison spell them one way. */
export const FACT = {
  verifiedBootKey: "verifiedBootKey",
  securityLevel: "securityLevel",
  batchKey: "batchKey",
  appPackages: "appPackages",
  appSignatureDigests: "appSignatureDigests",
  osVersion: "osVersion",
  osPatchLevel: "osPatchLevel",
  vendorPatchLevel: "vendorPatchLevel",
  bootPatchLevel: "bootPatchLevel",
  leafKey: "leafKey",
  chipId: "chipId",
  IMEI: "IMEI",
  sdkVersion: "sdkVersion",
  appAttestKeyId: "appAttestKeyId",
  appId: "appId",
} as const;

function level(list: AuthorizationListInfo, other: AuthorizationListInfo, name: "osVersion" | "osPatchLevel" | "vendorPatchLevel" | "bootPatchLevel") {
  const v: IntValue | undefined = list[name] ?? other[name];
  // a value too large for a double (an INTEGER the DER allows, no device writes) is no level to compare
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/**
 * android-key: the verified-boot key (whose OS the device runs), the security level, for a factory-provisioned
 * chain the key of the certificate that certified the device's keys (burned in at manufacture; an RKP device CA is
 * renewed every few weeks by design, so it is not pinned), the app's package names and signing-certificate
 * digests (the version is not: apps update), and the OS version and patch levels. Levels and the root of trust
 * are read from the hardware-enforced list, as the verdict rules read them (the software list as a fallback for
 * levels only: a software-level key has nothing else, and its security level already differs from a pinned one).
 */
export function androidDeviceFacts(
  kd: KeyDescriptionInfo,
  certs: readonly ChainCertificate[],
  roles: readonly CertificateRole[],
  provisioning: Provisioning,
): DeviceFacts {
  const hw = kd.hardwareEnforced;
  const sw = kd.softwareEnforced;
  const identity: Record<string, string> = { [FACT.securityLevel]: kd.attestationSecurityLevel };
  const rot = hw.rootOfTrust;
  if (rot) identity[FACT.verifiedBootKey] = rot.verifiedBootKey.toString("hex");
  if (provisioning === "factory") {
    const batch = roles.findIndex((r, i) => i > 0 && (r === "batch" || r === "intermediate"));
    if (batch > 0) identity[FACT.batchKey] = certs[batch]!.facts.spkiSha256;
  }
  const app = sw.attestationApplicationId ?? hw.attestationApplicationId;
  if (app) {
    identity[FACT.appPackages] = app.packages.map((p) => p.name).sort().join(",");
    identity[FACT.appSignatureDigests] = [...app.signatureDigests].sort().join(",");
  }
  const levels: Record<string, number> = {};
  for (const name of [FACT.osVersion, FACT.osPatchLevel, FACT.vendorPatchLevel, FACT.bootPatchLevel] as const) {
    const v = level(hw, sw, name);
    if (v !== undefined) levels[name] = v;
  }
  return { format: "android-key", identity, levels };
}

/**
 * Vendor container: the device leaf's key (SHA-256 of its SubjectPublicKeyInfo, lowercase hex), the chip id and
 * the IMEI, as the record carries them. The container has no version that orders, so no levels.
 */
export function vendorDeviceFacts(leafSpki: Uint8Array, chipId: string | undefined, imei: string | undefined): DeviceFacts {
  // the SubjectPublicKeyInfo bytes as the certificate carries them (as Android's keys are hashed, derChain.ts):
  // ~1 µs, where asking OpenSSL for the key again would decode it a second time
  const identity: Record<string, string> = { [FACT.leafKey]: createHash("sha256").update(leafSpki).digest("hex") };
  if (chipId !== undefined) identity[FACT.chipId] = chipId;
  if (imei !== undefined) identity[FACT.IMEI] = imei;
  return { format: "vendor", identity, levels: {} };
}

/**
 * play-integrity: the token names no device (Google gives no hardware identifier, by design), so what a pin holds is
 * the app: its package and the signing-certificate digests Google attests (sorted, comma-separated, lowercase hex),
 * the same two facts android-key pins for its app; and, when the app opted into device attributes, the Android SDK
 * version as a level (an OS downgrade). Pinning thus catches a change of app, signer or format and an OS downgrade,
 * never a different phone running the same app (docs/play-integrity.md, "Device pinning").
 */
export function playIntegrityDeviceFacts(packageName: string, certDigestsHex: readonly string[], sdkVersion: number | undefined): DeviceFacts {
  const identity: Record<string, string> = {
    [FACT.appPackages]: packageName,
    [FACT.appSignatureDigests]: [...certDigestsHex].sort().join(","),
  };
  const levels: Record<string, number> = {};
  if (sdkVersion !== undefined) levels[FACT.sdkVersion] = sdkVersion;
  return { format: "play-integrity", identity, levels };
}

/**
 * app-attest: the key is the device (a key id names one Secure Enclave key of one install of the app), and the
 * app it was attested for. No levels: the assertion counter is kept with the key itself, compare-and-set.
 */
export function appAttestDeviceFacts(keyIdB64: string, appId: string): DeviceFacts {
  return { format: "app-attest", identity: { [FACT.appAttestKeyId]: keyIdB64, [FACT.appId]: appId }, levels: {} };
}
