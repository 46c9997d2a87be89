import type { AppAttestRuleId } from "../attestation/formats/appAttest.ts";
import type { PlayRuleId } from "../attestation/formats/playIntegrity.ts";
import type { AppraisalChecks } from "../attestation/types.ts";
import type { PinOutcome, VerdictDeviceDetail } from "../domain/devices.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import { STATS_REASON_CHARS } from "../store/historyQueries.ts";

/**
 * The one home of a verdict's reason in words a person reads, for the portal's pages.
 *
 * The API's `reason` (and the stored one) stays as the appraisal wrote it, e.g. "rule 6 (Success/No): TAMPER_BIT
 * is 1": it is part of the record clients and the CSV export read, and it carries the exact finding. A page shows
 * the sentence below first and keeps the rule, and that exact text, as a small reference.
 *
 * Each format's rules are listed in full (the compiler holds the play-integrity list to PlayRuleId; the tests hold
 * every vendor and android-key outcome to a sentence): vendor container rules 1–7 (blob-format.md,
 * src/attestation/formats/vendorContainer.ts), android-key's checks in the order androidKey.ts and
 * policy/androidPolicy.ts make them, play-integrity's rule ids (formats/playIntegrity.ts), app-attest's rule ids
 * for an attestation and for an assertion (formats/appAttest.ts), and the device pin that can turn any of them
 * into a No (src/services/devicePinning.ts).
 */

/** A verdict's reason for a person, and the rule that decided as a short reference ("vendor rule 6"). */
export interface VerdictExplanation {
  /** a sentence for people; the stored reason itself when the rule is not one this module knows */
  sentence: string;
  /** the rule as a reference: format and rule id */
  rule: string;
}

type VendorRule = "1" | "2" | "3" | "4" | "5" | "6" | "7:no-reference" | "7:differ" | "7:match";

export const VENDOR_SENTENCES: Record<VendorRule, string> = {
  "1": "The device reported an error instead of evidence, so nothing about it could be checked.",
  "2": "The device's certificate is not one we trust: it does not lead to a trusted vendor root, has expired, or is malformed.",
  "3": "A certificate in the device's chain has been revoked.",
  "4": "The device's signature does not match its data: the evidence may have been altered on the way.",
  "5": "The evidence answers another request: it does not carry the nonce issued for this check (it may be replayed).",
  "6": "The device reports it was tampered with (its tamper fuse is set).",
  "7:no-reference": "A genuine, untampered device, but there are no reference values for its model and firmware, so its software cannot be judged.",
  "7:differ": "The device's software does not match the known-good measurements for its model and firmware.",
  "7:match": "A genuine, untampered device running known-good software for its model and firmware.",
};

type AndroidRule =
  | "trust"
  | "chain"
  | "revoked"
  | "nonce"
  | "security-level"
  | "root-of-trust"
  | "bootloader"
  | "boot-state"
  | "knox-tamper"
  | "knox-unreadable"
  | "patch-level"
  | "app"
  | "policy"
  | "pass";

export const ANDROID_SENTENCES: Record<AndroidRule, string> = {
  trust: "Android devices could not be checked: the Google attestation roots or revocation list were missing or out of date (checks fail closed).",
  chain: "The key attestation is not vouched for: its certificates do not lead to a Google or manufacturer root we trust, or they are malformed.",
  revoked: "A certificate in the device's attestation chain has been revoked by Google.",
  nonce: "The attestation answers another request: its challenge is not the nonce issued for this check.",
  "security-level": "The key is not protected by secure hardware (a TEE or StrongBox).",
  "root-of-trust": "The device's secure hardware does not vouch for how it booted.",
  bootloader: "The device's bootloader is unlocked.",
  "boot-state": "The device did not boot verified software.",
  "knox-tamper": "Samsung Knox reports the device was tampered with (its warranty bit is set).",
  "knox-unreadable": "Samsung Knox's tamper record could not be read, so tampering cannot be ruled out.",
  "patch-level": "The device's security patches are older than the policy requires.",
  app: "The attested app is not on the allowed list.",
  policy: "The device does not meet the attestation policy.",
  pass: "A genuine Android device: hardware-protected key, locked bootloader and verified boot.",
};

