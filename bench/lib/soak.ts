import { RssSampler } from "./cpu.ts";
import { httpsGet } from "./processes.ts";
import { performance } from "node:perf_hooks";
import { round, type runLoad } from "./load.ts";
import { blobLoad, blobRequestsFor, nonceLoad } from "./partA.ts";
import type { VendorFixture } from "./vendorFixture.ts";

/**
 * The memory soak (issue 15 item 5): a server under one workload for a long run, its resident memory sampled
 * throughout. A leak shows as growth between the first and the last window; a heap that only breathes (young
 * generation filling and emptying, allocator slack) peaks at the same height in both. Peaks are compared, not
 * means, because the peaks are where the heap is full just before a collection, the figure that would climb.
 */

/** how much the last window's peak may exceed the first's before the run counts as growing */
export const RSS_GROWTH_BOUND = 0.1;

/**
 * What RSS may grow by besides the bound: SQLite's page cache (`cache_size = -65536` in sqliteStore.ts, 64 MiB) is
 * allocated as pages are first read, so it fills while the tables grow and then stops. A soak on a young database
 * sees that filling (tens of MB over a minute of nonces, with the JS heap flat); it is capped, not a leak.
 */
export const SQLITE_CACHE_ALLOWANCE_MB = 64;

export interface SoakPhase {
  workload: string;
  durationSec: number;
  rps: number;
  requests2xx: number;
  non2xx: number;
  /** the highest resident memory of the server's process tree over the whole phase, MB */
  peakRssMb?: number;
  windowSec: number;
  /** peak RSS over the first / last `windowSec` of the phase, MB */
  firstWindowPeakMb?: number;
  lastWindowPeakMb?: number;
  /** (last − first) ÷ first */
  growth?: number;
  bound: number;
  /** growth ≤ bound */
  flat?: boolean;
  /** RSS once a second, MB, for plotting */
  rssBySecondMb: number[];
  /**
   * the JS heap in use (attestd's /metrics, `nodejs_heap_size_used_bytes`, read every HEAP_READ_MS). A leak in
   * attestd's own code shows here whatever SQLite caches. Judged on each window's *floor* (its lowest reading,
   * nearest to what survives a collection): at thousands of requests a second the young generation fills and
   * empties every second or two, so a reading lands anywhere on that sawtooth and the window peaks differed by
   * 20-30 % with nothing kept (seen, reading once a second: peaks 58 → 72 MB, floors 40 → 42 MB). Four readings a
   * second put a reading near each trough. `growth` is the floors'; `bySecondMb` the last reading of each second.
   */
  heap?: {
    firstWindowPeakMb: number;
    lastWindowPeakMb: number;
    firstWindowFloorMb: number;
    lastWindowFloorMb: number;
    growth: number;
    bySecondMb: number[];
  };
}

export interface SoakSettings {
  durationSec: number;
  windowSec: number;
  connections: number;
  pipelining: number;
}

/** how often the soak reads attestd's heap: a /metrics request, nothing beside thousands of requests a second */
const HEAP_READ_MS = 250;

/** attestd's JS heap in use, from its /metrics (prom-client's default metrics, prefixed attestd_) */
export type HeapReader = () => Promise<number | undefined>;

export function metricsHeapReader(origin: string, ca: string): HeapReader {
  return async () => {
    const r = await httpsGet(origin, "/metrics", ca, 5000).catch(() => undefined);
    const m = r && /^attestd_nodejs_heap_size_used_bytes (\S+)$/m.exec(r.body);
    return m ? Number(m[1]) : undefined;
  };
}

