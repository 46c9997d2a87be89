import { Option, type Command } from "commander";
import { statSync } from "node:fs";
import path from "node:path";
import { CHAIN_ENCODINGS, type ChainEncoding } from "../attestation/encoding/chainInput.ts";
import {
  ANDROID_DEV_CA_FILES,
  createAndroidDevCa,
  readAndroidDevCa,
  writeAndroidDevCa,
} from "../attestation/sim/androidCa.ts";
import {
  ANDROID_BOOT_STATES,
  ANDROID_PROVISIONING,
  ANDROID_SECURITY_LEVELS,
  attestAndroidKey,
  checkKeyOptions,
  createAndroidDevice,
  encodeAndroidChain,
  type AndroidBootState,
  type AndroidDevice,
  type AndroidKeyOptions,
  type AndroidKeyType,
  type AndroidProvisioning,
  type AndroidSecurityLevel,
} from "../attestation/sim/androidDeviceSim.ts";
import { createDevCa, readDevCa, writeDevCa, type CertifiedKey, type KeyType } from "../attestation/sim/devCa.ts";
import {
  PLAY_ACCESS_RISK_APPS,
  PLAY_APP_VERDICTS,
  PLAY_DEVICE_VERDICTS,
  PLAY_PROTECT_VERDICTS,
  createPlayDevCa,
  makePlayIntegrityToken,
  playDevCaManifest,
  readPlayDevCa,
  writePlayDevCa,
  type PlayAccessRiskApp,
  type PlayAppVerdict,
  type PlayDeviceVerdict,
  type PlayProtectVerdict,
} from "../attestation/sim/playIntegrity.ts";
import { androidDeviceFromFile, vendorDeviceFromFile } from "../attestation/sim/simulatedDevice.ts";
import {
  APP_ATTEST_CA_FILES,
  DEMO_APP_ID,
  loadAppAttestCa,
  makeAppAttestAssertion,
  makeAppAttestAttestation,
  makeAppAttestCa,
  saveAppAttestCa,
  type SimAppAttestKey,
} from "../attestation/sim/appAttest.ts";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { buildVendorBlob, demoReferenceValues, UNKNOWN_FIRMWARE } from "../attestation/sim/deviceSim.ts";
import { fileProblem, pathMessage } from "../errors/operatorError.ts";
import { decodeNonce } from "../nonces/nonce.ts";
import { CliError, writeFileOrFail, type CommandDefinitions } from "./options.ts";

const SIM_KEY_TYPES = ["ec", "rsa", "ed25519"] as const;
const SIM_FORMATS = ["vendor", "android-key", "play-integrity", "app-attest"] as const;
type SimFormat = (typeof SIM_FORMATS)[number];
export const DEMO_REFERENCE_VALUES_FILE = "reference-values.json";

/**
 * `attestd dev-ca` and `attestd device-sim` (operator.md, mobile-attestation.md "Simulators"): the demo PKIs (and
 * the demo Play app's response keys) and the simulated devices, every format.
 */
export const commands: CommandDefinitions = { "dev-ca": defineDevCa, "device-sim": defineDeviceSim };

