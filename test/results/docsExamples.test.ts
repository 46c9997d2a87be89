import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { T0 } from "../helpers/clock.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { REPO } from "../helpers/serverProcess.ts";

/**
 * docs/results.md's relying-party examples, run as written: each ```js block that starts with `// verify-ear` is
 * saved as a file beside the repository's node_modules and run with node against a listening attestd, once with a
 * good EAR, then with a tampered one, one for another nonce and one whose device is contraindicated.
 */

const run = promisify(execFile);

describe("docs/results.md: the relying-party examples", () => {
  let t: TestRuntime;
  let ca: DevCa;
  let leaf: CertifiedKey;
  let url: string;
  let dir: string;
  let scripts: string[];

  const earFor = async (o: { tamper?: boolean } = {}) => {
    const n = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${n}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream", accept: "application/eat+jwt" },
      payload: Buffer.from(encodeVendorBlob({ ca, leaf, now: new Date(T0), nonce: n, ...o })),
    });
    assert.equal(res.statusCode, 200, res.body);
    return { ear: res.body, nonce: n };
  };

  const verify = async (script: string, env: { EAR: string; NONCE: string }) => {
    try {
      const { stdout } = await run(process.execPath, [script], { env: { PATH: process.env.PATH, ATTESTD_URL: url, ...env } });
      return { ok: true as const, payload: JSON.parse(stdout) };
    } catch (e) {
      return { ok: false as const, stderr: String((e as { stderr?: string }).stderr) };
    }
  };

  before(async () => {
    ca = await createDevCa({ now: new Date(T0) });
    leaf = await issueDeviceLeaf(ca, { keyType: "ec", now: new Date(T0) });
    dir = mkdtempSync(path.join(tmpdir(), "attestd-docs-ear-"));
    writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
    writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
    t = await startTestRuntime({ vendorRoots: path.join(dir, "roots.pem"), referenceValues: path.join(dir, "refs.json") });
    await t.runtime.app.listen({ port: 0, host: "127.0.0.1" });
    url = `http://127.0.0.1:${(t.runtime.app.server.address() as AddressInfo).port}`;

    const doc = readFileSync(path.join(REPO, "docs/results.md"), "utf8");
    const blocks = [...doc.matchAll(/```js\n(\/\/ verify-ear[\s\S]*?)```/g)].map((m) => m[1]!);
    // the scripts import jose and jsonwebtoken as a relying party's project would: from its node_modules
    symlinkSync(path.join(REPO, "node_modules"), path.join(dir, "node_modules"), "dir");
    scripts = blocks.map((b, i) => {
      const file = path.join(dir, `verify-${i}.mjs`);
      writeFileSync(file, b);
      return file;
    });
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("there are two examples: jose and jsonwebtoken", () => {
    assert.equal(scripts.length, 2);
    assert.match(readFileSync(scripts[0]!, "utf8"), /from "jose"/);
    assert.match(readFileSync(scripts[1]!, "utf8"), /from "jsonwebtoken"/);
  });

  it("each accepts a good EAR and prints its claims", async () => {
    const { ear, nonce } = await earFor();
    for (const script of scripts) {
      const r = await verify(script, { EAR: ear, NONCE: nonce });
      assert.ok(r.ok, r.ok ? "" : r.stderr);
      assert.equal(r.payload.eat_nonce, nonce);
      assert.equal(r.payload.submods.vendor["ear.status"], "affirming");
    }
  });

  it("each refuses a tampered EAR, an EAR for another nonce, and a contraindicated device", async () => {
    const { ear, nonce } = await earFor();
    const [h, p, sig] = ear.split(".");
    const payload = JSON.parse(Buffer.from(p!, "base64url").toString("utf8"));
    payload["attestd.verdict"].objectId = "someone-else";
    const tampered = `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`;
    const bad = await earFor({ tamper: true });
    for (const script of scripts) {
      const forged = await verify(script, { EAR: tampered, NONCE: nonce });
      assert.ok(!forged.ok);
      assert.match(forged.stderr, /signature/i);
      const replayed = await verify(script, { EAR: ear, NONCE: bad.nonce });
      assert.ok(!replayed.ok);
      assert.match(replayed.stderr, /not the attestation this server asked for/);
      const untrusted = await verify(script, { EAR: bad.ear, NONCE: bad.nonce });
      assert.ok(!untrusted.ok);
      assert.match(untrusted.stderr, /device not trusted: contraindicated/);
    }
  });
});
