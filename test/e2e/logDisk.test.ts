import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { request } from "undici";
import { droppedLogLines, LogDestination } from "../../src/logging.ts";
import { rawConnect } from "../helpers/rawHttp.ts";
import { startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { fillUp, mountTinyFs, unmountTinyFs } from "../helpers/tinyFs.ts";

const dropped = (reason: string) => droppedLogLines().get(reason) ?? 0;

/** `name{labels} value` of a Prometheus text exposition; undefined when the series is not there. */
function metric(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * Logging must never take the service down. With pino's own destination, a full disk under stdout made the process
 * hang for good in pino's exit-time flush (a sleep loop retrying the write): its port stayed bound, /healthz timed
 * out and SIGTERM was ignored until space was freed.
 */
describe("a full log disk, and a log reader that stalls", () => {
  const root = mkdtempSync(path.join(tmpdir(), "attestd-logdisk-"));
  const mounts: string[] = [];
  const servers: ServerProcess[] = [];
  const tiny = (name: string) => {
    const dir = path.join(root, name);
    mountTinyFs(dir, "64k");
    mounts.push(dir);
    return dir;
  };
  after(async () => {
    for (const s of servers) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    for (const m of mounts) unmountTinyFs(m);
    rmSync(root, { recursive: true, force: true });
  });

  it("a server logging to a full disk answers /healthz, counts the dropped lines and ends on SIGTERM within its grace", async () => {
    const logDir = tiny("log");
    fillUp(logDir);
    const logFile = path.join(logDir, "attestd.log");
    const fd = openSync(logFile, "a");
    let server: ServerProcess;
    try {
      server = await startServer(
        ["--insecure-http", "--data-dir", path.join(root, "data"), "--log-format", "json", "--shutdown-grace-ms", "20000"],
        { stdout: fd },
      );
    } finally {
      closeSync(fd);
    }
    servers.push(server);
    for (let i = 0; i < 3; i++) {
      const res = await request(`${server.url}/healthz`);
      assert.equal(res.statusCode, 200);
      assert.deepEqual(await res.body.json(), { status: "ok" });
    }
    const res = await request(`${server.url}/metrics`);
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    // at least its start-up lines ("secrets key generated", "attestd listening") found no space
    assert.ok((metric(text, 'attestd_log_lines_dropped_total{reason="ENOSPC"}') ?? 0) >= 2, text.split("\n").filter((l) => l.includes("log_lines")).join("\n"));
    assert.equal(readFileSync(logFile).length, 0, "nothing could be written");

    // the "shutting down" line meets the full disk too; the close still runs and the exit is the clean one (0),
    // not the grace period's forced exit (1). The wait is a bound for a hang, not a speed check.
    const exit = await Promise.race([server.stop("SIGTERM"), new Promise((r) => setTimeout(r, 60_000, "still running after 60 s").unref())]);
    assert.equal(exit, 0, server.output());
  });

  it("a line that met a full disk is dropped and counted; once space is back the next line is written whole", () => {
    const dir = tiny("dest");
    const filler = fillUp(dir);
    const file = path.join(dir, "log");
    const fd = openSync(file, "a");
    try {
      const dest = new LogDestination(fd);
      const before = dropped("ENOSPC");
      dest.write('{"msg":"lost"}\n');
      dest.write('{"msg":"lost too"}\n');
      assert.equal(dropped("ENOSPC") - before, 2);
      rmSync(filler);
      dest.write('{"msg":"kept"}\n');
      assert.equal(readFileSync(file, "utf8"), '{"msg":"kept"}\n');
      assert.equal(dropped("ENOSPC") - before, 2);
    } finally {
      closeSync(fd);
    }
  });

  it("a line the disk cut short is followed by a newline, so the next line after space returns is whole", () => {
    const dir = tiny("cut");
    const file = path.join(dir, "log");
    const fd = openSync(file, "a");
    try {
      const dest = new LogDestination(fd);
      dest.write('{"msg":"first"}\n'); // the file now has a page, mostly free
      const filler = fillUp(dir);
      const before = dropped("ENOSPC");
      dest.write(JSON.stringify({ msg: "y".repeat(8000) }) + "\n"); // fills the rest of that page, then meets ENOSPC
      assert.equal(dropped("ENOSPC") - before, 1);
      rmSync(filler);
      dest.write('{"msg":"after"}\n');
      const lines = readFileSync(file, "utf8").split("\n");
      assert.equal(lines[0], '{"msg":"first"}');
      assert.ok(lines[1]!.startsWith('{"msg":"yyy') && lines[1]!.length < 8000, "the cut line, as far as it got");
      assert.equal(lines[2], '{"msg":"after"}');
    } finally {
      closeSync(fd);
    }
  });

  it("a pipe nobody reads never blocks a write: a bounded backlog waits, later lines are dropped and counted, the rest arrive whole", async () => {
    // `cat` copies its stdin to a pipe this test does not read for now: both pipes fill, then every write answers EAGAIN
    const reader = spawn("cat", [], { stdio: ["pipe", "pipe", "ignore"] });
    try {
      reader.stdout.pause();
      const fd = (reader.stdin as unknown as { _handle: { fd: number } })._handle.fd;
      assert.ok(fd > 2, "the pipe's write end");
      const dest = new LogDestination(fd);
      const before = dropped("backlog");
      const lines = 4000; // ~4 MB: several times the pipes and the 1 MiB backlog together
      for (let i = 0; i < lines; i++) dest.write(JSON.stringify({ i, msg: "x".repeat(1000) }) + "\n"); // a blocking write would hang here
      const lost = dropped("backlog") - before;
      assert.ok(lost > lines / 2, `dropped ${lost} of ${lines}`);
      assert.ok(lost < lines, "the pipes and the backlog took some");

      // the collector reads again: everything not dropped arrives, each line whole, in order
      let got = "";
      reader.stdout.on("data", (d: Buffer) => (got += d.toString()));
      reader.stdout.resume();
      const expected = lines - lost;
      const deadline = Date.now() + 60_000;
      while (got.split("\n").length - 1 < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const received = got.split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { i: number }).i);
      assert.equal(received.length, expected);
      assert.deepEqual(received, [...received].sort((a, b) => a - b));
      assert.equal(received[0], 0);
    } finally {
      reader.kill("SIGKILL");
    }
  });

  it("a server whose stdout pipe nobody reads answers /healthz and ends on SIGTERM", async () => {
    // a stalled collector: `sleep` never reads its stdin, and the pipe is full before the server starts
    const reader = spawn("sleep", ["600"], { stdio: ["pipe", "ignore", "ignore"] });
    try {
      const fd = (reader.stdin as unknown as { _handle: { fd: number } })._handle.fd;
      const chunk = Buffer.alloc(4096, "z");
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "EAGAIN") break;
          throw err;
        }
      }
      const server = await startServer(["--insecure-http", "--data-dir", path.join(root, "stalled"), "--log-format", "json"], { stdout: fd });
      servers.push(server);
      for (let i = 0; i < 3; i++) {
        const res = await request(`${server.url}/healthz`);
        assert.equal(res.statusCode, 200);
        await res.body.text();
      }
      const exit = await Promise.race([server.stop("SIGTERM"), new Promise((r) => setTimeout(r, 60_000, "still running after 60 s").unref())]);
      assert.equal(exit, 0, server.output());
    } finally {
      reader.kill("SIGKILL");
    }
  });

  it("a shutdown that something holds up (a request whose body never comes) ends at --shutdown-grace-ms, exit 1, saying so", async () => {
    const server = await startServer(["--insecure-http", "--data-dir", path.join(root, "grace"), "--log-format", "json", "--shutdown-grace-ms", "1000"]);
    servers.push(server);
    // in flight until the 30 s request timeout: the graceful close waits for it
    const conn = await rawConnect(server.port, "POST /v2/blobs?nonce=x HTTP/1.1\r\nHost: a\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\nabc");
    try {
      await new Promise((r) => setTimeout(r, 200));
      const exit = await Promise.race([server.stop("SIGTERM"), new Promise((r) => setTimeout(r, 20_000, "still running after 20 s").unref())]);
      assert.equal(exit, 1, server.output());
      assert.match(server.output(), /"msg":"shutdown did not finish within the grace period; exiting"/);
    } finally {
      conn.socket.destroy();
    }
  });
});