function defineDevCa(devCa: Command): void {
  devCa
    .description(
      "write a demo vendor root + intermediate (PEM) for the device simulator, and its reference values; " +
        "with --android, a demo Android attestation PKI; with --play-integrity, a demo Play app's response keys",
    )
    .requiredOption("--out <dir>", "directory to write to")
    .option("--android", "a demo Android attestation PKI: root, Droid CA2, factory and revoked intermediates, status list, boot-key allow-list")
    .option(
      "--play-integrity",
      "a demo Google Play app: its response keys as the Play Console shows them (decryption and verification key, base64), " +
        "Google's signing key, its package and signing-certificate digest, and the command lines that use them",
    )
    .addOption(new Option("--key-type <type>", "CA key algorithm (vendor CA)").choices(SIM_KEY_TYPES).default("ec"))
    .option("--app-attest", "a demo App Attestation root and intermediate (trust the root with serve --app-attest-roots)")
    .option("--force", "replace an existing CA in that directory")
    .action(async (opts: { out: string; android?: boolean; playIntegrity?: boolean; appAttest?: boolean; keyType: KeyType; force?: boolean }, cmd: Command) => {
      if ([opts.android, opts.playIntegrity, opts.appAttest].filter(Boolean).length > 1) {
        throw new CliError("--android, --play-integrity and --app-attest write different demo CAs; give one");
      }
      if (opts.appAttest) {
        if (cmd.getOptionValueSource("keyType") === "cli") throw new CliError("--key-type applies to the vendor CA; the App Attest demo CA is EC P-384, as Apple's");
        await writeAppAttestCaCommand(opts.out, Boolean(opts.force));
        return;
      }
      if (opts.playIntegrity) {
        if (cmd.getOptionValueSource("keyType") === "cli") {
          throw new CliError("--key-type applies to the vendor CA; Play Integrity's keys are AES-256 and EC P-256, as Google's are");
        }
        await writePlayCaCommand(opts.out, Boolean(opts.force));
        return;
      }
      if (opts.android) {
        if (cmd.getOptionValueSource("keyType") === "cli") {
          throw new CliError("--key-type applies to the vendor CA; the Android demo CA is EC P-384, like Google's Key Attestation CA1");
        }
        await writeAndroidCaCommand(opts.out, Boolean(opts.force));
        return;
      }
      const ca = await createDevCa({ keyType: opts.keyType });
      let written: string[];
      try {
        written = await writeDevCa(ca, opts.out, { overwrite: Boolean(opts.force) });
      } catch (e) {
        throw devCaWriteError(e, opts.out);
      }
      const refFile = path.join(opts.out, DEMO_REFERENCE_VALUES_FILE);
      writeFileOrFail(refFile, JSON.stringify(demoReferenceValues(), null, 2) + "\n", "--out DIR");
      written.push(refFile);
      process.stdout.write(written.join("\n") + "\n");
      process.stderr.write(
        `serve with: --vendor-roots ${path.join(opts.out, "root.pem")} --reference-values ${refFile}\n`,
      );
    });
}

