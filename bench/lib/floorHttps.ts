import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { DevTls, Deployment } from "./attestd.ts";
import { startAttestd } from "./attestd.ts";
import type { LoadRequest } from "./load.ts";
import { runLoad } from "./load.ts";
import { attestdBlobs, baselineBlobs, nonceHeaders, type LoadSettings, type MeasuredLoad } from "./partA.ts";
import { benchModule, freePort, REPO, spawnServer } from "./processes.ts";
import { monotonicUs, profilesIn, summariseProfile, type ProfileSummary } from "./profile.ts";
import type { VendorFixture } from "./vendorFixture.ts";
import { compare, type Comparison } from "../sections/http.ts";

/**
 * One blob format over HTTPS against its floor baseline: the loop shared by the android-key (2b) and Play Integrity
 * (2c) sections, so both measure, pair, profile and check their answers the same way. What differs per format is
 * only what `FloorHttpsSpec` names: the serve flags, the baseline's flags, and how a pool of blobs is made for
 * a list of nonces.
 */

export interface FloorHttpsContext {
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

export interface FloorHttpsSpec {
  /** the section's --only name: log prefix and profile file names */
  name: string;
  /** the workload's label in the table and the profile summaries, e.g. "POST /v2/blobs (android-key)" */
  workload: string;
  /** what one blob is called in the log ("chains", "tokens") */
  unit: string;
  deployment: Deployment;
  tls: DevTls;
  apiKey: string;
  /** serve flags beyond the common ones */
  serveArgs: string[];
  /** baseline/server flags beyond --cert, --key, --port */
  baselineArgs: string[];
  /** one blob request per nonce, each made for its nonce */
  build: (nonces: readonly string[]) => Promise<{ requests: LoadRequest[]; buildMs: number }>;
  /** a guess at attestd's rate, to size the first round's pool (later rounds use the round before) */
  firstRate: number;
  target: number;
}

export interface FloorHttpsRun {
  /** the command line attestd ran with */
  command: string;
  blobs: Comparison;
  /** blobs made per round, and how long making them took */
  poolPerRound: number[];
  buildMs: number[];
  bodyBytes: number;
  /** what attestd answered (the median round's sample) as status/verdict: Success/Yes, or the timing is of a refusal */
  verdict?: string;
  /** CPU profiles of attestd and the floor baseline over one more run on a fresh pool, when the target was missed */
  profiles: ProfileSummary[];
  notes: string[];
}

const BASELINE = benchModule("baseline/server");

/** Nonces from attestd's own POST /v2/nonces (not measured): one per blob the round will send. */
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
 * Rounds as in Part A (paired, interleaved, median shown): per round attestd issues the nonces (not measured), the
 * simulator makes one blob per nonce, attestd appraises each once (15 % warm up), then the baseline gets the same
 * requests. When the target is missed (or with --profile), both run once more under `node --cpu-prof`.
 */
export async function runFloorHttps(ctx: FloorHttpsContext, spec: FloorHttpsSpec): Promise<FloorHttpsRun> {
  const { tmp, fx, settings: s, log } = ctx;
  const { deployment, tls, apiKey } = spec;
  const baselineArgs = (port: number) => [BASELINE, "--cert", tls.certFile, "--key", tls.keyFile, "--port", String(port), ...spec.baselineArgs];
  const started = await startAttestd(deployment, fx, tls, { extraArgs: spec.serveArgs });
  // Enough blobs for the warm-up and the measured seconds at 1.5x what attestd served in the round before (making
  // a blob costs the bench up to tens of ms, so a pool much larger than needed would cost minutes); a run that uses
  // its pool up stops early and says so, its rate taken over the time it ran.
  const poolFor = (rps: number, sec: number) => Math.max(200, Math.ceil((s.warmupSec + sec) * rps * 1.5 / 0.85));
  let perRound = Math.ceil((s.warmupSec + s.durationSec) * (ctx.quick ? spec.firstRate / 2 : spec.firstRate));
  const poolPerRound: number[] = [];
  const rounds: { attestd: MeasuredLoad; baseline: MeasuredLoad }[] = [];
  const buildMs: number[] = [];
  let bodyBytes = 0;
  const notes: string[] = [];
  try {
    const port = await freePort();
    const baseline = await spawnServer({ name: `baseline (${spec.name})`, args: baselineArgs(port), origin: `https://127.0.0.1:${port}`, ca: tls.ca });
    try {
      for (let r = 1; r <= s.rounds; r++) {
        poolPerRound.push(perRound);
        const nonces = await issueNonces(started.server.origin, apiKey, perRound, s);
        const built = await spec.build(nonces);
        buildMs.push(built.buildMs);
        bodyBytes = built.requests[0]?.body?.length ?? 0;
        const a = await attestdBlobs(started.server.origin, started.server.pid, apiKey, built.requests, s);
        const b = await baselineBlobs(baseline.origin, baseline.pid, built.requests, s);
        rounds.push({ attestd: a, baseline: b });
        perRound = poolFor(a.rps, s.durationSec);
        log(`${spec.name}: round ${r}/${s.rounds}: attestd ${Math.round(a.rps)}/s, baseline ${Math.round(b.rps)}/s, ${Math.round((a.rps / b.rps) * 100)} % (${built.requests.length} ${spec.unit} built in ${built.buildMs} ms)`);
      }
    } finally {
      await baseline.stop();
    }
  } finally {
    await started.server.stop();
  }
  const blobs = compare(rounds, spec.target);
  const profiles: ProfileSummary[] = [];
  if (ctx.profile === "always" || (ctx.profile === "auto" && !blobs.met)) {
    await profileBoth().catch((e: unknown) => notes.push(`profiling failed: ${(e as Error).message}`));
  }
  /**
   * attestd, then the floor baseline, each a fresh process under `node --cpu-prof`, on one pool of fresh blobs
   * (attestd's nonces are single-use; the baseline repeats them), each summarised over its measured window.
   */
  async function profileBoth(): Promise<void> {
    const profiled = { ...s, durationSec: ctx.profileSec };
    const keep = (server: string, file: string) => {
      if (!ctx.keepProfilesIn) return "(not kept: quick run)";
      mkdirSync(ctx.keepProfilesIn, { recursive: true });
      const kept = path.join(ctx.keepProfilesIn, `${ctx.stamp}-${spec.name}-${server}.cpuprofile`);
      copyFileSync(file, kept);
      return path.relative(REPO, kept);
    };
    const window = { fromUs: 0, toUs: Infinity };
    const marks = { blobs: (phase: "start" | "end") => (phase === "start" ? (window.fromUs = monotonicUs()) : (window.toUs = monotonicUs())) };
    const summarise = (server: string, dir: string, requests: number) => {
      const file = profilesIn(dir)[0];
      if (!file) return void notes.push(`profiling: ${server} wrote no .cpuprofile`);
      profiles.push({ ...summariseProfile(file, { server, workload: spec.workload, requests }, { ...window }), file: keep(server, file) });
    };

    log(`${spec.name}: profiling attestd and the floor baseline`);
    const attestdDir = path.join(tmp, `cpu-prof-${spec.name}-attestd`);
    mkdirSync(attestdDir, { recursive: true });
    const prof = await startAttestd(deployment, fx, tls, { extraArgs: spec.serveArgs, cpuProfDir: attestdDir });
    let requests: LoadRequest[];
    let served: number;
    try {
      // enough for the profiled seconds only, at the last round's rate
      const nonces = await issueNonces(prof.server.origin, apiKey, poolFor(rounds.at(-1)?.attestd.rps ?? spec.firstRate, ctx.profileSec), s);
      requests = (await spec.build(nonces)).requests;
      served = (await attestdBlobs(prof.server.origin, prof.server.pid, apiKey, requests, profiled, marks)).requests2xx;
    } finally {
      await prof.server.stop(); // the profile is written as the process exits
    }
    summarise("attestd", attestdDir, served);
    const baseDir = path.join(tmp, `cpu-prof-${spec.name}-baseline`);
    mkdirSync(baseDir, { recursive: true });
    const port = await freePort();
    const bprof = await spawnServer({
      name: `baseline (${spec.name}, profiled)`,
      args: baselineArgs(port),
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
    if (r.stoppedEarly) notes.push(`${what}: the ${spec.unit} pool ran out after ${r.durationSec} s (rate is over that time)`);
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
  return { command: started.command, blobs, poolPerRound, buildMs, bodyBytes, ...(verdict ? { verdict } : {}), profiles, notes };
}
