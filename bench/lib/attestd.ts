import { readFileSync } from "node:fs";
import { ensureDevTls } from "../../src/tls/devTls.ts";
import { attestdCli, CLI_PATH, freePort, spawnServer, type Server } from "./processes.ts";
import type { VendorFixture } from "./vendorFixture.ts";

/** One way of running attestd: its data dir (dev TLS lives there), its store flags, its worker count. */
export interface Deployment {
  label: string;
  dataDir: string;
  /** flags naming the store, shared by `serve` and the CLI (always includes --data-dir) */
  storeArgs: string[];
  workers: number;
}

/** The embedded default, one process: SQLite in `dataDir`. */
export function sqliteDeployment(dataDir: string, label: string): Deployment {
  return { label, dataDir, storeArgs: ["--data-dir", dataDir], workers: 1 };
}

export interface DevTls {
  caFile: string;
  ca: string;
  certFile: string;
  keyFile: string;
}

/** The dev TLS material of a data dir (made now if absent); `serve --dev-tls` on that dir uses the same files. */
export async function devTls(dataDir: string): Promise<DevTls> {
  const t = await ensureDevTls(dataDir);
  return { caFile: t.caFile, ca: readFileSync(t.caFile, "utf8"), certFile: t.certFile, keyFile: t.keyFile };
}

/** `attestd tenant create` + `attestd key create` through the CLI; returns the API key. */
export async function provisionApiKey(d: Deployment, tenant = "bench"): Promise<string> {
  await attestdCli(["tenant", "create", tenant, ...d.storeArgs, "--log-level", "warn"]);
  const out = await attestdCli(["key", "create", "--tenant", tenant, ...d.storeArgs, "--log-level", "warn"]);
  const key = out.trim().split("\n").pop()!.trim();
  if (!key) throw new Error("attestd key create printed no key");
  return key;
}

/** The serve flags that take the limiter and the nonce cap out of the way of a load test. */
const UNLIMITED = ["--rps", "1000000000", "--burst", "1000000000", "--max-outstanding-nonces", "100000000"];

export function serveArgs(d: Deployment, fx: VendorFixture, port: number): string[] {
  return [
    "serve",
    "--host", "127.0.0.1",
    "--port", String(port),
    ...d.storeArgs,
    "--dev-tls",
    "--vendor-roots", fx.rootsFile,
    "--reference-values", fx.referenceValuesFile,
    ...UNLIMITED,
    ...(d.workers > 1 ? ["--workers", String(d.workers)] : []),
    "--log-level", "info",
  ];
}

export interface StartOptions {
  /** write a V8 CPU profile of the server (single process) into this directory when it exits */
  cpuProfDir?: string;
  /** more serve flags (the android-key workload's --android-roots / --android-status) */
  extraArgs?: string[];
}

/** Starts `attestd serve` as a child process and waits until every worker listens and /healthz answers. */
export async function startAttestd(d: Deployment, fx: VendorFixture, tls: DevTls, o: StartOptions = {}): Promise<{ server: Server; command: string }> {
  const port = await freePort();
  const args = [...serveArgs(d, fx, port), ...(o.extraArgs ?? [])];
  const nodeFlags = o.cpuProfDir ? ["--cpu-prof", "--cpu-prof-dir", o.cpuProfDir] : [];
  const server = await spawnServer({
    name: `attestd (${d.label})`,
    args: [CLI_PATH, ...args],
    nodeFlags,
    origin: `https://127.0.0.1:${port}`,
    ca: tls.ca,
    readyLines: { match: /attestd listening/, count: d.workers },
    timeoutMs: 90_000,
  });
  return { server, command: `node ${nodeFlags.join(" ")} bin/attestd.js ${args.join(" ")}`.replace(/\s+/g, " ") };
}
