import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { percentile } from "../lib/stats.ts";
import { freePort, httpsGet, REPO } from "../lib/processes.ts";

/**
 * Issue 21's start-up figures: how long an operator waits for the `attestd` command and for a server to be ready.
 * Each command runs as a whole process, as a shell runs it (`node bin/attestd.js ...`, the compiled build), beside
 * bare `node -e 0` on the same machine in the same rounds, so the ratios hold when the machine's speed drifts:
 *
 * - `attestd --help` ≤ 5 × `node -e 0` (it loads commander alone);
 * - `attestd tenant list` on an existing SQLite store ≤ 10 × (the store and the tenant service, nothing else);
 * - `attestd serve` from spawn to the first `GET /readyz` 200 ≤ 1.5 s on an idle machine, on an existing data
 *   directory (the first start, which makes the dev CA and the secrets key, is timed apart).
 *
 * Medians of `runs` rounds after one warm-up round; every sample is kept in the JSON.
 */

export interface CommandTiming {
  command: string;
  samplesMs: number[];
  medianMs: number;
}

export interface RatioTarget extends CommandTiming {
  /** median of the per-round ratios to `node -e 0` */
  ratio: number;
  target: number;
  met: boolean;
}

export interface StartupSection {
  status: "ok";
  runs: number;
  node: CommandTiming;
  help: RatioTarget;
  tenantList: RatioTarget;
  readyz: CommandTiming & { targetMs: number; met: boolean; firstStartMs: number };
  /** 1-minute load average when the section started: the targets assume an idle machine */
  loadAverage: number;
}

const CLI = path.join(REPO, "bin/attestd.js");
const HELP_TARGET = 5;
const TENANT_LIST_TARGET = 10;
const READYZ_TARGET_MS = 1500;

function timeCommand(args: readonly string[]): number {
  const started = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: REPO, stdio: ["ignore", "ignore", "pipe"], timeout: 60_000 });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`node ${args.join(" ")} exited ${r.status}: ${r.stderr?.toString().trim()}`);
  return ms;
}

/** Spawn to the first 200 from GET /readyz, then a clean stop. */
async function timeReadyz(dataDir: string, statusFile: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [CLI, "serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", dataDir, "--dev-tls", "--android-status", statusFile, "--log-level", "warn"],
    { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    const caFile = path.join(dataDir, "tls/ca.pem");
    for (;;) {
      if (child.exitCode !== null) throw new Error(`attestd serve exited ${child.exitCode}: ${stderr.trim()}`);
      if (performance.now() - started > 30_000) throw new Error(`attestd serve was not ready within 30 s: ${stderr.trim()}`);
      const ok = await Promise.resolve()
        .then(() => httpsGet(`https://127.0.0.1:${port}`, "/readyz", readFileSync(caFile, "utf8"), 1000))
        .then((r) => r.status === 200, () => false);
      if (ok) return performance.now() - started;
      await sleep(5);
    }
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

const median = (xs: readonly number[]) => percentile([...xs].sort((a, b) => a - b), 50);
const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;

export async function runStartupSection(o: { tmp: string; quick: boolean; log: (line: string) => void }): Promise<StartupSection> {
  const runs = o.quick ? 2 : 5;
  const loadAverage = round2(os.loadavg()[0]!);
  const dataDir = path.join(o.tmp, "startup");
  mkdirSync(dataDir, { recursive: true });
  const statusFile = path.join(REPO, "test/vectors/android-key/google_android-key-attestation/status.json");

  o.log("startup: first start (dev CA, secrets key, schema), then an existing store");
  const firstStartMs = await timeReadyz(dataDir, statusFile);
  for (const name of ["acme", "globex", "initech"]) {
    timeCommand([CLI, "tenant", "create", name, "--data-dir", dataDir, "--log-level", "warn"]);
  }

  const commands = {
    node: ["-e", "0"],
    help: [CLI, "--help"],
    tenantList: [CLI, "tenant", "list", "--data-dir", dataDir],
  };
  const samples = { node: [] as number[], help: [] as number[], tenantList: [] as number[], readyz: [] as number[] };
  const helpRatios: number[] = [];
  const listRatios: number[] = [];
  for (let round = -1; round < runs; round++) {
    const node = timeCommand(commands.node);
    const help = timeCommand(commands.help);
    const tenantList = timeCommand(commands.tenantList);
    const readyz = await timeReadyz(dataDir, statusFile);
    if (round < 0) continue; // the warm-up round fills the page cache
    samples.node.push(node);
    samples.help.push(help);
    samples.tenantList.push(tenantList);
    samples.readyz.push(readyz);
    helpRatios.push(help / node);
    listRatios.push(tenantList / node);
  }

  const timing = (command: string, xs: number[]): CommandTiming => ({ command, samplesMs: xs.map(round1), medianMs: round1(median(xs)) });
  const ratio = (command: string, xs: number[], ratios: number[], target: number): RatioTarget => {
    const r = round2(median(ratios));
    return { ...timing(command, xs), ratio: r, target, met: r <= target };
  };
  const readyzMs = median(samples.readyz);
  return {
    status: "ok",
    runs,
    node: timing("node -e 0", samples.node),
    help: ratio("attestd --help", samples.help, helpRatios, HELP_TARGET),
    tenantList: ratio("attestd tenant list (SQLite, 3 tenants)", samples.tenantList, listRatios, TENANT_LIST_TARGET),
    readyz: { ...timing("attestd serve → GET /readyz 200 (existing data dir)", samples.readyz), targetMs: READYZ_TARGET_MS, met: readyzMs <= READYZ_TARGET_MS, firstStartMs: round1(firstStartMs) },
    loadAverage,
  };
}
