import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { createAndroidFixture, androidRequestsFor, type AndroidFixture } from "../lib/androidFixture.ts";
import { devTls, provisionApiKey, sqliteDeployment, startAttestd } from "../lib/attestd.ts";
import { runLoad } from "../lib/load.ts";
import { attestdBlobs, baselineBlobs, nonceHeaders, type LoadSettings } from "../lib/partA.ts";
import { benchModule, freePort, REPO, spawnServer } from "../lib/processes.ts";
import { monotonicUs, profilesIn, summariseProfile, type ProfileSummary } from "../lib/profile.ts";
import type { VendorFixture } from "../lib/vendorFixture.ts";
import { compare, type Comparison } from "./http.ts";

/** Issue 15 item 1: attestd's android-key blobs/s ≥ 60 % of the bare baseline doing the same unavoidable crypto. */
export const ANDROID_HTTP_TARGET = 0.6;

export interface AndroidHttpSection {
  status: "ok";
  how: { attestd: string; baseline: string; chains: string; loadGenerator: string };
  settings: LoadSettings;
  blobs: Comparison;
  /** chainsPerRound and buildMs: one entry per round */
  pool: { devices: number; chainsPerRound: number[]; chainBytes: number; certificates: number; buildMs: number[] };
  /** what attestd answered (the median round's sample): the verdict must be Yes, or the timing is of a refusal */
  verdict?: string;
  /**
   * CPU profiles (node --cpu-prof) of attestd and of the floor baseline over one more run of fresh chains, when the
   * target was missed (or with --profile): where each request's time goes
   */
  profiles: ProfileSummary[];
  notes: string[];
}

export interface AndroidHttpContext {
  tmp: string;
  fx: VendorFixture;
  settings: LoadSettings;
  quick: boolean;
  /** "auto": profile when the target was missed */
  profile: "auto" | "always" | "never";
  profileSec: number;
  /** copy the raw .cpuprofile files here; undefined: don't keep them */
  keepProfilesIn?: string;
  /** prefix of kept profile file names */
  stamp: string;
  log: (line: string) => void;
}

const BASELINE = benchModule("baseline/server");

/** Nonces from attestd's own POST /v2/nonces (not measured): one per chain the round will send. */
async function issueNonces(origin: string, apiKey: string, count: number, s: LoadSettings): Promise<string[]> {
  const nonces: string[] = [];
  while (nonces.length < count) {
    await runLoad({
      origin,
      method: "POST",
      headers: nonceHeaders(apiKey),
      requests: Array.from({ length: count - nonces.length }, () => ({ path: "/v2/nonces" })),
      cycle: false,
      durationSec: 30,
      connections: s.connections,
      pipelining: s.pipelining,
      onBody: (body) => {
        const n = (JSON.parse(body) as { nonce?: string }).nonce;
        if (n) nonces.push(n);
      },
    });
  }
  return nonces.slice(0, count);
}

/**
 * android-key over HTTPS: attestd (SQLite, one process, the demo Android PKI as its --android-roots and
 * --android-status) beside the bare baseline, whose android-key route does only the floor's work
 * (bench/lib/androidFloor.ts). Rounds as in Part A: per round, attestd issues the nonces, the device simulator
 * makes one chain per nonce, attestd appraises each once, then the baseline gets the same requests; the median
 * round is reported.
 */
