import { performance } from "node:perf_hooks";
import { commandCpuSeconds, RssSampler, selfCpuSeconds, systemBusySeconds, treeCpuSeconds } from "./cpu.ts";
import { round, runLoad, type LoadRequest, type LoadResult } from "./load.ts";
import { buildBlobs, type VendorFixture } from "./vendorFixture.ts";

export interface LoadSettings {
  durationSec: number;
  warmupSec: number;
  connections: number;
  pipelining: number;
  /**
   * attestd and the baseline take turns this many times per workload; the comparison is the median round's
   * (see sections/http.ts)
   */
  rounds: number;
}

/** A load result plus the CPU the server (and the bench itself, the load generator) burned meanwhile. */
export interface MeasuredLoad extends LoadResult {
  /** CPU cores the server process tree used on average (CPU seconds / wall seconds) */
  serverCores?: number;
  /** 2xx responses per server CPU-second: what one dedicated core would serve */
  rpsPerServerCore?: number;
  /** cores the load generator (this process) used */
  loadGenCores: number;
  /** cores the local PostgreSQL and Redis processes used (any client's work, not only this run's) */
  backingCores?: number;
  /**
   * cores busy with anything else on the machine during the run (other users' builds and tests): the figures of
   * a run where this is well above 0 are not trustworthy
   */
  otherCores?: number;
  /** the server process tree's highest resident memory during the run (MB; sampled every 250 ms from /proc) */
  peakRssMb?: number;
  /** a few response bodies, to show what was answered */
  sample?: string;
}

export interface PartAResult {
  nonces: MeasuredLoad;
  blobs: MeasuredLoad;
  /** the blob requests sent (for the baseline, which repeats them) */
  blobRequests: LoadRequest[];
  pool: { noncesCollected: number; blobsBuilt: number; blobBytes: number; buildMs: number };
}

export const nonceHeaders = (apiKey: string | undefined): Record<string, string> => ({
  accept: "application/json",
  ...(apiKey ? { "x-vendor-attest-api-key": apiKey } : {}),
});

export const blobHeaders = (apiKey: string | undefined): Record<string, string> => ({
  ...nonceHeaders(apiKey),
  "content-type": "application/octet-stream",
});

/** How long and how wide one load run is; `repeat`: requests go round again once all were sent (the baseline's). */
export type LoadShape = Pick<LoadSettings, "durationSec" | "connections" | "pipelining"> & { repeat?: boolean };

/**
 * The nonce workload, the one definition every bench run uses (the rounds, the soak): POST /v2/nonces over and
 * over for `durationSec`, each body handed to `onBody`. No `apiKey`: the baseline.
 */
export function nonceLoad(origin: string, apiKey: string | undefined, shape: LoadShape, onBody: (body: string) => void) {
  return runLoad({
    origin,
    method: "POST",
    headers: nonceHeaders(apiKey),
    requests: [{ path: "/v2/nonces" }],
    cycle: true,
    durationSec: shape.durationSec,
    connections: shape.connections,
    pipelining: shape.pipelining,
    onBody,
  });
}

/**
 * The blob workload: each of `requests` sent once, in order across the connections (a nonce is never sent twice),
 * until they run out or `durationSec` ends (with `repeat`, round again until it ends). `headers` add to (or replace) the default ones.
 */
export function blobLoad(
  origin: string,
  apiKey: string | undefined,
  requests: readonly LoadRequest[],
  shape: LoadShape,
  onBody?: (body: string) => void,
  headers: Record<string, string> = {},
) {
  return runLoad({
    origin,
    method: "POST",
    headers: { ...blobHeaders(apiKey), ...headers },
    requests,
    cycle: shape.repeat ?? false,
    durationSec: shape.durationSec,
    connections: shape.connections,
    pipelining: shape.pipelining,
    ...(onBody ? { onBody } : {}),
  });
}

/** Callbacks around the measured part of each workload (the profiler's time windows). */
export interface Marks {
  nonces?: (phase: "start" | "end") => void;
  blobs?: (phase: "start" | "end") => void;
}

const BACKING = /^(postgres|redis-server)$/;

/** Runs a load while sampling CPU of the server tree and of this process. */
async function measured(serverPid: number, run: () => Promise<LoadResult>, sample?: string[]): Promise<MeasuredLoad> {
  const cpu0 = treeCpuSeconds(serverPid);
  const back0 = commandCpuSeconds(BACKING);
  const sys0 = systemBusySeconds();
  const self0 = selfCpuSeconds();
  const rss = new RssSampler(serverPid);
  const t0 = performance.now();
  const r = await run().finally(() => rss.stop());
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = treeCpuSeconds(serverPid);
  const back1 = commandCpuSeconds(BACKING);
  const sys1 = systemBusySeconds();
  const self1 = selfCpuSeconds();
  const out: MeasuredLoad = { ...r, loadGenCores: round((self1 - self0) / wall, 2) };
  if (back0 !== undefined && back1 !== undefined) out.backingCores = round((back1 - back0) / wall, 2);
  if (cpu0 !== undefined && cpu1 !== undefined && cpu1 > cpu0) {
    out.serverCores = round((cpu1 - cpu0) / wall, 2);
    out.rpsPerServerCore = round(r.requests2xx / (cpu1 - cpu0), 1);
  }
  if (sys0 !== undefined && sys1 !== undefined && out.serverCores !== undefined) {
    const other = (sys1 - sys0) / wall - out.serverCores - out.loadGenCores - (out.backingCores ?? 0);
    out.otherCores = round(Math.max(0, other), 2);
  }
  const peak = rss.peakMb();
  if (peak !== undefined) out.peakRssMb = peak;
  if (sample?.length) out.sample = sample[0];
  return out;
}