export const PLAY_SENTENCES: Record<PlayRuleId, string> = {
  "no-app": "No Play app is registered for this tenant, so the Play Integrity token could not be opened.",
  "decode-failed": "Google's decoding of the Play Integrity token could not be reached; the token itself may be fine.",
  "not-opened": "The Play Integrity token was not made for any of the tenant's registered apps.",
  nonce: "The token answers another request: it does not carry the nonce issued for this check.",
  package: "The token was requested by another app package.",
  freshness: "The token is too old, or dated in the future, to answer this request.",
  "app-recognition": "Google Play does not recognise this build of the app (not from Play, or modified).",
  "cert-digest": "The app is not signed with one of the tenant's listed signing certificates.",
  "device-floor": "The device does not reach the device integrity the app requires.",
  licensing: "The app is not licensed to this user through Google Play.",
  "play-protect": "Google Play Protect reports a problem on the device.",
  "app-access-risk": "Apps that can capture the screen or control the device are running.",
  pass: "Google Play vouches for the app, and the device reaches the integrity the app requires.",
};

/** app-attest's rules of an attestation (the first appraisal of a key) */
type AppAttestAttestationRule = Exclude<AppAttestRuleId, "unknown-key" | "revoked-key" | "signature">;
/** app-attest's rules of an assertion (a later request signed with an attested key) */
type AppAttestAssertionRule = Extract<AppAttestRuleId, "unknown-key" | "revoked-key" | "signature" | "app-id" | "counter" | "pass">;

export const APP_ATTEST_ATTESTATION_SENTENCES: Record<AppAttestAttestationRule, string> = {
  "no-app": "No iOS app is registered for this tenant, so the App Attest key could not be checked.",
  chain: "The key's certificate does not lead to Apple's App Attestation root.",
  nonce: "The attestation answers another request: it does not carry the nonce issued for this check.",
  "key-id": "The key does not match its certificate, or it was attested before (a key is attested once).",
  "app-id": "The key was made for another app than the tenant's registered iOS apps.",
  counter: "The key has been used before: a new key's counter must be 0.",
  environment: "The key comes from an App Attest environment (development or production) the app does not allow.",
  receipt: "Apple's receipt for the key does not check out.",
  pass: "A genuine App Attest key of the tenant's app, made on a real Apple device.",
};

export const APP_ATTEST_ASSERTION_SENTENCES: Record<AppAttestAssertionRule, string> = {
  "unknown-key": "The assertion is signed by a key the tenant's devices never attested.",
  "revoked-key": "The assertion is signed by a key the tenant revoked.",
  signature: "The assertion's signature does not verify for its key and this nonce: forged, or made for another request.",
  "app-id": "The assertion was made for another app than the one its key belongs to.",
  counter: "The assertion was replayed: its counter is not above the last one seen for the key.",
  pass: "Signed by a key the tenant's device attested, with a fresh counter.",
};

type PinRule = Extract<PinOutcome, "changed" | "downgrade">;

export const PIN_SENTENCES: Record<PinRule, string> = {
  changed: "This device is not the one first trusted under its name: what it attests about itself has changed.",
  downgrade: "This device now runs older software than when it was trusted (a downgrade).",
};

const PLAY_RULES = new Set(Object.keys(PLAY_SENTENCES));

/** android-key's deciding check, in the order the appraisal makes them (androidKey.ts, then androidPolicy.ts). */
function androidRule(status: string, verdict: string, checks: AppraisalChecks): AndroidRule {
  if (checks.trust === "unavailable") return "trust";
  if (status === "CertificateInvalid") return "chain";
  if (status === "Revoked") return "revoked";
  if (status === "NonceMismatch") return "nonce";
  if (verdict === "Yes") return "pass";
  if (checks.securityLevel === "software" || checks.securityLevel === "mismatch") return "security-level";
  if (checks.bootState === "absent") return "root-of-trust";
  if (checks.bootloader === "unlocked") return "bootloader";
  if (checks.bootState && checks.bootState !== "verified" && checks.bootState !== "self-signed-allowed") return "boot-state";
  if (checks.tamper === "set") return "knox-tamper";
  if (checks.tamper === "unreadable") return "knox-unreadable";
  // an unreadable patch level refuses a device only under a minimum, and then the check says below-minimum
  if (checks.patchLevel === "below-minimum") return "patch-level";
  if (checks.app === "refused") return "app";
  return "policy";
}

