import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { X509Certificate, createHash, randomBytes, type KeyObject } from "node:crypto";
import type { ChainEncoding } from "../encoding/chainInput.ts";
import { toPem } from "../encoding/pem.ts";
import { DEMO_CUSTOM_OS_BOOT_KEY, factoryName, factorySerialNumber, type AndroidDevCa, type HardwareTitle } from "./androidCa.ts";
import {
  KEY_DESCRIPTION_OID,
  KNOX_OID,
  PROVISIONING_INFO_OID,
  SecurityLevel,
  VerifiedBootState,
  keyDescriptionDer,
  knoxExtensionDer,
  provisioningInfoDer,
  type KeyDescriptionOptions,
} from "./androidExtensions.ts";
import { generateKey, issueCertificate, randomSerial, type CertifiedKey, type IssueOptions } from "./devCa.ts";
import { simulatedChallenge } from "./deviceSim.ts";

/**
 * The certificate chain an Android phone's `KeyStore.getCertificateChain()` returns for a key generated with
 * `setAttestationChallenge(nonce bytes)`, leaf first, made with the demo PKI of androidCa.ts — honest devices in
 * every state the appraisal distinguishes, and the chain-extension forgery — for `attestd device-sim --format
 * android-key`, the tests and the benchmark. Two steps, as on a phone:
 *
 * - `createAndroidDevice`: the device's attestation CA, made once per device. RKP-shaped: a per-device CA
 *   `O=TEE|StrongBox, CN=<32 hex>` carrying the ProvisioningInfo extension (what marks a chain as remotely
 *   provisioned), valid for weeks, under "Droid CA2". Factory-shaped: a per-device factory intermediate
 *   `serialNumber=<16 hex>, title=TEE|StrongBox` under the factory intermediate of its title; nothing carries
 *   ProvisioningInfo.
 * - `attestAndroidKey`: a new key certified for one nonce: the leaf (`CN=Android Keystore Key`, 1970..2048 as
 *   real devices write it, the KeyDescription), optionally signed by an attest key, optionally under a forgery.
 *
 * The extensions are encoded synchronously (`androidKeyDescription`, androidExtensions.ts), as is the body
 * (`encodeAndroidChain`); only key generation and certificate signing are asynchronous (WebCrypto).
 */

export const ANDROID_SECURITY_LEVELS = ["tee", "strongbox", "software"] as const;
export type AndroidSecurityLevel = (typeof ANDROID_SECURITY_LEVELS)[number];
export const ANDROID_BOOT_STATES = ["verified", "self-signed", "unverified", "failed"] as const;
export type AndroidBootState = (typeof ANDROID_BOOT_STATES)[number];
export const ANDROID_PROVISIONING = ["rkp", "factory"] as const;
export type AndroidProvisioning = (typeof ANDROID_PROVISIONING)[number];
export const ANDROID_KEY_TYPES = ["ec", "rsa"] as const;
export type AndroidKeyType = (typeof ANDROID_KEY_TYPES)[number];

/**
 * The verifiedBootKey of the demo OEM, whose OS a simulated device boots Verified (a hash of a label: like the
 * custom OS's key in androidCa.ts, it stands for the SHA-256 of an AVB key no image is ever signed with).
 */
export const DEMO_OEM_BOOT_KEY: Buffer = createHash("sha256").update("attestd Demo OEM: AVB key").digest();
export const DEFAULT_ANDROID_PACKAGE = "com.example.wallet";

export interface AndroidDeviceOptions {
  /** default "tee"; a software-level key is attested under a TEE device CA */
  securityLevel?: AndroidSecurityLevel;
  /** default "rkp" */
  provisioning?: AndroidProvisioning;
  /** certify the device through the intermediate the demo status list revokes */
  revokedIntermediate?: boolean;
  /** default now */
  now?: Date;
}

export interface AndroidDevice {
  securityLevel: AndroidSecurityLevel;
  provisioning: AndroidProvisioning;
  /** the CA that certifies the device's keys: its RKP CA or its factory intermediate */
  deviceCa: CertifiedKey;
  /** the certificates above deviceCa, the root last */
  issuers: Uint8Array[];
}

