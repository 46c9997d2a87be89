import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { REPO } from "../test/helpers/serverProcess.ts";
import { Deployment } from "./lib/deployment.ts";
import { PrivatePostgres, PrivateRedis } from "./lib/services.ts";
import { FUZZ_FORMATS, type FuzzResult } from "./parts/fuzz.ts";
import { killUnderLoad, type KillResult } from "./parts/kill.ts";
import { storeOutage, type OutageResult } from "./parts/outage.ts";
import { slowClients, type SlowResult } from "./parts/slowClients.ts";
import { soak, type SoakResult } from "./parts/soak.ts";
import { renderTable } from "./table.ts";

/**
 * `npm run reliability`: the reliability campaign of issue 13, one command. Each part checks its invariants and
 * records its figures; the JSON goes to reliability/results/ and a short table to stdout. docs/reliability.md
 * says what each part does and holds the last full run's results.
 */

const PARTS = ["fuzz", "kill", "outage", "soak", "slow"] as const;
type Part = (typeof PARTS)[number];

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    "fuzz-cases": { type: "string" },
    "kill-rounds": { type: "string" },
    "soak-minutes": { type: "string" },
    "slow-clients": { type: "string" },
    seed: { type: "string", default: "20261125" },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(`npm run reliability -- [--quick] [--only ${PARTS.join(",")}] [--fuzz-cases N] [--kill-rounds N]
                          [--soak-minutes M] [--slow-clients N] [--seed N] [--out FILE]`);
  process.exit(0);
}
const quick = flags.quick;
const only = new Set<Part>(flags.only ? (flags.only.split(",").map((s) => s.trim()) as Part[]) : PARTS);
for (const p of only) if (!PARTS.includes(p)) throw new Error(`--only: unknown part ${p} (parts: ${PARTS.join(", ")})`);
const num = (v: string | undefined, dflt: number) => (v === undefined ? dflt : Number(v));
const settings = {
  fuzzCases: num(flags["fuzz-cases"], quick ? 20_000 : 1_000_000),
  fuzzSeed: Number(flags.seed),
  fuzzRssLimitMb: 1024,
  kill: { rounds: num(flags["kill-rounds"], quick ? 1 : 3), loadMs: quick ? 3_000 : 8_000, concurrency: 16 },
  outage: { beforeMs: quick ? 1_500 : 3_000, downMs: quick ? 3_000 : 10_000, afterMs: quick ? 2_000 : 5_000, concurrency: 16 },
  soak: { minutes: num(flags["soak-minutes"], quick ? 0.5 : 30), peakSeconds: quick ? 5 : 15, peakConcurrency: 16, sampleMs: quick ? 1_000 : 10_000 },
  slow: { clients: num(flags["slow-clients"], quick ? 50 : 200), phaseMs: quick ? 5_000 : 15_000, byteEveryMs: 1_000 },
};

export interface CampaignResults {
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  settings: typeof settings;
  environment: { node: string; cpus: number; cpuModel: string; loadAverageAtStart: number[]; loadAverageAtEnd: number[]; git?: { commit: string; dirty: boolean } };
  parts: {
    fuzz?: FuzzResult[] | { error: string };
    kill?: KillResult[] | { error: string };
    outage?: OutageResult[] | { error: string };
    soak?: SoakResult | { error: string };
    slow?: SlowResult | { error: string };
  };
  ok: boolean;
}

function git(): { commit: string; dirty: boolean } | undefined {
  try {
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: REPO, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: REPO, encoding: "utf8" }).trim() !== "";
    return { commit, dirty };
  } catch {
    return undefined;
  }
}

