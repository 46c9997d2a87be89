import { randomBytes } from "node:crypto";

/** Time and randomness are injected so tests can pin them; production uses these. */
export interface Clock {
  nowMs(): number;
}
export interface Rng {
  bytes(n: number): Buffer;
}

export const systemClock: Clock = { nowMs: () => Date.now() };
export const cryptoRng: Rng = { bytes: (n) => randomBytes(n) };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}