export interface AndroidKeyOptions {
  /** the nonce string from POST /v2/nonces; the challenge is the 32 bytes it base64url-decodes to */
  nonce: string;
  /** a challenge that is not this nonce (every bit flipped, as the vendor simulator does) */
  wrongNonce?: boolean;
  /** the nonce string's ASCII bytes as the challenge, as apps that pass the string send */
  asciiNonce?: boolean;
  /** deviceLocked = false (the boot state stays what bootState says) */
  unlocked?: boolean;
  /** default "verified"; "self-signed" boots the demo custom OS (DEMO_CUSTOM_OS_BOOT_KEY) */
  bootState?: AndroidBootState;
  /** sign the leaf with an ATTEST_KEY key (purpose 7) certified by the device CA, at position 1 */
  attestKey?: boolean;
  /** a Samsung Knox extension on the leaf, as Galaxy devices write it */
  knox?: boolean;
  /** a Knox extension with the warranty bit set (implies knox) */
  knoxWarranty?: boolean;
  /**
   * The forgery the chain rules defend against: an honest leaf of an unlocked device, and under it a certificate
   * signed with the leaf's key that claims a locked, Verified device with this nonce.
   */
  chainExtension?: boolean;
  /** osPatchLevel, YYYYMM; default the month of `now` (an up-to-date device) */
  patchLevel?: number;
  /** vendorPatchLevel and bootPatchLevel, YYYYMMDD; default the first day of the patchLevel month */
  vendorPatchLevel?: number;
  bootPatchLevel?: number;
  /** osVersion as KeyMint writes it (150000 is Android 15); default 150000 */
  osVersion?: number;
  /** the SHA-256 of the attesting app's signing certificate (default 32 bytes of 0x5a) */
  signatureDigest?: Uint8Array;
  /** attestationApplicationId package (default com.example.wallet) */
  packageName?: string;
  /** attestationIdModel; default none (apps attest device ids only when they ask) */
  model?: string;
  /** the attested key: EC P-256 (default) or RSA-2048 */
  keyType?: AndroidKeyType;
  /** certify this key instead of generating one (benchmarks reuse one key across nonces) */
  leafKey?: KeyObject;
  /** leave the root out, as many RKP devices do */
  omitRoot?: boolean;
  /** default now */
  now?: Date;
}

