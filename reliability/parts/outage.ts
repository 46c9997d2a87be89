import { Client, Ledger, sleep, startLoad, tally, type LedgerCheck, type Outcome } from "../lib/load.ts";
import type { Deployment } from "../lib/deployment.ts";

/**
 * Part (c): the campaign's own PostgreSQL, or its own Redis, stopped and restarted while both instances are
 * under load. Meanwhile every answer is a 200 (what does not need the stopped store) or a 503 with Retry-After,
 * promptly: no 500, no hang, no dropped connection. Once the store is back, /readyz answers 200 on both
 * instances without a restart and every request succeeds; the ledger then proves nothing acknowledged was lost.
 */

export interface OutageOptions {
  store: "postgres" | "redis";
  stop: () => Promise<void>;
  resume: () => Promise<void>;
  /** load before the stop, the store down, load after recovery */
  beforeMs: number;
  downMs: number;
  afterMs: number;
  concurrency: number;
}

export interface OutageResult {
  store: string;
  /** answers from the stop until both instances were ready again */
  during: { answers: Record<string, number>; unavailable: number; maxUnavailableMs: number; violations: number };
  /** from the store's restart until /readyz answered 200 on every instance */
  recoveryMs: number;
  after: { answers: Record<string, number>; failures: number };
  ledger: LedgerCheck;
  examples: string[];
  ok: boolean;
}

async function readyEverywhere(client: Client, bases: readonly string[], ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const rs = await Promise.all(bases.map((b) => client.observe("read", b, "GET", "/readyz")));
    if (rs.every((r) => r.o.status === 200)) return;
    if (Date.now() > deadline) throw new Error(`not ready ${ms} ms after the store came back`);
    await sleep(100);
  }
}

export async function storeOutage(d: Deployment, o: OutageOptions): Promise<OutageResult> {
  const client = new Client(d.apiKey);
  const ledger = new Ledger();
  const outcomes: Outcome[] = [];
  const load = startLoad(client, d.fx, { bases: () => d.bases(), concurrency: o.concurrency, ledger, observe: (x) => outcomes.push(x) });
  let tStop = 0;
  let tReady = 0;
  let recoveryMs = 0;
  try {
    await sleep(o.beforeMs);
    tStop = performance.now();
    await o.stop();
    await sleep(o.downMs);
    const tResume = performance.now();
    await o.resume();
    await readyEverywhere(client, d.bases());
    tReady = performance.now();
    recoveryMs = Math.round(tReady - tResume);
    await sleep(o.afterMs);
  } finally {
    await load.stop();
  }
  const during = outcomes.filter((x) => x.end >= tStop && x.start <= tReady);
  const after = outcomes.filter((x) => x.start > tReady);
  const examples: string[] = [];
  const bad = during.filter((x) => !(x.status === 200 || (x.status === 503 && x.retryAfter !== undefined)));
  for (const x of bad.slice(0, 5)) examples.push(`during: ${x.op} ${x.status || x.error} ${x.code ?? ""} retry-after=${x.retryAfter ?? "none"}`);
  const unavailable = during.filter((x) => x.status === 503);
  const failures = after.filter((x) => x.status !== 200);
  for (const x of failures.slice(0, 5)) examples.push(`after: ${x.op} ${x.status || x.error} ${x.code ?? ""}`);
  const check = await ledger.verify(client, d.bases());
  client.close();
  return {
    store: o.store,
    during: {
      answers: tally(during),
      unavailable: unavailable.length,
      maxUnavailableMs: Math.round(Math.max(0, ...unavailable.map((x) => x.end - x.start))),
      violations: bad.length,
    },
    recoveryMs,
    after: { answers: tally(after), failures: failures.length },
    ledger: check,
    examples,
    ok: bad.length === 0 && unavailable.length > 0 && failures.length === 0 && after.length > 0 && check.ok,
  };
}
