import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import type { AppraisalChecks, AppraisalInput, AppraisalResult, AppraisalStatus, VerdictRecord, VerdictValue } from "../types.ts";
import type { BlobFormat } from "./format.ts";
import { challengeMatches } from "../../nonces/nonce.ts";
import { CertificateReadError, ExtensionError, findExtension } from "../encoding/derChain.ts";
import {
  CHAIN_ENCODING_NAMES,
  ChainInputError,
  chainEncodingOf,
  readChainInput,
  type ChainEncoding,
} from "../encoding/chainInput.ts";
import {
  KEY_DESCRIPTION_OID,
  keyDescriptionToJson,
  parseKeyDescription,
  type KeyDescriptionInfo,
} from "../encoding/keyDescription.ts";
import { KNOX_OID, knoxToJson, knoxWarrantyVoid, parseKnoxExtension, type KnoxInfo } from "../encoding/knox.ts";
import {
  findRevoked,
  readChain,
  validateAndroidChain,
  type CertificateRole,
  type ChainCertificate,
} from "../chain/androidChain.ts";
import { androidTamperBit, evaluateAndroidPolicy, type AndroidPolicyDecision } from "../policy/androidPolicy.ts";
import { findAllowedBootKey } from "../policy/bootKeys.ts";
import { attestedOsPatchLevel, integrityLabels, patchWithinYear } from "../policy/integrityLabels.ts";
import type { Provisioning } from "../chain/provisioning.ts";
import { androidDeviceFacts } from "../deviceFacts.ts";

/**
 * android-key: the body is the certificate chain an Android app gets from KeyStore.getCertificateChain, leaf
 * first (blob-format.md): DER certificates laid end to end, or the same chain as a PEM bundle or an x5c JSON
 * object (encoding/chainInput.ts). Appraisal, first rule that applies:
 *
 * 0. Unreadable container → AppError BLOB_MALFORMED, its reason naming the encoding tried: a body that breaks its
 *    encoding's rules, a certificate that is not X.509, more than MAX_CERTS certificates, a KeyDescription whose
 *    DER is broken. (Never the Knox extension: the verdict needs one value of it, see knox.ts.)
 * 1. Trust unusable (no pinned roots, roots or status list missing or stale) → CertificateInvalid, No.
 * 2. The leaf has no KeyDescription, the chain does not validate to a pinned root (androidChain.ts), or the
 *    KeyDescription is readable but malformed (non-DER, tags out of order, wrong types), or the Knox
 *    integrityStatus is → CertificateInvalid, No.
 * 3. A batch / intermediate serial is REVOKED or SUSPENDED in the status list → Revoked, No.
 * 4. attestationChallenge is not the nonce (its 32 base64url-decoded bytes, or its ASCII) → NonceMismatch, No.
 * 5. Success; verdict by androidPolicy.ts (Yes or No).
 *
 * The record is filled from the attestation only when the chain authenticated it (Success, NonceMismatch);
 * otherwise it carries the nonce, the leaf serial as chipId and the attestation version, and the rest is "".
 * `detail` says which encoding the chain came in, how the device was provisioned, every Knox finding, and —
 * when the verdict relied on it — which expired factory certificates were accepted; `checks` what each check found
 * (types.ts, AppraisalChecks) and `deviceIntegrity` the integrity labels (policy/integrityLabels.ts).
 */

/** Real chains have 2 to 6 certificates; more is not a key-attestation chain. */
export const MAX_CERTS = 10;

/** The largest body `matches` walks as DER before calling it another format (appraise then refuses > MAX_CERTS). */
const DETECT_MAX_CERTS = 4096;

function malformed(encoding: ChainEncoding, reason: string): AppError {
  return new AppError(catalog.BLOB_MALFORMED, `android-key (${CHAIN_ENCODING_NAMES[encoding]}): ${reason}`);
}

