import type { JtiStore } from "../types.ts";

/** Seen JWT ids in process memory: for tests and single-process use. Expired ids are swept as the map grows. */
export class MemoryJtiStore implements JtiStore {
  private readonly seen = new Map<string, number>();
  private nextSweep = 1024;

  async remember(jti: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    const until = this.seen.get(jti);
    if (until !== undefined && until > nowMs) return false;
    this.seen.set(jti, expiresAtMs);
    if (this.seen.size >= this.nextSweep) {
      for (const [k, exp] of this.seen) if (exp <= nowMs) this.seen.delete(k);
      this.nextSweep = Math.max(1024, this.seen.size * 2);
    }
    return true;
  }
}
