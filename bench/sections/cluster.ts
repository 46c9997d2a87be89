import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { devTls, provisionApiKey, startAttestd, type Deployment } from "../lib/attestd.ts";
import { adminQuery, dbUrl, ensureServices, PG_ADMIN_URL, REDIS_URL } from "../lib/backing.ts";
import { round } from "../lib/load.ts";
import { measureAttestd, type LoadSettings, type MeasuredLoad, type PartAResult } from "../lib/partA.ts";
import { REPO } from "../lib/processes.ts";
import type { VendorFixture } from "../lib/vendorFixture.ts";

export interface ClusterRun {
  label: string;
  store: "sqlite" | "postgres+redis";
  workers: number;
  nonces: MeasuredLoad;
  blobs: MeasuredLoad;
}

export interface ClusterSection {
  status: "ok";
  how: { loadGenerator: string; database: string; redis: string; commands: string[] };
  runs: ClusterRun[];
  scaling: {
    /** 2xx/s gained by going from 1 to 2 workers on PostgreSQL + Redis */
    perAddedWorker: { nonces: number; blobs: number };
    /** 2-worker 2xx/s ÷ (2 × 1-worker 2xx/s) */
    efficiency: { nonces: number; blobs: number };
    /** 2xx per server CPU-second (one dedicated core), 2 workers */
    perServerCore: { nonces?: number; blobs?: number };
    notes: string[];
  };
  notes: string[];
}

export interface ClusterContext {
  tmp: string;
  fx: VendorFixture;
  settings: LoadSettings;
  /** the SQLite single-process figures of the HTTP section, measured in this same invocation */
  sqlite?: PartAResult;
  log: (line: string) => void;
}

/** Why the section cannot run in this tree, or undefined when it can. */
export function clusterUnavailable(): string | undefined {
  const need = ["src/cluster.ts", "src/store/postgres", "src/store/redis"].filter((f) => !existsSync(path.join(REPO, f)));
  return need.length ? `the multi-instance code is not in this tree yet (missing ${need.join(", ")})` : undefined;
}

/**
 * Issue 5: `serve --workers N --store postgres --redis-url ...` with 1 and 2 workers on a fresh database, beside
 * the SQLite single-process figures from the HTTP section. The scaling note says what one more worker bought on
 * this machine and, from the CPU the server burned, what one dedicated core serves.
 */