export async function runAndroidHttpSection(ctx: AndroidHttpContext): Promise<AndroidHttpSection> {
  const { tmp, fx, settings: s, log } = ctx;
  const devices = 16;
  const afx: AndroidFixture = await createAndroidFixture(tmp, devices);
  const deployment = sqliteDeployment(path.join(tmp, "attestd-android"), "sqlite, 1 process, android-key");
  const tls = await devTls(deployment.dataDir);
  const apiKey = await provisionApiKey(deployment);
  // --nonce-ttl: on a loaded machine making a round's chains can take minutes, longer than the default 300 s
  const androidArgs = ["--android-roots", afx.rootsFile, "--android-status", afx.statusFile, "--nonce-ttl", "3600"];
  const started = await startAttestd(deployment, fx, tls, { extraArgs: androidArgs });
  // Enough chains for the warm-up and the measured seconds: at ~600/s for the first round, then 1.5x what attestd
  // served in the round before (making a chain costs the bench ~5-50 ms, so a pool much larger than needed would
  // cost minutes); a run that uses its pool up stops early and says so, its rate taken over the time it ran.
  const poolFor = (rps: number) => Math.max(200, Math.ceil((s.warmupSec + s.durationSec) * rps * 1.5 / 0.85));
  let perRound = Math.ceil((s.warmupSec + s.durationSec) * (ctx.quick ? 300 : 600));
  const pools: number[] = [];
  const rounds: { attestd: Awaited<ReturnType<typeof attestdBlobs>>; baseline: Awaited<ReturnType<typeof baselineBlobs>> }[] = [];
  const buildMs: number[] = [];
  let chainBytes = 0;
  const notes: string[] = [];
  try {
    const port = await freePort();
    const baseline = await spawnServer({
      name: "baseline (android-key)",
      args: [BASELINE, "--cert", tls.certFile, "--key", tls.keyFile, "--port", String(port), "--android-status", afx.statusFile],
      origin: `https://127.0.0.1:${port}`,
      ca: tls.ca,
    });
    try {
      for (let r = 1; r <= s.rounds; r++) {
        pools.push(perRound);
        const nonces = await issueNonces(started.server.origin, apiKey, perRound, s);
        const built = await androidRequestsFor(afx, nonces);
        buildMs.push(built.buildMs);
        chainBytes = built.requests[0]?.body?.length ?? 0;
        const a = await attestdBlobs(started.server.origin, started.server.pid, apiKey, built.requests, s);
        const b = await baselineBlobs(baseline.origin, baseline.pid, built.requests, s);
        rounds.push({ attestd: a, baseline: b });
        perRound = poolFor(a.rps);
        log(`android-https: round ${r}/${s.rounds}: attestd ${Math.round(a.rps)}/s, baseline ${Math.round(b.rps)}/s, ${Math.round((a.rps / b.rps) * 100)} % (${built.requests.length} chains built in ${built.buildMs} ms)`);
      }
    } finally {
      await baseline.stop();
    }
  } finally {
    await started.server.stop();
  }
  const blobs = compare(rounds, ANDROID_HTTP_TARGET);
  const profiles: ProfileSummary[] = [];
  if (ctx.profile === "always" || (ctx.profile === "auto" && !blobs.met)) {
    await profileBoth().catch((e: unknown) => notes.push(`profiling failed: ${(e as Error).message}`));
  }
  /**
   * attestd, then the floor baseline, each a fresh process under `node --cpu-prof`, on one pool of fresh chains
   * (attestd's nonces are single-use; the baseline repeats them), each summarised over its measured window.
   */
  async function profileBoth(): Promise<void> {
    const profiled = { ...s, durationSec: ctx.profileSec };
    const keep = (server: string, file: string) => {
      if (!ctx.keepProfilesIn) return "(not kept: quick run)";
      mkdirSync(ctx.keepProfilesIn, { recursive: true });
      const kept = path.join(ctx.keepProfilesIn, `${ctx.stamp}-android-https-${server}.cpuprofile`);
      copyFileSync(file, kept);
      return path.relative(REPO, kept);
    };
    const window = { fromUs: 0, toUs: Infinity };
    const marks = { blobs: (phase: "start" | "end") => (phase === "start" ? (window.fromUs = monotonicUs()) : (window.toUs = monotonicUs())) };
    const summarise = (server: string, dir: string, requests: number) => {
      const file = profilesIn(dir)[0];
      if (!file) return void notes.push(`profiling: ${server} wrote no .cpuprofile`);
      profiles.push({ ...summariseProfile(file, { server, workload: "POST /v2/blobs (android-key)", requests }, { ...window }), file: keep(server, file) });
    };

    log("android-https: profiling attestd and the floor baseline");
    const attestdDir = path.join(tmp, "cpu-prof-android-attestd");
    mkdirSync(attestdDir, { recursive: true });
    const prof = await startAttestd(deployment, fx, tls, { extraArgs: androidArgs, cpuProfDir: attestdDir });
    let requests: Awaited<ReturnType<typeof androidRequestsFor>>["requests"];
    let served: number;
    try {
      // enough for the profiled seconds only (building chains is the slow part), at the last round's rate
      const pool = Math.max(200, Math.ceil(((s.warmupSec + ctx.profileSec) * (rounds.at(-1)?.attestd.rps ?? 600) * 1.5) / 0.85));
      const nonces = await issueNonces(prof.server.origin, apiKey, pool, s);
      requests = (await androidRequestsFor(afx, nonces)).requests;
      served = (await attestdBlobs(prof.server.origin, prof.server.pid, apiKey, requests, profiled, marks)).requests2xx;
    } finally {
      await prof.server.stop(); // the profile is written as the process exits
    }
    summarise("attestd", attestdDir, served);
    const baseDir = path.join(tmp, "cpu-prof-android-baseline");
    mkdirSync(baseDir, { recursive: true });
    const port = await freePort();
    const bprof = await spawnServer({
      name: "baseline (android-key, profiled)",
      args: [BASELINE, "--cert", tls.certFile, "--key", tls.keyFile, "--port", String(port), "--android-status", afx.statusFile],
      nodeFlags: ["--cpu-prof", "--cpu-prof-dir", baseDir],
      origin: `https://127.0.0.1:${port}`,
      ca: tls.ca,
    });
    try {
      served = (await baselineBlobs(bprof.origin, bprof.pid, requests, profiled, marks)).requests2xx;
    } finally {
      await bprof.stop();
    }
    summarise("baseline", baseDir, served);
  }
  for (const [what, r] of [["attestd", blobs.attestd], ["baseline", blobs.baseline]] as const) {
    if (r.non2xx > 0 || r.errors > 0) notes.push(`${what}: ${r.non2xx} non-2xx, ${r.errors} errors (${JSON.stringify(r.statusCodes)})`);
    if (r.stoppedEarly) notes.push(`${what}: the chain pool ran out after ${r.durationSec} s (rate is over that time)`);
  }
  let verdict: string | undefined;
  try {
    const body = JSON.parse(blobs.attestd.sample ?? "{}") as { verdict?: string; status?: string; result?: { verdict?: string; status?: string } };
    verdict = body.verdict ?? body.result?.verdict;
    const status = body.status ?? body.result?.status;
    if (verdict !== "Yes") notes.push(`attestd answered ${status ?? "?"}/${verdict ?? "?"}, not Success/Yes: the timing is of a refusal`);
    verdict = `${status ?? "?"}/${verdict ?? "?"}`;
  } catch {
    notes.push("attestd's sample answer is not JSON");
  }
  if (blobs.baseline.sample && !blobs.baseline.sample.includes("Success")) notes.push(`baseline answered ${blobs.baseline.sample}`);
  return {
    status: "ok",
    how: {
      attestd: `child process: ${started.command}`,
      baseline:
        "child process: node bench/baseline/server (compiled) --android-status FILE: a body starting 0x30 gets only the floor's work (bench/lib/androidFloor.ts: split, the leaf's signature with its issuer's key kept by DER bytes, the challenge against the nonce, the issuers' serials in the status list); no auth, no store, no chain rules",
      chains: `attestd dev-ca --android's PKI (EC P-384 root, Droid CA2), ${devices} RKP TEE devices (each its own EC P-256 device CA); per nonce, the simulator certifies the device's key afresh with a KeyDescription for that nonce: leaf, device CA, Droid CA2, root, DER end to end`,
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up (15 % of the chains), ${s.rounds} round(s), median round shown; every chain is sent to attestd once (its nonce is single-use), the baseline repeats them`,
    },
    settings: s,
    blobs,
    pool: { devices, chainsPerRound: pools, chainBytes, certificates: 4, buildMs },
    ...(verdict ? { verdict } : {}),
    profiles,
    notes,
  };
}
