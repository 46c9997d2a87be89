import type { AppraisalInput, AppraisalResult } from "./types.ts";
import type { BlobFormat } from "./formats/format.ts";
import { AppError, isAppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { whyNotChainInput } from "./encoding/chainInput.ts";
import { androidKeyFormat } from "./formats/androidKey.ts";
import { playIntegrityFormat } from "./formats/playIntegrity.ts";
import { appAttestFormat } from "./formats/appAttest.ts";
import { whyNotAppAttest } from "./encoding/appAttestObject.ts";
import { whyNotPlayIntegrityToken } from "./encoding/playIntegrityToken.ts";
import { vendorContainerFormat } from "./formats/vendorContainer.ts";
import { appraisalPolicyId } from "./policy/policyId.ts";

/**
 * Order matters: app-attest comes first because android-key claims every JSON object (x5c JSON) and an assertion
 * is JSON: app-attest takes only a CBOR map holding `fmt: "apple-appattest"` or a JSON object with the members
 * "keyId" and "assertion", which no chain encoding has. android-key is recognised by a strict structural test (the whole body is DER certificates, or
 * text that is a PEM bundle or x5c JSON), play-integrity by its shape (ASCII, five dot-separated parts, a protected
 * header saying A256KW / A256GCM: neither a chain's text nor a vendor container can look so), and the vendor
 * container is the fallback that answers BLOB_MALFORMED for anything it cannot read. A token-shaped body is always
 * play-integrity's, which refuses a broken one with its own reason: it never reaches the vendor reader.
 */
const formats: readonly BlobFormat[] = [appAttestFormat, androidKeyFormat, playIntegrityFormat, vendorContainerFormat];

export function detectFormat(blob: Uint8Array): BlobFormat {
  return formats.find((f) => f.matches(blob)) ?? vendorContainerFormat;
}

/**
 * A pure function of (blob, nonce, trust, time): the same inputs give the same record. A bad device is a
 * verdict; only an unreadable container throws (AppError BLOB_MALFORMED / NOT_IMPLEMENTED). A BLOB_MALFORMED
 * reason names the format it was read as, and for a body that looks like a failed attempt at an android-key
 * chain or a Play Integrity token (dot-separated base64url text), why it is not one either. A play-integrity
 * token is judged by the evidence it was opened into before (`input.playIntegrity`, formats/playIntegrity.ts). `detail.appraisalPolicyId` names the policy the verdict was reached under
 * (policy/policyId.ts).
 */
export function appraise(input: AppraisalInput): AppraisalResult {
  const result = appraiseAsDetected(input);
  // the policy in force, kept with the verdict: a signed result names it (docs/results.md)
  // (for a Play Integrity token, with the policy of the app whose token it was)
  const playApp = input.playIntegrity?.opened && result.format === "play-integrity" ? input.playIntegrity.app : undefined;
  // (for an App Attest attestation, with the registered iOS app it was judged against: its environment decides)
  const iosApp = result.format === "app-attest" ? input.appAttest?.apps.find((a) => a.appId === result.detail.appId) : undefined;
  result.detail.appraisalPolicyId = appraisalPolicyId(input.trust, playApp, iosApp);
  // the tenant's stored policy version that shaped it (docs/policy.md), also named in the id
  if (input.trust.tenantPolicy) result.detail.policyVersion = input.trust.tenantPolicy.version;
  return result;
}

function appraiseAsDetected(input: AppraisalInput): AppraisalResult {
  // a body that opened as a token (its keys decrypted it, or Google decoded it) is one: detection would only say so
  // again, at the cost of reading the token's structure once more
  const format = input.playIntegrity?.opened ? playIntegrityFormat : detectFormat(input.blob);
  if (format !== vendorContainerFormat) return format.appraise(input);
  try {
    return format.appraise(input);
  } catch (e) {
    if (!isAppError(e) || e.entry !== catalog.BLOB_MALFORMED) throw e;
    const notOther = whyNotPlayIntegrityToken(input.blob) ?? whyNotAppAttest(input.blob) ?? whyNotChainInput(input.blob);
    throw notOther ? new AppError(catalog.BLOB_MALFORMED, `${e.reason}; ${notOther}`) : e;
  }
}