export async function runClusterSection(ctx: ClusterContext): Promise<ClusterSection> {
  const { tmp, fx, settings: s, log } = ctx;
  const down = await ensureServices(log);
  if (down) throw new Error(`PostgreSQL/Redis are not answering: ${down}`);

  const db = `attestd_bench_${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}_${process.pid}`;
  await adminQuery(`CREATE DATABASE ${db}`);
  const notes: string[] = [];
  const runs: ClusterRun[] = [];
  const commands: string[] = [];
  try {
    // the data dir holds only the dev TLS material (and trust caches) here
    const dataDir = path.join(tmp, "attestd-postgres");
    const tls = await devTls(dataDir);
    const base: Omit<Deployment, "label" | "workers"> = {
      dataDir,
      storeArgs: [
        "--data-dir", dataDir,
        "--store", "postgres",
        "--database-url", dbUrl(db),
        "--redis-url", REDIS_URL,
      ],
    };
    const apiKey = await provisionApiKey({ ...base, label: "postgres", workers: 1 });

    if (ctx.sqlite) {
      runs.push({ label: "sqlite, 1 process", store: "sqlite", workers: 1, nonces: ctx.sqlite.nonces, blobs: ctx.sqlite.blobs });
    } else notes.push("the SQLite single-process row is missing (the HTTP section did not run)");

    for (const workers of [1, 2]) {
      const d: Deployment = { ...base, label: `postgres+redis, ${workers} worker${workers > 1 ? "s" : ""}`, workers };
      log(`cluster: attestd ${d.label}: nonces, then blobs`);
      const started = await startAttestd(d, fx, tls);
      commands.push(started.command);
      try {
        const r = await measureAttestd(started.server.origin, started.server.pid, apiKey, fx, s);
        runs.push({ label: d.label, store: "postgres+redis", workers, nonces: r.nonces, blobs: r.blobs });
        for (const [what, x] of [["nonces", r.nonces], ["blobs", r.blobs]] as const) {
          if (x.non2xx > 0 || x.errors > 0) notes.push(`${d.label} ${what}: ${x.non2xx} non-2xx, ${x.errors} errors (${JSON.stringify(x.statusCodes)})`);
          if (x.stoppedEarly) notes.push(`${d.label} ${what}: the nonce pool ran out after ${x.durationSec} s`);
        }
      } finally {
        await started.server.stop();
      }
    }
  } finally {
    await adminQuery(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch((e: unknown) =>
      notes.push(`could not drop database ${db}: ${(e as Error).message}`),
    );
  }

  const one = runs.find((r) => r.store !== "sqlite" && r.workers === 1)!;
  const two = runs.find((r) => r.store !== "sqlite" && r.workers === 2)!;
  const sqlite = runs.find((r) => r.store === "sqlite");
  const perAddedWorker = { nonces: round(two.nonces.rps - one.nonces.rps, 1), blobs: round(two.blobs.rps - one.blobs.rps, 1) };
  const efficiency = {
    nonces: round(two.nonces.rps / (2 * one.nonces.rps), 2),
    blobs: round(two.blobs.rps / (2 * one.blobs.rps), 2),
  };
  const perServerCore = { nonces: two.nonces.rpsPerServerCore, blobs: two.blobs.rpsPerServerCore };
  const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(Math.round(x))}`;
  const usage = (x: MeasuredLoad) => {
    const total = (x.serverCores ?? 0) + x.loadGenCores + (x.backingCores ?? 0) + (x.otherCores ?? 0);
    return `${total.toFixed(2)} of ${os.cpus().length} cores busy: attestd ${x.serverCores ?? "?"}, load generator ${x.loadGenCores}, PostgreSQL+Redis ${x.backingCores ?? "?"}, other processes ${x.otherCores ?? "?"}`;
  };
  const perCore = [one.blobs.rpsPerServerCore, two.blobs.rpsPerServerCore].filter((x): x is number => x !== undefined);
  const perCoreNonces = [one.nonces.rpsPerServerCore, two.nonces.rpsPerServerCore].filter((x): x is number => x !== undefined);
  const range = (xs: number[]) => (xs.length ? `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}` : "?");
  const scalingNotes = [
    `1 → 2 workers (PostgreSQL + Redis): ${signed(perAddedWorker.blobs)} blobs/s and ${signed(perAddedWorker.nonces)} nonces/s for the added worker (${Math.round(efficiency.blobs * 100)} % / ${Math.round(efficiency.nonces * 100)} % of linear).`,
    `Blobs, 1 worker: ${usage(one.blobs)}. 2 workers: ${usage(two.blobs)}. On ${os.cpus().length} cores shared with the load generator and the databases, a second worker has at most the CPU those leave over, so this box cannot show linear scaling; the CPU figures are what carries over.`,
    `Prediction: one core given to an attestd worker serves ≈ ${range(perCore)} blobs/s and ≈ ${range(perCoreNonces)} nonces/s (2xx per attestd CPU-second, 1- and 2-worker runs); with N such cores expect ≈ N × that, as long as PostgreSQL and Redis (here ${two.blobs.backingCores ?? "?"} cores at ${Math.round(two.blobs.rps)} blobs/s) have cores of their own and keep up.`,
  ];
  const machineBusy = (x: MeasuredLoad) => (x.serverCores ?? 0) + x.loadGenCores + (x.backingCores ?? 0) + (x.otherCores ?? 0);
  const saturated = [one, two].filter((r) => machineBusy(r.blobs) >= 0.85 * os.cpus().length);
  const idle = [one, two].filter((r) => (r.blobs.serverCores ?? 1) < 0.75 * r.workers && !saturated.includes(r));
  if (saturated.some((r) => (r.blobs.otherCores ?? 0) > 0.25)) {
    scalingNotes.push(
      `The machine was saturated and other processes took ${saturated.map((r) => `${r.blobs.otherCores} cores (${r.label})`).join(", ")}: the throughput figures of those runs are low and the per-core ones are the ones to read.`,
    );
  }
  if (idle.length) {
    scalingNotes.push(
      `Not CPU-bound: ${idle.map((r) => `${r.label} used ${r.blobs.serverCores} of ${r.workers} core(s) for blobs`).join("; ")}, so its requests spent most of their time waiting on PostgreSQL/Redis round trips and commits (p50 ${idle.map((r) => r.blobs.latencyMs.p50.toFixed(1)).join(" / ")} ms with ${s.connections} connections); more concurrent requests per worker should raise throughput until its core is busy.`,
    );
  }
  if (sqlite) {
    const a = sqlite.blobs.rpsPerServerCore;
    const b = one.blobs.rpsPerServerCore;
    scalingNotes.push(
      `SQLite, 1 process: ${Math.round(sqlite.blobs.rps)} blobs/s, ${a ?? "?"} per attestd core; PostgreSQL + Redis, 1 worker: ${Math.round(one.blobs.rps)} blobs/s, ${b ?? "?"} per attestd core${a && b ? ` (${signed((b / a - 1) * 100)} % per core)` : ""}: the network stores cost client-side CPU but let instances share nonces, verdicts and limits.`,
    );
  }
  return {
    status: "ok",
    how: {
      loadGenerator: `autocannon, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s per workload after ${s.warmupSec} s warm-up; one server at a time, all on this 2-core box`,
      database: `fresh database ${db} on ${new URL(PG_ADMIN_URL).host}, dropped afterwards`,
      redis: REDIS_URL,
      commands,
    },
    runs,
    scaling: { perAddedWorker, efficiency, perServerCore, notes: scalingNotes },
    notes,
  };
}
