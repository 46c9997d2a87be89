/**
 * The values the appraisal core takes and gives. Nothing here knows about HTTP or storage.
 */
import type { AppAttestAssertion } from "./encoding/appAttestObject.ts";

export type AppraisalStatus =
  | "Success"
  | "DeviceError"
  | "CertificateInvalid"
  | "SignatureInvalid"
  | "NonceMismatch"
  | "Revoked";

export type VerdictValue = "Yes" | "No" | "Unknown";

/** The eleven-field record of attestation-api.md, in wire order. Every field is a string, "" when absent. */
export interface VerdictRecord {
  measurements: string;
  tamperBit: string;
  IMEI: string;
  status: AppraisalStatus;
  nonce: string;
  chipId: string;
  verdict: VerdictValue;
  MAC: string;
  version: string;
  createdDate: string;
  updateDate: string;
}

export const VERDICT_FIELDS = [
  "measurements",
  "tamperBit",
  "IMEI",
  "status",
  "nonce",
  "chipId",
  "verdict",
  "MAC",
  "version",
  "createdDate",
  "updateDate",
] as const satisfies readonly (keyof VerdictRecord)[];

export type BlobFormatName = "vendor" | "android-key" | "play-integrity" | "app-attest";

/** What an appraisal returns: the record, plus why (for logs and `attestd appraise`) and the parsed detail. */
export interface AppraisalResult {
  format: BlobFormatName;
  record: VerdictRecord;
  /** One line saying which rule decided the status and verdict. Never sent to clients by default. */
  reason: string;
  /** The full parsed attestation (JSON-safe), kept with the stored verdict for `?detail=full`. */
  detail: Record<string, unknown>;
  /**
   * What a relying party may pin about the device (trust on first use, docs/devices.md): present only when the
   * appraisal authenticated the attestation (status Success), since unauthenticated facts prove nothing.
   */
  facts?: DeviceFacts;
  /**
   * app-attest, on a Yes only: what the service must store with the verdict, atomically (the key an attestation
   * made known; the counter an assertion moves forward). The verdict is not Yes unless this is stored.
   */
  appAttest?: AppAttestOutcome;
}

/**
 * The pinnable facts of one authenticated attestation (deviceFacts.ts says which, per format). `identity` values
 * must stay the same from one appraisal of a device to the next; `levels` (OS version, patch levels) may rise but
 * never fall. Every value is what the device attested, as text (identity) or a number (levels).
 */
export interface DeviceFacts {
  format: BlobFormatName;
  identity: Record<string, string>;
  levels: Record<string, number>;
}

/**
 * What each check of an appraisal found, in one vocabulary for both formats: a field is present when the check ran,
 * absent when the appraisal stopped before it (or the format has no such check). Kept in the stored verdict's
 * `detail.checks`, so a signed result (src/results/, docs/results.md) can be derived from any stored verdict, and
 * so the mapping onto the RATS trustworthiness vector has one table to read rather than each format's reasons.
 */
