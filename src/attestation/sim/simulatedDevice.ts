import { X509Certificate, createPublicKey } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import type { AndroidDevCa } from "./androidCa.ts";
import {
  ANDROID_PROVISIONING,
  ANDROID_SECURITY_LEVELS,
  createAndroidDevice,
  deviceCaIssuer,
  type AndroidDevice,
  type AndroidProvisioning,
  type AndroidSecurityLevel,
} from "./androidDeviceSim.ts";
import { certifiedKeyFromPem, issueDeviceLeaf, type CertifiedKey, type DevCa, type KeyType } from "./devCa.ts";

/**
 * One simulated device across runs (`attestd device-sim --device-key FILE`): the file is created on first use and
 * read on every later one, so the same device can be attested again and again, and a relying party that names it
 * (`deviceId`, docs/devices.md) sees the same device until a flag changes something.
 *
 * - vendor: the device's certified key (leaf certificate and private key), as a device keeps it from manufacture.
 * - android-key: the phone's security level, provisioning and its attestation CA. A factory phone keeps its
 *   factory-certified CA for life; an RKP phone's CA is renewed when it is within a day of expiring, as Google's
 *   RKP servers do (attestd pins the former, never the latter). The keys a phone attests are new every run, as an
 *   app's attested keys are.
 *
 * The file holds private keys: it is written 0600, and it belongs to the demo CA that certified it (a device file
 * used with another `--ca` is refused rather than producing chains that cannot validate).
 */

const MARK = "attestdSimulatedDevice";
const DAY_MS = 86_400_000;

interface PemPair {
  certPem: string;
  keyPem: string;
}

interface VendorDeviceFile {
  [MARK]: 1;
  format: "vendor";
  leaf: PemPair;
}

interface AndroidDeviceFile {
  [MARK]: 1;
  format: "android-key";
  securityLevel: AndroidSecurityLevel;
  provisioning: AndroidProvisioning;
  revokedIntermediate: boolean;
  deviceCa: PemPair;
}

type DeviceFile = VendorDeviceFile | AndroidDeviceFile;

const pair = (k: CertifiedKey): PemPair => ({ certPem: k.certPem, keyPem: k.keyPem });

function isPemPair(v: unknown): v is PemPair {
  const p = v as PemPair | undefined;
  return typeof p?.certPem === "string" && typeof p.keyPem === "string";
}

/** The device in `file`, or undefined when there is none yet; an Error naming the file for anything else. */
async function readDeviceFile(file: string): Promise<DeviceFile | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  let d: { [MARK]?: unknown; format?: unknown; leaf?: unknown; securityLevel?: unknown; provisioning?: unknown; revokedIntermediate?: unknown; deviceCa?: unknown };
  try {
    d = JSON.parse(text);
  } catch {
    d = {};
  }
  const ok =
    d?.[MARK] === 1 &&
    ((d.format === "vendor" && isPemPair(d.leaf)) ||
      (d.format === "android-key" &&
        ANDROID_SECURITY_LEVELS.includes(d.securityLevel as AndroidSecurityLevel) &&
        ANDROID_PROVISIONING.includes(d.provisioning as AndroidProvisioning) &&
        typeof d.revokedIntermediate === "boolean" &&
        isPemPair(d.deviceCa)));
  if (!ok) throw new Error(`${file} is not a device file written by device-sim --device-key`);
  return d as unknown as DeviceFile;
}

async function writeDeviceFile(file: string, d: DeviceFile, replace: boolean): Promise<void> {
  await writeFile(file, JSON.stringify(d, null, 2) + "\n", { mode: 0o600, flag: replace ? "w" : "wx" });
}

