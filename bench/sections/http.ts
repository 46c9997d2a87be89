import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { devTls, provisionApiKey, startAttestd, type Deployment, type DevTls } from "../lib/attestd.ts";
import { round } from "../lib/load.ts";
import { measureAttestd, measureBaseline, type LoadSettings, type MeasuredLoad, type PartAResult } from "../lib/partA.ts";
import { freePort, REPO, spawnServer } from "../lib/processes.ts";
import { monotonicUs, profilesIn, summariseProfile, type ProfileSummary } from "../lib/profile.ts";
import type { VendorFixture } from "../lib/vendorFixture.ts";

export const NONCE_TARGET = 0.5;
export const BLOB_TARGET = 0.6;

export interface Comparison {
  attestd: MeasuredLoad;
  baseline: MeasuredLoad;
  /** attestd 2xx/s ÷ baseline 2xx/s: what the targets are about */
  ratio: number;
  /**
   * attestd ÷ baseline in 2xx per server CPU-second: the same comparison freed from whichever side (server, load
   * generator, other processes) held the CPU; steadier on a shared machine
   */
  cpuRatio?: number;
  target: number;
  met: boolean;
}

export interface HttpSection {
  status: "ok";
  how: {
    attestd: string;
    baseline: string;
    processes: string;
    loadGenerator: string;
  };
  settings: LoadSettings;
  nonces: Comparison;
  blobs: Comparison;
  pool: PartAResult["pool"] & { devices: number };
  /**
   * CPU profiles (node --cpu-prof) of attestd and of the baseline, per workload, in a second, shorter pass;
   * present when a target was missed (or with --profile)
   */
  profiles: ProfileSummary[];
  notes: string[];
}

export interface HttpContext {
  tmp: string;
  fx: VendorFixture;
  settings: LoadSettings;
  /** "auto": profile only the workloads that missed their target */
  profile: "auto" | "always" | "never";
  profileSec: number;
  /** copy the raw .cpuprofile files here (open them in Chrome DevTools); undefined: don't keep them */
  keepProfilesIn?: string;
  /** prefix of kept profile file names */
  stamp: string;
  log: (line: string) => void;
}

const BASELINE = path.join(REPO, "bench/baseline/server.ts");

function compare(attestd: MeasuredLoad, baseline: MeasuredLoad, target: number): Comparison {
  const ratio = baseline.rps > 0 ? round(attestd.rps / baseline.rps, 3) : 0;
  const cpuRatio =
    attestd.rpsPerServerCore && baseline.rpsPerServerCore ? round(attestd.rpsPerServerCore / baseline.rpsPerServerCore, 3) : undefined;
  return { attestd, baseline, ratio, ...(cpuRatio !== undefined ? { cpuRatio } : {}), target, met: ratio >= target };
}