export interface BuildAndroidChainOptions extends AndroidDeviceOptions, AndroidKeyOptions {
  ca: AndroidDevCa;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
// What KeyMint writes when the app sets no validity: the certificate says nothing about the device's time.
const KEY_NOT_BEFORE = new Date("1970-01-01T00:00:00Z");
const KEY_NOT_AFTER = new Date("2048-01-01T00:00:00Z");
const KEY_SUBJECT = "CN=Android Keystore Key";
const ATTEST_KEY_SUBJECT = "CN=Android Keystore Attest Key";
const PURPOSE_SIGN = 2;
const PURPOSE_ATTEST_KEY = 7;
const SECURITY_LEVEL: Record<AndroidSecurityLevel, SecurityLevel> = {
  tee: SecurityLevel.trustedEnvironment,
  strongbox: SecurityLevel.strongBox,
  software: SecurityLevel.software,
};
const BOOT_STATE: Record<AndroidBootState, VerifiedBootState> = {
  verified: VerifiedBootState.verified,
  "self-signed": VerifiedBootState.selfSigned,
  unverified: VerifiedBootState.unverified,
  failed: VerifiedBootState.failed,
};
const KEYMINT_ALGORITHM = { ec: 3, rsa: 1 } as const;
const KEY_SIZE = { ec: 256, rsa: 2048 } as const;
// Android package names: dot-separated Java identifiers, at least two segments (the platform caps them at 255).
const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

function title(level: AndroidSecurityLevel): HardwareTitle {
  return level === "strongbox" ? "StrongBox" : "TEE";
}

/** Which demo CA certifies a device's attestation CA: Droid CA2, the factory intermediate of its title, or the revoked one. */
export function deviceCaIssuer(
  ca: AndroidDevCa,
  d: { securityLevel: AndroidSecurityLevel; provisioning: AndroidProvisioning; revokedIntermediate: boolean },
): CertifiedKey {
  if (d.revokedIntermediate) return ca.revokedIntermediate;
  return d.provisioning === "rkp" ? ca.rkpIntermediate : ca.factory[title(d.securityLevel)];
}

/** The device's attestation CA and the certificates above it, made once per simulated device. */
export async function createAndroidDevice(ca: AndroidDevCa, opts: AndroidDeviceOptions = {}): Promise<AndroidDevice> {
  const securityLevel = opts.securityLevel ?? "tee";
  const provisioning = opts.provisioning ?? "rkp";
  const now = opts.now ?? new Date();
  const hardware = title(securityLevel);
  const issuer = deviceCaIssuer(ca, { securityLevel, provisioning, revokedIntermediate: Boolean(opts.revokedIntermediate) });
  let deviceCa: CertifiedKey;
  if (provisioning === "rkp") {
    // Google's RKP servers name the device CA after its serial and renew it every few weeks.
    const serial = randomSerial();
    deviceCa = await issueCertificate(issuer, {
      subject: `O=${hardware}, CN=${serial}`,
      serial,
      keyType: "ec-p256",
      notBefore: new Date(now.getTime() - HOUR_MS),
      notAfter: new Date(now.getTime() + 30 * DAY_MS),
      ca: true,
      keyUsage: ["keyCertSign"],
      extensions: [new x509.Extension(PROVISIONING_INFO_OID, false, provisioningInfoDer())],
    });
  } else {
    // A factory key is certified once, at manufacture, until its issuer expires (as Google's factory
    // certificates expire with the 2016 root).
    deviceCa = await issueCertificate(issuer, {
      subject: factoryName(factorySerialNumber(), hardware),
      keyType: "ec-p256",
      notBefore: new Date(now.getTime() - DAY_MS),
      notAfter: new Date(new X509Certificate(issuer.certDer).validTo),
      ca: true,
      keyUsage: ["keyCertSign"],
    });
  }
  return { securityLevel, provisioning, deviceCa, issuers: [issuer.certDer, ca.root.certDer] };
}

/** Checks the options a caller may get wrong; returns the challenge the device embeds. */
export function checkKeyOptions(o: AndroidKeyOptions): Buffer {
  if (o.patchLevel !== undefined && !(Number.isInteger(o.patchLevel) && /^\d{4}(0[1-9]|1[0-2])$/.test(String(o.patchLevel)))) {
    throw new Error(`patch level ${o.patchLevel} is not YYYYMM (e.g. 202501)`);
  }
  if (o.packageName !== undefined && !(o.packageName.length <= 255 && PACKAGE_NAME.test(o.packageName))) {
    throw new Error(`package ${JSON.stringify(o.packageName)} is not an Android package name (e.g. com.example.app)`);
  }
  if (o.model !== undefined && !/^[\x20-\x7e]{1,64}$/.test(o.model)) {
    throw new Error("model must be 1 to 64 printable ASCII characters");
  }
  return simulatedChallenge(o.nonce, o);
}

function sha256(...parts: (string | Uint8Array)[]): Buffer {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
}

/**
 * What the device's secure hardware attests for a key, but its challenge: security level, root of trust, patch
 * levels, the app, device ids. Synchronous and, given `now`, pure: tests that build chains their own way use it.
 */
export function androidKeyDescription(
  securityLevel: AndroidSecurityLevel,
  o: Omit<AndroidKeyOptions, "nonce">,
): KeyDescriptionOptions {
  const now = o.now ?? new Date();
  const patchLevel = o.patchLevel ?? now.getUTCFullYear() * 100 + now.getUTCMonth() + 1;
  const bootKey = o.bootState === "self-signed" ? DEMO_CUSTOM_OS_BOOT_KEY : DEMO_OEM_BOOT_KEY;
  const keyType = o.keyType ?? "ec";
  return {
    securityLevel: SECURITY_LEVEL[securityLevel],
    enforcement: securityLevel === "software" ? "software" : "hardware",
    // the forger's own phone is unlocked: that is what the forged certificate below it hides
    locked: !(o.unlocked || o.chainExtension),
    bootState: BOOT_STATE[o.bootState ?? "verified"],
    bootKey,
    // the hash of the booted image: one per OS build
    bootHash: sha256(bootKey, String(patchLevel)),
    purposes: [PURPOSE_SIGN],
    algorithm: KEYMINT_ALGORITHM[keyType],
    keySize: KEY_SIZE[keyType],
    osPatchLevel: patchLevel,
    // KeyMint 3 devices attest the vendor and boot images' levels too, as YYYYMMDD
    vendorPatchLevel: o.vendorPatchLevel ?? patchLevel * 100 + 1,
    bootPatchLevel: o.bootPatchLevel ?? patchLevel * 100 + 1,
    ...(o.osVersion !== undefined ? { osVersion: o.osVersion } : {}),
    packageName: o.packageName ?? DEFAULT_ANDROID_PACKAGE,
    ...(o.signatureDigest !== undefined ? { signatureDigest: o.signatureDigest } : {}),
    ...(o.model !== undefined ? { model: o.model } : {}),
  };
}

/** A certificate for a key KeyMint made: its subject, 1970..2048, no basicConstraints, one key usage. */
function keyCertificate(
  subject: string,
  usage: "digitalSignature" | "keyCertSign",
  extensions: x509.Extension[],
  key?: KeyObject,
): IssueOptions {
  return {
    subject,
    serial: "01",
    notBefore: KEY_NOT_BEFORE,
    notAfter: KEY_NOT_AFTER,
    omitBasicConstraints: true,
    keyUsage: [usage],
    extensions,
    ...(key ? { privateKey: key } : { keyType: "ec-p256" }),
  };
}

const keyDescriptionExtension = (o: KeyDescriptionOptions) => new x509.Extension(KEY_DESCRIPTION_OID, false, keyDescriptionDer(o));

/** The chain for one nonce from `device`, leaf first (the root last unless omitRoot). */
export async function attestAndroidKey(device: AndroidDevice, o: AndroidKeyOptions): Promise<Uint8Array[]> {
  const challenge = checkKeyOptions(o);
  const described = androidKeyDescription(device.securityLevel, o);
  const certs: Uint8Array[] = [];

  let issuer = device.deviceCa;
  let attestKey: CertifiedKey | undefined;
  if (o.attestKey) {
    // Made earlier, for another challenge; the same hardware, so the same root of trust and security level.
    attestKey = await issueCertificate(issuer, keyCertificate(ATTEST_KEY_SUBJECT, "keyCertSign", [
      keyDescriptionExtension({
        ...described,
        purposes: [PURPOSE_ATTEST_KEY],
        algorithm: KEYMINT_ALGORITHM.ec,
        keySize: KEY_SIZE.ec,
        challenge: randomBytes(32),
      }),
    ]));
    issuer = attestKey;
  }

  const leafExtensions = [keyDescriptionExtension({ ...described, challenge })];
  if (o.knox || o.knoxWarranty) {
    leafExtensions.push(new x509.Extension(KNOX_OID, false, knoxExtensionDer({
      challenge,
      ...(o.knoxWarranty ? { integrity: { warranty: 1 } } : {}),
    })));
  }
  const keyType = o.keyType ?? "ec";
  const leafKey = o.leafKey ?? (await generateKey(keyType));
  const leaf = await issueCertificate(issuer, keyCertificate(KEY_SUBJECT, "digitalSignature", leafExtensions, leafKey));

  if (o.chainExtension) {
    // The forger's certificate, signed by a key that was never a CA: it claims what a locked, Verified phone
    // would attest for this nonce.
    const honestPhone = { ...o, unlocked: false, chainExtension: false, bootState: "verified", keyType: "ec" } as const;
    const claim = keyDescriptionExtension({ ...androidKeyDescription(device.securityLevel, honestPhone), challenge });
    certs.push((await issueCertificate(leaf, keyCertificate(KEY_SUBJECT, "digitalSignature", [claim]))).certDer);
  }
  certs.push(leaf.certDer);
  if (attestKey) certs.push(attestKey.certDer);
  certs.push(device.deviceCa.certDer, ...(o.omitRoot ? device.issuers.slice(0, -1) : device.issuers));
  return certs;
}

/** A new simulated device and its chain for one nonce. */
export async function buildAndroidChain(opts: BuildAndroidChainOptions): Promise<Uint8Array[]> {
  checkKeyOptions(opts); // before any key is made
  return attestAndroidKey(await createAndroidDevice(opts.ca, opts), opts);
}

/** The body an app posts: DER end to end, a PEM bundle, or `{"x5c": ["<base64 DER>", ...]}` (leaf first). */
export function encodeAndroidChain(certs: readonly Uint8Array[], encoding: ChainEncoding = "der"): Buffer {
  switch (encoding) {
    case "der":
      return Buffer.concat(certs);
    case "pem":
      return Buffer.from(certs.map((c) => toPem(c, "CERTIFICATE")).join(""), "ascii");
    case "x5c":
      return Buffer.from(JSON.stringify({ x5c: certs.map((c) => Buffer.from(c).toString("base64")) }), "ascii");
  }
}
