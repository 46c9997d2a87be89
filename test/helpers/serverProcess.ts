import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CLI = ["--import", "tsx", path.join(REPO, "src/cli/main.ts")];

/**
 * The environment of a spawned attestd. The default --android-status is Google's URL, which a child process
 * would fetch for real (no fetch can be injected across processes); Google's sample list from the vectors keeps
 * every spawned server's android-key trust the same on any network. A test's own --android-status flag, or
 * ATTESTD_ANDROID_STATUS in `env`, still wins.
 */
function childEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ATTESTD_ANDROID_STATUS: path.join(REPO, "test/vectors/android-key/google_android-key-attestation/status.json"),
    ...env,
  };
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

export interface ServerProcess {
  url: string;
  port: number;
  proc: ChildProcess;
  output: () => string;
  dispatcher: Agent;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `attestd serve` as a child process and waits until /healthz answers. */
export async function startServer(args: string[], opts: { tls?: { caFile: string } | false; port?: number } = {}): Promise<ServerProcess> {
  const port = opts.port ?? (await freePort());
  const tls = opts.tls ?? false;
  const proc = spawn(process.execPath, [...CLI, "serve", "--host", "127.0.0.1", "--port", String(port), ...args], {
    cwd: REPO,
    env: childEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
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
