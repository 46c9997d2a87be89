/**
 * `npm run bench`: every benchmark of bench/README.md in one invocation, results as JSON under bench/results/ and a
 * short table on stdout.
 *
 *   npm run bench                      full run (~2-3 minutes on 2 cores)
 *   npm run bench -- --quick           smoke run (~1 s per workload); writes bench/results/quick.json only
 *   npm run bench -- --only android    a subset: startup, http, android, android-https, play-integrity-https, results, cluster, history, tracing, webhooks, app-attest-https, app-attest-assertion-https (comma-separated)
 *   npm run bench -- --profile         profile the attestd server even when the targets are met (--no-profile: never)
 *   npm run bench -- --out DIR         write the JSON elsewhere
 *   npm run bench -- --rounds 5        attestd/baseline turns per Part A workload (default 5; median shown)
 *   npm run bench -- --soak 60         seconds per phase of the memory soak (default 60; 0: none)
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { LoadSettings } from "./lib/partA.ts";
import type { MicroOptions } from "./lib/micro.ts";
import type { SoakSettings } from "./lib/soak.ts";
import { REPO } from "./lib/processes.ts";
import { renderSummary, type BenchResults } from "./lib/report.ts";
import { createVendorFixture, type VendorFixture } from "./lib/vendorFixture.ts";
import { runAndroidSection } from "./sections/android.ts";
import { runAndroidHttpSection } from "./sections/androidHttp.ts";
import { clusterUnavailable, runClusterSection } from "./sections/cluster.ts";
import { runHistorySection } from "./sections/history.ts";
import { runHttpSection } from "./sections/http.ts";
import { runPlayIntegrityHttpSection } from "./sections/playIntegrityHttp.ts";
import { runAppAttestAssertionHttpSection, runAppAttestHttpSection } from "./sections/appAttestHttp.ts";
import { runResultsSection } from "./sections/results.ts";
import { runStartupSection } from "./sections/startup.ts";
import { runTracingSection } from "./sections/tracing.ts";
import { runWebhooksSection } from "./sections/webhooks.ts";

export const SECTIONS = ["startup", "http", "android", "android-https", "play-integrity-https", "results", "cluster", "history", "tracing", "webhooks", "app-attest-https", "app-attest-assertion-https"] as const;
export type SectionName = (typeof SECTIONS)[number];

export interface BenchOptions {
  quick: boolean;
  only: readonly SectionName[];
  profile: "auto" | "always" | "never";
  /** directory for the JSON (default bench/results) */
  outDir: string;
  /** override the per-workload duration (seconds) */
  durationSec?: number;
  connections?: number;
  rounds?: number;
  /** seconds of each memory-soak phase (0: no soak) */
  soakSec?: number;
  /** print progress and the summary table (default true) */
  print?: boolean;
}

export interface BenchRun {
  results: BenchResults;
  files: string[];
  summary: string;
}

function settingsFor(o: BenchOptions): { load: LoadSettings; micro: MicroOptions; profileSec: number; soak: SoakSettings | undefined } {
  const load: LoadSettings = o.quick
    ? { durationSec: 1, warmupSec: 0.3, connections: 20, pipelining: 1, rounds: 1 }
    : { durationSec: 4, warmupSec: 1, connections: 20, pipelining: 1, rounds: 5 };
  if (o.rounds) load.rounds = o.rounds;
  if (o.durationSec) load.durationSec = o.durationSec;
  if (o.connections) load.connections = o.connections;
  const micro: MicroOptions = o.quick ? { warmupMs: 30, roundMs: 100, rounds: 1 } : { warmupMs: 200, roundMs: 500, rounds: 3 };
  // the soak compares its first and last window: 10 s of 60 in a full run, a proportionate 1 s of 3 in a quick one
  const soakSec = o.soakSec ?? (o.quick ? 3 : 60);
  const soak = soakSec > 0 ? { durationSec: soakSec, windowSec: Math.min(10, soakSec / 3), connections: load.connections, pipelining: load.pipelining } : undefined;
  return { load, micro, profileSec: o.quick ? 1 : 3, soak };
}

function gitInfo(): { commit: string; dirty: boolean } | undefined {
  try {
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: REPO, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: REPO, encoding: "utf8" }).trim() !== "";
    return { commit, dirty };
  } catch {
    return undefined;
  }
}