export interface AppraisalChecks {
  /**
   * the trust sources were missing or stale: nothing was appraised (android-key fails closed; play-integrity: the
   * tenant registered no Play app, or Google's decoding could not be had)
   */
  trust?: "unavailable";
  /** the device reported an error instead of evidence (vendor exitCode ≠ 0) */
  evidence?: "device-error";
  /** the certificate chain to a trusted root, with the leaf's own rules (and, for android-key, its extensions) */
  chain?: "pass" | "fail";
  /** the status / revocation list */
  revocation?: "pass" | "revoked";
  /**
   * the vendor container's signature over its data, by the leaf key; play-integrity: the token decrypts and verifies
   * with a registered app's response keys (or Google decoded it)
   */
  signature?: "pass" | "fail";
  /** the nonce (android-key: attestationChallenge; vendor: the NONCE record) against the query's */
  nonce?: "pass" | "fail";
  /** android-key: where the attested key lives; `mismatch` when attestation and KeyMint levels differ */
  securityLevel?: "strongbox" | "tee" | "software" | "mismatch";
  /** android-key: the hardware-enforced deviceLocked */
  bootloader?: "locked" | "unlocked";
  /** android-key: verifiedBootState; SelfSigned split by the boot-key allow-list; `absent` without a hardware RootOfTrust */
  bootState?: "verified" | "self-signed-allowed" | "self-signed" | "unverified" | "failed" | "absent";
  /** the device's tamper fuse: vendor TAMPER_BIT, Samsung Knox's warranty bit (`unreadable`: Knox extension unreadable) */
  tamper?: "clear" | "set" | "unreadable";
  /**
   * android-key osPatchLevel: under the policy's minimum, else within a year of the appraisal or older; `unknown`
   * when the device attests none (hardware-enforced)
   */
  patchLevel?: "current" | "outdated" | "below-minimum" | "unknown";
  /** android-key, only under an app allow-list: the attested app; play-integrity, only when the tenant listed certificate digests: the app's signing certificate */
  app?: "allowed" | "refused";
  /** vendor: the measurements against the reference values of (model, firmware) */
  measurements?: "match" | "differ" | "no-reference";
  /** play-integrity: requestDetails.requestPackageName (and appIntegrity.packageName) against the registered app */
  requestPackage?: "match" | "mismatch";
  /** play-integrity: requestDetails.timestampMillis against the appraisal time (maxAgeSeconds, future skew) */
  freshness?: "fresh" | "stale" | "future";
  /** play-integrity: appIntegrity.appRecognitionVerdict (PLAY_RECOGNIZED, UNRECOGNIZED_VERSION, anything else) */
  appRecognition?: "recognized" | "unrecognized" | "unevaluated";
  /** play-integrity: the highest device label the token carries (MEETS_STRONG, _DEVICE, _BASIC_INTEGRITY, none) */
  deviceRecognition?: "strong" | "device" | "basic" | "none";
  /** app-attest: the key id against the credential (attestation) or a key the tenant's devices attested (assertion) */
  key?: "match" | "mismatch" | "known" | "unknown" | "revoked";
  /** app-attest: the authenticator counter (attestation: 0; assertion: above the last one stored) */
  counter?: "pass" | "fail";
  /** app-attest: the AAGUID against the app's allowed environments */
  environment?: "allowed" | "refused";
  /**
   * app-attest: Apple's receipt, judged when a receipt check is plugged in (AppAttestEvidence.receiptCheck: the
   * server does so while Apple's App Attestation root is the one in force), else "not-checked"
   */
  receipt?: "pass" | "fail" | "not-checked";
}

/** Play Integrity's device recognition labels, cumulative (docs/android-key.md, "Integrity labels"). */
export type IntegrityLabel = "MEETS_BASIC_INTEGRITY" | "MEETS_DEVICE_INTEGRITY" | "MEETS_STRONG_INTEGRITY";

/** Reference values: known-good measurement sets per (model, firmwareVersion). */
export interface ReferenceValue {
  model: string;
  firmwareVersion: string;
  /** lowercase hex SHA-256 digests in blob order */
  measurements: string[];
}

/** A revocation / status list entry (Google's status-list shape, also used for the vendor list). */
export interface StatusEntry {
  status: "REVOKED" | "SUSPENDED";
  reason?: string;
}

/** Serial (lowercase hex without leading zeros, as normalizeSerial gives it) → entry. */
export type StatusList = ReadonlyMap<string, StatusEntry>;

/**
 * Everything an appraisal needs besides the blob, the nonce and the time. Built once at start-up (and rebuilt
 * when a trust source is refreshed); appraisal never reads a file or the network.
 */
export interface TrustConfig {
  vendor: VendorTrust;
  android: AndroidTrust;
  /** absent: no App Attestation root, and every app-attest attestation fails closed (CertificateInvalid) */
  appAttest?: AppAttestTrust;
  /**
   * The tenant's stored policy version that shaped this trust (docs/policy.md): its number is named in the verdict's
   * detail and the appraisal policy id, and its floors apply to Play Integrity and App Attest. Absent: the tenant
   * has no stored policy, and the operator's settings alone apply.
   */
  tenantPolicy?: TenantPolicyInForce;
}

/** What of a tenant's stored policy version the appraisal reads beyond its android-key policy. */
export interface TenantPolicyInForce {
  version: number;
  /** no registered Play app's device floor may be below this */
  playIntegrityFloor?: IntegrityLabel;
  /** the App Attest environments admitted at all */
  appAttestEnvironments?: readonly ("production" | "development")[];
}