function vendorRule(rule: unknown, checks: AppraisalChecks): VendorRule | undefined {
  if (rule === 7) {
    if (checks.measurements === "no-reference") return "7:no-reference";
    if (checks.measurements === "differ") return "7:differ";
    if (checks.measurements === "match") return "7:match";
    return undefined;
  }
  return typeof rule === "number" && rule >= 1 && rule <= 6 ? (String(rule) as VendorRule) : undefined;
}

const vendorExplanation = (rule: VendorRule): VerdictExplanation => ({ sentence: VENDOR_SENTENCES[rule], rule: `vendor rule ${rule.replace(":", " ")}` });
const androidExplanation = (rule: AndroidRule): VerdictExplanation => ({ sentence: ANDROID_SENTENCES[rule], rule: `android-key ${rule}` });
const playExplanation = (rule: PlayRuleId): VerdictExplanation => ({ sentence: PLAY_SENTENCES[rule], rule: `play-integrity rule ${rule}` });
const attestationExplanation = (rule: AppAttestAttestationRule): VerdictExplanation => ({ sentence: APP_ATTEST_ATTESTATION_SENTENCES[rule], rule: `app-attest rule ${rule}` });
const assertionExplanation = (rule: AppAttestAssertionRule): VerdictExplanation => ({ sentence: APP_ATTEST_ASSERTION_SENTENCES[rule], rule: `app-attest assertion rule ${rule}` });

/** The appraisal's own explanation, before any device pin. Undefined for a rule this module does not know. */
function appraisalExplanation(v: Pick<StoredVerdict, "format" | "record" | "detail">): VerdictExplanation | undefined {
  const checks = (v.detail.checks ?? {}) as AppraisalChecks;
  if (v.format === "vendor") {
    const rule = vendorRule(v.detail.rule, checks);
    return rule ? vendorExplanation(rule) : undefined;
  }
  // a verdict stored without its checks (older records) keeps its own words rather than a guessed sentence
  if (v.format === "android-key" && v.detail.checks && typeof v.detail.checks === "object") {
    const rule = androidRule(v.record.status, v.record.verdict, checks);
    return androidExplanation(rule);
  }
  if (v.format === "app-attest") {
    const rule = v.detail.rule;
    if (typeof rule !== "string") return undefined;
    if (v.detail.kind === "assertion" && rule in APP_ATTEST_ASSERTION_SENTENCES) {
      return assertionExplanation(rule as AppAttestAssertionRule);
    }
    if (v.detail.kind === "attestation" && rule in APP_ATTEST_ATTESTATION_SENTENCES) {
      return attestationExplanation(rule as AppAttestAttestationRule);
    }
    return undefined;
  }
  if (v.format === "play-integrity") {
    const rule = v.detail.rule;
    return typeof rule === "string" && PLAY_RULES.has(rule)
      ? playExplanation(rule as PlayRuleId)
      : undefined;
  }
  return undefined;
}

/** A stored verdict's reason for people: the device pin's when it refused the device, else the appraisal's. */
export function explainVerdict(v: Pick<StoredVerdict, "format" | "record" | "detail" | "reason">): VerdictExplanation {
  const device = v.detail.device as VerdictDeviceDetail | undefined;
  if (device && (device.pin === "changed" || device.pin === "downgrade")) {
    const appraisal = appraisalExplanation(v);
    return { sentence: PIN_SENTENCES[device.pin], rule: `device pin ${device.pin}${appraisal ? `, after ${appraisal.rule}` : ""}` };
  }
  return appraisalExplanation(v) ?? { sentence: v.reason, rule: v.format };
}

