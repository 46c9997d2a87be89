import { performance } from "node:perf_hooks";
import { commandCpuSeconds, selfCpuSeconds, systemBusySeconds, treeCpuSeconds } from "./cpu.ts";
import { round, runLoad, type LoadRequest, type LoadResult } from "./load.ts";
import { buildBlobs, type VendorFixture } from "./vendorFixture.ts";

export interface LoadSettings {
  durationSec: number;
  warmupSec: number;
  connections: number;
  pipelining: number;
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
  const t0 = performance.now();
  const r = await run();
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
  if (sample?.length) out.sample = sample[0];
  return out;
}

/**
 * Part A against a running attestd: nonce issuance (warm-up, then measured; every issued nonce is kept), then
 * one blob per kept nonce (devices taking turns), then blob appraisal (warm-up on the first 15 % of the pool,
 * measured on the rest; a nonce is never sent twice, so the run ends early if the pool runs dry).
 */
export async function measureAttestd(
  origin: string,
  serverPid: number,
  apiKey: string,
  fx: VendorFixture,
  s: LoadSettings,
  marks?: Marks,
): Promise<PartAResult> {
  const nonces: string[] = [];
  const collect = (body: string) => {
    const n = (JSON.parse(body) as { nonce?: string }).nonce;
    if (n) nonces.push(n);
  };
  const nonceLoad = (durationSec: number, onBody = collect) =>
    runLoad({
      origin,
      method: "POST",
      headers: nonceHeaders(apiKey),
      requests: [{ path: "/v2/nonces" }],
      cycle: true,
      durationSec,
      connections: s.connections,
      pipelining: s.pipelining,
      onBody,
    });

  await nonceLoad(s.warmupSec);
  const nonceSample: string[] = [];
  marks?.nonces?.("start");
  const nonceResult = await measured(serverPid, () =>
    nonceLoad(s.durationSec, (body) => {
      if (nonceSample.length < 1) nonceSample.push(body);
      collect(body);
    }),
  nonceSample);
  marks?.nonces?.("end");

  const t0 = performance.now();
  const blobs = buildBlobs(fx, nonces);
  const buildMs = Math.round(performance.now() - t0);
  const blobRequests: LoadRequest[] = nonces.map((n, i) => ({ path: `/v2/blobs?nonce=${n}`, body: blobs[i]! }));
  const warm = Math.floor(blobRequests.length * 0.15);

  const blobLoad = (requests: LoadRequest[], durationSec: number, onBody?: (b: string) => void) =>
    runLoad({
      origin,
      method: "POST",
      headers: blobHeaders(apiKey),
      requests,
      cycle: false,
      durationSec,
      connections: s.connections,
      pipelining: s.pipelining,
      ...(onBody ? { onBody } : {}),
    });
  await blobLoad(blobRequests.slice(0, warm), s.warmupSec);
  const blobSample: string[] = [];
  marks?.blobs?.("start");
  const blobResult = await measured(serverPid, () =>
    blobLoad(blobRequests.slice(warm), s.durationSec, (b) => {
      if (blobSample.length < 1) blobSample.push(b);
    }),
  blobSample);
  marks?.blobs?.("end");

  return {
    nonces: nonceResult,
    blobs: blobResult,
    blobRequests,
    pool: {
      noncesCollected: nonces.length,
      blobsBuilt: blobs.length,
      blobBytes: blobs[0]?.length ?? 0,
      buildMs,
    },
  };
}

/** The same two workloads against the bare baseline server; blobs are the attestd run's, repeated as needed. */
export async function measureBaseline(
  origin: string,
  serverPid: number,
  blobRequests: LoadRequest[],
  s: LoadSettings,
  marks?: Marks,
): Promise<{ nonces: MeasuredLoad; blobs: MeasuredLoad }> {
  const nonceLoad = (durationSec: number, onBody?: (b: string) => void) =>
    runLoad({
      origin,
      method: "POST",
      headers: nonceHeaders(undefined),
      requests: [{ path: "/v2/nonces" }],
      cycle: true,
      durationSec,
      connections: s.connections,
      pipelining: s.pipelining,
      // the attestd run parses every nonce it gets back; so does this one, to load the client alike
      onBody: onBody ?? ((b) => void JSON.parse(b)),
    });
  const blobLoad = (durationSec: number, onBody?: (b: string) => void) =>
    runLoad({
      origin,
      method: "POST",
      headers: blobHeaders(undefined),
      requests: blobRequests,
      cycle: true,
      durationSec,
      connections: s.connections,
      pipelining: s.pipelining,
      ...(onBody ? { onBody } : {}),
    });
  await nonceLoad(s.warmupSec);
  const ns: string[] = [];
  marks?.nonces?.("start");
  const nonces = await measured(serverPid, () =>
    nonceLoad(s.durationSec, (b) => {
      if (ns.length < 1) ns.push(b);
      void JSON.parse(b);
    }),
  ns);
  marks?.nonces?.("end");
  await blobLoad(s.warmupSec);
  const bs: string[] = [];
  marks?.blobs?.("start");
  const blobs = await measured(serverPid, () => blobLoad(s.durationSec, (b) => void (bs.length < 1 && bs.push(b))), bs);
  marks?.blobs?.("end");
  return { nonces, blobs };
}