/**
 * Nonce issuance against a running server: warm-up, then measured. Every body is parsed, as a client would; with
 * `keep`, every nonce issued is pushed to it (attestd's, for the blob workload). No `apiKey`: the baseline.
 */
export async function measureNonces(
  origin: string,
  serverPid: number,
  apiKey: string | undefined,
  s: LoadSettings,
  keep?: string[],
  marks?: Marks,
): Promise<MeasuredLoad> {
  const collect = (body: string) => {
    const n = (JSON.parse(body) as { nonce?: string }).nonce;
    if (n && keep) keep.push(n);
  };
  await nonceLoad(origin, apiKey, { ...s, durationSec: s.warmupSec }, collect);
  const sample: string[] = [];
  marks?.nonces?.("start");
  const r = await measured(serverPid, () =>
    nonceLoad(origin, apiKey, s, (body) => {
      if (sample.length < 1) sample.push(body);
      collect(body);
    }),
  sample);
  marks?.nonces?.("end");
  return r;
}

/** One blob request per nonce, devices taking turns, each blob signed afresh. */
export function blobRequestsFor(fx: VendorFixture, nonces: readonly string[]): { requests: LoadRequest[]; buildMs: number } {
  const t0 = performance.now();
  const blobs = buildBlobs(fx, nonces);
  const requests = nonces.map((n, i) => ({ path: `/v2/blobs?nonce=${n}`, body: blobs[i]! }));
  return { requests, buildMs: Math.round(performance.now() - t0) };
}

/**
 * Blob appraisal against a running attestd: warm-up on the first 15 % of the requests, measured on the rest; a
 * nonce is never sent twice, so the run ends early if the requests run out.
 */
export async function attestdBlobs(
  origin: string,
  serverPid: number,
  apiKey: string,
  blobRequests: readonly LoadRequest[],
  s: LoadSettings,
  marks?: Marks,
  /** replaces the default headers' (e.g. `accept: application/eat+jwt` for the signed result) */
  headers: Record<string, string> = {},
): Promise<MeasuredLoad> {
  const warm = Math.floor(blobRequests.length * 0.15);
  await blobLoad(origin, apiKey, blobRequests.slice(0, warm), { ...s, durationSec: s.warmupSec }, undefined, headers);
  const sample: string[] = [];
  marks?.blobs?.("start");
  const r = await measured(serverPid, () =>
    blobLoad(origin, apiKey, blobRequests.slice(warm), s, (b) => {
      if (sample.length < 1) sample.push(b);
    }, headers),
  sample);
  marks?.blobs?.("end");
  return r;
}

/** Part A against a running attestd: nonce issuance, then one blob per nonce it issued, appraised. */
export async function measureAttestd(
  origin: string,
  serverPid: number,
  apiKey: string,
  fx: VendorFixture,
  s: LoadSettings,
  marks?: Marks,
): Promise<PartAResult> {
  const issued: string[] = [];
  const nonces = await measureNonces(origin, serverPid, apiKey, s, issued, marks);
  const { requests, buildMs } = blobRequestsFor(fx, issued);
  const blobs = await attestdBlobs(origin, serverPid, apiKey, requests, s, marks);
  return {
    nonces,
    blobs,
    blobRequests: requests,
    pool: { noncesCollected: issued.length, blobsBuilt: requests.length, blobBytes: requests[0]?.body?.length ?? 0, buildMs },
  };
}

/** Blobs against the bare baseline server: attestd's requests, repeated as needed. */
export async function baselineBlobs(
  origin: string,
  serverPid: number,
  blobRequests: readonly LoadRequest[],
  s: LoadSettings,
  marks?: Marks,
): Promise<MeasuredLoad> {
  // the baseline keeps no nonces: attestd's requests go round again for as long as the run lasts
  const repeated = (durationSec: number) => ({ ...s, durationSec, repeat: true });
  await blobLoad(origin, undefined, blobRequests, repeated(s.warmupSec));
  const sample: string[] = [];
  marks?.blobs?.("start");
  const r = await measured(serverPid, () => blobLoad(origin, undefined, blobRequests, repeated(s.durationSec), (b) => void (sample.length < 1 && sample.push(b))), sample);
  marks?.blobs?.("end");
  return r;
}

/** The same two workloads against the bare baseline server; blobs are the attestd run's, repeated as needed. */
export async function measureBaseline(
  origin: string,
  serverPid: number,
  blobRequests: readonly LoadRequest[],
  s: LoadSettings,
  marks?: Marks,
): Promise<{ nonces: MeasuredLoad; blobs: MeasuredLoad }> {
  const nonces = await measureNonces(origin, serverPid, undefined, s, undefined, marks);
  const blobs = await baselineBlobs(origin, serverPid, blobRequests, s, marks);
  return { nonces, blobs };
}
