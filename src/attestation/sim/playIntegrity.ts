import { CompactEncrypt, CompactSign, base64url } from "jose";
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { IntegrityLabel } from "../types.ts";
import { writeCaFiles, type CaFile } from "./devCa.ts";

/**
 * Google's side of Play Integrity, for `attestd dev-ca --play-integrity` and `attestd device-sim --format
 * play-integrity` (mobile-attestation.md, "Simulators"): a demo app's response keys as the Play Console shows them,
 * and integrity tokens as Google hands them to the app, bent into every case the appraisal tells apart.
 *
 * A token is what Google makes: a compact JWS (ES256, Google's signing key, whose public half the console shows as
 * the "verification key") over the verdict payload, encrypted as a compact JWE (A256KW + A256GCM) to the app's AES
 * "decryption key". The payload follows Google's documented shape field for field (developer.android.com/google/
 * play/integrity/verdict), so a reader that opens these opens real tokens.
 */

/** The files `writePlayDevCa` writes and `readPlayDevCa` reads. */
export const PLAY_DEV_CA_FILES = {
  /** base64 of the 32-byte AES key, as the Play Console shows it: what `--decryption-key` takes */
  decryptionKey: "decryption-key.txt",
  /** base64 of the P-256 public key's SubjectPublicKeyInfo DER, as the console shows it: `--verification-key` */
  verificationKey: "verification-key.txt",
  /** Google's signing key (PKCS#8 PEM): only the simulator uses it; no real app ever holds one */
  signingKey: "signing-key.pem",
  /** the demo app (package, certificate digest), the files, and the command lines that use them */
  manifest: "play-app.json",
  /** the same for a person */
  readme: "README.txt",
} as const;

export const DEMO_PLAY_PACKAGE = "com.example.attestd.demo";
/** The package a `wrongPackage` token speaks for. */
export const OTHER_PLAY_PACKAGE = "com.example.attestd.other";
/**
 * The certificate digest a `wrongCertDigest` token carries: fixed (a hash of a label, since no certificate exists),
 * so a test can tell it from the demo app's.
 */
export const OTHER_APP_CERT_DIGEST: Buffer = createHash("sha256").update("attestd Demo: another app's signing certificate").digest();

/**
 * How old a `stale` token is. Two days: older than any freshness window a tenant sensibly sets (Google's own advice
 * is minutes), with room to spare for a window of a whole day.
 */
export const STALE_AGE_MS = 2 * 86_400_000;

export const PLAY_DEVICE_VERDICTS = ["none", "basic", "device", "strong"] as const;
export type PlayDeviceVerdict = (typeof PLAY_DEVICE_VERDICTS)[number];
export const PLAY_APP_VERDICTS = ["PLAY_RECOGNIZED", "UNRECOGNIZED_VERSION", "UNEVALUATED"] as const;
export type PlayAppVerdict = (typeof PLAY_APP_VERDICTS)[number];
export const PLAY_LICENSING_VERDICTS = ["LICENSED", "UNLICENSED", "UNEVALUATED"] as const;
export type PlayLicensingVerdict = (typeof PLAY_LICENSING_VERDICTS)[number];
export const PLAY_PROTECT_VERDICTS = ["NO_ISSUES", "NO_DATA", "POSSIBLE_RISK", "MEDIUM_RISK", "HIGH_RISK", "UNEVALUATED"] as const;
export type PlayProtectVerdict = (typeof PLAY_PROTECT_VERDICTS)[number];
export const PLAY_ACCESS_RISK_APPS = [
  "KNOWN_INSTALLED",
  "KNOWN_CAPTURING",
  "KNOWN_OVERLAYS",
  "KNOWN_CONTROLLING",
  "UNKNOWN_INSTALLED",
  "UNKNOWN_CAPTURING",
  "UNKNOWN_OVERLAYS",
  "UNKNOWN_CONTROLLING",
] as const;
export type PlayAccessRiskApp = (typeof PLAY_ACCESS_RISK_APPS)[number];
export const PLAY_ACTIVITY_LEVELS = ["LEVEL_1", "LEVEL_2", "LEVEL_3", "LEVEL_4", "UNEVALUATED"] as const;
export type PlayActivityLevel = (typeof PLAY_ACTIVITY_LEVELS)[number];

/** Google's labels are cumulative: a device that meets one level meets those below it. */
const DEVICE_LABELS: Record<PlayDeviceVerdict, IntegrityLabel[]> = {
  none: [],
  basic: ["MEETS_BASIC_INTEGRITY"],
  device: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"],
  strong: ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"],
};

