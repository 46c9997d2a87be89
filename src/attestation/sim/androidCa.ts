import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { createHash } from "node:crypto";
import { access } from "node:fs/promises";
import { join } from "node:path";
import type { AllowedBootKey } from "../types.ts";
import {
  createRootCertificate,
  issueCertificate,
  randomSerial,
  readCertifiedKey,
  writeCaFiles,
  type CaFile,
  type CertifiedKey,
  type DevCa,
} from "./devCa.ts";

/**
 * A demo Android attestation PKI shaped like Google's, for `attestd dev-ca --android` and the Android device
 * simulator (androidDeviceSim.ts), so the android-key path can be tried end to end without a phone:
 *
 * - a self-signed root, EC P-384 like Google's 2026 "Key Attestation CA1";
 * - "Droid CA2", the intermediate that certifies RKP devices' per-device CAs (made by the simulator, per device);
 * - factory intermediates named as Google's factories named them, `serialNumber=<16 hex>, title=TEE` (and
 *   `title=StrongBox`), which certify per-device factory intermediates (also made by the simulator);
 * - a CA under the root that the demo status list revokes, to chain through when trying revocation;
 * - the status list itself, in Google's format, and a boot-key allow-list holding the demo custom OS's key.
 *
 * Subjects are encoded in the order written, which is the order openssl prints them.
 */

export const ANDROID_DEV_CA_FILES = {
  root: "root.pem",
  rootKey: "root.key.pem",
  rkpIntermediate: "rkp-intermediate.pem",
  rkpIntermediateKey: "rkp-intermediate.key.pem",
  factoryTee: "factory-tee.pem",
  factoryTeeKey: "factory-tee.key.pem",
  factoryStrongBox: "factory-strongbox.pem",
  factoryStrongBoxKey: "factory-strongbox.key.pem",
  revokedIntermediate: "revoked-intermediate.pem",
  revokedIntermediateKey: "revoked-intermediate.key.pem",
  /** what `--android-status` takes */
  status: "status.json",
  /** what `--allowed-boot-keys` takes */
  allowedBootKeys: "allowed-boot-keys.json",
} as const;

/** The secure hardware a chain speaks for, as Google's certificate names spell it. */
export type HardwareTitle = "TEE" | "StrongBox";

export interface AndroidDevCa {
  /** the key is absent when read from a directory that does not hold root.key.pem */
  root: DevCa["root"];
  /** "Droid CA2": issues the per-device RKP CAs */
  rkpIntermediate: CertifiedKey;
  /** `serialNumber=…, title=TEE|StrongBox` under the root: issue the per-device factory intermediates */
  factory: Record<HardwareTitle, CertifiedKey>;
  /** a CA under the root whose serial the demo status list revokes */
  revokedIntermediate: CertifiedKey;
}

export interface AndroidDevCaOptions {
  now?: Date;
  /** default 3650 */
  rootValidityDays?: number;
  /** the intermediates' (default 1825) */
  intermediateValidityDays?: number;
}

const DAY_MS = 86_400_000;
const ORG = "attestd Demo";

/**
 * The verifiedBootKey of the demo "custom OS" (the SHA-256 a device reports for the key that signed the OS it
 * booted; here a hash of a label, since no image is ever verified): what a simulated device reports for
 * SelfSigned boot, and what allowed-boot-keys.json allows.
 */
export const DEMO_CUSTOM_OS_BOOT_KEY: Buffer = createHash("sha256").update("attestd Demo custom OS: AVB key").digest();
export const DEMO_CUSTOM_OS_LABEL = "attestd Demo custom OS";

/** `serialNumber=<hex>, title=<title>`: the text form of x509.Name knows neither attribute by name. */
export function factoryName(serialHex: string, title: HardwareTitle): x509.Name {
  return new x509.Name(`serialNumber=${serialHex}, title=${title}`, { serialNumber: "2.5.4.5", title: "2.5.4.12" });
}

/** 16 hex digits, as in Google's factory names. */
export function factorySerialNumber(): string {
  return randomSerial().slice(0, 16);
}