function readExtension<T>(
  cert: ChainCertificate,
  oid: string,
  parse: (v: Uint8Array) => T,
  where: string,
  encoding: ChainEncoding,
): T | ExtensionError | undefined {
  const ext = findExtension(cert.facts, oid);
  if (!ext) return undefined;
  try {
    return parse(ext.value);
  } catch (e) {
    const err = e instanceof ExtensionError ? e : new ExtensionError("semantic", (e as Error).message);
    if (err.kind === "der") throw malformed(encoding, `${where}: ${err.message}`);
    return err;
  }
}

interface Parsed {
  encoding: ChainEncoding;
  ignoredKeys?: string[];
  certs: ChainCertificate[];
  leafKd: KeyDescriptionInfo | ExtensionError | undefined;
  attestKd: KeyDescriptionInfo | ExtensionError | undefined;
  knox: KnoxInfo | ExtensionError | undefined;
}

function parse(input: AppraisalInput): Parsed {
  const encoding = chainEncodingOf(input.blob, DETECT_MAX_CERTS) ?? "der";
  let chain;
  try {
    chain = readChainInput(input.blob, encoding, MAX_CERTS);
  } catch (e) {
    if (e instanceof ChainInputError) throw malformed(e.encoding, e.message);
    throw e;
  }
  let certs: ChainCertificate[];
  try {
    certs = readChain(chain.ders, input.trust.android);
  } catch (e) {
    if (e instanceof CertificateReadError) throw malformed(encoding, e.message);
    throw e;
  }
  const leaf = certs[0]!;
  return {
    encoding,
    ...(chain.ignoredKeys?.length ? { ignoredKeys: chain.ignoredKeys } : {}),
    certs,
    leafKd: readExtension(leaf, KEY_DESCRIPTION_OID, parseKeyDescription, "leaf KeyDescription", encoding),
    attestKd: certs[1] &&
      readExtension(certs[1], KEY_DESCRIPTION_OID, parseKeyDescription, "certificate 1 KeyDescription", encoding),
    knox: readExtension(leaf, KNOX_OID, parseKnoxExtension, "Knox extension", encoding),
  };
}

function chainDetail(certs: readonly ChainCertificate[], roles: readonly CertificateRole[] | undefined) {
  return certs.map((c, i) => ({
    index: i,
    role: roles?.[i] ?? (i === 0 ? "leaf" : "not evaluated"),
    subject: c.facts.subject,
    issuer: c.facts.issuer,
    serial: c.facts.serialHex,
    notBefore: c.facts.notBefore.toISOString(),
    notAfter: c.facts.notAfter.toISOString(),
    sha256: c.facts.sha256,
    spkiSha256: c.facts.spkiSha256,
    ca: c.facts.ca ?? false,
  }));
}

function record(
  input: AppraisalInput,
  status: AppraisalStatus,
  verdict: VerdictValue,
  leafSerial: string,
  kd: KeyDescriptionInfo | undefined,
  knox: KnoxInfo | undefined,
  authenticated: boolean,
): VerdictRecord {
  const at = input.now.toISOString();
  const hw = kd?.hardwareEnforced;
  const rot = hw?.rootOfTrust;
  const imei = hw?.attestationIdImei;
  return {
    measurements: authenticated && rot
      ? rot.verifiedBootKey.toString("hex") + (rot.verifiedBootHash?.toString("hex") ?? "")
      : "",
    tamperBit: authenticated && kd ? androidTamperBit(kd, knox) : "",
    IMEI: authenticated && imei !== undefined && /^\d{15}$/.test(imei) ? imei : "",
    status,
    nonce: input.nonce,
    chipId: leafSerial,
    verdict,
    MAC: "",
    version: kd ? String(kd.attestationVersion) : "",
    createdDate: at,
    updateDate: at,
  };
}