function defineDeviceSim(deviceSim: Command): void {
  // Options are grouped by the format they shape; one given with the other format is refused (formatMismatch).
  const vendorOptions = [
    new Option("--firmware <version>", "firmware version (default X100XXU1AAA1, known to the demo reference values)"),
    new Option("--unknown-firmware", `report firmware ${UNKNOWN_FIRMWARE}, for which no reference values exist`),
    new Option("--tamper", "set the tamper bit"),
    new Option("--bad-signature", "corrupt the signature over the data"),
    new Option("--device-error [exitCode]", "report a device-side failure (exit code, default 1) with no data"),
    new Option("--include-root", "carry the root certificate too"),
    new Option("--container-version <n>", "container version byte (2; 1 gives 501 NOT_IMPLEMENTED)"),
  ];
  const androidOptions = [
    new Option("--security-level <level>", "where the key lives").choices(ANDROID_SECURITY_LEVELS).default("tee"),
    new Option("--unlocked", "an unlocked bootloader (deviceLocked false)"),
    new Option("--boot-state <state>", "verified boot state; self-signed boots the demo custom OS of dev-ca's allowed-boot-keys.json")
      .choices(ANDROID_BOOT_STATES)
      .default("verified"),
    new Option("--provisioning <how>", "an RKP-shaped chain (per-device CA under Droid CA2) or a factory-shaped one")
      .choices(ANDROID_PROVISIONING)
      .default("rkp"),
    new Option("--attest-key", "sign the leaf with an ATTEST_KEY key, carried at position 1"),
    new Option("--knox", "a Samsung Knox extension, as Galaxy devices write it"),
    new Option("--knox-warranty", "a Samsung Knox extension with the warranty bit set"),
    new Option("--revoked-intermediate", "chain through the intermediate dev-ca's status.json revokes"),
    new Option("--chain-extension", "the forgery: a certificate claiming a locked device, signed by an unlocked device's key"),
    new Option("--patch-level <YYYYMM>", "osPatchLevel (default this month)"),
    new Option("--package <name>", "the attesting app's package (default com.example.wallet)"),
    new Option("--omit-root", "leave the root out, as many RKP devices do"),
    new Option("--encoding <encoding>", "the body: DER end to end, a PEM bundle, or {\"x5c\": [...]}").choices(CHAIN_ENCODINGS).default("der"),
  ];
  const playOptions = [
    new Option("--device-verdict <level>", "deviceRecognitionVerdict: none (empty), basic, device (basic + device) or strong (all three)")
      .choices(PLAY_DEVICE_VERDICTS)
      .default("device"),
    new Option("--app-verdict <verdict>", "appRecognitionVerdict (UNEVALUATED leaves out package, digest and version, as Google does)")
      .choices(PLAY_APP_VERDICTS)
      .default("PLAY_RECOGNIZED"),
    new Option("--unrecognized-app", "the same as --app-verdict UNRECOGNIZED_VERSION"),
    new Option("--wrong-cert-digest", "a signing-certificate digest other than the demo app's"),
    new Option("--wrong-package", "a token for another package (requestPackageName and appIntegrity.packageName)"),
    new Option("--stale", "timestampMillis two days before now (or --at)"),
    new Option("--timestamp-ms <ms>", "timestampMillis exactly (milliseconds since 1970)"),
    new Option("--at <iso8601>", "when Google issued the token (default now)"),
    new Option("--classic", "a classic request: the nonce in requestDetails.nonce (default: a standard one, in requestHash)"),
    new Option("--tampered-signature", "flip a byte of the signature inside the encryption: decrypts, does not verify"),
    new Option("--other-app-keys", "sign and encrypt with another app's keys (made afresh): the demo app's keys do not decrypt it"),
    new Option("--unlicensed", "appLicensingVerdict UNLICENSED (default LICENSED)"),
    new Option("--play-protect <verdict>", "playProtectVerdict").choices(PLAY_PROTECT_VERDICTS).default("NO_ISSUES"),
    new Option(
      "--access-risk-apps <list>",
      `appAccessRiskVerdict.appsDetected, comma-separated (default KNOWN_INSTALLED; "none" for an empty list): ${PLAY_ACCESS_RISK_APPS.join(", ")}`,
    ),
  ];
  // The device's own identity: meaningless for a Play Integrity token, which Google, not the device, signs.
  const deviceOptions = [
    new Option("--model <model>", "device model (vendor default SM-X100; android-key: attestationIdModel, default none)"),
    new Option("--ascii-nonce", "embed the nonce string's ASCII bytes instead of its 32 decoded bytes (vendor, android-key)"),
    new Option(
      "--device-key <file>",
      "keep this device's identity in FILE, created on first use (vendor: its certified key; android-key: the phone's attestation CA and settings), so later runs are the same device",
    ),
    new Option("--key-type <type>", "device key algorithm (android-key: ec or rsa)").choices(SIM_KEY_TYPES).default("ec"),
  ];
  const appAttestOptions = [
    new Option("--assertion", "an assertion (JSON {keyId, assertion}) by the key in --key-file, instead of an attestation"),
    new Option("--key-file <file>", "app-attest: where the attested key is written (attestation), or read and its counter moved (--assertion)"),
    new Option("--app-id <id>", `app-attest: the app id TEAMID.BUNDLEID (default ${DEMO_APP_ID})`),
    new Option("--environment <env>", "app-attest: the key's environment (its AAGUID)").choices(["production", "development"]).default("production"),
    new Option("--other-app-id <id>", "app-attest: the RP ID hash names this app instead"),
    new Option("--counter <n>", "app-attest: the counter (attestation default 0; assertion default the key's last + 1)"),
    new Option("--wrong-key-id", "app-attest: the credential id is not SHA-256 of the key"),
    new Option("--unknown-aaguid", "app-attest: an AAGUID of neither environment"),
    new Option("--expired", "app-attest: the credential certificate expired before --at"),
    new Option("--other-ca", "app-attest: issued by a CA made afresh, not the demo one"),
    new Option("--unknown-key-id", "app-attest --assertion: the body names a key id never attested"),
  ];
  // Which formats each option shapes; one given with another format is refused rather than silently ignored.
  const appliesTo = new Map<Option, readonly SimFormat[]>([
    ...vendorOptions.map((o) => [o, ["vendor"]] as const),
    ...androidOptions.map((o) => [o, ["android-key"]] as const),
    ...playOptions.map((o) => [o, ["at", "tamperedSignature"].includes(o.attributeName()) ? (["play-integrity", "app-attest"] as const) : (["play-integrity"] as const)] as const),
    ...appAttestOptions.map((o) => [o, ["app-attest"]] as const),
    ...deviceOptions.map((o) => [o, ["vendor", "android-key"]] as const),
  ]);
  deviceSim
    .description(
      "write what a device sends: a vendor-container blob, an Android key-attestation chain, or a Play Integrity token " +
        "(every case the appraisal distinguishes)",
    )
    .optionsGroup("Options:")
    .addOption(new Option("--format <format>", "what to simulate").choices(SIM_FORMATS).default("vendor"))
    .requiredOption(
      "--ca <dir>",
      "a directory written by `attestd dev-ca` (with --android for android-key, with --play-integrity for play-integrity)",
    )
    .requiredOption("--nonce <nonce>", "the nonce from POST /v2/nonces")
    .option("--out <file>", "where to write the blob (required, except that play-integrity prints the token when it is omitted)")
    .option("--wrong-nonce", "embed a nonce other than --nonce");
  for (const o of deviceOptions) deviceSim.addOption(o);
  deviceSim.optionsGroup("--format vendor:");
  for (const o of vendorOptions) deviceSim.addOption(o);
  deviceSim.optionsGroup("--format android-key:");
  for (const o of androidOptions) deviceSim.addOption(o);
  deviceSim.optionsGroup("--format play-integrity:");
  for (const o of playOptions) deviceSim.addOption(o);
  deviceSim.optionsGroup("--format app-attest (also --at, --tampered-signature):");
  for (const o of appAttestOptions) deviceSim.addOption(o);
  deviceSim.action(async (opts: Record<string, string | boolean | undefined>, cmd: Command) => {
    const format = opts.format as SimFormat;
    const given = (name: string) => cmd.getOptionValueSource(name) === "cli";
    for (const [o, formats] of appliesTo) {
      if (given(o.attributeName()) && !formats.includes(format)) throw new CliError(`${o.long} applies to --format ${formats.join(" or ")}`);
    }
    checkNonce(opts.nonce as string);
    if (format === "play-integrity") {
      await playDeviceSimCommand(opts, given);
      return;
    }
    if (format === "app-attest") {
      await appAttestDeviceSimCommand(opts);
      return;
    }
    if (opts.out === undefined) throw new CliError(`--format ${format} writes a binary blob: give --out FILE`);
    if (format === "android-key") {
      await androidDeviceSimCommand(opts, given);
      return;
    }
    const ca = await readCaDir(opts.ca as string, "vendor", readDevCa);
    const deviceError =
      opts.deviceError === undefined
        ? undefined
        : { exitCode: opts.deviceError === true ? 1 : Number(opts.deviceError), omitData: true, omitSignature: true };
    if (deviceError && !(deviceError.exitCode >= 1 && deviceError.exitCode <= 255)) {
      throw new CliError("--device-error exit code must be 1..255");
    }
    let leaf: CertifiedKey | undefined;
    if (opts.deviceKey) {
      const file = opts.deviceKey as string;
      try {
        const kept = await vendorDeviceFromFile(file, ca, { keyType: opts.keyType as KeyType, keyTypeGiven: given("keyType") });
        leaf = kept.leaf;
        process.stderr.write(kept.created ? `a new device, kept in ${file}\n` : `the device kept in ${file}\n`);
      } catch (e) {
        throw deviceKeyError(e, file);
      }
    }
    let blob: Uint8Array;
    try {
      blob = await buildVendorBlob({
        ca,
        ...(leaf ? { leaf } : {}),
        nonce: opts.nonce as string,
        leafKeyType: opts.keyType as KeyType,
        ...(opts.model ? { model: opts.model as string } : {}),
        ...(opts.firmware ? { firmwareVersion: opts.firmware as string } : {}),
        ...(opts.unknownFirmware ? { firmwareVersion: UNKNOWN_FIRMWARE } : {}),
        tamper: Boolean(opts.tamper),
        wrongNonce: Boolean(opts.wrongNonce),
        asciiNonce: Boolean(opts.asciiNonce),
        badSignature: Boolean(opts.badSignature),
        includeRoot: Boolean(opts.includeRoot),
        ...(deviceError ? { deviceError } : {}),
        ...(opts.containerVersion ? { version: Number(opts.containerVersion) } : {}),
      });
    } catch (e) {
      throw new CliError((e as Error).message);
    }
    writeFileOrFail(opts.out as string, blob, "--out FILE");
    process.stderr.write(`${blob.length} bytes written to ${opts.out as string}\n`);
  });
}

