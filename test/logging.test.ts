import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { resolveLogFormat } from "../src/logging.ts";
import { startupBanner } from "../src/main.ts";
import { CLI, freePort, REPO, startServer, type ServerProcess } from "./helpers/serverProcess.ts";

const STATUS = path.join(REPO, "test/vectors/android-key/google_android-key-attestation/status.json");

async function eventually(what: string, read: () => string, ok: (s: string) => boolean, ms = 10_000): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const s = read();
    if (ok(s)) return s;
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms; output so far:\n${s}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * `attestd serve` under a real pseudo-terminal (util-linux `script`), as `npm start` in a terminal runs it: what a
 * person sees. Returns the output once `until` holds, then stops the service.
 */
async function serveInTerminal(args: string[], until: (out: string) => boolean): Promise<string> {
  const port = await freePort();
  const cmd = [process.execPath, ...CLI, "serve", "--port", String(port), ...args]
    .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
    .join(" ");
  const child = spawn("script", ["-qec", cmd, "/dev/null"], { cwd: REPO, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  try {
    return await eventually("the service started", () => out, until, 60_000);
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
}

describe("logs a person can read, and logs a machine can read", () => {
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  const tempDir = () => {
    const d = mkdtempSync(path.join(tmpdir(), "attestd-log-"));
    dirs.push(d);
    return d;
  };
  after(async () => {
    for (const s of servers) await s.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("auto is pretty on a terminal and JSON anywhere else; an explicit format wins", () => {
    assert.equal(resolveLogFormat("auto", true), "pretty");
    assert.equal(resolveLogFormat("auto", false), "json");
    assert.equal(resolveLogFormat("json", true), "json");
    assert.equal(resolveLogFormat("pretty", false), "pretty");
  });

  it("the banner names the URL, the CA to trust, the portal and the commands to run next", () => {
    const fresh = startupBanner({ address: "https://127.0.0.1:8443", caFile: "data/tls/ca.pem", tenants: 0, portal: "https://localhost:8443", operators: 0 });
    // the loopback address as people type it: the host name of the dev certificate, the portal and the README
    assert.match(fresh, /attestd is serving https:\/\/localhost:8443\n/);
    assert.match(fresh, /curl --cacert data\/tls\/ca\.pem https:\/\/localhost:8443\/healthz/);
    assert.match(fresh, /API reference: +https:\/\/localhost:8443\/docs /);
    assert.match(fresh, /attestd -- tenant create acme/);
    assert.match(fresh, /attestd -- key create --tenant acme/);
    assert.match(fresh, /The portal: +https:\/\/localhost:8443\/portal\/\n/);
    assert.match(fresh, /npm run --silent attestd -- user invite --operator --email you@example\.com\n/, "the CLI's default public URL is the portal's");
    // with --api-docs false there is no /docs to point at: the document itself
    assert.match(startupBanner({ address: "https://127.0.0.1:8443", tenants: 1, portal: "https://localhost:8443", operators: 1, apiDocs: false }), /API reference: +https:\/\/localhost:8443\/openapi\.json /);
    // with tenants and an operator in place the set-up commands are noise; an operator certificate has no dev CA
    const running = startupBanner({ address: "https://attest.example:443", tenants: 3, portal: "https://attest.example", operators: 1 });
    assert.doesNotMatch(running, /tenant create|--cacert|dev CA|user invite/);
    assert.match(running, /curl https:\/\/attest\.example:443\/healthz/);
    assert.match(running, /The portal: +https:\/\/attest\.example\/portal\//);
    // a portal elsewhere than the CLI's default: the invitation command says where, so its link is right
    const elsewhere = startupBanner({ address: "https://0.0.0.0:9443", tenants: 1, portal: "https://localhost:9443", operators: 0 });
    assert.match(elsewhere, /user invite --operator --email you@example\.com --public-url https:\/\/localhost:9443\n/);
  });

  it("npm start in a terminal: pretty lines, then the URL, the dev CA and what to do next", async () => {
    const dir = tempDir();
    const out = await serveInTerminal(["--data-dir", dir, "--android-status", STATUS], (s) => s.includes("Stop: Ctrl-C"));
    assert.match(out, /INFO.*attestd listening/);
    assert.match(out, /attestd is serving https:\/\/localhost:\d+/);
    assert.ok(out.includes(`Its dev CA (trust it):  ${path.join(dir, "tls/ca.pem")}`), out);
    assert.match(out, /tenant create acme/);
    // a fresh data directory has no operator yet: how to make the first one, with this server's portal URL
    const port = /attestd is serving https:\/\/localhost:(\d+)/.exec(out)![1];
    assert.ok(out.includes(`The portal:             https://localhost:${port}/portal/`), out);
    assert.ok(out.includes(`user invite --operator --email you@example.com --public-url https://localhost:${port}`), out);
    assert.ok(!out.split(/\r?\n/).some((l) => l.startsWith('{"level"')), "no JSON line on a terminal");
  });

  it("--log-format json on a terminal: one JSON object per line, no banner", async () => {
    const dir = tempDir();
    const out = await serveInTerminal(["--data-dir", dir, "--android-status", STATUS, "--log-format", "json"], (s) =>
      s.includes('"msg":"attestd listening"'),
    );
    const lines = out.split(/\r?\n/).filter((l) => l.trim() !== "");
    for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), `not JSON: ${l}`);
    assert.ok(!out.includes("attestd is serving"), "no banner in JSON mode");
  });

  it("piped (a collector, systemd, a container): JSON by default, the listening line carries the URL and CA", async () => {
    const dir = tempDir();
    const server = await startServer(["--data-dir", dir], { tls: { caFile: path.join(dir, "tls/ca.pem") } });
    servers.push(server);
    const out = await eventually("the listening line", server.output, (s) => s.includes("attestd listening"));
    const records = out
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const listening = records.find((r) => r.msg === "attestd listening");
    assert.equal(listening?.address, server.url);
    assert.equal(listening?.caFile, path.join(dir, "tls/ca.pem"));
    assert.ok(records.some((r) => r.msg === "dev TLS created" && r.caFile === path.join(dir, "tls/ca.pem")));
  });

  it("--log-format pretty without a terminal is honoured (e.g. `| less`), banner included", async () => {
    const dir = tempDir();
    const server = await startServer(["--data-dir", dir, "--log-format", "pretty"], { tls: { caFile: path.join(dir, "tls/ca.pem") } });
    servers.push(server);
    const out = await eventually("the banner", server.output, (s) => s.includes("Stop: Ctrl-C"));
    assert.match(out, /INFO: attestd listening/);
    assert.ok(out.includes(`attestd is serving ${server.url.replace("127.0.0.1", "localhost")}`), out);
    assert.ok(!out.includes("\u001b["), "no colour codes when the output is not a terminal");
  });
});
