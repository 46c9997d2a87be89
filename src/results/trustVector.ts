import type { AppraisalChecks, AppraisalStatus, VerdictValue } from "../attestation/types.ts";

/**
 * The one mapping from attestd's checks onto the RATS trustworthiness vector (AR4SI, as draft-ietf-rats-ear
 * carries it) and the EAR status. Pure. docs/results.md, "How attestd's checks map onto the vector", is this
 * table in prose; keep the two in step (test/results/trustVector.test.ts walks every row).
 *
 * Claim values are AR4SI's: −1 verifier malfunction, 1 unexpected evidence (both in the "none" tier), 2..31
 * affirming, 32..95 warning, 96..127 contraindicated, 99 cryptographic validation failed. A claim is present only
 * when a check behind it ran. When several checks speak to one claim, the worse tier wins, and among values of one
 * tier the later row.
 */

export const TRUST_CLAIMS = [
  "instance-identity",
  "configuration",
  "executables",
  "file-system",
  "hardware",
  "runtime-opaque",
  "storage-opaque",
  "sourced-data",
] as const;

export type TrustClaim = (typeof TRUST_CLAIMS)[number];
export type TrustVector = Partial<Record<TrustClaim, number>>;
export type EarStatus = "none" | "affirming" | "warning" | "contraindicated";

/** The AR4SI values attestd uses, by meaning. */
export const AR4SI = {
  verifierMalfunction: -1,
  unexpectedEvidence: 1,
  /** instance-identity: recognized and not compromised; configuration: approved; executables: approved run-time; hardware: genuine; storage-opaque: hardware-backed keys */
  affirming: 2,
  /** executables: only approved executables were loaded during boot */
  approvedBoot: 3,
  /** configuration: known vulnerabilities; storage-opaque: keys not hardware-backed */
  warning: 32,
  /** executables: unrecognized run-time */
  unrecognizedRuntime: 33,
  /** instance-identity: recognized but not trustworthy; configuration: unsupportable; executables / hardware: contraindicated */
  contraindicated: 96,
  cryptoValidationFailed: 99,
} as const;

/** What the pinning of a named device found (item 2 of issue 14 writes it into the stored verdict's `detail.device`). */
export type DevicePin = "first" | "matched" | "changed" | "downgrade" | "none";

function tier(value: number): EarStatus {
  if (value >= -1 && value <= 1) return "none";
  if ((value >= 2 && value <= 31) || (value >= -32 && value <= -2)) return "affirming";
  if ((value >= 32 && value <= 95) || (value >= -96 && value <= -33)) return "warning";
  return "contraindicated";
}

const TIER_RANK: Record<EarStatus, number> = { none: 0, affirming: 1, warning: 2, contraindicated: 3 };

class VectorBuilder {
  private readonly vector: TrustVector = {};
  set(claim: TrustClaim, value: number): void {
    const current = this.vector[claim];
    if (current === undefined || TIER_RANK[tier(value)] >= TIER_RANK[tier(current)]) this.vector[claim] = value;
  }
  /** the claims in AR4SI's order, as the draft lists them */
  ordered(): TrustVector {
    const out: TrustVector = {};
    for (const c of TRUST_CLAIMS) if (this.vector[c] !== undefined) out[c] = this.vector[c];
    return out;
  }
}

/**
 * The vector of one appraisal: its checks, and the device pin when the relying party named the device. Rows in the
 * order docs/results.md lists them.
 */
