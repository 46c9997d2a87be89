import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import type {
  AppraisalChecks,
  AppraisalInput,
  AppraisalResult,
  AppraisalStatus,
  IntegrityLabel,
  PlayAppPolicy,
  VerdictRecord,
  VerdictValue,
} from "../types.ts";
import type { BlobFormat } from "./format.ts";
import { looksLikePlayIntegrityToken, PlayTokenError, readPlayIntegrityToken } from "../encoding/playIntegrityToken.ts";
import { PlayPayloadError, readPlayIntegrityPayload, type PlayIntegrityPayload } from "../encoding/playIntegrityPayload.ts";
import { playIntegrityLabels } from "../policy/integrityLabels.ts";
import { playIntegrityDeviceFacts } from "../deviceFacts.ts";

/**
 * play-integrity: a Google Play Integrity token (mobile-attestation.md), opened before appraisal with the tenant's
 * registered apps (encoding/playIntegrityToken.ts, or Google's decoder) and judged here from `input.playIntegrity`.
 * Pure and synchronous like the other formats. The first rule that applies decides; its id is `detail.rule` and
 * starts the reason. docs/play-integrity.md, "Rules", is this list as a table.
 *
 * 0. the token's structure (encoding/playIntegrityToken.ts) or the opened payload (encoding/playIntegrityPayload.ts)
 *    unreadable → AppError BLOB_MALFORMED.
 * 1. `no-app`: the tenant registered no Play app → CertificateInvalid, No (nothing it trusts vouches for the token).
 * 2. `decode-failed`: Google's decoding could not be had → CertificateInvalid, Unknown (the token may be fine).
 * 3. `not-opened`: no registered app's keys decrypt and verify it → SignatureInvalid, No.
 * 4. `nonce`: neither requestDetails.requestHash (standard) nor .nonce (classic) is the nonce string → NonceMismatch, No.
 * 5. `package`: requestDetails.requestPackageName, or appIntegrity.packageName when present, is not the package of
 *    the app whose keys opened it → NonceMismatch, No (the token answers another app's request).
 * 6. `freshness`: timestampMillis older than the app's maxAgeSeconds, or more than FUTURE_SKEW_SECONDS ahead of
 *    the appraisal time → NonceMismatch, No (the token does not answer this request now).
 * 7. Success, then the policy, every failure listed, the first one's id as `detail.rule`:
 *    `app-recognition` (PLAY_RECOGNIZED), `cert-digest` (one of the tenant's, when it listed any), `device-floor`
 *    (the labels reach the app's floor), and only where the app's policy requires them `licensing` (LICENSED),
 *    `play-protect` (NO_ISSUES), `app-access-risk` (no capturing or controlling app) → No; none fails → `pass`, Yes.
 */

/** How far ahead of the appraisal time a token's timestampMillis may be: clocks of Google and the host differ. */
export const FUTURE_SKEW_SECONDS = 60;

export type PlayRuleId =
  | "no-app"
  | "decode-failed"
  | "not-opened"
  | "nonce"
  | "package"
  | "freshness"
  | "app-recognition"
  | "cert-digest"
  | "device-floor"
  | "licensing"
  | "play-protect"
  | "app-access-risk"
  | "pass";

const LABEL_RANK: Record<IntegrityLabel, number> = {
  MEETS_BASIC_INTEGRITY: 1,
  MEETS_DEVICE_INTEGRITY: 2,
  MEETS_STRONG_INTEGRITY: 3,
};

const DEVICE_RECOGNITION = ["none", "basic", "device", "strong"] as const;

function malformed(reason: string): AppError {
  return new AppError(catalog.BLOB_MALFORMED, `play-integrity: ${reason}`);
}

/** appsDetected values that mean an app may see or drive this one (Google: KNOWN_/UNKNOWN_ CAPTURING, CONTROLLING). */
const RISKY_APP = /_(CAPTURING|CONTROLLING)$/;

interface PolicyFailure {
  rule: PlayRuleId;
  why: string;
}

