import { execFile, spawn, type ChildProcess } from "node:child_process";
import { request } from "node:https";
import { createServer } from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { PACKAGE_ROOT } from "../../src/packageInfo.ts";

export const REPO = PACKAGE_ROOT;
/** attestd as an operator runs it: the compiled build (`npm run bench` builds it first) */
const CLI = path.join(REPO, "bin/attestd.js");

/**
 * A module of the bench itself (e.g. "baseline/server") as a child can run it: the compiled .js beside this module
 * under `npm run bench`, the .ts source when the bench is imported from the tests (tsx).
 */
export function benchModule(name: string): string {
  return path.join(import.meta.dirname, "..", name + path.extname(import.meta.filename));
}

/** node's flags for a child running `script`: a TypeScript loader for sources, nothing for compiled code */
function loaderFor(script: string): string[] {
  return script.endsWith(".ts") ? ["--import", "tsx"] : [];
}

/** The environment for children: ours without ATTESTD_* settings, so only the flags we pass apply. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("ATTESTD_")) env[k] = v;
  return env;
}

/** `attestd ARGS` in a child (the operator interface), returning stdout. */
export function attestdCli(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: REPO, env: childEnv(), maxBuffer: 1 << 20, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`attestd ${args.slice(0, 2).join(" ")} failed: ${stderr.trim() || err.message}`));
        else resolve(stdout);
      },
    );
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** GET over HTTPS with the dev CA; resolves with the status (or rejects on a connection error). */
export function httpsGet(origin: string, p: string, ca: string, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(p, origin), { method: "GET", ca, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

export interface Server {
  origin: string;
  pid: number;
  /** SIGTERM, wait for a clean exit (so --cpu-prof writes its profile), SIGKILL after a grace period */
  stop(): Promise<void>;
  /** last lines of the child's output, for error messages */
  tail(): string;
}

interface SpawnOptions {
  name: string;
  args: string[];
  origin: string;
  ca: string;
  /** output lines that must be seen before the server counts as up (e.g. one "listening" per worker) */
  readyLines?: { match: RegExp; count: number };
  nodeFlags?: string[];
  timeoutMs?: number;
}

/**
 * Starts a Node child running `args` (a script, then its arguments), waits until it answers GET /healthz over HTTPS
 * (and prints its ready lines).
 */
export async function spawnServer(o: SpawnOptions): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, [...(o.nodeFlags ?? []), ...loaderFor(o.args[0] ?? ""), ...o.args], {
    cwd: REPO,
    env: childEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let readySeen = 0;
  let exited: number | null | undefined;
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line) continue;
      lines.push(line);
      if (lines.length > 40) lines.shift();
      if (o.readyLines?.match.test(line)) readySeen++;
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exit = new Promise<void>((resolve) => child.once("exit", (code) => ((exited = code), resolve())));
  const tail = () => lines.slice(-15).join("\n");

  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) throw new Error(`${o.name} exited (${exited}) before it was ready:\n${tail()}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${o.name} did not come up within ${(o.timeoutMs ?? 60_000) / 1000} s:\n${tail()}`);
    }
    const linesOk = !o.readyLines || readySeen >= o.readyLines.count;
    if (linesOk) {
      const ok = await httpsGet(o.origin, "/healthz", o.ca).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
    }
    await sleep(100);
  }

  const stop = async () => {
    if (exited !== undefined) return;
    child.kill("SIGTERM");
    const killed = await Promise.race([exit.then(() => false), sleep(15_000).then(() => true)]);
    if (killed) {
      child.kill("SIGKILL");
      await exit;
    }
  };
  return { origin: o.origin, pid: child.pid!, stop, tail };
}

export const CLI_PATH = CLI;
