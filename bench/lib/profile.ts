import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO } from "./processes.ts";

/** The parts of a V8 .cpuprofile (what `node --cpu-prof` writes) the summary reads. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileFrame {
  /** function (file:line) */
  frame: string;
  selfMs: number;
  /** share of the window's busy (non-idle) samples */
  selfPct: number;
  /** self time per request answered in the window */
  usPerRequest?: number;
}

export interface ProfileSummary {
  server: string;
  workload: string;
  /** requests answered in the window (for per-request figures) */
  requests?: number;
  /** busy main-thread time per request, µs */
  busyUsPerRequest?: number;
  file: string;
  /** the part of the profile summarised, in ms of process time */
  windowMs: number;
  busyMs: number;
  /** share of the window the main thread was idle (waiting on I/O, or on the load generator) */
  idlePct: number;
  top: ProfileFrame[];
  /** self time by where the code lives: src/<dir>, node_modules/<package>, node: internals, GC, native */
  byArea: { area: string; selfPct: number }[];
  /** attestd's own functions (src/) by inclusive time: the time spent in them and everything they called */
  srcInclusive: { frame: string; inclusivePct: number }[];
  /** true when the window held no samples and the whole profile was summarised instead */
  wholeProfile: boolean;
}

function shortUrl(url: string): string {
  if (!url) return "";
  const u = url.replace(/^file:\/\//, "");
  const nm = u.lastIndexOf("node_modules/");
  if (nm >= 0) return u.slice(nm + "node_modules/".length);
  if (u.startsWith(REPO + "/")) return u.slice(REPO.length + 1);
  return u;
}

function frameKey(cf: { functionName: string; url: string; lineNumber: number }): string {
  const name = cf.functionName || "(anonymous)";
  const where = shortUrl(cf.url);
  // a module that reports line 0 (code a loader compiled on the fly) gets no line number: it would mislead
  return where ? `${name} (${where}${cf.lineNumber > 0 ? `:${cf.lineNumber + 1}` : ""})` : name;
}

function areaOf(functionName: string, url: string): string {
  if (functionName === "(garbage collector)") return "GC";
  if (functionName === "(program)") return "(program): V8/native outside JS";
  if (functionName === "(idle)") return "(idle)";
  if (!url) return "native (builtins, crypto, TLS)";
  if (url.startsWith("node:")) return "node: internals";
  const u = url.replace(/^file:\/\//, "");
  const nm = u.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = u.slice(nm + "node_modules/".length).split("/");
    return "node_modules/" + (rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]);
  }
  // the compiled build's modules (dist/src/...) are named after their sources (src/...)
  const rel = (u.startsWith(REPO + "/") ? u.slice(REPO.length + 1) : u).replace(/^dist\//, "");
  const parts = rel.split("/");
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/**
 * Self time per frame of a .cpuprofile, optionally restricted to [fromUs, toUs] on the profile's clock (V8's
 * monotonic clock, the same CLOCK_MONOTONIC that process.hrtime reads in the bench process).
 */
export function summariseProfile(
  file: string,
  who: { server: string; workload: string; requests?: number },
  window?: { fromUs: number; toUs: number },
  topN = 15,
): ProfileSummary {
  const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const pick = (useWindow: boolean) => {
    const self = new Map<number, number>();
    const inclusive = new Map<string, number>();
    let t = p.startTime;
    let total = 0;
    for (let i = 0; i < p.samples.length; i++) {
      const dt = p.timeDeltas[i] ?? 0;
      t += dt;
      if (useWindow && window && (t < window.fromUs || t > window.toUs)) continue;
      const id = p.samples[i]!;
      self.set(id, (self.get(id) ?? 0) + dt);
      total += dt;
      const seen = new Set<string>();
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
        const cf = byId.get(n)!.callFrame;
        if (!cf.url.includes("/src/") || cf.url.includes("node_modules")) continue;
        const key = frameKey(cf);
        if (seen.has(key)) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + dt);
      }
    }
    return { self, inclusive, total };
  };
  let { self, inclusive, total } = pick(true);
  const wholeProfile = !!window && total < 50_000; // under 50 ms in the window: clocks disagree, use everything
  if (wholeProfile) ({ self, inclusive, total } = pick(false));

  const frames = new Map<string, number>();
  const areas = new Map<string, number>();
  let idle = 0;
  for (const [id, us] of self) {
    const cf = byId.get(id)!.callFrame;
    if (cf.functionName === "(idle)") {
      idle += us;
      continue;
    }
    const key = frameKey(cf);
    frames.set(key, (frames.get(key) ?? 0) + us);
    const area = areaOf(cf.functionName, cf.url);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const busy = total - idle;
  const pct = (us: number) => Math.round((1000 * us) / Math.max(1, busy)) / 10;
  const perReq = (us: number) => (who.requests ? Math.round((10 * us) / who.requests) / 10 : undefined);
  return {
    server: who.server,
    workload: who.workload,
    ...(who.requests ? { requests: who.requests, busyUsPerRequest: perReq(busy)! } : {}),
    file: path.relative(REPO, file),
    windowMs: Math.round(total / 1000),
    busyMs: Math.round(busy / 1000),
    idlePct: Math.round((1000 * idle) / Math.max(1, total)) / 10,
    top: [...frames.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([frame, us]) => ({
        frame,
        selfMs: Math.round(us / 100) / 10,
        selfPct: pct(us),
        ...(who.requests ? { usPerRequest: perReq(us)! } : {}),
      })),
    byArea: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([area, us]) => ({ area, selfPct: pct(us) })),
    srcInclusive: [...inclusive.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([frame, us]) => ({ frame, inclusivePct: pct(us) })),
    wholeProfile,
  };
}

/** The .cpuprofile files a directory holds (one per process that exited cleanly). */
export function profilesIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith(".cpuprofile"))
      .map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

/** Now on the monotonic clock, in µs (comparable with a child's .cpuprofile timestamps). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}