/**
 * A reason as the overview's counters keep it (verdict_stats: the stored reason cut to STATS_REASON_CHARS, beside the
 * status, without the format or the detail) in words: the same sentence and rule reference as explainVerdict gives
 * the verdict, chosen from the text's own rule form alone. Undefined when the text does not say its rule beyond
 * doubt (an unknown form, a rule id two formats share with a `why` that does not tell them apart, a cut-off text
 * whose deciding part is gone): the page then shows the text itself, never a guess.
 *
 * The forms, as the formats write them: vendor "rule N (Status/Verdict): …" (vendorContainer.ts); play-integrity
 * and app-attest "rule <id>: …" (playIntegrity.ts, appAttest.ts), told apart by the id or, for the ids they share,
 * by the fixed words after it; android-key its own words per status (androidKey.ts, chain/androidChain.ts,
 * policy/androidPolicy.ts, whose first failure is the deciding check in androidRule's order); the device pin
 * "device pin <outcome>: …; appraisal: <the appraisal's reason>" (src/services/devicePinning.ts).
 */
export function reasonInWords(reason: string, status: string): VerdictExplanation | undefined {
  const pin = /^device pin (changed|downgrade): /.exec(reason);
  if (pin) {
    const outcome = pin[1] as PinRule;
    // the appraisal's part only when one "; appraisal: " marks it (device-supplied values could hold another)
    const parts = reason.split("; appraisal: ");
    const appraisal = parts.length === 2 ? appraisalInWords(parts[1]!, status) : undefined;
    return { sentence: PIN_SENTENCES[outcome], rule: `device pin ${outcome}${appraisal ? `, after ${appraisal.rule}` : ""}` };
  }
  return appraisalInWords(reason, status);
}

/** vendor rule → the status and verdicts its reason can carry (blob-format.md); any other pairing is not ours */
const VENDOR_OUTCOMES: Record<string, { status: string; verdicts: Record<string, VendorRule> }> = {
  "1": { status: "DeviceError", verdicts: { Unknown: "1" } },
  "2": { status: "CertificateInvalid", verdicts: { No: "2" } },
  "3": { status: "Revoked", verdicts: { No: "3" } },
  "4": { status: "SignatureInvalid", verdicts: { No: "4" } },
  "5": { status: "NonceMismatch", verdicts: { No: "5" } },
  "6": { status: "Success", verdicts: { No: "6" } },
  "7": { status: "Success", verdicts: { Unknown: "7:no-reference", No: "7:differ", Yes: "7:match" } },
};

const PLAY_ONLY = new Set<string>(["decode-failed", "not-opened", "package", "freshness", "app-recognition", "cert-digest", "device-floor", "licensing", "play-protect", "app-access-risk"]);
const ATTESTATION_ONLY = new Set<string>(["chain", "key-id", "environment", "receipt"]);
const ASSERTION_ONLY = new Set<string>(["unknown-key", "revoked-key", "signature"]);

