import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";

/**
 * The one home for running attestd as an operator does: real `attestd` processes (`node bin/attestd.js ...`, the
 * compiled build `npm test` makes first, as `npm start` and an installed package run it), one-shot CLI commands,
 * free ports. Every test that spawns attestd comes through here.
 */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const CLI = [path.join(REPO, "bin/attestd.js")];

/**
 * The environment of a spawned attestd: the test runner's, without any ATTESTD_* setting of the developer's
 * shell (only the flags a test gives apply), and with --android-status pointing at Google's sample list from
 * the vectors. The default --android-status is Google's URL, which a child process would fetch for real (no
 * fetch can be injected across processes); the sample keeps every spawned server's android-key trust the same
 * on any network. A test's own --android-status flag, or ATTESTD_ANDROID_STATUS in `env`, still wins.
 */
export function childEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const inherited: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("ATTESTD_")) inherited[k] = v;
  return {
    ...inherited,
    ATTESTD_ANDROID_STATUS: path.join(REPO, "test/vectors/android-key/google_android-key-attestation/status.json"),
    ...env,
  };
}

const children = new Set<ChildProcess>();
// a failing test must not leave servers behind
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});

/** `stdout`: a file descriptor the child's stdout goes to (its log), instead of a pipe to this process */
function spawnAttestd(argv: string[], stdout?: number): ChildProcess {
  const proc = spawn(process.execPath, argv, { cwd: REPO, env: childEnv(), stdio: ["ignore", stdout ?? "pipe", "pipe"] });
  children.add(proc);
  proc.once("exit", () => children.delete(proc));
  return proc;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Runs `attestd ARGS` to completion; throws with stderr when it fails. */
export function attestdCli(args: string[], env: NodeJS.ProcessEnv = {}): { stdout: string; stderr: string; status: number } {
  const r = spawnSync(process.execPath, [...CLI, ...args], {
    cwd: REPO,
    env: childEnv(env),
    encoding: "utf8",
    timeout: 60_000,
  });
  return { stdout: r.stdout, stderr: r.stderr, status: r.status ?? -1 };
}

/** `attestdCli` without blocking the event loop (a stand-in in this process can answer the command meanwhile). */
export function attestdCliRun(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string; status: number }> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [...CLI, ...args], { cwd: REPO, env: childEnv(env) });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.on("error", reject);
    c.on("close", (code) => resolve({ stdout, stderr, status: code ?? -1 }));
  });
}

/** `attestdCliRun` for a command expected to succeed: resolves with stdout, rejects with stderr on a non-zero exit. */
export async function attestdCliAsync(args: string[]): Promise<string> {
  const r = await attestdCliRun(args);
  if (r.status !== 0) throw new Error(`attestd ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

export interface ServerProcess {
  url: string;
  port: number;
  proc: ChildProcess;
  output: () => string;
  dispatcher: Agent;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `attestd serve` as a child process and waits until /healthz answers. `entry` replaces the CLI with a
 * test entry point that takes the same flags (test/helpers/slowWorkerServe.ts).
 */
export async function startServer(
  args: string[],
  opts: { tls?: { caFile: string } | false; port?: number; entry?: string; stdout?: number } = {},
): Promise<ServerProcess> {
  const port = opts.port ?? (await freePort());
  const tls = opts.tls ?? false;
  const command = opts.entry ? ["--import", "tsx", path.join(REPO, opts.entry)] : [...CLI, "serve"];
  const proc = spawnAttestd([...command, "--host", "127.0.0.1", "--port", String(port), ...args], opts.stdout);
  let out = "";
  proc.stdout?.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const scheme = args.includes("--insecure-http") ? "http" : "https";
  const url = `${scheme}://127.0.0.1:${port}`;
  // dev TLS writes its CA at start-up, so the client is made once the file exists
  let dispatcher: Agent | undefined;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}: ${out}`);
    if (!dispatcher && (!tls || existsSync(tls.caFile))) {
      dispatcher = new Agent(tls ? { connect: { ca: readFileSync(tls.caFile, "utf8") } } : {});
    }
    try {
      if (!dispatcher) throw new Error("no CA yet");
      const res = await request(`${url}/healthz`, { dispatcher });
      await res.body.text();
      if (res.statusCode === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server not healthy within 60 s: ${out}`);
    await new Promise((r) => setTimeout(r, 150));
  }
  return {
    url,
    port,
    proc,
    output: () => out,
    dispatcher: dispatcher!,
    stop: (signal: NodeJS.Signals = "SIGTERM") =>
      new Promise((resolve) => {
        // a child that already exited, or died of a signal, will emit no further "exit"
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
        proc.once("exit", (code) => resolve(code));
        proc.kill(signal);
      }),
  };
}

/** A plain-HTTP `attestd serve` for the scale-out tests, with its log lines kept and searchable. */
export interface Instance {
  port: number;
  base: string;
  proc: ChildProcess;
  /** stdout + stderr lines so far (pino JSON and the CLI's own lines) */
  lines: string[];
  /** parsed JSON log records so far */
  logs(): Record<string, unknown>[];
  /** resolves with the first log record matching, waiting up to `ms` */
  waitForLog(pred: (r: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  /** resolves with the exit code (or the signal name) once the process has ended */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

const STARTUP_DEADLINE_MS = 60_000;

/**
 * Starts `attestd serve --insecure-http --host 127.0.0.1 --port P` plus `args` and waits until GET `readyPath`
 * answers 200 (or `readyStatus`). The default wait is generous (60 s): a deadline for a start that never comes, not
 * a speed check, and a `--workers` start on a loaded 2-core box took over 20 s.
 */
export async function startInstance(args: string[], opts: { readyPath?: string; timeoutMs?: number } = {}): Promise<Instance> {
  const port = await freePort();
  const proc = spawnAttestd([...CLI, "serve", "--insecure-http", "--host", "127.0.0.1", "--port", String(port), ...args]);
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    lines.push(...chunk.toString().split("\n").filter(Boolean));
    for (const w of waiters) w();
  };
  proc.stdout!.on("data", collect);
  proc.stderr!.on("data", collect);
  const exited = new Promise<number | string>((resolve) => proc.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const logs = () =>
    lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  const inst: Instance = {
    port,
    base: `http://127.0.0.1:${port}`,
    proc,
    lines,
    logs,
    exited,
    kill: (signal = "SIGTERM") => void proc.kill(signal),
    waitForLog: (pred, ms = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const hit = logs().find(pred);
          if (!hit) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`log line not seen in ${ms} ms; output:\n${lines.join("\n")}`));
        }, ms);
        waiters.add(check);
        check();
      }),
  };
  const deadline = Date.now() + (opts.timeoutMs ?? STARTUP_DEADLINE_MS);
  for (;;) {
    const early = await Promise.race([exited, new Promise((r) => setTimeout(r, 100, undefined))]);
    if (early !== undefined) throw new Error(`attestd exited (${early}) before it was ready:\n${lines.join("\n")}`);
    try {
      const r = await request(`${inst.base}${opts.readyPath ?? "/readyz"}`, { reset: true });
      await r.body.text();
      if (r.statusCode === 200) return inst;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`attestd not ready after ${opts.timeoutMs ?? STARTUP_DEADLINE_MS} ms:\n${lines.join("\n")}`);
    }
  }
}