async function phase(
  workload: string,
  serverPid: number,
  s: SoakSettings,
  run: () => ReturnType<typeof runLoad>,
  heapOf?: HeapReader,
): Promise<SoakPhase> {
  const rss = new RssSampler(serverPid, 250);
  const heap: { atMs: number; bytes: number }[] = [];
  const t0 = performance.now();
  let reading = true;
  const readHeap = async () => {
    while (reading && heapOf) {
      const at = performance.now() - t0;
      const bytes = await heapOf();
      if (bytes !== undefined) heap.push({ atMs: at, bytes });
      await new Promise((resolve) => setTimeout(resolve, HEAP_READ_MS));
    }
  };
  const heapLoop = readHeap();
  const r = await run().finally(() => {
    rss.stop();
    reading = false;
  });
  await heapLoop;
  const out: SoakPhase = {
    workload,
    durationSec: r.durationSec,
    rps: r.rps,
    requests2xx: r.requests2xx,
    non2xx: r.non2xx,
    ...judgeRss(rss.samples, s.windowSec),
  };
  const h = judgeRss(heap, s.windowSec);
  const floors = windowFloorsMb(heap, s.windowSec);
  if (h.firstWindowPeakMb !== undefined && h.lastWindowPeakMb !== undefined && floors) {
    const growth = round((floors.last - floors.first) / floors.first, 3);
    out.heap = {
      firstWindowPeakMb: h.firstWindowPeakMb,
      lastWindowPeakMb: h.lastWindowPeakMb,
      firstWindowFloorMb: floors.first,
      lastWindowFloorMb: floors.last,
      growth,
      bySecondMb: h.rssBySecondMb,
    };
    // flat: the heap's floor within the bound, and RSS within it plus what SQLite's page cache may still fill
    const rssAllowed = (out.firstWindowPeakMb ?? 0) * (1 + RSS_GROWTH_BOUND) + SQLITE_CACHE_ALLOWANCE_MB;
    out.flat = growth <= RSS_GROWTH_BOUND && (out.lastWindowPeakMb ?? 0) <= rssAllowed;
  }
  return out;
}

/** The lowest reading of the first and of the last `windowSec` of a run's samples, MB; undefined if either is empty. */
export function windowFloorsMb(samples: readonly { atMs: number; bytes: number }[], windowSec: number): { first: number; last: number } | undefined {
  const endMs = samples.at(-1)?.atMs ?? 0;
  const floor = (from: number, to: number) => {
    const xs = samples.filter((x) => x.atMs >= from && x.atMs <= to).map((x) => x.bytes);
    return xs.length ? round(Math.min(...xs) / 2 ** 20, 1) : undefined;
  };
  const first = floor(0, windowSec * 1000);
  const last = floor(endMs - windowSec * 1000, Infinity);
  return first !== undefined && last !== undefined ? { first, last } : undefined;
}

/** Peak, first- and last-window peaks, growth and the verdict of a run's RSS samples (ms since start, bytes). */
export function judgeRss(
  samples: readonly { atMs: number; bytes: number }[],
  windowSec: number,
  bound = RSS_GROWTH_BOUND,
): Omit<SoakPhase, "workload" | "durationSec" | "rps" | "requests2xx" | "non2xx"> {
  const mb = (b: number) => round(b / 2 ** 20, 1);
  const peak = (from: number, to: number) => {
    const xs = samples.filter((x) => x.atMs >= from && x.atMs <= to).map((x) => x.bytes);
    return xs.length ? mb(Math.max(...xs)) : undefined;
  };
  const endMs = samples.at(-1)?.atMs ?? 0;
  const first = peak(0, windowSec * 1000);
  const last = peak(endMs - windowSec * 1000, Infinity);
  const bySecond: number[] = [];
  for (const x of samples) bySecond[Math.floor(x.atMs / 1000)] = mb(x.bytes);
  const out: ReturnType<typeof judgeRss> = { windowSec, bound, rssBySecondMb: bySecond.filter((x) => x !== undefined) };
  const all = peak(0, Infinity);
  if (all !== undefined) out.peakRssMb = all;
  if (first !== undefined && last !== undefined) {
    out.firstWindowPeakMb = first;
    out.lastWindowPeakMb = last;
    out.growth = round((last - first) / first, 3);
    out.flat = out.growth <= bound;
  }
  return out;
}

/**
 * `durationSec` of nonce issuance, then `durationSec` of blobs, each blob against a nonce the first phase issued
 * (`blobsPerSec` sizes the pool: the blobs are built between the phases). Each phase is judged on its own.
 */
export async function soak(
  origin: string,
  serverPid: number,
  apiKey: string,
  fx: VendorFixture,
  s: SoakSettings,
  blobsPerSec: number,
  heapOf?: HeapReader,
): Promise<{ nonces: SoakPhase; blobs: SoakPhase }> {
  const issued: string[] = [];
  const nonces = await phase("POST /v2/nonces", serverPid, s, () =>
    nonceLoad(origin, apiKey, s, (body) => {
      const n = (JSON.parse(body) as { nonce?: string }).nonce;
      if (n) issued.push(n);
    }),
    heapOf,
  );
  // enough for the phase at 1.5× the rate the rounds measured; a pool that runs dry ends the phase early (noted)
  const want = Math.min(issued.length, Math.ceil(blobsPerSec * s.durationSec * 1.5) + 1000);
  const { requests } = blobRequestsFor(fx, issued.slice(0, want));
  const blobs = await phase("POST /v2/blobs", serverPid, s, () => blobLoad(origin, apiKey, requests, s), heapOf);
  return { nonces, blobs };
}