/** android-key's chain reasons (CertificateInvalid): the chain validator's, and the leaf's unreadable KeyDescription */
const ANDROID_CHAIN = /^(certificate \d+[ :']|the attest key's |no pinned root is available|the leaf carries no KeyDescription|leaf )/;

/** android-key's policy failures, the first of which starts the reason, by the check they fail */
const ANDROID_POLICY: [RegExp, AndroidRule][] = [
  [/^(attestationSecurityLevel \S+ differs from keyMintSecurityLevel |security level \S+ is not TrustedEnvironment or StrongBox)/, "security-level"],
  [/^no hardware-enforced RootOfTrust/, "root-of-trust"],
  [/^bootloader unlocked \(deviceLocked = false\)/, "bootloader"],
  [/^(SelfSigned boot with key [0-9a-f]*, not on the allow-list|verifiedBootState \w+)/, "boot-state"],
  [/^Samsung Knox warranty bit set/, "knox-tamper"],
  [/^Samsung Knox extension unreadable \(/, "knox-unreadable"],
  [/^(policy minOsPatchLevel \S+ is not YYYYMM|no usable hardware-enforced osPatchLevel \(|osPatchLevel \S+ is older than the minimum )/, "patch-level"],
  // the app check is the last: its failure is the whole reason, so the text must reach its end
  [/^(app .* is not on the app allow-list|no attestationApplicationId to check against the app allow-list)$/s, "app"],
];

function appraisalInWords(reason: string, status: string): VerdictExplanation | undefined {
  const vendor = /^rule (\d+) \((\w+)\/(\w+)\): /.exec(reason);
  if (vendor) {
    const outcome = VENDOR_OUTCOMES[vendor[1]!];
    const rule = outcome && outcome.status === vendor[2] && outcome.status === status ? outcome.verdicts[vendor[3]!] : undefined;
    return rule ? vendorExplanation(rule) : undefined;
  }
  const ruled = /^rule ([a-z][a-z-]*): (.*)$/s.exec(reason);
  if (ruled) return ruleIdInWords(ruled[1]!, ruled[2]!);
  return androidInWords(reason, status);
}

/** play-integrity's and app-attest's "rule <id>: <why>"; the ids both use are told apart by their fixed whys */
function ruleIdInWords(id: string, why: string): VerdictExplanation | undefined {
  if (PLAY_ONLY.has(id)) return playExplanation(id as PlayRuleId);
  if (ATTESTATION_ONLY.has(id)) return attestationExplanation(id as AppAttestAttestationRule);
  if (ASSERTION_ONLY.has(id)) return assertionExplanation(id as AppAttestAssertionRule);
  switch (id) {
    case "no-app":
      if (why === "the tenant registered no iOS app") return attestationExplanation("no-app");
      if (why === "the tenant registered no Play app" || why.startsWith("no Play app was given")) return playExplanation("no-app");
      return undefined;
    case "nonce":
      if (why.startsWith("requestDetails (")) return playExplanation("nonce");
      if (why.startsWith("the certificate's nonce does not answer this nonce") || why.startsWith("the credential certificate has no readable nonce extension")) {
        return attestationExplanation("nonce");
      }
      return undefined;
    case "app-id":
      if (why === "the RP ID hash is not the SHA-256 of an app id the tenant registered") return attestationExplanation("app-id");
      if (/^the RP ID hash is not the SHA-256 of .*, the key's app$/s.test(why)) return assertionExplanation("app-id");
      return undefined;
    case "counter":
      if (/^the counter is \d+, an attestation's is 0$/.test(why)) return attestationExplanation("counter");
      if (/^the counter \d+ is not above \d+/.test(why) || why.startsWith("another assertion of this key stored a counter")) return assertionExplanation("counter");
      return undefined;
    case "pass":
      if (why.startsWith("decrypted and verified with the response keys of ") || why.startsWith("decoded by Google for ")) return playExplanation("pass");
      if (why.startsWith("signed by the key of ")) return assertionExplanation("pass");
      if (/; a genuine (development|production) key of /.test(why)) return attestationExplanation("pass");
      return undefined;
    default:
      return undefined;
  }
}

/** android-key writes no rule form: its status and its fixed words say the check */
function androidInWords(reason: string, status: string): VerdictExplanation | undefined {
  switch (status) {
    case "CertificateInvalid":
      if (reason.endsWith(" (fail closed)")) return androidExplanation("trust");
      // a cut-off text may have lost its " (fail closed)": only a whole one is a chain's
      return [...reason].length < STATS_REASON_CHARS && ANDROID_CHAIN.test(reason) ? androidExplanation("chain") : undefined;
    case "Revoked":
      return /^certificate \d+ \(serial [^)]*\) is /.test(reason) ? androidExplanation("revoked") : undefined;
    case "NonceMismatch":
      return reason === "attestationChallenge does not match the nonce" ? androidExplanation("nonce") : undefined;
    case "Success": {
      if (reason.startsWith("verified chain to a pinned root; ")) return androidExplanation("pass");
      const check = ANDROID_POLICY.find(([form]) => form.test(reason));
      return check ? androidExplanation(check[1]) : undefined;
    }
    default:
      return undefined;
  }
}

/** The relying party's name for the device a verdict is about (`deviceId`), when it gave one. */
export function verdictDeviceId(v: Pick<StoredVerdict, "detail">): string | undefined {
  const device = v.detail.device as VerdictDeviceDetail | undefined;
  return typeof device?.deviceId === "string" ? device.deviceId : undefined;
}
