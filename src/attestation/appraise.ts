import type { AppraisalInput, AppraisalResult } from "./types.ts";
import type { BlobFormat } from "./formats/format.ts";
import { androidKeyFormat } from "./formats/androidKey.ts";
import { vendorContainerFormat } from "./formats/vendorContainer.ts";

/**
 * Order matters: android-key is recognised by a strict structural test (the whole body is DER certificates),
 * and the vendor container is the fallback that answers BLOB_MALFORMED for anything it cannot read.
 */
const formats: readonly BlobFormat[] = [androidKeyFormat, vendorContainerFormat];

export function detectFormat(blob: Uint8Array): BlobFormat {
  return formats.find((f) => f.matches(blob)) ?? vendorContainerFormat;
}

/**
 * A pure function of (blob, nonce, trust, time): the same inputs give the same record. A bad device is a
 * verdict; only an unreadable container throws (AppError BLOB_MALFORMED / NOT_IMPLEMENTED).
 */
export function appraise(input: AppraisalInput): AppraisalResult {
  return detectFormat(input.blob).appraise(input);
}
