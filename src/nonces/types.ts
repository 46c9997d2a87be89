/**
 * The nonce records and outcomes a NonceStore (src/store/types.ts) speaks: defined here, with the rest of what a
 * nonce is, so that the store interfaces depend on nonces/ and not the other way round.
 */

export interface NonceRecord {
  nonce: string;
  tenantId: string;
  createdAtMs: number;
  expiresAtMs: number;
}

export type NonceIssueOutcome = "ok" | "limit";

export type NonceConsumeOutcome = "ok" | "unknown" | "expired" | "used";
