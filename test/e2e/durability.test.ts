import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { attestdCli, startServer, type ServerProcess } from "../helpers/serverProcess.ts";

/**
 * The service as an operator runs it: a real process over real HTTPS (dev TLS), stopped and restarted on the
 * same data directory. Nothing acknowledged may be lost, whether the stop is graceful or a SIGKILL.
 */
describe("durability across restarts (real process, HTTPS)", () => {
  let dir: string;
  let key: string;
  let ca: DevCa;
  let leaf: CertifiedKey;
  let args: string[];

  const tlsOf = () => ({ caFile: path.join(dir, "tls", "ca.pem") });
  const call = async (s: ServerProcess, method: "GET" | "POST", url: string, body?: Uint8Array) => {
    const res = await request(`${s.url}${url}`, {
      method,
      dispatcher: s.dispatcher,
      headers: { "x-vendor-attest-api-key": key, ...(body ? { "content-type": "application/octet-stream" } : {}) },
      ...(body ? { body: Buffer.from(body) } : {}),
    });
    return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as any };
  };
  const issue = async (s: ServerProcess) => (await call(s, "POST", "/v2/nonces")).json.nonce as string;
  const blob = (nonce: string) => encodeVendorBlob({ ca, leaf, nonce });

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-e2e-"));
    ca = await createDevCa();
    leaf = await issueDeviceLeaf(ca);
    writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
    writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
    const data = ["--data-dir", path.join(dir, "data")];
    assert.equal(attestdCli(["tenant", "create", "acme", ...data]).status, 0);
    const k = attestdCli(["key", "create", "--tenant", "acme", ...data]);
    assert.equal(k.status, 0, k.stderr);
    key = k.stdout.trim();
    args = [...data, "--vendor-roots", path.join(dir, "roots.pem"), "--reference-values", path.join(dir, "refs.json")];
    dir = path.join(dir, "data");
  });
  after(() => rmSync(path.dirname(dir), { recursive: true, force: true }));

  it("an outstanding nonce works after a restart, a used one stays used, a stored verdict is still there", async () => {
    let s = await startServer(args, { tls: tlsOf() });
    const used = await issue(s);
    const outstanding = await issue(s);
    const first = await call(s, "POST", `/v2/blobs?nonce=${used}`, blob(used));
    assert.equal(first.status, 200);
    assert.equal(first.json.verdict, "Yes");
    const location = String(first.headers.location);
    assert.equal(await s.stop("SIGTERM"), 0, "graceful stop exits 0");

    s = await startServer(args, { tls: tlsOf() });
    try {
      const replay = await call(s, "POST", `/v2/blobs?nonce=${used}`, blob(used));
      assert.equal(replay.status, 400);
      assert.equal(replay.json.error.code, "4000004");
      const later = await call(s, "POST", `/v2/blobs?nonce=${outstanding}`, blob(outstanding));
      assert.equal(later.status, 200);
      assert.equal(later.json.verdict, "Yes");
      const stored = await call(s, "GET", location);
      assert.equal(stored.status, 200);
      assert.deepEqual(stored.json, first.json);
    } finally {
      await s.stop();
    }
  });

  it("SIGKILL right after acknowledged verdicts loses none of them", async () => {
    let s = await startServer(args, { tls: tlsOf() });
    const acknowledged: { location: string; record: unknown }[] = [];
    for (let i = 0; i < 10; i++) {
      const n = await issue(s);
      const r = await call(s, "POST", `/v2/blobs?nonce=${n}`, blob(n));
      assert.equal(r.status, 200);
      acknowledged.push({ location: String(r.headers.location), record: r.json });
    }
    await s.stop("SIGKILL");
    s = await startServer(args, { tls: tlsOf() });
    try {
      for (const a of acknowledged) {
        const r = await call(s, "GET", a.location);
        assert.equal(r.status, 200);
        assert.deepEqual(r.json, a.record);
      }
    } finally {
      await s.stop();
    }
  });

  it("SIGTERM lets an in-flight request finish before the process exits", async () => {
    const s = await startServer(args, { tls: tlsOf() });
    const n = await issue(s);
    const body = Buffer.from(blob(n));
    // Send the headers and half the body, then SIGTERM, then the rest: the request is in flight at the signal.
    const socket = connect({ host: "127.0.0.1", port: s.port, ca: tlsOf().caFile && (await import("node:fs")).readFileSync(tlsOf().caFile) });
    await new Promise<void>((r) => socket.once("secureConnect", () => r()));
    let response = "";
    socket.on("data", (d) => (response += d));
    const ended = new Promise<void>((r) => socket.once("end", () => r()));
    socket.write(
      `POST /v2/blobs?nonce=${n} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-vendor-attest-api-key: ${key}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    socket.write(body.subarray(0, body.length >> 1));
    await new Promise((r) => setTimeout(r, 300));
    const exited = s.stop("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    socket.write(body.subarray(body.length >> 1));
    await ended;
    assert.match(response, /^HTTP\/1\.1 200 /);
    assert.match(response, /"verdict":"Yes"/);
    assert.equal(await exited, 0);
  });
});
