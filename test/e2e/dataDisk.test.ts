import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { attestdCli, startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { fillUp, mountTinyFs, unmountTinyFs } from "../helpers/tinyFs.ts";

/**
 * The data dir's disk fills under a running server (SQLite). Writes used to answer 500 without Retry-After while
 * /readyz stayed ready. Now: 503 SERVICE_UNAVAILABLE with Retry-After, /readyz not-ready while writes fail, reads
 * go on, and once space is back it recovers by itself with nothing acknowledged lost.
 */
describe("a full data disk (SQLite on a small tmpfs)", () => {
  const root = mkdtempSync(path.join(tmpdir(), "attestd-datadisk-"));
  const data = path.join(root, "data");
  let ca: DevCa;
  let leaf: CertifiedKey;
  let key: string;
  let args: string[];
  let server: ServerProcess | undefined;

  before(async () => {
    mountTinyFs(data, "4m");
    ca = await createDevCa();
    leaf = await issueDeviceLeaf(ca);
    writeFileSync(path.join(root, "roots.pem"), ca.root.certPem);
    writeFileSync(path.join(root, "refs.json"), JSON.stringify(demoReferenceValues()));
    assert.equal(attestdCli(["tenant", "create", "acme", "--data-dir", data]).status, 0);
    const k = attestdCli(["key", "create", "--tenant", "acme", "--data-dir", data]);
    assert.equal(k.status, 0, k.stderr);
    key = k.stdout.trim();
    args = ["--insecure-http", "--data-dir", data, "--vendor-roots", path.join(root, "roots.pem"), "--reference-values", path.join(root, "refs.json")];
  });
  after(async () => {
    if (server && server.proc.exitCode === null) server.proc.kill("SIGKILL");
    unmountTinyFs(data);
    rmSync(root, { recursive: true, force: true });
  });

  const call = async (method: "GET" | "POST", url: string, body?: Uint8Array) => {
    const res = await request(`${server!.url}${url}`, {
      method,
      headers: { "x-vendor-attest-api-key": key, ...(body ? { "content-type": "application/octet-stream" } : {}) },
      ...(body ? { body: Buffer.from(body) } : {}),
    });
    return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as any };
  };
  /** a nonce, then a blob for it: the nonce issue's answer when that was refused, else the blob's */
  const attest = async () => {
    const issued = await call("POST", "/v2/nonces");
    if (issued.status !== 200) return { ...issued, location: undefined };
    const nonce = issued.json.nonce as string;
    const r = await call("POST", `/v2/blobs?nonce=${nonce}`, encodeVendorBlob({ ca, leaf, nonce }));
    return { ...r, location: r.status === 200 ? String(r.headers.location) : undefined };
  };
  const readiness = async () => {
    const res = await request(`${server!.url}/readyz`);
    return { status: res.statusCode, json: (await res.body.json()) as { ready: boolean; checks: { name: string; ok: boolean }[] } };
  };

  it("writes answer 503 with Retry-After and /readyz goes not-ready; reads go on; freed space recovers by itself, nothing lost", async () => {
    server = await startServer(args);
    const acknowledged: { location: string; record: unknown }[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await attest();
      assert.equal(r.status, 200);
      acknowledged.push({ location: r.location!, record: r.json });
    }
    assert.equal((await readiness()).status, 200);

    const filler = fillUp(data);
    // SQLite may still fit a few commits into WAL pages it already has; it runs out within a few dozen
    let refused: Awaited<ReturnType<typeof attest>> | undefined;
    for (let i = 0; i < 300 && !refused; i++) {
      const r = await attest();
      if (r.status === 200) acknowledged.push({ location: r.location!, record: r.json });
      else refused = r;
    }
    assert.ok(refused, "a write was refused once the disk was full");
    assert.equal(refused.status, 503, JSON.stringify(refused.json));
    assert.equal(refused.json.error.code, "5030000");
    assert.equal(refused.headers["retry-after"], "10");
    assert.doesNotMatch(JSON.stringify(refused.json), /SQLITE|disk|\/tmp|at .*\.js/i, "no driver message or path to the client");

    const down = await readiness();
    assert.equal(down.status, 503);
    assert.equal(down.json.ready, false);
    assert.equal(down.json.checks.find((c) => c.name === "sqlite")?.ok, false);
    // a write meanwhile may still fit (SQLite reuses its WAL from the start after a checkpoint) or is refused the
    // same way; reads are answered all the while
    const again = await attest();
    if (again.status === 200) acknowledged.push({ location: again.location!, record: again.json });
    else assert.equal(again.status, 503, JSON.stringify(again.json));
    const read = await call("GET", acknowledged[0]!.location);
    assert.equal(read.status, 200);
    assert.deepEqual(read.json, acknowledged[0]!.record);

    rmSync(filler);
    // readiness finds out by itself (a probe write), with no request needed: a load balancer sends none meanwhile
    let up = await readiness();
    for (let i = 0; i < 100 && up.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      up = await readiness();
    }
    assert.equal(up.status, 200, JSON.stringify(up.json));
    assert.equal(up.json.ready, true);
    const after = await attest();
    assert.equal(after.status, 200);
    assert.equal(after.json.verdict, "Yes");
    acknowledged.push({ location: after.location!, record: after.json });

    for (const a of acknowledged) {
      const r = await call("GET", a.location);
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, a.record);
    }
    assert.equal(await server.stop("SIGTERM"), 0);

    // and after a restart on the same file
    server = await startServer(args);
    for (const a of acknowledged) {
      const r = await call("GET", a.location);
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, a.record);
    }
    assert.equal(await server.stop("SIGTERM"), 0);
  });
});