/**
 * Why dev-ca could not write `--out DIR`, as one line. A CA already there is kept (it may be the one a running server
 * trusts): another directory for another CA, or --force to replace it.
 */
function devCaWriteError(e: unknown, dir: string): CliError {
  const exists = /^(.*) exists; refusing to replace a CA$/.exec((e as Error).message);
  if (exists) {
    return new CliError(pathMessage("--out DIR", dir, `already holds a demo CA (${path.basename(exists[1]!)}); give each CA its own directory, or --force to replace this one`));
  }
  if ((e as NodeJS.ErrnoException).code !== undefined) return new CliError(pathMessage("--out DIR", dir, fileProblem(e, "directory")));
  return new CliError((e as Error).message);
}

/** The dev-ca command line that writes the directory `--ca` needs for each format. */
const DEV_CA_FOR: Record<SimFormat, string> = {
  vendor: "attestd dev-ca --out DIR",
  "android-key": "attestd dev-ca --android --out DIR",
  "play-integrity": "attestd dev-ca --play-integrity --out DIR",
  "app-attest": "attestd dev-ca --app-attest --out DIR",
};

/**
 * The demo CA in `dir` for `format`, or one line saying what is wrong with `--ca` and which dev-ca writes the right
 * directory: none there, a file, or a directory some other command (or another dev-ca) wrote.
 */
