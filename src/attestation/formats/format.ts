import type { AppraisalInput, AppraisalResult, BlobFormatName } from "../types.ts";

/**
 * One blob format. `matches` decides by the bytes alone and must be cheap and deterministic; `appraise` turns a
 * matching blob into a verdict (a bad device is a verdict) and throws AppError(BLOB_MALFORMED | NOT_IMPLEMENTED)
 * only when the container itself cannot be read.
 */
export interface BlobFormat {
  readonly name: BlobFormatName;
  matches(blob: Uint8Array): boolean;
  appraise(input: AppraisalInput): AppraisalResult;
}