/** Issue 2: attestd (SQLite, one process) beside the bare node:https baseline, same TLS, same requests. */
export async function runHttpSection(ctx: HttpContext): Promise<{ section: HttpSection; sqlite: PartAResult; deployment: Deployment; tls: DevTls }> {
  const { tmp, fx, settings: s, log } = ctx;
  const deployment: Deployment = {
    label: "sqlite, 1 process",
    dataDir: path.join(tmp, "attestd-sqlite"),
    storeArgs: ["--data-dir", path.join(tmp, "attestd-sqlite")],
    workers: 1,
  };
  const tls = await devTls(deployment.dataDir);
  const apiKey = await provisionApiKey(deployment);

  log("http: attestd (sqlite, 1 process): nonces, then blobs");
  const started = await startAttestd(deployment, fx, tls);
  let sqlite: PartAResult;
  try {
    sqlite = await measureAttestd(started.server.origin, started.server.pid, apiKey, fx, s);
  } finally {
    await started.server.stop();
  }

  log("http: bare node:https baseline: nonces, then blobs");
  const port = await freePort();
  const baselineArgs = [BASELINE, "--cert", tls.certFile, "--key", tls.keyFile, "--port", String(port)];
  const baseline = await spawnServer({ name: "baseline", args: baselineArgs, origin: `https://127.0.0.1:${port}`, ca: tls.ca });
  let base: Awaited<ReturnType<typeof measureBaseline>>;
  try {
    base = await measureBaseline(baseline.origin, baseline.pid, sqlite.blobRequests, s);
  } finally {
    await baseline.stop();
  }

  const nonces = compare(sqlite.nonces, base.nonces, NONCE_TARGET);
  const blobs = compare(sqlite.blobs, base.blobs, BLOB_TARGET);
  const notes: string[] = [];
  for (const [what, r] of [["attestd nonces", sqlite.nonces], ["attestd blobs", sqlite.blobs], ["baseline nonces", base.nonces], ["baseline blobs", base.blobs]] as const) {
    if (r.non2xx > 0 || r.errors > 0) notes.push(`${what}: ${r.non2xx} non-2xx, ${r.errors} errors (${JSON.stringify(r.statusCodes)})`);
    if (r.stoppedEarly) notes.push(`${what}: the nonce pool ran out after ${r.durationSec} s (rate is over that time)`);
  }

  const profiles: ProfileSummary[] = [];
  const want = {
    nonces: ctx.profile === "always" || (ctx.profile === "auto" && !nonces.met),
    blobs: ctx.profile === "always" || (ctx.profile === "auto" && !blobs.met),
  };
  if (want.nonces || want.blobs) {
    await profileBoth().catch((e: unknown) => notes.push(`profiling failed: ${(e as Error).message}`));
  }
  async function profileBoth(): Promise<void> {
    const what = [want.nonces && "nonces", want.blobs && "blobs"].filter(Boolean).join(", ");
    const profiled = { ...s, durationSec: ctx.profileSec };
    // The same workloads under `node --cpu-prof`, attestd then the baseline, so their per-request costs compare.
    const windows: Record<string, { fromUs: number; toUs: number }> = {};
    const marks = (server: string) => {
      const mark = (w: string) => (phase: "start" | "end") => {
        if (phase === "start") windows[`${server} ${w}`] = { fromUs: monotonicUs(), toUs: Infinity };
        else windows[`${server} ${w}`]!.toUs = monotonicUs();
      };
      return { nonces: mark("nonces"), blobs: mark("blobs") };
    };
    const summarise = (server: string, dir: string, counts: { nonces: number; blobs: number }) => {
      const file = profilesIn(dir)[0];
      if (!file) {
        notes.push(`profiling: ${server} wrote no .cpuprofile (did it exit cleanly on SIGTERM?)`);
        return;
      }
      let kept = file;
      if (ctx.keepProfilesIn) {
        mkdirSync(ctx.keepProfilesIn, { recursive: true });
        kept = path.join(ctx.keepProfilesIn, `${ctx.stamp}-${server}.cpuprofile`);
        copyFileSync(file, kept);
      }
      for (const w of ["nonces", "blobs"] as const) {
        if (!want[w]) continue;
        const summary = summariseProfile(file, { server, workload: `POST /v2/${w}`, requests: counts[w] }, windows[`${server} ${w}`]);
        profiles.push({ ...summary, file: ctx.keepProfilesIn ? path.relative(REPO, kept) : "(not kept: quick run)" });
      }
    };

    log(`http: profiling attestd (${what})`);
    const attestdDir = path.join(tmp, "cpu-prof-attestd");
    mkdirSync(attestdDir, { recursive: true });
    const prof = await startAttestd(deployment, fx, tls, { cpuProfDir: attestdDir });
    let counted: { nonces: number; blobs: number };
    try {
      const r = await measureAttestd(prof.server.origin, prof.server.pid, apiKey, fx, profiled, marks("attestd"));
      counted = { nonces: r.nonces.requests2xx, blobs: r.blobs.requests2xx };
    } finally {
      await prof.server.stop();
    }
    summarise("attestd", attestdDir, counted);

    log(`http: profiling the baseline (${what})`);
    const baseDir = path.join(tmp, "cpu-prof-baseline");
    mkdirSync(baseDir, { recursive: true });
    const bport = await freePort();
    const bprof = await spawnServer({
      name: "baseline (profiled)",
      args: [BASELINE, "--cert", tls.certFile, "--key", tls.keyFile, "--port", String(bport)],
      nodeFlags: ["--cpu-prof", "--cpu-prof-dir", baseDir],
      origin: `https://127.0.0.1:${bport}`,
      ca: tls.ca,
    });
    try {
      const r = await measureBaseline(bprof.origin, bprof.pid, sqlite.blobRequests, profiled, marks("baseline"));
      counted = { nonces: r.nonces.requests2xx, blobs: r.blobs.requests2xx };
    } finally {
      await bprof.stop();
    }
    summarise("baseline", baseDir, counted);
  }

  const section: HttpSection = {
    status: "ok",
    how: {
      attestd: `child process: ${started.command}`,
      baseline: `child process: node --import tsx bench/baseline/server.ts (node:https, same dev TLS leaf, no auth/store)`,
      processes:
        "one server process at a time; the load generator (autocannon, programmatic, in the bench process) shares the 2-core box with it",
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up`,
    },
    settings: s,
    nonces,
    blobs,
    pool: { ...sqlite.pool, devices: fx.devices.length },
    profiles,
    notes,
  };
  return { section, sqlite, deployment, tls };
}

