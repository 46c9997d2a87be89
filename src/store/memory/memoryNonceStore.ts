import type { NonceConsumeOutcome, NonceIssueOutcome, NonceRecord } from "../../nonces/types.ts";
import type { NonceStore } from "../types.ts";

interface Entry extends NonceRecord {
  used: boolean;
}

/** Nonces in process memory: for tests and the conformance suite's reference behaviour. */
export class MemoryNonceStore implements NonceStore {
  private readonly nonces = new Map<string, Entry>();

  async issue(n: NonceRecord, maxOutstanding: number, nowMs: number): Promise<NonceIssueOutcome> {
    let outstanding = 0;
    for (const e of this.nonces.values()) {
      if (e.tenantId === n.tenantId && !e.used && e.expiresAtMs > nowMs) outstanding++;
    }
    if (outstanding >= maxOutstanding) return "limit";
    this.nonces.set(n.nonce, { ...n, used: false });
    return "ok";
  }

  async consume(nonce: string, tenantId: string, nowMs: number): Promise<NonceConsumeOutcome> {
    const e = this.nonces.get(nonce);
    if (!e || e.tenantId !== tenantId) return "unknown";
    if (e.used) return "used";
    if (e.expiresAtMs <= nowMs) return "expired";
    e.used = true;
    return "ok";
  }

  async purgeExpired(nowMs: number, retainMs: number): Promise<number> {
    let n = 0;
    for (const [k, e] of this.nonces) {
      if (e.expiresAtMs + retainMs <= nowMs) {
        this.nonces.delete(k);
        n++;
      }
    }
    return n;
  }
}