export function appraiseAndroidKey(input: AppraisalInput): AppraisalResult {
  const { encoding, ignoredKeys, certs, leafKd, attestKd, knox } = parse(input);
  const trust = input.trust.android;
  const leafSerial = certs[0]!.facts.serialHex;
  const kd = leafKd instanceof ExtensionError ? undefined : leafKd;
  const knoxInfo = knox instanceof ExtensionError ? undefined : knox;
  let roles: readonly CertificateRole[] | undefined;
  const checks: AppraisalChecks = {};
  const detail: Record<string, unknown> = {
    format: "android-key",
    appraisedAt: input.now.toISOString(),
    encoding,
    ...(ignoredKeys ? { ignoredKeys } : {}),
    chain: null,
    keyDescription: kd ? keyDescriptionToJson(kd) : null,
  };
  if (attestKd && !(attestKd instanceof ExtensionError)) detail.attestKeyDescription = keyDescriptionToJson(attestKd);
  if (knoxInfo) detail.knox = knoxToJson(knoxInfo);

  const done = (status: AppraisalStatus, verdict: VerdictValue, reason: string, authenticated: boolean): AppraisalResult => {
    detail.chain = chainDetail(certs, roles);
    detail.status = status;
    detail.reason = reason;
    detail.checks = checks;
    detail.deviceIntegrity = {
      deviceRecognitionVerdict: kd
        ? integrityLabels({
            authenticated: status === "Success",
            keyDescription: kd,
            knox: knoxInfo,
            allowedBootKeys: trust.allowedBootKeys,
            now: input.now,
          })
        : [],
    };
    const result: AppraisalResult = {
      format: "android-key" as const,
      record: record(input, status, verdict, leafSerial, kd, knoxInfo, authenticated),
      reason,
      detail,
    };
    // Success comes only after the chain validated, so the roles and the provisioning are known
    if (status === "Success" && kd && roles) {
      result.facts = androidDeviceFacts(kd, certs, roles, detail.provisioning as Provisioning);
    }
    return result;
  };

  // 1. Trust. The source's own words first: which source failed and how (never where: tenants read this).
  if (!trust.fresh || trust.pinnedRootSpkiSha256.size === 0) {
    const why = trust.unavailableReason ?? (trust.pinnedRootSpkiSha256.size === 0
      ? "no Android attestation roots are configured"
      : "the Android attestation roots or status list are missing or stale");
    checks.trust = "unavailable";
    return done("CertificateInvalid", "No", `${why} (fail closed)`, false);
  }

  // 2. KeyDescription present, chain, then the extensions' semantics.
  checks.chain = "fail";
  if (leafKd === undefined) return done("CertificateInvalid", "No", "the leaf carries no KeyDescription", false);
  if (!kd) {
    // Untrustworthy either way; validating the chain too tells the log whether the certificate is genuine (a
    // device's odd encoding) or not (an edited leaf).
    const chain = validateAndroidChain({ certs, leaf: placeholderKd, attestKey: attestKd }, trust, input.now);
    roles = chain.roles;
    const why = (leafKd as ExtensionError).message;
    return done("CertificateInvalid", "No", chain.ok ? `leaf ${why}` : `${chain.reason}; leaf ${why}`, false);
  }
  const chain = validateAndroidChain({ certs, leaf: kd, attestKey: attestKd }, trust, input.now);
  roles = chain.roles;
  if (!chain.ok) return done("CertificateInvalid", "No", chain.reason, false);
  detail.anchor = chain.anchor;
  detail.provisioning = chain.provisioning;
  if (chain.expiredAccepted.length > 0) {
    detail.factoryExpiry = { policy: "accept", expiredAccepted: chain.expiredAccepted };
  }
  if (knox instanceof ExtensionError) return done("CertificateInvalid", "No", knox.message, false);
  checks.chain = "pass";

  // 3. Revocation.
  const revoked = findRevoked(certs, chain.roles, trust.status);
  if (revoked) {
    detail.revoked = revoked;
    checks.revocation = "revoked";
    return done("Revoked", "No",
      `certificate ${revoked.index} (serial ${revoked.serial}) is ${revoked.entry.status}` +
      (revoked.entry.reason ? ` (${revoked.entry.reason})` : ""), false);
  }

  checks.revocation = "pass";

  // 4. Challenge.
  if (!challengeMatches(input.nonce, kd.attestationChallenge)) {
    checks.nonce = "fail";
    return done("NonceMismatch", "No", "attestationChallenge does not match the nonce", true);
  }
  checks.nonce = "pass";

  // 5. Policy.
  const decision = evaluateAndroidPolicy({
    keyDescription: kd,
    knox: knoxInfo,
    allowedBootKeys: trust.allowedBootKeys,
    policy: trust.policy,
  });
  detail.policy = { verdict: decision.verdict, failures: decision.failures, bootKey: decision.bootKey ?? null };
  Object.assign(checks, deviceChecks(kd, knoxInfo, decision, trust.allowedBootKeys, input.now));
  const expiredFactory = chain.expiredAccepted.length > 0
    ? `; expired factory certificate(s) ${chain.expiredAccepted.map((c) => c.index).join(", ")} accepted (factoryExpiry: accept)`
    : "";
  const reason = decision.verdict === "Yes"
    ? `verified chain to a pinned root; ${describeBoot(kd, decision.bootKey?.label)}${expiredFactory}`
    : decision.failures.join("; ");
  return done("Success", decision.verdict, reason, true);
}