/** The policy rules (7) over an authenticated payload, in their fixed order; empty when the verdict is Yes. */
function policyFailures(p: PlayIntegrityPayload, app: PlayAppPolicy, labels: readonly IntegrityLabel[], checks: AppraisalChecks): PolicyFailure[] {
  const out: PolicyFailure[] = [];
  const recognition = p.appIntegrity.appRecognitionVerdict;
  checks.appRecognition = recognition === "PLAY_RECOGNIZED" ? "recognized" : recognition === "UNRECOGNIZED_VERSION" ? "unrecognized" : "unevaluated";
  if (recognition !== "PLAY_RECOGNIZED") out.push({ rule: "app-recognition", why: `appRecognitionVerdict is ${recognition}, not PLAY_RECOGNIZED` });

  if (app.certDigests.length > 0) {
    const listed = new Set(app.certDigests.map((d) => d.toLowerCase()));
    const ok = p.appIntegrity.certificateSha256Digest.some((d) => listed.has(d));
    checks.app = ok ? "allowed" : "refused";
    if (!ok) {
      const got = p.appIntegrity.certificateSha256Digest;
      out.push({ rule: "cert-digest", why: got.length > 0 ? `signing certificate ${got.join(", ")} is not one the tenant listed` : "the token names no signing certificate, and the tenant listed some" });
    }
  }

  const highest = labels.length === 0 ? 0 : LABEL_RANK[labels[labels.length - 1]!];
  checks.deviceRecognition = DEVICE_RECOGNITION[highest];
  if (highest < LABEL_RANK[app.deviceFloor]) {
    const has = p.deviceIntegrity.deviceRecognitionVerdict;
    out.push({ rule: "device-floor", why: `device verdict ${has.length > 0 ? has.join(", ") : "empty"} is below the floor ${app.deviceFloor}` });
  }

  if (app.require.licensed) {
    const v = p.accountDetails?.appLicensingVerdict;
    if (v !== "LICENSED") out.push({ rule: "licensing", why: `appLicensingVerdict is ${v ?? "absent"}, and the app requires LICENSED` });
  }
  if (app.require.playProtect) {
    const v = p.environmentDetails?.playProtectVerdict;
    if (v !== "NO_ISSUES") out.push({ rule: "play-protect", why: `playProtectVerdict is ${v ?? "absent"}, and the app requires NO_ISSUES` });
  }
  if (app.require.appAccessRisk) {
    const risk = p.environmentDetails?.appAccessRiskVerdict;
    const risky = risk?.appsDetected.filter((a) => RISKY_APP.test(a)) ?? [];
    if (!risk) out.push({ rule: "app-access-risk", why: "appAccessRiskVerdict is absent (not evaluated), and the app requires it" });
    else if (risky.length > 0) out.push({ rule: "app-access-risk", why: `apps detected: ${risky.join(", ")}` });
  }
  return out;
}

/** The verdict record's fields for this format (docs/play-integrity.md, "The verdict record"). */
function record(input: AppraisalInput, status: AppraisalStatus, verdict: VerdictValue, payload: PlayIntegrityPayload | undefined): VerdictRecord {
  const at = input.now.toISOString();
  return {
    // the app's signing certificates as Google attests them: the measurement of what runs
    measurements: payload ? payload.appIntegrity.certificateSha256Digest.join("") : "",
    // no tamper fuse, IMEI, chip id or MAC: Google's token carries no device identifier, by design
    tamperBit: "",
    IMEI: "",
    status,
    nonce: input.nonce,
    chipId: "",
    verdict,
    MAC: "",
    // the app's versionCode, the one version the token attests
    version: payload?.appIntegrity.versionCode !== undefined ? String(payload.appIntegrity.versionCode) : "",
    createdDate: at,
    updateDate: at,
  };
}

function appDetail(app: PlayAppPolicy): Record<string, unknown> {
  return {
    packageName: app.packageName,
    certDigests: [...app.certDigests],
    deviceFloor: app.deviceFloor,
    maxAgeSeconds: app.maxAgeSeconds,
    require: { ...app.require },
  };
}