/** A demo Play app and Google's keys for it. */
export interface PlayDevCa {
  packageName: string;
  /** SHA-256 of the demo app's signing certificate (32 bytes; no certificate exists, the app is imaginary) */
  certDigest: Uint8Array;
  /** the app's response decryption key: AES-256, 32 bytes */
  decryptionKey: Uint8Array;
  /** Google's P-256 signing key; its public half is the app's response verification key */
  signingKey: KeyObject;
}

/** The two keys as the Play Console shows them (base64, standard alphabet, padded). */
export interface PlayConsoleKeys {
  decryptionKey: string;
  verificationKey: string;
}

/** The demo app's manifest, `play-app.json`. */
export interface PlayDevCaManifest {
  packageName: string;
  /** lowercase hex, what `play-app add --cert-digest` and `appraise --play-cert-digest` take */
  certDigestHex: string;
  /** base64url, what a token's `appIntegrity.certificateSha256Digest` carries */
  certDigestBase64url: string;
  files: { decryptionKey: string; verificationKey: string; signingKey: string };
  commands: { playAppAdd: string; deviceSim: string; appraise: string };
}

/** A new demo app: random response keys, a random certificate digest. */
export function createPlayDevCa(opts: { packageName?: string } = {}): PlayDevCa {
  return {
    packageName: opts.packageName ?? DEMO_PLAY_PACKAGE,
    certDigest: randomBytes(32),
    decryptionKey: randomBytes(32),
    signingKey: generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey,
  };
}

/** The app's two response keys in the console's form. */
export function playConsoleKeys(ca: Pick<PlayDevCa, "decryptionKey" | "signingKey">): PlayConsoleKeys {
  return {
    decryptionKey: Buffer.from(ca.decryptionKey).toString("base64"),
    verificationKey: createPublicKey(ca.signingKey).export({ type: "spki", format: "der" }).toString("base64"),
  };
}

/**
 * The manifest of a demo app written to `dir` (as the operator named it): the command lines read the keys from
 * the files rather than quoting them, so neither the manifest nor the README holds a secret.
 */
export function playDevCaManifest(ca: PlayDevCa, dir: string): PlayDevCaManifest {
  const F = PLAY_DEV_CA_FILES;
  const digestHex = Buffer.from(ca.certDigest).toString("hex");
  const cat = (name: string) => `"$(cat ${shellQuote(join(dir, name))})"`;
  return {
    packageName: ca.packageName,
    certDigestHex: digestHex,
    certDigestBase64url: base64url.encode(ca.certDigest),
    files: { decryptionKey: F.decryptionKey, verificationKey: F.verificationKey, signingKey: F.signingKey },
    commands: {
      playAppAdd:
        `attestd play-app add --tenant TENANT --package ${ca.packageName} --cert-digest ${digestHex} ` +
        `--decryption-key ${cat(F.decryptionKey)} --verification-key ${cat(F.verificationKey)}`,
      deviceSim: `attestd device-sim --format play-integrity --ca ${shellQuote(dir)} --nonce "$NONCE" --out token.txt`,
      appraise:
        `attestd appraise token.txt --nonce "$NONCE" --play-package ${ca.packageName} ` +
        `--play-decryption-key ${cat(F.decryptionKey)} --play-verification-key ${cat(F.verificationKey)} ` +
        `--play-cert-digest ${digestHex}`,
    },
  };
}

function playDevCaReadme(m: PlayDevCaManifest): string {
  const F = PLAY_DEV_CA_FILES;
  return `A demo Google Play app for attestd's Play Integrity simulator (attestd dev-ca --play-integrity).
Demo keys only: never register them for a real app.

package                      ${m.packageName}
signing-certificate SHA-256  ${m.certDigestHex}
  (as a token carries it)    ${m.certDigestBase64url}

${F.decryptionKey}    the response decryption key (AES-256), base64 as the Play Console shows it. Secret.
${F.verificationKey}  the response verification key (EC P-256 SubjectPublicKeyInfo), base64 as the console shows it.
${F.signingKey}       Google's signing key, PKCS#8 PEM: only the simulator signs with it. Secret.
${F.manifest}         the above, and these command lines, as JSON.

Register the demo app for a tenant (TENANT: the tenant's name):
  ${m.commands.playAppAdd}
Make a token for a nonce from POST /v2/nonces (flags for every case: attestd device-sim --help):
  ${m.commands.deviceSim}
Appraise it offline:
  ${m.commands.appraise}
`;
}