/** Apple's App Attestation Root CA (built in, src/trust/) or the operator's `--app-attest-roots`. */
export interface AppAttestTrust {
  rootsDer: readonly Uint8Array[];
}

export interface VendorTrust {
  /** DER of each operator-trusted vendor root. */
  rootsDer: readonly Uint8Array[];
  revocations: StatusList;
  /** the global sets: the operator's, for every tenant */
  referenceValues: readonly ReferenceValue[];
  /**
   * The appraised tenant's own sets, when it has any: rule 7 looks here first, so a tenant's set replaces a global
   * set of the same (model, firmwareVersion) for that tenant's devices alone.
   */
  tenantReferenceValues?: readonly ReferenceValue[];
}

/** Built and refreshed by src/trust/ (Google's roots and status list unless the operator names others). */
export interface AndroidTrust {
  /** SHA-256 (lowercase hex) of each pinned root's SubjectPublicKeyInfo DER. Empty → android-key fails closed. */
  pinnedRootSpkiSha256: ReadonlySet<string>;
  /** DER of the pinned root certificates (used when the chain leaves the root out). */
  rootsDer: readonly Uint8Array[];
  status: StatusList;
  /** false when the roots or the status list are missing or older than the configured maximum age. */
  fresh: boolean;
  /**
   * Set whenever `fresh` is false: which source is missing or stale and what went wrong, in words that name no
   * URL, file or directory. The appraisal's reason quotes it and tenants read that (the verdict, its record, the
   * portal); the operator's sentence, with the source and the cache path, is in the log (src/trust/).
   */
  unavailableReason?: string;
  allowedBootKeys: readonly AllowedBootKey[];
  policy: AndroidPolicy;
}

export interface AllowedBootKey {
  /** lowercase hex of verifiedBootKey */
  key: string;
  label: string;
  models?: string[];
}

export interface AndroidPolicy {
  /** YYYYMM or YYYYMMDD as Android reports osPatchLevel; undefined = no minimum */
  minOsPatchLevel?: number;
  /** undefined = any app; otherwise one of these package names, with a signing-cert SHA-256 (hex) if given */
  allowedApps?: { packageName: string; signatureDigests?: string[] }[];
  /**
   * A factory-provisioned chain (pre-RKP devices) whose factory intermediates or batch certificate have expired:
   * `accept` (undefined means accept) appraises it as if they had not, `refuse` fails it. RKP chains are always
   * held to their dates. docs/android-key.md, "Date policy".
   */
  factoryExpiry?: "accept" | "refuse";
  /** the lowest security level that passes; undefined = TrustedEnvironment (the rules' own floor). docs/policy.md */
  requiredSecurityLevel?: "TrustedEnvironment" | "StrongBox";
}

/**
 * A tenant's registered Google Play app as the appraisal needs it (issue 23, mobile-attestation.md "What Yes
 * means"). Its secrets (the response keys, a service account) are not here: a token is opened before appraisal,
 * which stays pure and synchronous, and the appraisal judges what was opened.
 */
export interface PlayAppPolicy {
  packageName: string;
  /** SHA-256 of the app's signing certificates, lowercase hex; empty: any certificate */
  certDigests: readonly string[];
  /** the lowest device verdict that passes (MEETS_DEVICE_INTEGRITY by default) */
  deviceFloor: IntegrityLabel;
  /** how old a token may be (its `requestDetails.timestampMillis` against the appraisal time), in seconds */
  maxAgeSeconds: number;
  /** which optional signals decide; recorded in the verdict's detail either way */
  require: {
    /** `accountDetails.appLicensingVerdict` must be LICENSED */
    licensed: boolean;
    /** `environmentDetails.playProtectVerdict` must be NO_ISSUES */
    playProtect: boolean;
    /** `environmentDetails.appAccessRiskVerdict` must report no capturing or controlling apps */
    appAccessRisk: boolean;
  };
}

/**
 * What opening a Play Integrity token gave, before appraisal: the payload, verified, and the registered app whose
 * keys opened it (or for which Google decoded it); or why it could not be opened.
 */