const SECURITY_LEVEL_CHECK = { TrustedEnvironment: "tee", StrongBox: "strongbox", Software: "software" } as const;
const BOOT_STATE_CHECK = { Verified: "verified", SelfSigned: "self-signed", Unverified: "unverified", Failed: "failed" } as const;

/** What the device-state checks of an authenticated attestation found (the verdict rules are androidPolicy.ts's). */
function deviceChecks(
  kd: KeyDescriptionInfo,
  knox: KnoxInfo | undefined,
  decision: AndroidPolicyDecision,
  allowedBootKeys: AppraisalInput["trust"]["android"]["allowedBootKeys"],
  now: Date,
): AppraisalChecks {
  const hw = kd.hardwareEnforced;
  const rot = hw.rootOfTrust;
  const out: AppraisalChecks = {
    securityLevel: kd.attestationSecurityLevel === kd.keyMintSecurityLevel
      ? SECURITY_LEVEL_CHECK[kd.attestationSecurityLevel]
      : "mismatch",
    bootState: rot ? BOOT_STATE_CHECK[rot.verifiedBootState] : "absent",
  };
  if (rot) out.bootloader = rot.deviceLocked ? "locked" : "unlocked";
  if (rot?.verifiedBootState === "SelfSigned" &&
    findAllowedBootKey(allowedBootKeys, rot.verifiedBootKey.toString("hex"), hw.attestationIdModel)) {
    out.bootState = "self-signed-allowed";
  }
  if (knox) out.tamper = knox.unreadable ? "unreadable" : knoxWarrantyVoid(knox) ? "set" : "clear";
  const level = attestedOsPatchLevel(kd);
  const recent = level === undefined ? undefined : patchWithinYear(level, now);
  out.patchLevel = decision.patchMinimumMet === false
    ? "below-minimum"
    : recent === undefined ? "unknown" : recent ? "current" : "outdated";
  if (decision.appAllowed !== undefined) out.app = decision.appAllowed ? "allowed" : "refused";
  return out;
}

function describeBoot(kd: KeyDescriptionInfo, label: string | undefined): string {
  const rot = kd.hardwareEnforced.rootOfTrust;
  const boot = rot?.verifiedBootState === "SelfSigned" ? `SelfSigned boot key allowed (${label})` : "Verified boot";
  return `${kd.attestationSecurityLevel}, locked, ${boot}`;
}

/**
 * A stand-in leaf KeyDescription for validating the chain of a leaf whose own KeyDescription is unreadable: it
 * has no root of trust, so an attest key at position 1 can never agree with it.
 */
const placeholderKd: KeyDescriptionInfo = {
  attestationVersion: 0,
  attestationSecurityLevel: "Software",
  keyMintVersion: 0,
  keyMintSecurityLevel: "Software",
  attestationChallenge: Buffer.alloc(0),
  uniqueId: Buffer.alloc(0),
  softwareEnforced: { unknownTags: [] },
  hardwareEnforced: { unknownTags: [] },
};

export const androidKeyFormat: BlobFormat = {
  name: "android-key",
  matches: (blob) => chainEncodingOf(blob, DETECT_MAX_CERTS) !== undefined,
  appraise: appraiseAndroidKey,
};