/** A demo Android attestation PKI, as `attestd dev-ca --android` writes it. */
export async function createAndroidDevCa(opts: AndroidDevCaOptions = {}): Promise<AndroidDevCa> {
  const now = opts.now ?? new Date();
  const notBefore = new Date(now.getTime() - DAY_MS);
  const validityDays = opts.intermediateValidityDays ?? 1825;
  const root = await createRootCertificate({
    subject: `CN=attestd Demo Android Attestation Root, O=${ORG}`,
    keyType: "ec-p384",
    notBefore,
    validityDays: opts.rootValidityDays ?? 3650,
    // Google's roots set no path length: RKP chains have two or three CAs under the root, factory chains two.
    pathLen: undefined,
  });
  const intermediate = (subject: string | x509.Name, keyUsage: ("keyCertSign" | "cRLSign")[]) =>
    issueCertificate(root, { subject, keyType: "ec-p384", notBefore, validityDays, ca: true, keyUsage });
  return {
    root,
    rkpIntermediate: await intermediate(`CN=Droid CA2, O=${ORG}`, ["keyCertSign", "cRLSign"]),
    factory: {
      TEE: await intermediate(factoryName(factorySerialNumber(), "TEE"), ["keyCertSign"]),
      StrongBox: await intermediate(factoryName(factorySerialNumber(), "StrongBox"), ["keyCertSign"]),
    },
    revokedIntermediate: await intermediate(`CN=attestd Demo Revoked Intermediate, O=${ORG}`, ["keyCertSign", "cRLSign"]),
  };
}

/** The demo status list in Google's format: the revoked intermediate, for key compromise. */
export function androidDevCaStatusJson(ca: AndroidDevCa): string {
  const entries = { [ca.revokedIntermediate.serial]: { status: "REVOKED", reason: "KEY_COMPROMISE" } };
  return JSON.stringify({ entries }, null, 2) + "\n";
}

/** The demo boot-key allow-list (docs/android-key.md, Policy): the custom OS a simulated device boots SelfSigned. */
export function androidDevCaAllowedBootKeysJson(): string {
  const entries: AllowedBootKey[] = [{ key: DEMO_CUSTOM_OS_BOOT_KEY.toString("hex"), label: DEMO_CUSTOM_OS_LABEL }];
  return JSON.stringify(entries, null, 2) + "\n";
}

/** Writes the CA (names in ANDROID_DEV_CA_FILES, keys 0600); refuses to replace any file unless `overwrite`. */
export async function writeAndroidDevCa(ca: AndroidDevCa, dir: string, opts: { overwrite?: boolean } = {}): Promise<string[]> {
  const F = ANDROID_DEV_CA_FILES;
  const files: CaFile[] = [[F.root, ca.root.certPem, 0o644]];
  if (ca.root.keyPem) files.push([F.rootKey, ca.root.keyPem, 0o600]);
  const pair = (c: CertifiedKey, cert: string, key: string): CaFile[] => [[cert, c.certPem, 0o644], [key, c.keyPem, 0o600]];
  files.push(
    ...pair(ca.rkpIntermediate, F.rkpIntermediate, F.rkpIntermediateKey),
    ...pair(ca.factory.TEE, F.factoryTee, F.factoryTeeKey),
    ...pair(ca.factory.StrongBox, F.factoryStrongBox, F.factoryStrongBoxKey),
    ...pair(ca.revokedIntermediate, F.revokedIntermediate, F.revokedIntermediateKey),
    [F.status, androidDevCaStatusJson(ca), 0o644],
    [F.allowedBootKeys, androidDevCaAllowedBootKeysJson(), 0o644],
  );
  return writeCaFiles(dir, files, opts);
}

/** Reads what writeAndroidDevCa wrote; root.key.pem is optional (the simulator never signs with the root). */
export async function readAndroidDevCa(dir: string): Promise<AndroidDevCa> {
  const F = ANDROID_DEV_CA_FILES;
  // A vendor dev CA has a root.pem too; say which command makes the right directory instead of "ENOENT".
  const isAndroid = await access(join(dir, F.rkpIntermediate)).then(() => true, () => false);
  if (!isAndroid) throw new Error(`no ${F.rkpIntermediate}: not a directory written by \`attestd dev-ca --android\``);
  return {
    root: await readCertifiedKey(dir, F.root, F.rootKey, true),
    rkpIntermediate: await readCertifiedKey(dir, F.rkpIntermediate, F.rkpIntermediateKey),
    factory: {
      TEE: await readCertifiedKey(dir, F.factoryTee, F.factoryTeeKey),
      StrongBox: await readCertifiedKey(dir, F.factoryStrongBox, F.factoryStrongBoxKey),
    },
    revokedIntermediate: await readCertifiedKey(dir, F.revokedIntermediate, F.revokedIntermediateKey),
  };
}