export function appraisePlayIntegrity(input: AppraisalInput): AppraisalResult {
  const evidence = input.playIntegrity ?? { opened: false, why: "no-app", reason: "no Play app was given to open the token with" };
  // a token opened locally was read whole by its opening; anything else is read (and refused if broken) here
  let token = evidence.opened ? evidence.token : undefined;
  if (!token) {
    try {
      token = readPlayIntegrityToken(input.blob);
    } catch (e) {
      if (e instanceof PlayTokenError) throw malformed(e.message);
      throw e;
    }
  }
  const checks: AppraisalChecks = {};
  const detail: Record<string, unknown> = {
    format: "play-integrity",
    appraisedAt: input.now.toISOString(),
    token: { header: token.header, ciphertextBytes: token.ciphertextBytes },
  };
  let payload: PlayIntegrityPayload | undefined;
  let labels: IntegrityLabel[] = [];

  const done = (rule: PlayRuleId, status: AppraisalStatus, verdict: VerdictValue, why: string): AppraisalResult => {
    const reason = `rule ${rule}: ${why}`;
    detail.rule = rule;
    detail.status = status;
    detail.reason = reason;
    detail.checks = checks;
    // the labels of an authenticated token only, as android-key's (an unauthenticated label proves nothing)
    detail.deviceIntegrity = { deviceRecognitionVerdict: status === "Success" ? labels : [] };
    const result: AppraisalResult = { format: "play-integrity", record: record(input, status, verdict, payload), reason, detail };
    if (status === "Success" && payload && evidence.opened) {
      result.facts = playIntegrityDeviceFacts(
        evidence.app.packageName,
        payload.appIntegrity.certificateSha256Digest,
        payload.deviceIntegrity.deviceAttributes?.sdkVersion,
      );
    }
    return result;
  };

  // 1–3. Opened, and by what.
  if (!evidence.opened) {
    detail.opened = { why: evidence.why, reason: evidence.reason };
    if (evidence.why === "not-opened") {
      checks.signature = "fail";
      return done("not-opened", "SignatureInvalid", "No", evidence.reason);
    }
    checks.trust = "unavailable";
    return evidence.why === "no-app"
      ? done("no-app", "CertificateInvalid", "No", evidence.reason)
      : done("decode-failed", "CertificateInvalid", "Unknown", evidence.reason);
  }
  // the tenant's policy may set a floor under every app (docs/policy.md): the higher of the two decides
  const tenantFloor = input.trust.tenantPolicy?.playIntegrityFloor;
  const app = tenantFloor && LABEL_RANK[tenantFloor] > LABEL_RANK[evidence.app.deviceFloor] ? { ...evidence.app, deviceFloor: tenantFloor } : evidence.app;
  detail.decodedBy = evidence.decodedBy;
  detail.app = appDetail(app);
  try {
    payload = readPlayIntegrityPayload(evidence.payload);
  } catch (e) {
    if (e instanceof PlayPayloadError) throw malformed(e.message);
    throw e;
  }
  detail.payload = payload;
  checks.signature = "pass";
  const by = evidence.decodedBy === "local" ? "decrypted and verified with the response keys of" : "decoded by Google for";
  const rd = payload.requestDetails;
  detail.requestKind = rd.requestHash !== undefined ? "standard" : rd.nonce !== undefined ? "classic" : "none";

  // 4. Nonce: the string itself, as the app passed it (a nonce is never empty, so "" never matches).
  if (input.nonce.length === 0 || (rd.requestHash !== input.nonce && rd.nonce !== input.nonce)) {
    checks.nonce = "fail";
    const had = rd.requestHash !== undefined ? "requestHash" : rd.nonce !== undefined ? "nonce" : "neither requestHash nor nonce";
    return done("nonce", "NonceMismatch", "No", `requestDetails (${had}) does not match the nonce`);
  }
  checks.nonce = "pass";

  // 5. Package: the request's, and Google's reading of the app when it gives one.
  const appPackage = payload.appIntegrity.packageName;
  if (rd.requestPackageName !== app.packageName || (appPackage !== undefined && appPackage !== app.packageName)) {
    checks.requestPackage = "mismatch";
    const other = rd.requestPackageName !== app.packageName ? rd.requestPackageName : appPackage;
    return done("package", "NonceMismatch", "No", `the token is for ${JSON.stringify(other)}, not ${app.packageName}`);
  }
  checks.requestPackage = "match";

  // 6. Freshness, against the appraisal time (Google's timestamp is when it prepared the token).
  const ageMs = input.now.getTime() - rd.timestampMillis;
  if (ageMs > app.maxAgeSeconds * 1000) {
    checks.freshness = "stale";
    return done("freshness", "NonceMismatch", "No", `the token is ${Math.floor(ageMs / 1000)} s old, more than ${app.maxAgeSeconds} s`);
  }
  if (-ageMs > FUTURE_SKEW_SECONDS * 1000) {
    checks.freshness = "future";
    return done("freshness", "NonceMismatch", "No", `the token is dated ${Math.ceil(-ageMs / 1000)} s ahead, more than ${FUTURE_SKEW_SECONDS} s`);
  }
  checks.freshness = "fresh";

  // 7. Authenticated: the policy decides.
  labels = playIntegrityLabels(payload.deviceIntegrity.deviceRecognitionVerdict);
  const failures = policyFailures(payload, app, labels, checks);
  detail.failures = failures;
  if (failures.length > 0) {
    const [first, ...more] = failures as [PolicyFailure, ...PolicyFailure[]];
    return done(first.rule, "Success", "No", [first.why, ...more.map((f) => `also ${f.rule}: ${f.why}`)].join("; "));
  }
  return done("pass", "Success", "Yes", `${by} ${app.packageName}; ${labels[labels.length - 1]} meets ${app.deviceFloor}; PLAY_RECOGNIZED`);
}

export const playIntegrityFormat: BlobFormat = {
  name: "play-integrity",
  matches: looksLikePlayIntegrityToken,
  appraise: appraisePlayIntegrity,
};
