import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Real `attestd` processes for the scale-out tests: spawned exactly as an operator runs them
 * (`node --import tsx src/cli/main.ts ...`), talked to over real TCP.
 */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The environment without any ATTESTD_* setting of the developer's shell, so only the flags given apply. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("ATTESTD_")) env[k] = v;
  return { ...env, ...extra };
}

const children = new Set<ChildProcess>();
// a failing test must not leave servers behind
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Runs one CLI command to completion; resolves with stdout, rejects with stderr on a non-zero exit. */
export function cli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { cwd: REPO, env: cleanEnv() });
    let out = "";
    let err = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (err += d));
    c.on("error", reject);
    c.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`attestd ${args.join(" ")} exited ${code}: ${err}`))));
  });
}

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

/**
 * Starts `attestd serve --insecure-http --host 127.0.0.1 --port P` plus `args` and waits until GET `readyPath`
 * answers 200 (or `readyStatus`).
 */
export async function startInstance(args: string[], opts: { readyPath?: string; timeoutMs?: number } = {}): Promise<Instance> {
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli/main.ts", "serve", "--insecure-http", "--host", "127.0.0.1", "--port", String(port), ...args],
    { cwd: REPO, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] },
  );
  children.add(proc);
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    lines.push(...chunk.toString().split("\n").filter(Boolean));
    for (const w of waiters) w();
  };
  proc.stdout!.on("data", collect);
  proc.stderr!.on("data", collect);
  const exited = new Promise<number | string>((resolve) =>
    proc.on("exit", (code, signal) => {
      children.delete(proc);
      resolve(code ?? signal ?? -1);
    }),
  );
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
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  for (;;) {
    const early = await Promise.race([exited, new Promise((r) => setTimeout(r, 100, undefined))]);
    if (early !== undefined) throw new Error(`attestd exited (${early}) before it was ready:\n${lines.join("\n")}`);
    try {
      const r = await request("GET", `${inst.base}${opts.readyPath ?? "/readyz"}`);
      if (r.status === 200) return inst;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`attestd not ready after ${opts.timeoutMs ?? 20_000} ms:\n${lines.join("\n")}`);
    }
  }
}

export interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json(): any;
}

/**
 * One HTTP request on its own connection (agent: false), so with --workers consecutive requests reach workers
 * round-robin instead of riding one kept-alive socket to one worker.
 */
export function request(method: string, url: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${url}: no answer in 15 s`)));
    req.end(body);
  });
}

export const KEY = "x-vendor-attest-api-key";
export const OCTET = { "content-type": "application/octet-stream" };

/**
 * The smallest valid vendor container (blob-format.md, version 2): exitCode 1, errString "Error", no data,
 * signature or certificates. It appraises to status DeviceError / verdict Unknown and is stored like any verdict,
 * so it exercises nonce consumption and durable storage without a device simulator or trust setup.
 */
export function deviceErrorBlob(): Buffer {
  const err = Buffer.from("Error", "ascii");
  return Buffer.concat([Buffer.from([1, err.length]), err, Buffer.from([2, 0, 0, 0, 0, 0])]);
}

export async function issueNonce(base: string, key: string): Promise<string> {
  const r = await request("POST", `${base}/v2/nonces`, { [KEY]: key });
  if (r.status !== 200) throw new Error(`nonce: ${r.status} ${r.body}`);
  return r.json().nonce as string;
}

export function postBlob(base: string, key: string, nonce: string, blob = deviceErrorBlob()): Promise<Res> {
  return request("POST", `${base}/v2/blobs?nonce=${encodeURIComponent(nonce)}`, { [KEY]: key, ...OCTET }, blob);
}

/** Creates a tenant and `keys` API keys through the CLI, on the store the given flags name. */
export async function tenantWithKeys(storeFlags: string[], name: string, keys: { rps?: number; burst?: number }[]): Promise<string[]> {
  await cli(["tenant", "create", name, ...storeFlags]);
  return Promise.all(
    keys.map(async (k) => {
      const extra = [...(k.rps ? ["--rps", String(k.rps)] : []), ...(k.burst ? ["--burst", String(k.burst)] : [])];
      return (await cli(["key", "create", "--tenant", name, ...extra, ...storeFlags])).trim();
    }),
  );
}