function environment(): BenchResults["environment"] {
  const cpus = os.cpus();
  const git = gitInfo();
  return {
    node: process.version,
    platform: os.platform(),
    arch: os.arch(),
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    memoryMb: Math.round(os.totalmem() / 2 ** 20),
    ...(git ? { git } : {}),
    loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    note: `load generator and servers share this ${cpus.length}-core machine; runs are short (seconds), so expect a few % of run-to-run noise`,
  };
}

function failure(e: unknown): { status: "error"; message: string } {
  return { status: "error", message: (e as Error)?.stack?.split("\n").slice(0, 3).join(" | ") ?? String(e) };
}

export async function runBench(o: BenchOptions): Promise<BenchRun> {
  const print = o.print ?? true;
  const log = (line: string) => print && process.stderr.write(`bench: ${line}\n`);
  const { load, micro, profileSec, soak } = settingsFor(o);
  const results: BenchResults = {
    schema: "attestd-bench/1",
    startedAt: new Date().toISOString(),
    finishedAt: "",
    quick: o.quick,
    environment: environment(),
    sections: { startup: undefined, http: undefined, android: undefined, results: undefined, cluster: undefined, history: undefined },
  };
  const want = (s: SectionName) => o.only.includes(s);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "attestd-bench-"));
  let fx: VendorFixture | undefined;
  const fixture = async () => (fx ??= await createVendorFixture(tmp, 16));

  try {
    // Start-up first: its targets assume an idle machine, and nothing of the bench runs yet.
    if (want("startup")) {
      log("startup: the attestd command and a server's start, beside node -e 0");
      results.sections.startup = await runStartupSection({ tmp, quick: o.quick, log }).catch(failure);
    }

    // Library level next: no server is running yet.
    if (want("android")) {
      log("android: appraise() vs @simplewebauthn/server vs pkijs on real chains");
      results.sections.android = await runAndroidSection({ micro, log }).catch(failure);
    }

    let sqlite: Awaited<ReturnType<typeof runHttpSection>>["sqlite"] | undefined;
    if (want("http")) {
      try {
        const http = await runHttpSection({
          tmp,
          fx: await fixture(),
          settings: load,
          profile: o.profile,
          profileSec,
          ...(soak ? { soak } : {}),
          ...(o.quick ? {} : { keepProfilesIn: path.join(o.outDir, "profiles") }),
          stamp: results.startedAt.replace(/[:.]/g, "-"),
          log,
        });
        results.sections.http = http.section;
        sqlite = http.sqlite;
      } catch (e) {
        results.sections.http = failure(e);
      }
    }

    // library level again, but it writes to SQLite and PostgreSQL: after the HTTP runs, before the cluster's
    if (want("results")) {
      log("results: what signing (EAR) and device pinning cost per verdict");
      results.sections.results = await runResultsSection({ tmp, fx: await fixture(), quick: o.quick, log }).catch(failure);
    }

    // the sections of one blob format over HTTPS beside its floor baseline take the same context
    const floorContext = async () => ({
      tmp,
      fx: await fixture(),
      settings: load,
      quick: o.quick,
      profile: o.profile,
      profileSec,
      ...(o.quick ? {} : { keepProfilesIn: path.join(o.outDir, "profiles") }),
      stamp: results.startedAt.replace(/[:.]/g, "-"),
      log,
    });
    if (want("android-https")) {
      log("android-https: android-key chains from the device simulator over HTTPS, attestd vs the floor baseline");
      results.sections.androidHttps = await runAndroidHttpSection(await floorContext()).catch(failure);
    }

    if (want("play-integrity-https")) {
      log("play-integrity-https: Play Integrity tokens from the simulator over HTTPS, attestd vs the floor baseline");
      results.sections.playIntegrityHttps = await runPlayIntegrityHttpSection(await floorContext()).catch(failure);
    }

    if (want("app-attest-https")) {
      log("app-attest-https: App Attest attestations from the simulator over HTTPS, attestd vs the floor baseline");
      results.sections.appAttestHttps = await runAppAttestHttpSection(await floorContext()).catch(failure);
    }
    if (want("app-attest-assertion-https")) {
      log("app-attest-assertion-https: App Attest assertions by remembered keys over HTTPS, attestd vs the floor baseline");
      results.sections.appAttestAssertionHttps = await runAppAttestAssertionHttpSection(await floorContext()).catch(failure);
    }

    if (want("tracing")) {
      log("tracing: Part A with OpenTelemetry traces off and on (exported to a local OTLP sink)");
      results.sections.tracing = await runTracingSection({ tmp, fx: await fixture(), settings: load, micro, log }).catch(failure);
    }

    if (want("webhooks")) {
      log("webhooks: Part A blobs for a tenant with no endpoint and with one for every verdict (a local receiver)");
      results.sections.webhooks = await runWebhooksSection({ tmp, fx: await fixture(), settings: load, log }).catch(failure);
    }

    if (want("cluster")) {
      const missing = clusterUnavailable();
      if (missing) {
        results.sections.cluster = { status: "skipped", reason: missing };
        log(`cluster: skipped: ${missing}`);
      } else {
        results.sections.cluster = await runClusterSection({
          tmp,
          fx: await fixture(),
          settings: load,
          ...(sqlite ? { sqlite } : {}),
          log,
        }).catch(failure);
      }
    }

    // Last: seeding a million rows per backend is disk work the load runs above must not share the machine with.
    if (want("history")) {
      log("history: the portal's verdict history with 1,000,000 stored verdicts");
      results.sections.history = await runHistorySection({ tmp, quick: o.quick, log }).catch(failure);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  results.finishedAt = new Date().toISOString();

  mkdirSync(o.outDir, { recursive: true });
  const json = JSON.stringify(results, null, 2) + "\n";
  const files: string[] = [];
  if (o.quick) files.push(path.join(o.outDir, "quick.json"));
  else {
    const stamp = results.startedAt.replace(/[:.]/g, "-");
    // latest.json is the last *full* run (bench/README.md): a subset run (--only) must not replace it
    if (SECTIONS.every((name) => o.only.includes(name))) files.push(path.join(o.outDir, "latest.json"));
    files.push(path.join(o.outDir, `${stamp}.json`));
  }
  for (const f of files) writeFileSync(f, json);
  const summary = renderSummary(results);
  if (print) {
    process.stdout.write(`\n${summary}\n`);
    process.stdout.write(`results: ${files.map((f) => path.relative(process.cwd(), f)).join(", ")}\n`);
  }
  return { results, files, summary };
}

export function parseBenchArgs(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      only: { type: "string" },
      profile: { type: "boolean" },
      "no-profile": { type: "boolean" },
      out: { type: "string" },
      duration: { type: "string" },
      connections: { type: "string" },
      rounds: { type: "string" },
      soak: { type: "string" },
    },
    allowPositionals: false,
  });
  const only = (values.only?.split(",").map((s) => s.trim()).filter(Boolean) ?? [...SECTIONS]) as SectionName[];
  for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`--only: unknown section "${s}" (${SECTIONS.join(", ")})`);
  const num = (v: string | undefined, flag: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!(n > 0)) throw new Error(`${flag} must be a positive number`);
    return n;
  };
  const durationSec = num(values.duration, "--duration");
  const connections = num(values.connections, "--connections");
  const rounds = num(values.rounds, "--rounds");
  const soakSec = values.soak === "0" ? 0 : num(values.soak, "--soak");
  return {
    quick: values.quick ?? false,
    only,
    profile: values.profile ? "always" : values["no-profile"] ? "never" : "auto",
    outDir: path.resolve(values.out ?? path.join(REPO, "bench/results")),
    ...(durationSec ? { durationSec } : {}),
    ...(connections ? { connections: Math.round(connections) } : {}),
    ...(rounds ? { rounds: Math.round(rounds) } : {}),
    ...(soakSec !== undefined ? { soakSec } : {}),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  try {
    const run = await runBench(parseBenchArgs(process.argv.slice(2)));
    const sections = Object.values(run.results.sections);
    process.exitCode = sections.some((s) => s?.status === "error") ? 1 : 0;
  } catch (e) {
    process.stderr.write(`bench: ${(e as Error).message}\n`);
    process.exitCode = 2;
  }
}