async function readCaDir<T>(dir: string, format: SimFormat, read: (dir: string) => Promise<T>): Promise<T> {
  const expected = `the output of ${DEV_CA_FOR[format]}`;
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch (e) {
    throw new CliError(pathMessage("--ca DIR", dir, fileProblem(e, "directory"), expected));
  }
  if (!isDirectory) throw new CliError(pathMessage("--ca DIR", dir, "not a directory", expected));
  try {
    return await read(dir);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    // a file the CA should hold: name it; the readers' own words otherwise, without their "written by" (said below)
    const problem =
      err.code === "ENOENT" && err.path ? `no ${path.basename(err.path)}` : err.message.replace(/: not a directory written by `[^`]*`$/, "");
    throw new CliError(pathMessage("--ca DIR", dir, problem, expected));
  }
}

/** A --device-key file that could not be read or made, named with the flag; a simulator's refusal as it is. */
function deviceKeyError(e: unknown, file: string): CliError {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === undefined) return new CliError((e as Error).message);
  // made on first use: a missing path is the directory it should be kept in
  return new CliError(pathMessage("--device-key FILE", file, code === "ENOENT" ? "no such directory to keep it in" : fileProblem(e)));
}

/** The longest part of a bad --nonce echoed back: enough to recognise what was pasted, never a screenful. */
const NONCE_ECHO_MAX = 60;

/** A simulated device signs the challenge a nonce decodes to, so anything else is refused, echoed as it came. */
function checkNonce(nonce: string): void {
  if (decodeNonce(nonce)) return;
  const shown = nonce.length > NONCE_ECHO_MAX ? `${nonce.slice(0, NONCE_ECHO_MAX)}…` : nonce;
  throw new CliError(`--nonce ${JSON.stringify(shown)}: not a nonce (expected 43 base64url characters from POST /v2/nonces)`);
}

/** `dev-ca --android`: writes the demo Android PKI and says which serve flags trust it. */
async function writeAndroidCaCommand(dir: string, force: boolean): Promise<void> {
  const ca = await createAndroidDevCa();
  let written: string[];
  try {
    written = await writeAndroidDevCa(ca, dir, { overwrite: force });
  } catch (e) {
    throw devCaWriteError(e, dir);
  }
  const file = (name: string) => path.join(dir, name);
  process.stdout.write(written.join("\n") + "\n");
  process.stderr.write(
    `serve with: --android-roots ${file(ANDROID_DEV_CA_FILES.root)} --android-status ${file(ANDROID_DEV_CA_FILES.status)}\n` +
      `  and --allowed-boot-keys ${file(ANDROID_DEV_CA_FILES.allowedBootKeys)} to accept the demo custom OS ` +
      "(device-sim --boot-state self-signed)\n",
  );
}

/** `device-sim --format android-key`: a simulated phone's chain for the nonce (a new phone, or the one in --device-key). */
async function androidDeviceSimCommand(opts: Record<string, string | boolean | undefined>, given: (name: string) => boolean): Promise<void> {
  if (opts.keyType === "ed25519") throw new CliError("--key-type ed25519 applies to --format vendor; android-key keys are ec or rsa");
  const patchLevel = opts.patchLevel as string | undefined;
  if (patchLevel !== undefined && !/^\d{6}$/.test(patchLevel)) throw new CliError("--patch-level must be YYYYMM, e.g. 202501");
  const ca = await readCaDir(opts.ca as string, "android-key", readAndroidDevCa);
  const keyOptions: AndroidKeyOptions = {
    nonce: opts.nonce as string,
    bootState: opts.bootState as AndroidBootState,
    keyType: opts.keyType as AndroidKeyType,
    unlocked: Boolean(opts.unlocked),
    attestKey: Boolean(opts.attestKey),
    knox: Boolean(opts.knox),
    knoxWarranty: Boolean(opts.knoxWarranty),
    chainExtension: Boolean(opts.chainExtension),
    wrongNonce: Boolean(opts.wrongNonce),
    asciiNonce: Boolean(opts.asciiNonce),
    omitRoot: Boolean(opts.omitRoot),
    ...(patchLevel !== undefined ? { patchLevel: Number(patchLevel) } : {}),
    ...(opts.package !== undefined ? { packageName: opts.package as string } : {}),
    ...(opts.model !== undefined ? { model: opts.model as string } : {}),
  };
  let certs: Uint8Array[];
  try {
    checkKeyOptions(keyOptions); // before a phone is made (and kept)
    const phone = { securityLevel: opts.securityLevel as AndroidSecurityLevel, provisioning: opts.provisioning as AndroidProvisioning };
    let device: AndroidDevice;
    if (opts.deviceKey) {
      const file = opts.deviceKey as string;
      const kept = await androidDeviceFromFile(file, ca, {
        ...phone,
        securityLevelGiven: given("securityLevel"),
        provisioningGiven: given("provisioning"),
        revokedIntermediate: Boolean(opts.revokedIntermediate),
      });
      device = kept.device;
      process.stderr.write(
        kept.created
          ? `a new ${device.provisioning} phone, kept in ${file}\n`
          : `the ${device.provisioning} phone kept in ${file}${kept.renewed ? " (its RKP attestation CA renewed)" : ""}\n`,
      );
    } else {
      device = await createAndroidDevice(ca, { ...phone, revokedIntermediate: Boolean(opts.revokedIntermediate) });
    }
    certs = await attestAndroidKey(device, keyOptions);
  } catch (e) {
    throw opts.deviceKey ? deviceKeyError(e, opts.deviceKey as string) : new CliError((e as Error).message);
  }
  const body = encodeAndroidChain(certs, opts.encoding as ChainEncoding);
  writeFileOrFail(opts.out as string, body, "--out FILE");
  process.stderr.write(`${body.length} bytes written to ${opts.out as string} (${certs.length} certificates, leaf first)\n`);
}

/** `dev-ca --play-integrity`: writes the demo Play app and says how to register it and appraise its tokens. */
async function writePlayCaCommand(dir: string, force: boolean): Promise<void> {
  const ca = createPlayDevCa();
  let written: string[];
  try {
    written = await writePlayDevCa(ca, dir, { overwrite: force });
  } catch (e) {
    throw devCaWriteError(e, dir);
  }
  const { commands } = playDevCaManifest(ca, dir);
  process.stdout.write(written.join("\n") + "\n");
  process.stderr.write(
    `register the demo app with: ${commands.playAppAdd}\n` +
      `or appraise a token offline with: ${commands.appraise}\n`,
  );
}

/** `device-sim --format play-integrity`: the token Google would hand the demo app for the nonce, in the case asked. */
async function playDeviceSimCommand(opts: Record<string, string | boolean | undefined>, given: (name: string) => boolean): Promise<void> {
  if (opts.unrecognizedApp && given("appVerdict")) {
    throw new CliError("--unrecognized-app is --app-verdict UNRECOGNIZED_VERSION: give one of them");
  }
  if (given("timestampMs") && (opts.stale || given("at"))) {
    throw new CliError("--timestamp-ms sets the timestamp exactly: give it without --stale and --at");
  }
  let timestampMs: number | undefined;
  if (opts.timestampMs !== undefined) {
    const text = opts.timestampMs as string;
    timestampMs = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(timestampMs)) throw new CliError(`--timestamp-ms ${text}: not a whole number of milliseconds`);
  }
  let now: Date | undefined;
  if (opts.at !== undefined) {
    now = new Date(opts.at as string);
    if (Number.isNaN(now.getTime())) throw new CliError(`--at ${opts.at as string}: not an ISO 8601 time`);
  }
  let accessRiskApps: PlayAccessRiskApp[] | undefined;
  if (opts.accessRiskApps !== undefined) {
    const list = (opts.accessRiskApps as string).split(",").map((a) => a.trim()).filter(Boolean);
    accessRiskApps = [];
    for (const app of list.length === 1 && list[0] === "none" ? [] : list) {
      if (!(PLAY_ACCESS_RISK_APPS as readonly string[]).includes(app)) {
        throw new CliError(`--access-risk-apps: ${app} is none of ${PLAY_ACCESS_RISK_APPS.join(", ")}`);
      }
      accessRiskApps.push(app as PlayAccessRiskApp);
    }
  }
  const ca = await readCaDir(opts.ca as string, "play-integrity", readPlayDevCa);
  const token = await makePlayIntegrityToken(ca, {
    nonce: opts.nonce as string,
    ...(now ? { now } : {}),
    ...(timestampMs !== undefined ? { timestampMs } : {}),
    stale: Boolean(opts.stale),
    classic: Boolean(opts.classic),
    wrongNonce: Boolean(opts.wrongNonce),
    deviceVerdict: opts.deviceVerdict as PlayDeviceVerdict,
    appVerdict: opts.unrecognizedApp ? "UNRECOGNIZED_VERSION" : (opts.appVerdict as PlayAppVerdict),
    wrongPackage: Boolean(opts.wrongPackage),
    wrongCertDigest: Boolean(opts.wrongCertDigest),
    licensing: opts.unlicensed ? "UNLICENSED" : "LICENSED",
    playProtect: opts.playProtect as PlayProtectVerdict,
    ...(accessRiskApps ? { accessRiskApps } : {}),
    tamperedSignature: Boolean(opts.tamperedSignature),
    otherAppKeys: Boolean(opts.otherAppKeys),
  });
  if (opts.out === undefined) {
    process.stdout.write(token + "\n");
    return;
  }
  // The file holds the token exactly as the app receives it, ready for POST /v2/blobs (--data-binary @FILE).
  writeFileOrFail(opts.out as string, token, "--out FILE");
  process.stderr.write(`${token.length} bytes written to ${opts.out as string}\n`);
}

/** `dev-ca --app-attest`: the demo App Attestation PKI, and the serve flag that trusts it. */
async function writeAppAttestCaCommand(dir: string, force: boolean): Promise<void> {
  if (!force && existsSync(path.join(dir, APP_ATTEST_CA_FILES.root))) throw new CliError(`${dir} holds an App Attest demo CA already; --force replaces it`);
  const written = await saveAppAttestCa(await makeAppAttestCa(), dir);
  process.stdout.write(written.join("\n") + "\n");
  process.stderr.write(
    `serve with: --app-attest-roots ${path.join(dir, APP_ATTEST_CA_FILES.root)}\n` +
      `register the demo app with: attestd ios-app add --tenant TENANT --app-id ${DEMO_APP_ID} --environment both\n`,
  );
}

/** `device-sim --format app-attest`: an attestation object (the key kept in --key-file), or an assertion by that key. */
async function appAttestDeviceSimCommand(opts: Record<string, string | boolean | undefined>): Promise<void> {
  if (opts.out === undefined) throw new CliError("--format app-attest: give --out FILE");
  const at = opts.at === undefined ? new Date() : new Date(opts.at as string);
  if (Number.isNaN(at.getTime())) throw new CliError(`--at ${opts.at as string}: not an ISO 8601 time`);
  let counter: number | undefined;
  if (opts.counter !== undefined) {
    if (!/^\d{1,10}$/.test(opts.counter as string) || Number(opts.counter) > 0xffffffff) throw new CliError("--counter is 0..4294967295");
    counter = Number(opts.counter);
  }
  const keyFile = opts.keyFile as string | undefined;
  const nonce = opts.nonce as string;
  if (opts.assertion) {
    if (!keyFile) throw new CliError("--assertion signs with a key attested before: give --key-file FILE");
    for (const attestationOnly of ["wrongKeyId", "unknownAaguid", "expired", "otherCa", "appId"]) {
      if (opts[attestationOnly] !== undefined) throw new CliError(`--${attestationOnly.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())} applies to an attestation, not --assertion`);
    }
    let key: SimAppAttestKey;
    try {
      key = JSON.parse(readFileSync(keyFile, "utf8")) as SimAppAttestKey;
    } catch (e) {
      throw new CliError(`--key-file ${keyFile}: ${(e as Error).message} (write it with an attestation first)`);
    }
    const made = makeAppAttestAssertion(key, {
      nonce,
      ...(counter !== undefined ? { counter } : {}),
      ...(opts.otherAppId ? { otherAppId: opts.otherAppId as string } : {}),
      wrongNonce: Boolean(opts.wrongNonce),
      tamperedSignature: Boolean(opts.tamperedSignature),
      unknownKeyId: Boolean(opts.unknownKeyId),
    });
    writeFileSync(opts.out as string, made.body);
    writeFileSync(keyFile, JSON.stringify(made.key, null, 2) + "\n", { mode: 0o600 });
    process.stderr.write(`assertion with counter ${made.key.counter} written to ${opts.out as string}\n`);
    return;
  }
  if (opts.tamperedSignature || opts.unknownKeyId) throw new CliError("--tampered-signature and --unknown-key-id apply to --assertion");
  const ca = await readCaDir(opts.ca as string, "app-attest", loadAppAttestCa);
  const { blob, key } = await makeAppAttestAttestation(ca, {
    nonce,
    now: at,
    environment: opts.environment as "production" | "development",
    ...(opts.appId ? { appId: opts.appId as string } : {}),
    ...(opts.otherAppId ? { otherAppId: opts.otherAppId as string } : {}),
    ...(counter !== undefined ? { counter } : {}),
    wrongNonce: Boolean(opts.wrongNonce),
    wrongKeyId: Boolean(opts.wrongKeyId),
    unknownAaguid: Boolean(opts.unknownAaguid),
    expired: Boolean(opts.expired),
    otherCa: Boolean(opts.otherCa),
  });
  writeFileSync(opts.out as string, blob);
  if (keyFile) writeFileSync(keyFile, JSON.stringify(key, null, 2) + "\n", { mode: 0o600 });
  process.stderr.write(`attestation of key ${key.keyId} (${blob.length} bytes) written to ${opts.out as string}${keyFile ? `; the key kept in ${keyFile}` : ""}\n`);
}
