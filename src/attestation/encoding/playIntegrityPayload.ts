/**
 * The verdict JSON inside a Play Integrity token (Google's "Integrity verdicts" page: requestDetails, appIntegrity,
 * deviceIntegrity, accountDetails, environmentDetails), read into a typed, bounded record. The same reader serves
 * tokens opened locally and payloads Google's decodeIntegrityToken returns (`tokenPayloadExternal`).
 *
 * Choices, and why (docs/play-integrity.md, "The payload"):
 * - Required: requestDetails (requestPackageName, timestampMillis), appIntegrity (appRecognitionVerdict) and
 *   deviceIntegrity: Google always sends them, and the rules cannot be judged without them. accountDetails and
 *   environmentDetails are optional (environmentDetails only comes to apps that opted in).
 * - A field of the wrong type or out of bounds makes the payload unreadable (the format's BLOB_MALFORMED): it is
 *   signed, so it is Google's, and a shape we do not understand must not be guessed at.
 * - Verdict values are kept as Google wrote them (printable, ≤ 64 characters), known or not: Google adds values
 *   (MEETS_VIRTUAL_INTEGRITY, the appsDetected kinds); the rules pass only on the values they name.
 * - int64 fields (timestampMillis, versionCode) come as strings in proto3 JSON, as Google sends them, or as numbers;
 *   both are read, as safe integers.
 * - Unknown fields are not copied (the detail stays typed and bounded) but their names are listed, at most
 *   MAX_IGNORED, in `ignoredFields`, so a new Google field shows up in the stored verdict.
 * - Certificate digests arrive as base64url SHA-256 (Google's form) and are kept as lowercase hex, the form the
 *   tenant registers them in.
 */

export interface PlayIntegrityPayload {
  requestDetails: {
    requestPackageName: string;
    timestampMillis: number;
    /** classic requests */
    nonce?: string;
    /** standard requests */
    requestHash?: string;
  };
  appIntegrity: {
    appRecognitionVerdict: string;
    packageName?: string;
    /** SHA-256 of the signing certificates, lowercase hex, in the token's order */
    certificateSha256Digest: string[];
    versionCode?: number;
  };
  deviceIntegrity: {
    deviceRecognitionVerdict: string[];
    legacyDeviceRecognitionVerdict?: string[];
    recentDeviceActivity?: { deviceActivityLevel: string };
    deviceAttributes?: { sdkVersion?: number };
  };
  accountDetails?: { appLicensingVerdict: string };
  environmentDetails?: {
    playProtectVerdict?: string;
    appAccessRiskVerdict?: { appsDetected: string[] };
  };
  /** the paths of fields the reader does not know (not copied), at most MAX_IGNORED */
  ignoredFields: string[];
}

/** Why a payload cannot be read; the format turns it into BLOB_MALFORMED. */
export class PlayPayloadError extends Error {}

const MAX_STRING = 256;
const MAX_VALUE = 64;
const MAX_LIST = 16;
const MAX_IGNORED = 16;
/** printable ASCII: verdict values and names reach logs, JSON and XML */
const PRINTABLE = /^[\x20-\x7e]*$/;
const VALUE = /^[A-Z0-9_]{1,64}$/;

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

class Reader {
  constructor(private readonly path: string, private readonly o: Obj, known: readonly string[], readonly ignored: string[]) {
    for (const k of Object.keys(o)) {
      if (!known.includes(k) && ignored.length < MAX_IGNORED) ignored.push(`${path}.${k}`.slice(0, MAX_STRING));
    }
  }
  private fail(key: string, what: string): never {
    throw new PlayPayloadError(`payload: ${this.path}.${key} ${what}`);
  }
  has(key: string): boolean {
    return this.o[key] !== undefined;
  }
  text(key: string, max = MAX_STRING): string {
    const v = this.o[key];
    if (typeof v !== "string") this.fail(key, v === undefined ? "is missing" : "is not a string");
    if (v.length > max || !PRINTABLE.test(v)) this.fail(key, `is not printable ASCII of at most ${max} characters`);
    return v;
  }
  optText(key: string, max = MAX_STRING): string | undefined {
    return this.has(key) ? this.text(key, max) : undefined;
  }
  /** a verdict value: upper-case letters, digits and underscores, as Google's enums are spelled */
  value(key: string): string {
    const v = this.text(key, MAX_VALUE);
    if (!VALUE.test(v)) this.fail(key, "is not a verdict value (A-Z, 0-9, _)");
    return v;
  }
  optValue(key: string): string | undefined {
    return this.has(key) ? this.value(key) : undefined;
  }
  /** a list of verdict values, absent read as empty (Google leaves empty lists out) */
  values(key: string): string[] {
    const v = this.o[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.length > MAX_LIST) this.fail(key, `is not a list of at most ${MAX_LIST} values`);
    return v.map((x, i) => {
      if (typeof x !== "string" || !VALUE.test(x)) this.fail(`${key}[${i}]`, "is not a verdict value (A-Z, 0-9, _)");
      return x;
    });
  }
  /** an integer, as a JSON number or as proto3 JSON's decimal string for int64 */
  int(key: string): number {
    const v = this.o[key];
    const n = typeof v === "string" && /^(0|[1-9][0-9]{0,15})$/.test(v) ? Number(v) : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) this.fail(key, v === undefined ? "is missing" : "is not a non-negative integer");
    return n;
  }
  optInt(key: string): number | undefined {
    return this.has(key) ? this.int(key) : undefined;
  }
  object(key: string, known: readonly string[]): Reader {
    const v = this.o[key];
    if (!isObj(v)) this.fail(key, v === undefined ? "is missing" : "is not an object");
    return new Reader(`${this.path}.${key}`, v, known, this.ignored);
  }
  optObject(key: string, known: readonly string[]): Reader | undefined {
    return this.has(key) ? this.object(key, known) : undefined;
  }
  list(key: string): unknown[] {
    const v = this.o[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.length > MAX_LIST) this.fail(key, `is not a list of at most ${MAX_LIST} items`);
    return v;
  }
}

