import { Option, type Command } from "commander";
// the registry's defaults and bounds: an app given by flags offline is judged as the same app registered
import { DEFAULT_DEVICE_FLOOR, DEFAULT_MAX_AGE_SECONDS, MAX_AGE_BOUNDS } from "../services/playApps.ts";
import { existsSync } from "node:fs";
import path from "node:path";
import { appraise as appraiseBlob, detectFormat } from "../attestation/appraise.ts";
import { openWithApps, parsePlayResponseKeys, PlayResponseKeyError } from "../attestation/encoding/playIntegrityToken.ts";
import type { AppraisalChecks, AppraisalResult, IntegrityLabel, IosEnvironment, PlayIntegrityEvidence } from "../attestation/types.ts";
import { checkIosAppId, DEFAULT_IOS_ENVIRONMENT, IOS_ENVIRONMENTS } from "../services/iosApps.ts";
import { appAttestReceiptCheck } from "../attestation/encoding/appAttestReceipt.ts";
import { settings, type Config } from "../config.ts";
import type { RegisteredPlayApp } from "../domain/playApps.ts";
import { systemClock } from "../clock.ts";
import { isAppError } from "../errors/AppError.ts";
import { partAErrorBody } from "../http/render.ts";
import { createLogger, type LogFormat } from "../logging.ts";
import { CLI_STORE_OPTIONS, openStores } from "../store/openStores.ts";
import { openTrust } from "../trust/openTrust.ts";
import { appAttestReceiptsChecked } from "../trust/appAttestRoots.ts";
import { addSettings, CliError, configFrom, readFileOrFail, STORAGE_SETTINGS, TRUST_SETTINGS, type CommandDefinitions } from "./options.ts";

/** `attestd appraise` (operator.md): one blob appraised offline, with the trust flags `serve` takes. */
export const commands: CommandDefinitions = { appraise: defineAppraise };

const PLAY_FLOORS: readonly IntegrityLabel[] = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"];
const PLAY_REQUIRE = ["licensed", "play-protect", "app-access-risk"] as const;

interface PlayFlags {
  playPackage?: string;
  playDecryptionKey?: string;
  playVerificationKey?: string;
  playCertDigest?: string[];
  playDeviceFloor?: string;
  playMaxAgeSeconds?: string;
  playRequire?: string;
}

/**
 * The Play app the flags describe, opened into evidence as the service opens a token with a tenant's apps. Without
 * --play-package the evidence is `no-app`, and the verdict says so.
 */
async function playEvidence(blob: Uint8Array, f: PlayFlags): Promise<PlayIntegrityEvidence> {
  const given = [f.playDecryptionKey, f.playVerificationKey, f.playCertDigest?.length ? 1 : undefined].some((v) => v !== undefined);
  if (f.playPackage === undefined) {
    if (given) throw new CliError("--play-decryption-key, --play-verification-key and --play-cert-digest need --play-package");
    return { opened: false, why: "no-app", reason: "no Play app was given (--play-package, --play-decryption-key, --play-verification-key)" };
  }
  if (f.playDecryptionKey === undefined || f.playVerificationKey === undefined) {
    throw new CliError("--play-package needs --play-decryption-key and --play-verification-key (the Play Console's response keys)");
  }
  let responseKeys;
  try {
    responseKeys = parsePlayResponseKeys(f.playDecryptionKey, f.playVerificationKey);
  } catch (e) {
    // the message names the key ("decryption key: …"): name the flag that gave it
    if (e instanceof PlayResponseKeyError) throw new CliError(`--play-${e.message.replace(/^(\w+) key/, "$1-key")}`);
    throw e;
  }
  const floor = (f.playDeviceFloor ?? DEFAULT_DEVICE_FLOOR) as IntegrityLabel;
  if (!PLAY_FLOORS.includes(floor)) throw new CliError(`--play-device-floor must be one of ${PLAY_FLOORS.join(", ")}`);
  const maxAge = f.playMaxAgeSeconds === undefined ? DEFAULT_MAX_AGE_SECONDS : Number(f.playMaxAgeSeconds);
  // offline as when registered: the registry's bounds, so a policy tried here can be registered as it is
  if (!Number.isSafeInteger(maxAge) || maxAge < MAX_AGE_BOUNDS.min || maxAge > MAX_AGE_BOUNDS.max) {
    throw new CliError(`--play-max-age-seconds must be a whole number of seconds from ${MAX_AGE_BOUNDS.min} to ${MAX_AGE_BOUNDS.max}`);
  }
  const digests = (f.playCertDigest ?? []).map((d) => d.replace(/:/g, "").toLowerCase());
  const bad = digests.find((d) => !/^[0-9a-f]{64}$/.test(d));
  if (bad !== undefined) throw new CliError(`--play-cert-digest ${bad}: not a SHA-256 in hex (64 digits, colons allowed)`);
  const require = (f.playRequire ?? "").split(",").map((r) => r.trim()).filter(Boolean);
  const unknown = require.find((r) => !(PLAY_REQUIRE as readonly string[]).includes(r));
  if (unknown !== undefined) throw new CliError(`--play-require ${unknown}: expected any of ${PLAY_REQUIRE.join(", ")}`);
  const app: RegisteredPlayApp = {
    id: "offline",
    tenantId: "",
    policy: {
      packageName: f.playPackage,
      certDigests: digests,
      deviceFloor: floor,
      maxAgeSeconds: maxAge,
      require: { licensed: require.includes("licensed"), playProtect: require.includes("play-protect"), appAccessRisk: require.includes("app-access-risk") },
    },
    responseKeys,
    createdAt: new Date(0).toISOString(),
  };
  return openWithApps(Buffer.from(blob).toString("latin1"), [app]);
}

