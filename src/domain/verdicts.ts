import type { VerdictRecord, VerdictValue } from "../attestation/types.ts";
import type { Rng } from "../clock.ts";

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

/**
 * A verdict's object id: 16 bytes as base64url (22 characters), the appraisal time in milliseconds (6 bytes,
 * big-endian) then 10 random bytes. The time first keeps the ids of verdicts stored together near each other in the
 * verdicts table's primary-key index, so a commit of many verdicts dirties one page of it rather than one page each
 * (about 10 µs of CPU per verdict on SQLite, bench/README.md "Where an assertion's time goes"); the 80 random bits
 * keep an id unguessable, and only the tenant that stored a verdict reads it.
 */
export function newVerdictObjectId(nowMs: number, rng: Rng): string {
  const id = Buffer.allocUnsafe(16);
  id.writeUIntBE(Math.max(0, Math.min(nowMs, 2 ** 48 - 1)), 0, 6);
  rng.bytes(10).copy(id, 6);
  return id.toString("base64url");
}
