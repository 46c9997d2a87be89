import type { AppraisalChecks, IntegrityLabel } from "../attestation/types.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import { checksFromStatus, earStatus, trustVector, type DevicePin, type EarStatus, type TrustVector } from "./trustVector.ts";

/**
 * The claims-set of an EAR (EAT Attestation Result, draft-ietf-rats-ear) for one stored verdict. Pure: the verdict,
 * the issuing time and the verifier's identity in, a JSON object out; signing is earIssuer.ts's. docs/results.md
 * shows one and says what each claim means.
 *
 * The claim names and the profile are those of the EAR profile `tag:github.com,2023:veraison/ear` (the draft's
 * profile as implemented by Veraison's Go, Rust and C libraries), so the relying party's existing EAR tooling reads
 * attestd's results. Extensions are maps under `attestd.` names, which the draft tells receivers to ignore when
 * unknown.
 */

export const EAR_PROFILE = "tag:github.com,2023:veraison/ear";
/** RFC 9782's JWT-serialised EAT, with the profile parameter draft-ietf-rats-ear derives from it */
export const EAR_MEDIA_TYPE = "application/eat+jwt";
export const EAR_CONTENT_TYPE = `${EAR_MEDIA_TYPE}; eat_profile="${EAR_PROFILE}"`;

export interface VerifierId {
  developer: string;
  build: string;
}

export interface EarAppraisal {
  "ear.status": EarStatus;
  "ear.trustworthiness-vector": TrustVector;
  "ear.appraisal-policy-id"?: string;
  /** android-key: the integrity labels, as Play Integrity's deviceIntegrity object shapes them */
  "attestd.device-integrity"?: { deviceRecognitionVerdict: IntegrityLabel[] };
  /** the device the relying party named, what its pin found, and for a changed pin or a downgrade what changed */
  "attestd.device"?: DeviceDetail;
}

export interface EarClaims {
  eat_profile: string;
  iat: number;
  "ear.verifier-id": VerifierId;
  eat_nonce: string;
  submods: Record<string, EarAppraisal>;
  /** the verdict record this result stands for: its objectId (GET /api/v1/verdicts/{objectId}), status and verdict */
  "attestd.verdict": { objectId: string; status: string; verdict: string; createdDate: string };
}

interface DeviceDetail {
  deviceId: string;
  pin: DevicePin;
  changes?: { fact: string; from: string; to: string }[];
}

const PINS: readonly string[] = ["first", "matched", "changed", "downgrade", "none"];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** detail.device as the pinning writes it, when it is there and well-formed. */
function deviceOf(detail: Record<string, unknown>): DeviceDetail | undefined {
  const d = detail.device;
  if (!isObject(d) || typeof d.deviceId !== "string" || typeof d.pin !== "string" || !PINS.includes(d.pin)) return undefined;
  const out: DeviceDetail = { deviceId: d.deviceId, pin: d.pin as DevicePin };
  if (Array.isArray(d.changes)) {
    out.changes = d.changes
      .filter((c): c is Record<string, unknown> => isObject(c) && ["fact", "from", "to"].every((k) => typeof c[k] === "string"))
      .map((c) => ({ fact: c.fact as string, from: c.from as string, to: c.to as string }));
  }
  return out;
}

function labelsOf(detail: Record<string, unknown>): IntegrityLabel[] | undefined {
  const d = detail.deviceIntegrity;
  return isObject(d) && Array.isArray(d.deviceRecognitionVerdict) ? (d.deviceRecognitionVerdict as IntegrityLabel[]) : undefined;
}

/** The submod of one appraised format: its status, its vector, the policy, and attestd's extensions. */
export function earAppraisal(v: StoredVerdict): EarAppraisal {
  const detail = v.detail;
  const checks = isObject(detail.checks) ? (detail.checks as AppraisalChecks) : checksFromStatus(v.record.status);
  const device = deviceOf(detail);
  const vector = trustVector(checks, device?.pin);
  const out: EarAppraisal = {
    "ear.status": earStatus(vector, v.record.verdict),
    "ear.trustworthiness-vector": vector,
  };
  if (typeof detail.appraisalPolicyId === "string") out["ear.appraisal-policy-id"] = detail.appraisalPolicyId;
  const labels = labelsOf(detail);
  if (labels) out["attestd.device-integrity"] = { deviceRecognitionVerdict: labels };
  if (device) out["attestd.device"] = device;
  return out;
}

export function earClaims(v: StoredVerdict, issuedAtMs: number, verifierId: VerifierId): EarClaims {
  return {
    eat_profile: EAR_PROFILE,
    iat: Math.floor(issuedAtMs / 1000),
    "ear.verifier-id": verifierId,
    eat_nonce: v.record.nonce,
    submods: { [v.format]: earAppraisal(v) },
    "attestd.verdict": {
      objectId: v.objectId,
      status: v.record.status,
      verdict: v.record.verdict,
      createdDate: v.record.createdDate,
    },
  };
}