/** Writes the demo app (names in PLAY_DEV_CA_FILES, secrets 0600); refuses to replace any file unless `overwrite`. */
export async function writePlayDevCa(ca: PlayDevCa, dir: string, opts: { overwrite?: boolean } = {}): Promise<string[]> {
  const F = PLAY_DEV_CA_FILES;
  const keys = playConsoleKeys(ca);
  const manifest = playDevCaManifest(ca, dir);
  const files: CaFile[] = [
    [F.decryptionKey, keys.decryptionKey + "\n", 0o600],
    [F.verificationKey, keys.verificationKey + "\n", 0o644],
    [F.signingKey, ca.signingKey.export({ type: "pkcs8", format: "pem" }) as string, 0o600],
    [F.manifest, JSON.stringify(manifest, null, 2) + "\n", 0o644],
    [F.readme, playDevCaReadme(manifest), 0o644],
  ];
  return writeCaFiles(dir, files, opts);
}

/** Reads what writePlayDevCa wrote, checking that the verification key is the signing key's public half. */
export async function readPlayDevCa(dir: string): Promise<PlayDevCa> {
  const F = PLAY_DEV_CA_FILES;
  const file = (name: string) => join(dir, name);
  // Another dev CA's directory is the likely mistake: say which command makes the right one instead of "ENOENT".
  const isPlay = await access(file(F.manifest)).then(() => true, () => false);
  if (!isPlay) throw new Error(`no ${F.manifest}: not a directory written by \`attestd dev-ca --play-integrity\``);
  const manifest = JSON.parse(await readFile(file(F.manifest), "utf8")) as Partial<PlayDevCaManifest>;
  if (typeof manifest.packageName !== "string" || !/^[0-9a-f]{64}$/.test(manifest.certDigestHex ?? "")) {
    throw new Error(`${file(F.manifest)}: packageName or certDigestHex missing or malformed`);
  }
  const decryptionKey = Buffer.from((await readFile(file(F.decryptionKey), "utf8")).trim(), "base64");
  if (decryptionKey.length !== 32) throw new Error(`${file(F.decryptionKey)}: not the base64 of 32 bytes`);
  const signingKey = createPrivateKey(await readFile(file(F.signingKey), "utf8"));
  if (signingKey.asymmetricKeyType !== "ec" || signingKey.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new Error(`${file(F.signingKey)}: not an EC P-256 key`);
  }
  const ca: PlayDevCa = { packageName: manifest.packageName, certDigest: Buffer.from(manifest.certDigestHex!, "hex"), decryptionKey, signingKey };
  const shown = (await readFile(file(F.verificationKey), "utf8")).trim();
  if (shown !== playConsoleKeys(ca).verificationKey) throw new Error(`${file(F.verificationKey)} is not the public half of ${F.signingKey}`);
  return ca;
}

/** One token's case. Every field is optional: the default is a recognised app on a device that meets device integrity. */
export interface PlayTokenOptions {
  /** the nonce string from POST /v2/nonces, carried as requestHash (standard) or nonce (classic) */
  nonce: string;
  /** when Google issued the token (default now) */
  now?: Date;
  /** timestampMillis exactly (overrides `now` and `stale`) */
  timestampMs?: number;
  /** a token STALE_AGE_MS older than `now` */
  stale?: boolean;
  /** a classic request (`requestDetails.nonce`) instead of a standard one (`requestDetails.requestHash`) */
  classic?: boolean;
  /** carry a nonce other than `nonce` */
  wrongNonce?: boolean;
  /** default "device" */
  deviceVerdict?: PlayDeviceVerdict;
  /** default PLAY_RECOGNIZED; UNEVALUATED leaves out package, digest and version code, as Google does */
  appVerdict?: PlayAppVerdict;
  /** the token speaks for OTHER_PLAY_PACKAGE (requestPackageName and appIntegrity.packageName) */
  wrongPackage?: boolean;
  /** the app's certificate digest is OTHER_APP_CERT_DIGEST */
  wrongCertDigest?: boolean;
  /** default LICENSED */
  licensing?: PlayLicensingVerdict;
  /** default NO_ISSUES */
  playProtect?: PlayProtectVerdict;
  /** default ["KNOWN_INSTALLED"] */
  accessRiskApps?: readonly PlayAccessRiskApp[];
  /** default LEVEL_1 */
  activityLevel?: PlayActivityLevel;
  /** default 1 */
  versionCode?: number;
  /** default 35 */
  sdkVersion?: number;
  /** flip a byte of the JWS signature before encrypting: decrypts, fails to verify */
  tamperedSignature?: boolean;
  /** sign and encrypt with freshly made keys of another app: fails to decrypt with the demo app's keys */
  otherAppKeys?: boolean;
}

