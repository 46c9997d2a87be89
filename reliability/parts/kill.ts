import { Client, Ledger, sleep, startLoad, tally, type LedgerCheck, type Outcome } from "../lib/load.ts";
import type { Deployment } from "../lib/deployment.ts";

/**
 * Part (b): kill -9 under load. The client keeps a ledger of every verdict answered 200; after the SIGKILL and a
 * restart on the same store, every one must read back identical and its nonce must be refused when posted again.
 * The kill waits for at least 10 acknowledgements. Every 7th cycle posts its blob twice at once (to both instances on a cluster): exactly one may be accepted.
 * On a cluster only instance 0 is killed; the other keeps serving through it.
 */

export interface KillOptions {
  rounds: number;
  /** the kill falls at a random moment in the second half of this much load */
  loadMs: number;
  concurrency: number;
}

export interface KillRound {
  killedAfterMs: number;
  cycles: number;
  answers: Record<string, number>;
  /** answers other than 200, the refused duplicate (400 4000004) or, from the killed instance, no answer */
  unexpected: number;
  restartMs: number;
  ledger: LedgerCheck;
}

export interface KillResult {
  backend: string;
  rounds: KillRound[];
  acknowledged: number;
  ok: boolean;
}

export async function killUnderLoad(d: Deployment, o: KillOptions): Promise<KillResult> {
  const rounds: KillRound[] = [];
  const client = new Client(d.apiKey);
  try {
    for (let r = 0; r < o.rounds; r++) {
      const ledger = new Ledger();
      const outcomes: Outcome[] = [];
      const killedBase = d.instances[0]!.base;
      const load = startLoad(client, d.fx, { bases: () => d.bases(), concurrency: o.concurrency, duplicateEvery: 7, ledger, observe: (x) => outcomes.push(x) });
      const killedAfterMs = Math.round(o.loadMs / 2 + Math.random() * (o.loadMs / 2));
      await sleep(killedAfterMs);
      // on a slow machine the first cycles may still be in flight: a kill before any acknowledgement proves nothing
      for (const deadline = Date.now() + 30_000; ledger.acks.size < 10 && Date.now() < deadline; ) await sleep(50);
      await d.kill(0);
      // a cluster keeps serving on the other instance for a moment; a single process has nothing left to serve
      if (d.instances.length > 1) await sleep(1_000);
      const { cycles } = await load.stop();
      const t0 = performance.now();
      await d.start(0);
      const restartMs = Math.round(performance.now() - t0);
      const unexpected = outcomes.filter(
        (x) => !(x.status === 200 || (x.status === 400 && x.code === "4000004") || (x.status === 0 && x.base === killedBase)),
      ).length;
      const check = await ledger.verify(client, d.bases());
      rounds.push({ killedAfterMs, cycles, answers: tally(outcomes), unexpected, restartMs, ledger: check });
    }
  } finally {
    client.close();
  }
  return {
    backend: d.label,
    rounds,
    acknowledged: rounds.reduce((n, x) => n + x.ledger.acknowledged, 0),
    ok: rounds.every((x) => x.ledger.ok && x.unexpected === 0 && x.ledger.acknowledged > 0),
  };
}
