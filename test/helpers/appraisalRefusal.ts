import { isAppError } from "../../src/errors/AppError.ts";
import { catalog } from "../../src/errors/catalog.ts";

/**
 * Which of the two refusals `appraise` documents (src/attestation/appraise.ts) an exception is, or undefined for
 * anything else, which no body may cause. The vendor container is the fallback for every body no other format
 * claims, so a mutant of any format can be refused as a container: BLOB_MALFORMED, or NOT_IMPLEMENTED when the
 * byte it reads as the version happens to be 1 (rare enough that a fuzz test with random seeds met it in about
 * one run in thirty).
 */
export function appraisalRefusal(e: unknown): "malformed" | "notImplemented" | undefined {
  if (!isAppError(e)) return undefined;
  if (e.entry === catalog.BLOB_MALFORMED) return "malformed";
  if (e.entry === catalog.NOT_IMPLEMENTED) return "notImplemented";
  return undefined;
}