export type PlayIntegrityEvidence =
  | {
      opened: true;
      app: PlayAppPolicy;
      payload: unknown;
      decodedBy: "local" | "google";
      /**
       * the token's protected header and ciphertext size, when the opening read them (opened locally): the
       * appraisal then does not read the token again
       */
      token?: { header: Record<string, unknown>; ciphertextBytes: number };
    }
  | {
      opened: false;
      /**
       * `no-app`: the tenant registered no Play app; `not-opened`: no registered app's keys decrypt and verify it
       * (another app's token, a tampered one); `decode-failed`: Google's decoding could not be reached or refused
       */
      why: "no-app" | "not-opened" | "decode-failed";
      /** in words a tenant may read (no URL, no key material) */
      reason: string;
    };

/**
 * Input of one appraisal. `now` is passed in rather than read so that appraisal stays pure: every date in the
 * record is `now`, and tests appraise real chains at a pinned time.
 */
export interface AppraisalInput {
  blob: Uint8Array;
  /** the nonce string from the query; the device may carry it as its 32 decoded bytes or as its ASCII */
  nonce: string;
  trust: TrustConfig;
  now: Date;
  /** for a play-integrity blob: the token as opened before appraisal; absent is as `no-app` */
  playIntegrity?: PlayIntegrityEvidence;
  /** for an app-attest blob: the tenant's apps (and, for an assertion, its key); absent is as no app registered */
  appAttest?: AppAttestEvidence;
}

/** Which App Attest environments an iOS app accepts (its AAGUID: `appattestdevelop` or `appattest` + 7 NULs). */
export type IosEnvironment = "production" | "development" | "both";

/** A tenant's registered iOS app as the appraisal needs it (issue 25, mobile-attestation.md). */
export interface IosAppPolicy {
  /** TEAMID.BUNDLEID: the RP ID whose SHA-256 App Attest puts in authenticator data */
  appId: string;
  environment: IosEnvironment;
}

/** A key App Attest attested for a tenant, as an assertion's appraisal needs it. */
export interface AppAttestKnownKey {
  /** base64 (standard alphabet, padded) of the 32-byte key id */
  keyId: string;
  appId: string;
  /** the EC P-256 public key, uncompressed point (65 bytes), base64 */
  publicKey: string;
  /** the last counter stored (0 after the attestation) */
  counter: number;
  revoked: boolean;
}

/**
 * The receipt seam (issue 25): the receipt module (encoding/appAttestReceipt.ts) plugs in here. Pure and
 * synchronous like the appraisal: given the receipt bytes the attestation carried and what the attestation proved,
 * whether the receipt is Apple's for this key and app. Absent: the receipt is kept with the key, not judged.
 */
export type AppAttestReceiptCheck = (
  receipt: Uint8Array,
  attested: { appId: string; keyId: Uint8Array; publicKey: Uint8Array; credentialCertDer: Uint8Array; now: Date },
) => { ok: true } | { ok: false; reason: string };

/** What the service looked up before an app-attest appraisal (the appraisal reads no store). */
export interface AppAttestEvidence {
  /** the tenant's registered iOS apps (attestations are judged against them) */
  apps: readonly IosAppPolicy[];
  /** for an assertion: the tenant's key of that id; undefined when the tenant's devices never attested it */
  key?: AppAttestKnownKey | undefined;
  receiptCheck?: AppAttestReceiptCheck | undefined;
  /**
   * for an assertion of a known key: its signature, checked before the appraisal (on a thread, AppAttestKeys): which
   * of `assertionMessages`' readings of `nonce` (by index) it verifies over with that key (-1: none). The appraisal uses it
   * only for that key id and nonce, and checks the signature itself otherwise.
   */
  signature?: { keyId: string; nonce: string; reading: number } | undefined;
  /** for an assertion: the body as the service read it (to find the key), so the appraisal does not read it again */
  assertion?: { blob: Uint8Array; read: AppAttestAssertion } | undefined;
}

/** What an app-attest Yes asks the service to store (AppraisalResult.appAttest). */
export type AppAttestOutcome =
  | {
      kind: "attested";
      keyId: string;
      appId: string;
      publicKey: string;
      environment: "production" | "development";
      /** Apple's receipt, base64, for the receipt module's refreshes */
      receipt: string;
    }
  | { kind: "asserted"; keyId: string; counter: number };
