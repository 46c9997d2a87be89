import { Client, latencyOf, sleep, startLoad, tally, type Latency } from "../lib/load.ts";
import type { Deployment } from "../lib/deployment.ts";

/**
 * Part (d): a long run at half of the peak rate. The peak is measured first on the same instance (closed loop,
 * nonce + blob cycles); the soak then starts cycles at half that rate (open loop: the rate does not bend to the
 * server's answers). Every answer must be a 200, and the server's RSS, sampled from /proc, must not creep: the
 * mean of the last tenth of the run is compared with the mean of the second tenth (the first is warm-up).
 */

export interface SoakOptions {
  minutes: number;
  peakSeconds: number;
  peakConcurrency: number;
  sampleMs: number;
}

export interface SoakResult {
  minutes: number;
  peakCyclesPerSecond: number;
  rateCyclesPerSecond: number;
  cycles: number;
  /**
   * cycles not started on time because `concurrency` (256) were still in flight: the answers were slow for a
   * moment (a stall of ~256 ÷ rate seconds) or the generator lagged. Not failures: those are `errors`.
   */
  shed: number;
  answers: Record<string, number>;
  errors: number;
  latencyMs: { nonce: Latency; blob: Latency };
  rss: { samples: [number, number][]; firstWindowMb: number; lastWindowMb: number; growthMb: number; flat: boolean };
  examples: string[];
  ok: boolean;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const r1 = (x: number) => Math.round(x * 10) / 10;

export async function soak(d: Deployment, o: SoakOptions): Promise<SoakResult> {
  const client = new Client(d.apiKey);
  try {
    let blobsOk = 0;
    const peak = startLoad(client, d.fx, {
      bases: () => d.bases(),
      concurrency: o.peakConcurrency,
      observe: (x) => x.op === "blob" && x.status === 200 && blobsOk++,
    });
    await sleep(o.peakSeconds * 1000);
    await peak.stop();
    const peakCyclesPerSecond = r1(blobsOk / o.peakSeconds);
    const rate = Math.max(1, peakCyclesPerSecond / 2);

    const durationMs = o.minutes * 60_000;
    const counts = new Map<string, number>();
    const lat: Record<string, number[]> = { nonce: [], blob: [] };
    const examples: string[] = [];
    let errors = 0;
    const samples: [number, number][] = [];
    const t0 = performance.now();
    const load = startLoad(client, d.fx, {
      bases: () => d.bases(),
      concurrency: 256,
      rate,
      observe: (x) => {
        for (const [k, v] of Object.entries(tally([x]))) counts.set(k, (counts.get(k) ?? 0) + v);
        if (x.status !== 200) {
          errors++;
          if (examples.length < 10) examples.push(`${x.op} at ${Math.round((x.start - t0) / 1000)} s: ${x.status || x.error} ${x.code ?? ""}`);
        }
        // latencies of every request would be millions of objects over 30 min: keep the numbers only
        lat[x.op]?.push(x.end - x.start);
      },
    });
    while (performance.now() - t0 < durationMs) {
      samples.push([Math.round((performance.now() - t0) / 1000), d.rssMb(0)]);
      await sleep(Math.min(o.sampleMs, Math.max(0, durationMs - (performance.now() - t0))));
    }
    samples.push([Math.round((performance.now() - t0) / 1000), d.rssMb(0)]);
    const { cycles, shed } = await load.stop();
    const total = durationMs / 1000;
    const within = (from: number, to: number) => samples.filter(([t]) => t >= from * total && t <= to * total).map(([, v]) => v);
    const first = mean(within(0.1, 0.2).length ? within(0.1, 0.2) : samples.slice(0, 1).map(([, v]) => v));
    const last = mean(within(0.9, 1).length ? within(0.9, 1) : samples.slice(-1).map(([, v]) => v));
    const growth = last - first;
    // flat: within 16 MiB or 10 % of where it stood after warm-up (V8's heap sizing moves by that much on its own)
    const flat = growth <= Math.max(16, first * 0.1);
    return {
      minutes: o.minutes,
      peakCyclesPerSecond,
      rateCyclesPerSecond: r1(rate),
      cycles,
      shed,
      answers: Object.fromEntries(counts),
      errors,
      latencyMs: { nonce: latencyOf(lat.nonce!), blob: latencyOf(lat.blob!) },
      rss: { samples, firstWindowMb: r1(first), lastWindowMb: r1(last), growthMb: r1(growth), flat },
      examples,
      ok: errors === 0 && flat && cycles > 0,
    };
  } finally {
    client.close();
  }
}