const log = (s: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${s}`);

/** Every format, each in its own process (fuzzChild.ts), two at a time. */
async function fuzzAll(): Promise<FuzzResult[]> {
  const one = (format: string) =>
    new Promise<FuzzResult>((resolve, reject) => {
      const args = ["--import", "tsx", path.join(REPO, "reliability/parts/fuzzChild.ts"), format, String(settings.fuzzCases), String(settings.fuzzSeed), String(settings.fuzzRssLimitMb)];
      const c = spawn(process.execPath, args, { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      c.stdout.on("data", (d) => (out += d));
      c.stderr.on("data", (d: Buffer) => {
        err += d;
        for (const line of d.toString().split("\n").filter(Boolean)) log(line);
      });
      c.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`fuzz ${format} exited ${code}: ${err.slice(-2000)}`))));
    });
  // one process per format, two at a time: the machine the campaign was sized for has two cores
  const formats = FUZZ_FORMATS;
  const results: FuzzResult[] = new Array(formats.length);
  let next = 0;
  const worker = async () => {
    while (next < formats.length) {
      const i = next++;
      results[i] = await one(formats[i]!);
    }
  };
  await Promise.all([worker(), worker()]);
  return results;
}

async function part<T>(name: Part, fn: () => Promise<T>): Promise<T | { error: string } | undefined> {
  if (!only.has(name)) return undefined;
  log(`${name}: start`);
  try {
    const r = await fn();
    log(`${name}: done`);
    return r;
  } catch (e) {
    log(`${name}: FAILED ${(e as Error).stack ?? e}`);
    return { error: (e as Error).message };
  }
}

const startedAt = new Date();
const results: CampaignResults = {
  startedAt: startedAt.toISOString(),
  finishedAt: "",
  quick,
  settings,
  environment: {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    loadAverageAtEnd: [],
    git: git(),
  },
  parts: {},
  ok: false,
};

results.parts.fuzz = await part("fuzz", fuzzAll);
results.parts.kill = await part("kill", async () => {
  const out: KillResult[] = [];
  const s = await Deployment.sqlite();
  try {
    out.push(await killUnderLoad(s, settings.kill));
  } finally {
    await s.close();
  }
  return out;
});

// the cluster parts share one private PostgreSQL + Redis and one two-instance deployment
if (only.has("kill") || only.has("outage")) {
  let pg: PrivatePostgres | undefined;
  let redis: PrivateRedis | undefined;
  let c: Deployment | undefined;
  try {
    [pg, redis] = await Promise.all([PrivatePostgres.start(), PrivateRedis.start()]);
    c = await Deployment.cluster(pg, redis);
    const cluster = c;
    if (only.has("kill")) {
      const r = await part("kill", () => killUnderLoad(cluster, settings.kill));
      if (Array.isArray(results.parts.kill) && r) results.parts.kill.push(r as KillResult);
    }
    const [p, rd] = [pg, redis];
    results.parts.outage = await part("outage", async () => [
      await storeOutage(cluster, { store: "postgres", stop: () => p.stop(), resume: () => p.resume(), ...settings.outage }),
      await storeOutage(cluster, { store: "redis", stop: () => rd.stop(), resume: () => rd.resume(), ...settings.outage }),
    ]);
  } catch (e) {
    log(`private PostgreSQL / Redis: FAILED ${(e as Error).stack ?? e}`);
    const error = { error: (e as Error).message };
    if (only.has("outage")) results.parts.outage = error;
    if (only.has("kill")) results.parts.kill = error;
  } finally {
    await c?.close();
    await Promise.allSettled([pg?.destroy(), redis?.destroy()]);
  }
}

/** `run` against a fresh SQLite deployment of its own, closed afterwards whatever happens */
async function onSqlite<T>(run: (d: Deployment) => Promise<T>): Promise<T> {
  const d = await Deployment.sqlite();
  try {
    return await run(d);
  } finally {
    await d.close();
  }
}

results.parts.soak = await part("soak", () => onSqlite((d) => soak(d, settings.soak)));
results.parts.slow = await part("slow", () => onSqlite((d) => slowClients(d, settings.slow)));

results.finishedAt = new Date().toISOString();
results.environment.loadAverageAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
const partOk = (r: unknown): boolean => {
  if (r === undefined) return true;
  if (Array.isArray(r)) return r.every(partOk);
  return typeof r === "object" && r !== null && (r as { ok?: boolean; violations?: number }).ok !== false && !("error" in r) &&
    ((r as { violations?: number }).violations ?? 0) === 0;
};
results.ok = Object.values(results.parts).every(partOk);

const dir = path.join(REPO, "reliability/results");
mkdirSync(dir, { recursive: true });
const file = flags.out ?? path.join(dir, quick ? "quick.json" : "latest.json");
writeFileSync(file, JSON.stringify(results, null, 2) + "\n");
if (!quick && !flags.out) copyFileSync(file, path.join(dir, `${results.startedAt.replace(/[:.]/g, "-")}.json`));
console.log(renderTable(results));
console.log(`\nJSON: ${path.relative(process.cwd(), file)}`);
process.exit(results.ok ? 0 : 1);
