import type { VerdictRecord, VerdictValue } from "../attestation/types.ts";

export type { VerdictValue };

/** A verdict as kept: the record the client saw, with who asked, the format, the deciding rule and the detail. */

export interface StoredVerdict {
  objectId: string;
  tenantId: string;
  format: string;
  record: VerdictRecord;
  reason: string;
  detail: Record<string, unknown>;
  createdAt: string;
}
