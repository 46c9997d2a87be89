import { RSS_GROWTH_BOUND, SQLITE_CACHE_ALLOWANCE_MB, windowFloorsMb } from "../../bench/lib/soak.ts";
import { Client, latencyOf, sleep, startLoad, tally, type Latency } from "../lib/load.ts";
import type { Deployment } from "../lib/deployment.ts";

/**
 * Part (d): a long run at half of the peak rate. The peak is measured first on the same instance (closed loop,
 * nonce + blob cycles); the soak then starts cycles at half that rate (open loop: the rate does not bend to the
 * server's answers). Every answer must be a 200, and memory must not creep, judged as the bench's memory soak judges
 * it (bench/lib/soak.ts, one home for the bounds): the JS heap's floor (attestd's own objects; read from /metrics
 * four times a second so a reading lands near each trough of the young generation's sawtooth) within 10 % between
 * the second tenth of the run and the last (the first tenth is warm-up), and the RSS means of those windows within
 * 10 % plus the 64 MiB SQLite's page cache may still fill as the tables grow. RSS alone is not the judge: on Node
 * 24 it moves in steps of tens of MB with nothing kept (seen: 280 → 227 → 276 MiB over 5 min while the heap's floor
 * fell from 48.6 to 39.6 MiB), which a leak check on RSS alone called growth.
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
  rss: { samples: [number, number][]; firstWindowMb: number; lastWindowMb: number; growthMb: number; allowedMb: number; flat: boolean };
  /** the JS heap in use (`attestd_nodejs_heap_size_used_bytes`): the lowest reading of each window, MiB */
  heap: { readings: number; firstWindowFloorMb: number; lastWindowFloorMb: number; growth: number; flat: boolean };
  examples: string[];
  ok: boolean;
}

/** how often the heap is read: one small /metrics request beside hundreds of cycles a second */
const HEAP_READ_MS = 250;

/** attestd's JS heap in use from its /metrics (plain HTTP on the loopback here), or undefined if it did not answer */
async function heapInUse(base: string | undefined): Promise<number | undefined> {
  if (!base) return undefined;
  try {
    const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) });
    const m = /^attestd_nodejs_heap_size_used_bytes (\S+)$/m.exec(await res.text());
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
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
    const heap: { atMs: number; bytes: number }[] = [];
    const t0 = performance.now();
    let readingHeap = true;
    const heapLoop = (async () => {
      while (readingHeap) {
        const atMs = performance.now() - t0;
        const bytes = await heapInUse(d.bases()[0]);
        if (bytes !== undefined) heap.push({ atMs, bytes });
        await sleep(HEAP_READ_MS);
      }
    })();
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
    readingHeap = false;
    await heapLoop;
    const total = durationMs / 1000;
    const within = (from: number, to: number) => samples.filter(([t]) => t >= from * total && t <= to * total).map(([, v]) => v);
    const first = mean(within(0.1, 0.2).length ? within(0.1, 0.2) : samples.slice(0, 1).map(([, v]) => v));
    const last = mean(within(0.9, 1).length ? within(0.9, 1) : samples.slice(-1).map(([, v]) => v));
    const growth = last - first;
    const allowedMb = first * (1 + RSS_GROWTH_BOUND) + SQLITE_CACHE_ALLOWANCE_MB;
    const rssFlat = last <= allowedMb;
    // the heap's windows as the RSS's: the second tenth against the last tenth
    const windowMs = 0.1 * durationMs;
    const afterWarmUp = heap.filter((x) => x.atMs >= windowMs).map((x) => ({ atMs: x.atMs - windowMs, bytes: x.bytes }));
    // as the RSS's windows above: a window that got no reading (a short run on a busy machine, where /metrics
    // answered late) falls back to the reading nearest it, rather than judging nothing
    const nearest = afterWarmUp.length >= 2 ? { first: r1(afterWarmUp[0]!.bytes / 2 ** 20), last: r1(afterWarmUp.at(-1)!.bytes / 2 ** 20) } : undefined;
    const floors = windowFloorsMb(afterWarmUp, windowMs / 1000) ?? nearest;
    const heapGrowth = floors ? (floors.last - floors.first) / floors.first : Infinity;
    const heapFlat = heapGrowth <= RSS_GROWTH_BOUND;
    return {
      minutes: o.minutes,
      peakCyclesPerSecond,
      rateCyclesPerSecond: r1(rate),
      cycles,
      shed,
      answers: Object.fromEntries(counts),
      errors,
      latencyMs: { nonce: latencyOf(lat.nonce!), blob: latencyOf(lat.blob!) },
      rss: { samples, firstWindowMb: r1(first), lastWindowMb: r1(last), growthMb: r1(growth), allowedMb: r1(allowedMb), flat: rssFlat },
      heap: {
        readings: heap.length,
        firstWindowFloorMb: floors?.first ?? 0,
        lastWindowFloorMb: floors?.last ?? 0,
        growth: Math.round(heapGrowth * 1000) / 1000,
        flat: heapFlat,
      },
      examples,
      ok: errors === 0 && rssFlat && heapFlat && cycles > 0,
    };
  } finally {
    client.close();
  }
}
