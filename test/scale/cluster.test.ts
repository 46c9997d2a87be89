import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import net from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { deviceErrorBlob, issueNonce, KEY, request, tenantWithKeys } from "./harness.ts";
import { parseResponse, rawConnect, serverClosed } from "../helpers/rawHttp.ts";
import { startInstance, type Instance } from "../helpers/serverProcess.ts";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Per-worker request counts for one route, from that worker's /metrics. */
function counts(metrics: string, route: string): Record<string, number> {
  const out: Record<string, number> = {};
  const re = /^attestd_http_requests_total\{([^}]*)\} (\d+)$/gm;
  for (const m of metrics.matchAll(re)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.route === route) out[labels.status!] = (out[labels.status!] ?? 0) + Number(m[2]);
  }
  return out;
}

/** `attestd serve --workers 2` on the embedded SQLite store. */
describe("serve --workers (node:cluster) on SQLite", () => {
  let dir: string;
  let primary: Instance;
  let limited: string;
  let key: string;

  const workerPids = () =>
    primary
      .logs()
      .filter((r) => r.msg === "worker listening")
      .map((r) => r.workerPid as number);

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-cluster-"));
    const keys = await tenantWithKeys(["--data-dir", dir], "cl", [{ rps: 10_000, burst: 10_000 }, { rps: 0.001, burst: 5 }]);
    [key, limited] = [keys[0]!, keys[1]!];
    primary = await startInstance(["--data-dir", dir, "--workers", "2", "--headers-timeout-ms", "1000", "--request-timeout-ms", "3000"]);
    await primary.waitForLog(() => workerPids().length === 2);
  });

  after(async () => {
    if (primary && primary.proc.exitCode === null && primary.proc.signalCode === null) {
      primary.kill("SIGKILL");
      await primary.exited;
    }
    for (const pid of workerPids()) if (alive(pid)) process.kill(pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs two workers on one port", async () => {
    const listening = primary.logs().filter((r) => r.msg === "worker listening");
    assert.equal(listening.length, 2);
    assert.deepEqual(
      listening.map((r) => r.port),
      [primary.port, primary.port],
    );
    assert.equal(new Set(workerPids()).size, 2);
    assert.ok(!workerPids().includes(primary.proc.pid!), "the primary serves no HTTP itself");
  });

  it("keeps a key's rate limit per key, not per worker", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await request("POST", `${primary.base}/v2/nonces`, { [KEY]: limited })).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    // Proof that both workers answered: each worker's /metrics counts only its own requests. Five successes cannot
    // split evenly, so the two workers' snapshots differ, and together they account for all twelve requests.
    const snapshots = new Map<string, Record<string, number>>();
    for (let i = 0; i < 10 && snapshots.size < 2; i++) {
      const c = counts((await request("GET", `${primary.base}/metrics`)).body, "/v2/nonces");
      snapshots.set(JSON.stringify(c), c);
    }
    assert.equal(snapshots.size, 2, `one worker answered everything: ${[...snapshots.keys()]}`);
    const total = { ok: 0, limited: 0 };
    for (const c of snapshots.values()) {
      total.ok += c["200"] ?? 0;
      total.limited += c["429"] ?? 0;
    }
    assert.deepEqual(total, { ok: 5, limited: 7 });
  });

  it("shares nonces between workers through the SQLite file", async () => {
    for (let i = 0; i < 4; i++) {
      const nonce = await issueNonce(primary.base, key);
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          request("POST", `${primary.base}/v2/blobs?nonce=${nonce}`, { [KEY]: key, "content-type": "application/octet-stream" }, deviceErrorBlob()),
        ),
      );
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 400, 400, 400, 400, 400]);
    }
  });

  it("cuts off slow clients in every worker (408) while others are served", async () => {
    // the primary hands connections to the workers in turn: four slow ones reach both
    const slow = await Promise.all(Array.from({ length: 4 }, () => rawConnect(primary.port, "POST /v2/nonces HTTP/1.1\r\nHost: x\r\n")));
    for (let i = 0; i < 4; i++) assert.equal((await request("POST", `${primary.base}/v2/nonces`, { [KEY]: key })).status, 200);
    for (const c of slow) {
      const answer = parseResponse(await serverClosed(c, "a slow client of the cluster"));
      assert.equal(answer?.status, 408);
      assert.equal(answer?.json().error.code, "4080000");
    }
  });

  it("restarts a worker that dies", async () => {
    const [victim, survivor] = workerPids();
    process.kill(victim!, "SIGKILL");
    await primary.waitForLog((r) => r.msg === "worker died; restarting" && r.workerPid === victim);
    await primary.waitForLog(() => workerPids().length === 3);
    const replacement = workerPids()[2]!;
    assert.ok(alive(replacement) && alive(survivor!) && !alive(victim!));
    for (let i = 0; i < 6; i++) assert.equal((await request("POST", `${primary.base}/v2/nonces`, { [KEY]: key })).status, 200);
  });

  it("drains in-flight requests on SIGTERM, then stops every worker and exits 0", async () => {
    const nonce = await issueNonce(primary.base, key);
    const blob = deviceErrorBlob();
    // a request whose body is still arriving when the signal comes
    const socket = net.connect(primary.port, "127.0.0.1");
    await new Promise<void>((r) => socket.once("connect", () => r()));
    let response = "";
    socket.on("data", (d) => (response += d));
    const closed = new Promise<void>((r) => socket.once("close", () => r()));
    socket.write(
      `POST /v2/blobs?nonce=${nonce} HTTP/1.1\r\nHost: x\r\n${KEY}: ${key}\r\nContent-Type: application/octet-stream\r\n` +
        `Content-Length: ${blob.length}\r\nConnection: close\r\n\r\n`,
    );
    socket.write(blob.subarray(0, 3));
    await new Promise((r) => setTimeout(r, 200)); // the worker has parsed the headers: the request is in flight
    primary.kill("SIGTERM");
    await primary.waitForLog((r) => r.msg === "draining workers");
    await new Promise((r) => setTimeout(r, 300));
    // write, not end: a client that half-closes gets no answer from an asynchronous handler (node:http ends the
    // response side at the client's FIN); Connection: close has the server close the socket after its response
    socket.write(blob.subarray(3));
    await closed;
    assert.match(response, /^HTTP\/1\.1 200 /, response);
    assert.match(response, /"status":"DeviceError"/);
    assert.equal(await primary.exited, 0);
    await new Promise((r) => setTimeout(r, 200));
    for (const pid of workerPids()) assert.ok(!alive(pid), `worker ${pid} still running`);
    // and new connections are refused
    await assert.rejects(request("GET", `${primary.base}/healthz`));
  });
});
