/**
 * attestd as a library (`import { appraise } from "attestd"`): the appraisal the service runs on every blob, for a
 * relying party that wants a verdict in its own process (an offline check, a batch job). It is pure: trust in,
 * verdict out; it never reads a file or the network. The service, its store and its API stay behind the
 * `attestd` command. The README's "As a library" section shows it in use; test/e2e/package.test.ts runs that
 * example against the packed package.
 */
export { appraise, detectFormat } from "./attestation/appraise.ts";
export { parseStatusList } from "./attestation/chain/statusList.ts";
// a Play Integrity token is opened (async, with the app's response keys) before the pure appraisal judges it
export { openWithApps, openWithResponseKeys, parsePlayResponseKeys } from "./attestation/encoding/playIntegrityToken.ts";
export type { PlayResponseKeys, RegisteredPlayApp } from "./domain/playApps.ts";
export {
  emptyAndroidTrust,
  loadAndroidTrust,
  loadBuiltInAndroidRoots,
  parseAndroidRoots,
  type AndroidRoots,
  type AndroidTrustOptions,
  type AndroidTrustSource,
} from "./trust/androidTrustSource.ts";
export { AppError, isAppError } from "./errors/AppError.ts";
export type {
  AllowedBootKey,
  AndroidPolicy,
  AndroidTrust,
  AppraisalInput,
  AppraisalResult,
  AppraisalStatus,
  BlobFormatName,
  DeviceFacts,
  IntegrityLabel,
  PlayAppPolicy,
  PlayIntegrityEvidence,
  ReferenceValue,
  StatusEntry,
  StatusList,
  TrustConfig,
  VendorTrust,
  VerdictRecord,
  VerdictValue,
} from "./attestation/types.ts";