/**
 * The nonce string whose challenge bytes are `bytes`: base64url for the 32-byte challenges this service issues,
 * else the bytes as a latin1 string, which is what the appraisal compares for challenges apps pass as text
 * (and round-trips any byte string, e.g. the "challenge" or UUID challenges of Google's test chains).
 */
/** A service's refusal (AppError) as the CLI's one line. */
function refuseAsCli<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isAppError(e)) throw new CliError(e.reason);
    throw e;
  }
}

export function nonceForChallenge(bytes: Buffer): string {
  return bytes.length === 32 ? bytes.toString("base64url") : bytes.toString("latin1");
}

/**
 * Where an offline verdict may differ from the server's because appraise was not given the trust the server runs
 * with: a failure the trust flags decide, with the flag unset here. A running server's flags cannot be read from
 * outside it, so the note says which flag the server would use and asks for the same one.
 */
export function trustNotes(result: Pick<AppraisalResult, "format" | "detail">, config: Config, storeOpened: boolean): string[] {
  const checks = (result.detail.checks ?? {}) as AppraisalChecks;
  const notes: string[] = [];
  if (result.format === "vendor") {
    if (checks.chain === "fail" && config.vendorRoots === undefined) {
      notes.push(
        "no trust roots were given to appraise (--vendor-roots), so no vendor chain can pass; the server uses the " +
          "--vendor-roots it was started with: give appraise the same flag (for attestd dev-ca's demo CA, --vendor-roots DIR/root.pem)",
      );
    }
    if (checks.measurements === "no-reference" && config.referenceValues === undefined && !storeOpened) {
      notes.push(
        "no reference values were given to appraise (--reference-values, or a data dir whose store holds them); the server " +
          "uses its --reference-values and the sets imported with attestd refvals import: give appraise the same",
      );
    }
  }
  if (result.format === "android-key") {
    if (checks.chain === "fail" && config.androidRoots === undefined) {
      notes.push(
        "no trust roots were given to appraise (--android-roots), so only Google's built-in roots are trusted; a server " +
          "started with --android-roots trusts that root instead: give appraise the same flag (for attestd dev-ca --android's " +
          "demo PKI, --android-roots DIR/root.pem --android-status DIR/status.json)",
      );
    }
    if (checks.trust === "unavailable" && config.androidStatus === settings.androidStatus.default) {
      notes.push(
        `no status list was given to appraise (--android-status), and Google's (${settings.androidStatus.default}) could not ` +
          "be fetched nor found cached in the data dir; the server uses its --android-status: give appraise the same flag",
      );
    }
  }
  return notes;
}

