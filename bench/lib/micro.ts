import { round } from "./load.ts";

export interface MicroResult {
  iterations: number;
  seconds: number;
  opsPerSec: number;
  usPerOp: number;
  /** ops/s of each round; the reported figure is their median */
  rounds: number[];
}

export interface MicroOptions {
  warmupMs: number;
  /** length of one timed round */
  roundMs: number;
  rounds: number;
}

type Op = () => unknown;

/** Runs `op` back to back for `ms`; awaits it only when it returns a promise (sync ops pay no microtask). */
async function timed(op: Op, ms: number): Promise<{ n: number; s: number }> {
  const start = process.hrtime.bigint();
  const end = start + BigInt(Math.round(ms * 1e6));
  let n = 0;
  let now = start;
  while (now < end) {
    const r = op();
    if (r && typeof (r as Promise<unknown>).then === "function") await r;
    n++;
    now = process.hrtime.bigint();
  }
  now = process.hrtime.bigint();
  return { n, s: Number(now - start) / 1e9 };
}

/**
 * Measures several ops on the same input in interleaved rounds (A B C, A B C, ...), so a slow patch of the
 * machine hits all of them alike; reports each op's median round.
 */
export async function compare(ops: Record<string, Op>, o: MicroOptions): Promise<Record<string, MicroResult>> {
  for (const op of Object.values(ops)) await timed(op, o.warmupMs);
  const per: Record<string, { n: number; s: number; rates: number[] }> = {};
  for (const name of Object.keys(ops)) per[name] = { n: 0, s: 0, rates: [] };
  for (let r = 0; r < o.rounds; r++) {
    for (const [name, op] of Object.entries(ops)) {
      const t = await timed(op, o.roundMs);
      const acc = per[name]!;
      acc.n += t.n;
      acc.s += t.s;
      acc.rates.push(t.n / t.s);
    }
  }
  const out: Record<string, MicroResult> = {};
  for (const [name, acc] of Object.entries(per)) {
    const sorted = [...acc.rates].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    out[name] = {
      iterations: acc.n,
      seconds: round(acc.s, 3),
      opsPerSec: round(median, 1),
      usPerOp: round(1e6 / median, 2),
      rounds: acc.rates.map((x) => round(x, 1)),
    };
  }
  return out;
}