function loadPair(p: PemPair, file: string, issuer: CertifiedKey, what: string): CertifiedKey {
  let k: CertifiedKey;
  try {
    k = certifiedKeyFromPem(p.certPem, p.keyPem, `the ${what} key does not match its certificate`);
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message}`);
  }
  if (!new X509Certificate(k.certDer).verify(createPublicKey(issuer.privateKey))) {
    throw new Error(`${file}: its ${what} was certified by another demo CA than the one --ca names`);
  }
  return k;
}

function wrongFormat(file: string, d: DeviceFile, asked: DeviceFile["format"]): Error {
  const held = d.format === "vendor" ? "a vendor" : "an android-key";
  return new Error(`${file} holds ${held} device; --format ${asked} would be another device (use another --device-key file)`);
}

/** The vendor device in `file` (its leaf), made with `keyType` and written there when the file does not exist yet. */
export async function vendorDeviceFromFile(
  file: string,
  ca: DevCa,
  opts: { keyType: KeyType; keyTypeGiven: boolean; now?: Date },
): Promise<{ leaf: CertifiedKey; created: boolean }> {
  const d = await readDeviceFile(file);
  if (!d) {
    const leaf = await issueDeviceLeaf(ca, { keyType: opts.keyType, ...(opts.now ? { now: opts.now } : {}) });
    await writeDeviceFile(file, { [MARK]: 1, format: "vendor", leaf: pair(leaf) }, false);
    return { leaf, created: true };
  }
  if (d.format !== "vendor") throw wrongFormat(file, d, "vendor");
  const leaf = loadPair(d.leaf, file, ca.intermediate, "device certificate");
  const type = leaf.privateKey.asymmetricKeyType;
  const storedType = type === "ec" || type === "rsa" || type === "ed25519" ? type : undefined;
  if (opts.keyTypeGiven && storedType !== opts.keyType.replace(/-.*$/, "")) {
    throw new Error(`${file} holds a device with an ${type} key; --key-type ${opts.keyType} would be another device`);
  }
  return { leaf, created: false };
}

export interface AndroidDeviceFileOptions {
  securityLevel: AndroidSecurityLevel;
  /** true when --security-level was given: on an existing phone it changes the attested level for this run only */
  securityLevelGiven: boolean;
  provisioning: AndroidProvisioning;
  provisioningGiven: boolean;
  revokedIntermediate: boolean;
  now?: Date;
}

/**
 * The phone in `file`, created with these options when the file does not exist yet. On an existing phone the
 * provisioning and the revoked-intermediate choice are fixed (a flag that contradicts them is refused); an explicit
 * security level applies to this run's key only (a simulated change: the phone's CA stays what it is).
 */
export async function androidDeviceFromFile(
  file: string,
  ca: AndroidDevCa,
  opts: AndroidDeviceFileOptions,
): Promise<{ device: AndroidDevice; created: boolean; renewed: boolean }> {
  const now = opts.now ?? new Date();
  const d = await readDeviceFile(file);
  const store = async (device: AndroidDevice, revokedIntermediate: boolean, replace: boolean) =>
    writeDeviceFile(
      file,
      {
        [MARK]: 1,
        format: "android-key",
        securityLevel: device.securityLevel,
        provisioning: device.provisioning,
        revokedIntermediate,
        deviceCa: pair(device.deviceCa),
      },
      replace,
    );
  if (!d) {
    const device = await createAndroidDevice(ca, { ...opts, now });
    await store(device, opts.revokedIntermediate, false);
    return { device, created: true, renewed: false };
  }
  if (d.format !== "android-key") throw wrongFormat(file, d, "android-key");
  if (opts.provisioningGiven && opts.provisioning !== d.provisioning) {
    throw new Error(`${file} holds a ${d.provisioning}-provisioned phone; --provisioning ${opts.provisioning} would be another phone`);
  }
  if (opts.revokedIntermediate && !d.revokedIntermediate) {
    throw new Error(`${file} holds a phone certified through a good intermediate; --revoked-intermediate applies when a phone is created`);
  }
  const fixed = { securityLevel: d.securityLevel, provisioning: d.provisioning, revokedIntermediate: d.revokedIntermediate };
  const issuer = deviceCaIssuer(ca, fixed);
  let device: AndroidDevice = {
    securityLevel: d.securityLevel,
    provisioning: d.provisioning,
    deviceCa: loadPair(d.deviceCa, file, issuer, "attestation CA"),
    issuers: [issuer.certDer, ca.root.certDer],
  };
  let renewed = false;
  const expires = Date.parse(new X509Certificate(device.deviceCa.certDer).validTo);
  if (d.provisioning === "rkp" && expires - now.getTime() < DAY_MS) {
    device = await createAndroidDevice(ca, { ...fixed, now });
    await store(device, fixed.revokedIntermediate, true);
    renewed = true;
  }
  return { device: opts.securityLevelGiven ? { ...device, securityLevel: opts.securityLevel } : device, created: false, renewed };
}