/** A base64url SHA-256 (43 characters, padding tolerated) as lowercase hex. */
function digestHex(v: unknown, where: string): string {
  const s = typeof v === "string" ? v.replace(/=+$/, "") : undefined;
  if (s === undefined || !/^[A-Za-z0-9_-]{43}$/.test(s)) {
    throw new PlayPayloadError(`payload: ${where} is not the base64url of a SHA-256 digest`);
  }
  return Buffer.from(s, "base64url").toString("hex");
}

/** Reads the payload Google signed (or decoded). Throws PlayPayloadError naming the first field it cannot read. */
export function readPlayIntegrityPayload(value: unknown): PlayIntegrityPayload {
  if (!isObj(value)) throw new PlayPayloadError("payload: not a JSON object");
  const ignored: string[] = [];
  const top = new Reader("", value, ["requestDetails", "appIntegrity", "deviceIntegrity", "accountDetails", "environmentDetails"], ignored);

  const rd = top.object("requestDetails", ["requestPackageName", "timestampMillis", "nonce", "requestHash"]);
  const requestDetails: PlayIntegrityPayload["requestDetails"] = {
    requestPackageName: rd.text("requestPackageName"),
    timestampMillis: rd.int("timestampMillis"),
  };
  const nonce = rd.optText("nonce", 512);
  const requestHash = rd.optText("requestHash", 512);
  if (nonce !== undefined) requestDetails.nonce = nonce;
  if (requestHash !== undefined) requestDetails.requestHash = requestHash;

  const ai = top.object("appIntegrity", ["appRecognitionVerdict", "packageName", "certificateSha256Digest", "versionCode"]);
  const appIntegrity: PlayIntegrityPayload["appIntegrity"] = {
    appRecognitionVerdict: ai.value("appRecognitionVerdict"),
    certificateSha256Digest: ai.list("certificateSha256Digest").map((d, i) => digestHex(d, `.appIntegrity.certificateSha256Digest[${i}]`)),
  };
  const packageName = ai.optText("packageName");
  const versionCode = ai.optInt("versionCode");
  if (packageName !== undefined) appIntegrity.packageName = packageName;
  if (versionCode !== undefined) appIntegrity.versionCode = versionCode;

  const di = top.object("deviceIntegrity", [
    "deviceRecognitionVerdict",
    "legacyDeviceRecognitionVerdict",
    "recentDeviceActivity",
    "deviceAttributes",
  ]);
  const deviceIntegrity: PlayIntegrityPayload["deviceIntegrity"] = { deviceRecognitionVerdict: di.values("deviceRecognitionVerdict") };
  if (di.has("legacyDeviceRecognitionVerdict")) deviceIntegrity.legacyDeviceRecognitionVerdict = di.values("legacyDeviceRecognitionVerdict");
  const activity = di.optObject("recentDeviceActivity", ["deviceActivityLevel"]);
  if (activity) deviceIntegrity.recentDeviceActivity = { deviceActivityLevel: activity.value("deviceActivityLevel") };
  const attrs = di.optObject("deviceAttributes", ["sdkVersion"]);
  if (attrs) {
    const sdkVersion = attrs.optInt("sdkVersion");
    deviceIntegrity.deviceAttributes = sdkVersion === undefined ? {} : { sdkVersion };
  }

  const out: PlayIntegrityPayload = { requestDetails, appIntegrity, deviceIntegrity, ignoredFields: ignored };
  const ad = top.optObject("accountDetails", ["appLicensingVerdict"]);
  if (ad) out.accountDetails = { appLicensingVerdict: ad.value("appLicensingVerdict") };
  const ed = top.optObject("environmentDetails", ["playProtectVerdict", "appAccessRiskVerdict"]);
  if (ed) {
    const env: NonNullable<PlayIntegrityPayload["environmentDetails"]> = {};
    const pp = ed.optValue("playProtectVerdict");
    if (pp !== undefined) env.playProtectVerdict = pp;
    const risk = ed.optObject("appAccessRiskVerdict", ["appsDetected"]);
    if (risk) env.appAccessRiskVerdict = { appsDetected: risk.values("appsDetected") };
    out.environmentDetails = env;
  }
  return out;
}