/** The verdict payload, as Google documents it. */
export interface PlayIntegrityPayload {
  requestDetails: { requestPackageName: string; timestampMillis: string; requestHash?: string; nonce?: string };
  appIntegrity: { appRecognitionVerdict: PlayAppVerdict; packageName?: string; certificateSha256Digest?: string[]; versionCode?: string };
  deviceIntegrity: {
    deviceRecognitionVerdict: IntegrityLabel[];
    recentDeviceActivity: { deviceActivityLevel: PlayActivityLevel };
    deviceAttributes: { sdkVersion: number };
  };
  accountDetails: { appLicensingVerdict: PlayLicensingVerdict };
  environmentDetails: { playProtectVerdict: PlayProtectVerdict; appAccessRiskVerdict: { appsDetected: PlayAccessRiskApp[] } };
}

/** The payload of the token `opts` describes for the demo app. Pure: the same inputs give the same payload. */
export function playIntegrityPayload(ca: Pick<PlayDevCa, "packageName" | "certDigest">, opts: PlayTokenOptions): PlayIntegrityPayload {
  if (opts.timestampMs !== undefined && opts.stale) throw new Error("a token is stale or has an exact timestamp, not both");
  if (opts.timestampMs !== undefined && !Number.isSafeInteger(opts.timestampMs)) throw new Error("timestampMs must be an integer");
  const now = (opts.now ?? new Date()).getTime();
  const timestampMs = opts.timestampMs ?? (opts.stale ? now - STALE_AGE_MS : now);
  const packageName = opts.wrongPackage ? OTHER_PLAY_PACKAGE : ca.packageName;
  // A nonce of the right shape that is not the one asked for, derived so the same inputs give the same payload.
  const nonce = opts.wrongNonce ? createHash("sha256").update("wrong nonce:" + opts.nonce).digest("base64url") : opts.nonce;
  const appVerdict = opts.appVerdict ?? "PLAY_RECOGNIZED";
  return {
    requestDetails: {
      requestPackageName: packageName,
      timestampMillis: String(timestampMs),
      ...(opts.classic ? { nonce } : { requestHash: nonce }),
    },
    appIntegrity:
      appVerdict === "UNEVALUATED"
        ? { appRecognitionVerdict: appVerdict }
        : {
            appRecognitionVerdict: appVerdict,
            packageName,
            certificateSha256Digest: [base64url.encode(opts.wrongCertDigest ? OTHER_APP_CERT_DIGEST : ca.certDigest)],
            versionCode: String(opts.versionCode ?? 1),
          },
    deviceIntegrity: {
      deviceRecognitionVerdict: [...DEVICE_LABELS[opts.deviceVerdict ?? "device"]],
      recentDeviceActivity: { deviceActivityLevel: opts.activityLevel ?? "LEVEL_1" },
      deviceAttributes: { sdkVersion: opts.sdkVersion ?? 35 },
    },
    accountDetails: { appLicensingVerdict: opts.licensing ?? "LICENSED" },
    environmentDetails: {
      playProtectVerdict: opts.playProtect ?? "NO_ISSUES",
      appAccessRiskVerdict: { appsDetected: [...(opts.accessRiskApps ?? ["KNOWN_INSTALLED"])] },
    },
  };
}

/**
 * Seals a payload as Google does: ES256 JWS with `signingKey`, then A256KW/A256GCM JWE to `decryptionKey`. With
 * `tamperedSignature`, one byte of the signature is flipped first, so the JWE opens and the JWS does not verify.
 */
export async function sealPlayIntegrityToken(
  payload: unknown,
  keys: Pick<PlayDevCa, "decryptionKey" | "signingKey">,
  opts: { tamperedSignature?: boolean } = {},
): Promise<string> {
  let jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "ES256" })
    .sign(keys.signingKey);
  if (opts.tamperedSignature) {
    const [header, body, signature] = jws.split(".");
    const bytes = base64url.decode(signature!);
    bytes[0]! ^= 0x01;
    jws = `${header}.${body}.${base64url.encode(bytes)}`;
  }
  return new CompactEncrypt(new TextEncoder().encode(jws))
    .setProtectedHeader({ alg: "A256KW", enc: "A256GCM" })
    .encrypt(keys.decryptionKey);
}

/** The integrity token the demo app would receive for `opts`: what `attestd device-sim --format play-integrity` prints. */
export async function makePlayIntegrityToken(ca: PlayDevCa, opts: PlayTokenOptions): Promise<string> {
  const payload = playIntegrityPayload(ca, opts);
  // Another app's token: its own response keys, which the demo app's keys neither unwrap nor verify.
  const keys = opts.otherAppKeys
    ? { decryptionKey: randomBytes(32), signingKey: generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey }
    : ca;
  return sealPlayIntegrityToken(payload, keys, { tamperedSignature: Boolean(opts.tamperedSignature) });
}

/** `text` as one shell word: as is when it is plainly safe, else single-quoted. */
function shellQuote(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