function defineAppraise(appraise: Command): void {
  addSettings(
    appraise
      .argument("<file>")
      .description("appraise one blob offline with the same trust flags as serve; prints the verdict record")
      .option("--nonce <nonce>", "the nonce the blob should carry")
      .option("--challenge-hex <hex>", "the challenge bytes the blob should carry, as hex")
      .option("--at <iso8601>", "appraisal time (default now)")
      .option("--detail", "print the format, the deciding rule, the full parsed attestation and the pinnable device facts too")
      .option("--tenant <name>", "appraise as this tenant: its own reference values and its android-key policy from --android-policy")
      .option("--play-package <name>", "play-integrity: the app's package name")
      .option("--play-decryption-key <base64>", "play-integrity: the app's response decryption key (AES-256), base64 as the Play Console shows it")
      .option("--play-verification-key <base64>", "play-integrity: the app's response verification key (EC P-256), base64 as the Play Console shows it")
      .option("--play-cert-digest <hex>", "play-integrity: a SHA-256 of the app's signing certificate (repeatable; none: any certificate)", (v: string, acc: string[] = []) => [...acc, v])
      .option("--play-device-floor <label>", `play-integrity: the lowest device verdict that passes (default ${DEFAULT_DEVICE_FLOOR})`)
      .option("--play-max-age-seconds <n>", `play-integrity: how old a token may be (default ${DEFAULT_MAX_AGE_SECONDS})`)
      .option("--play-require <list>", `play-integrity: signals that must pass too, comma-separated: ${PLAY_REQUIRE.join(", ")}`)
      .option("--ios-app-id <id>", "app-attest: the app id TEAMID.BUNDLEID the attestation must be for (repeatable)", (v: string, acc: string[] = []) => [...acc, v])
      .addOption(new Option("--ios-environment <env>", `app-attest: whose keys are accepted (default ${DEFAULT_IOS_ENVIRONMENT})`).choices(IOS_ENVIRONMENTS)),
    [...TRUST_SETTINGS, ...STORAGE_SETTINGS],
  ).action(async (file: string, opts: { nonce?: string; challengeHex?: string; at?: string; detail?: boolean; tenant?: string; iosAppId?: string[]; iosEnvironment?: IosEnvironment } & PlayFlags, cmd: Command) => {
    if ((opts.nonce === undefined) === (opts.challengeHex === undefined)) {
      throw new CliError("give exactly one of --nonce or --challenge-hex");
    }
    if (opts.challengeHex !== undefined && !/^([0-9a-fA-F]{2})+$/.test(opts.challengeHex)) {
      throw new CliError("--challenge-hex must be an even number of hex digits");
    }
    const now = opts.at === undefined ? new Date() : new Date(opts.at);
    if (Number.isNaN(now.getTime())) throw new CliError(`--at ${opts.at}: not an ISO 8601 time`);
    const nonce = opts.nonce ?? nonceForChallenge(Buffer.from(opts.challengeHex!, "hex"));
    const blob = readFileOrFail(file, "FILE", "a blob, a certificate chain or a token, as a device sends it: attestd device-sim --out FILE writes one");
    // a token is opened before appraisal (async, keys needed), as the service does; other formats need nothing
    const playIntegrity = detectFormat(blob).name === "play-integrity" ? await playEvidence(blob, opts) : undefined;
    // App Attest: the apps as flags; an assertion offline has no remembered key (rule unknown-key)
    const environment = opts.iosEnvironment ?? DEFAULT_IOS_ENVIRONMENT;
    const apps = (opts.iosAppId ?? []).map((appId) => ({ appId: refuseAsCli(() => checkIosAppId(appId)), environment }));
    const config = configFrom(cmd);
    // the receipt judged as `serve` judges it: while Apple's App Attestation root is the one in force
    const appAttest = { apps, ...(appAttestReceiptsChecked(config.appAttestRoots) ? { receiptCheck: appAttestReceiptCheck() } : {}) };
    const log = createLogger({ level: config.logLevel === "info" ? "warn" : config.logLevel, format: config.logFormat as LogFormat, fd: 2 });
    const useStore = config.store !== "sqlite" || existsSync(path.join(config.dataDir, "attestd.sqlite"));
    const stores = useStore ? await openStores(config, CLI_STORE_OPTIONS) : undefined;
    try {
      const sources = await openTrust(config, { log, clock: systemClock, serving: false, ...(stores ? { referenceValues: stores.durable } : {}) });
      const tenant = opts.tenant !== undefined && stores ? await stores.durable.getTenantByName(opts.tenant) : undefined;
      if (opts.tenant !== undefined && !tenant) {
        process.stderr.write(`no tenant "${opts.tenant}" in the store; its own reference values and stored policy (if any) are not applied\n`);
      }
      // the tenant's stored policy version, as the server appraises with it (docs/policy.md); the file's otherwise
      const stored = tenant && stores ? await stores.durable.currentTenantPolicy(tenant.tenantId) : undefined;
      if (opts.tenant !== undefined && !stored && !sources.hasTenantPolicy(opts.tenant)) {
        process.stderr.write(`no policy for tenant "${opts.tenant}" in the store or --android-policy; using the default\n`);
      }
      const trust = sources.forTenant({ name: opts.tenant ?? "", tenantId: tenant?.tenantId ?? "" }, stored);
      try {
        const r = appraiseBlob({ blob, nonce, trust, now, appAttest, ...(playIntegrity ? { playIntegrity } : {}) });
        const notes = trustNotes(r, config, stores !== undefined);
        // with --detail also the facts a relying party's deviceId would pin (docs/devices.md), null when unauthenticated,
        // and why the verdict may not be the server's (trust flags not given here)
        const out = opts.detail
          ? { record: r.record, format: r.format, reason: r.reason, ...(notes.length ? { notes } : {}), detail: r.detail, facts: r.facts ?? null }
          : r.record;
        process.stdout.write(JSON.stringify(out, null, 2) + "\n");
        for (const note of notes) process.stderr.write(`note: ${note}\n`);
      } catch (e) {
        if (!isAppError(e)) throw e;
        process.stdout.write(JSON.stringify(partAErrorBody(e.entry, e.reason), null, 2) + "\n");
        process.exitCode = 2;
      }
    } finally {
      await stores?.close();
    }
  });
}