export function trustVector(checks: AppraisalChecks, pin?: DevicePin): TrustVector {
  const v = new VectorBuilder();
  const { contraindicated, cryptoValidationFailed, affirming } = AR4SI;

  // Could attestd appraise at all, and is the evidence authentic and fresh?
  if (checks.trust === "unavailable") {
    v.set("instance-identity", AR4SI.verifierMalfunction);
    v.set("hardware", AR4SI.verifierMalfunction);
  }
  if (checks.evidence === "device-error") v.set("instance-identity", AR4SI.unexpectedEvidence);
  if (checks.chain === "pass") v.set("hardware", affirming);
  if (checks.chain === "fail") {
    v.set("instance-identity", cryptoValidationFailed);
    v.set("hardware", cryptoValidationFailed);
  }
  if (checks.revocation === "revoked") {
    v.set("instance-identity", contraindicated);
    v.set("hardware", contraindicated);
  }
  if (checks.signature === "fail") v.set("instance-identity", cryptoValidationFailed);
  if (checks.nonce === "fail") v.set("instance-identity", cryptoValidationFailed);
  // play-integrity: the token was for another app, or is not of now: it does not answer this request either
  if (checks.requestPackage === "mismatch") v.set("instance-identity", cryptoValidationFailed);
  if (checks.freshness === "stale" || checks.freshness === "future") v.set("instance-identity", cryptoValidationFailed);
  // app-attest: a key id not its key's, a key never attested, a replayed counter; a key the tenant revoked
  if (checks.key === "mismatch" || checks.key === "unknown" || checks.counter === "fail") v.set("instance-identity", cryptoValidationFailed);
  if (checks.key === "revoked") v.set("instance-identity", contraindicated);
  // a chain to a root and its revocation (vendor, android-key), or, with no chain, a token whose signature Google's
  // key made (play-integrity); then the nonce, and for play-integrity its package and time
  // app-attest: Apple's chain has no revocation list; an attestation is rooted once its key id is its key's, an
  // assertion by the key attested before (no chain then: its signature by that key)
  const rooted = checks.chain === "pass"
    ? checks.revocation === "pass" || (checks.revocation === undefined && checks.key === "match")
    : checks.chain === undefined && checks.revocation === undefined && checks.signature === "pass";
  const authenticated = rooted && checks.nonce === "pass" && checks.signature !== "fail" &&
    checks.requestPackage !== "mismatch" && (checks.freshness === undefined || checks.freshness === "fresh") &&
    checks.counter !== "fail" && checks.key !== "mismatch" && checks.key !== "unknown" && checks.key !== "revoked";
  if (authenticated) v.set("instance-identity", affirming);
  // app-attest: an authenticated App Attest key lives in the Secure Enclave
  if (authenticated && (checks.key === "match" || checks.key === "known")) v.set("storage-opaque", affirming);
  if (checks.environment === "refused") v.set("configuration", contraindicated);
  if (pin === "first" || pin === "matched") v.set("instance-identity", affirming);
  if (pin === "changed" || pin === "downgrade") v.set("instance-identity", contraindicated);

  // The device's state.
  switch (checks.securityLevel) {
    case "strongbox":
    case "tee":
      v.set("storage-opaque", affirming);
      break;
    case "software":
      v.set("hardware", contraindicated);
      v.set("storage-opaque", AR4SI.warning);
      break;
    case "mismatch":
      v.set("hardware", contraindicated);
      break;
  }
  if (checks.tamper === "set" || checks.tamper === "unreadable") v.set("hardware", contraindicated);
  if (checks.bootloader === "locked") v.set("configuration", affirming);
  if (checks.bootloader === "unlocked") v.set("configuration", contraindicated);
  if (checks.patchLevel === "current") v.set("configuration", affirming);
  if (checks.patchLevel === "outdated") v.set("configuration", AR4SI.warning);
  if (checks.patchLevel === "below-minimum") v.set("configuration", contraindicated);
  if (checks.bootState === "verified" || checks.bootState === "self-signed-allowed") v.set("executables", AR4SI.approvedBoot);
  else if (checks.bootState !== undefined) v.set("executables", contraindicated);
  // an allowed app on an approved boot: approved boot- and run-time
  if (checks.app === "allowed") v.set("executables", affirming);
  if (checks.app === "refused") v.set("executables", contraindicated);
  // play-integrity: Google's device labels (cumulative), then its recognition of the app binary
  switch (checks.deviceRecognition) {
    case "strong":
      v.set("storage-opaque", affirming);
    // falls through: STRONG is DEVICE and more
    case "device":
      v.set("hardware", affirming);
      v.set("configuration", affirming);
      v.set("executables", AR4SI.approvedBoot);
      break;
    case "basic":
      v.set("hardware", affirming);
      v.set("configuration", AR4SI.warning);
      v.set("executables", AR4SI.unrecognizedRuntime);
      break;
    case "none":
      v.set("hardware", contraindicated);
      break;
  }
  if (checks.appRecognition === "recognized") v.set("executables", affirming);
  if (checks.appRecognition === "unrecognized") v.set("executables", contraindicated);
  if (checks.appRecognition === "unevaluated") v.set("executables", AR4SI.unrecognizedRuntime);
  if (checks.measurements === "match") v.set("executables", affirming);
  if (checks.measurements === "differ") v.set("executables", contraindicated);
  if (checks.measurements === "no-reference") v.set("executables", AR4SI.unrecognizedRuntime);
  return v.ordered();
}

/**
 * The EAR status of an appraisal: the worst tier of its vector (draft-ietf-rats-ear: no higher trust than its worst
 * claim), and contraindicated whenever attestd's verdict is No, so the signed result never reads better than the
 * verdict record.
 */
export function earStatus(vector: TrustVector, verdict: VerdictValue): EarStatus {
  let worst: EarStatus = "none";
  for (const value of Object.values(vector)) {
    const t = tier(value);
    if (TIER_RANK[t] > TIER_RANK[worst]) worst = t;
  }
  return verdict === "No" ? "contraindicated" : worst;
}

/**
 * The checks of a verdict stored before `detail.checks` existed, as far as its status tells them: which
 * authentication step failed, or that all passed. The device-state claims are then absent, and a No still reads
 * contraindicated (earStatus).
 */
export function checksFromStatus(status: AppraisalStatus): AppraisalChecks {
  const passed = { chain: "pass", revocation: "pass", nonce: "pass" } as const;
  switch (status) {
    case "DeviceError":
      return { evidence: "device-error" };
    case "CertificateInvalid":
      return { chain: "fail" };
    case "Revoked":
      return { chain: "pass", revocation: "revoked" };
    case "SignatureInvalid":
      return { chain: "pass", revocation: "pass", signature: "fail" };
    case "NonceMismatch":
      return { ...passed, nonce: "fail" };
    case "Success":
      return passed;
  }
}
