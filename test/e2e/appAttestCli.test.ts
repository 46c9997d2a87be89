import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { attestdCli, REPO, startServer, type ServerProcess } from "../helpers/serverProcess.ts";

/**
 * App Attest on one machine through the compiled CLI and server (mobile-attestation.md, "Simulators"): `dev-ca
 * --app-attest`, `ios-app add|list|remove`, `serve --app-attest-roots` the demo root, then nonce → `device-sim
 * --format app-attest` → POST /v2/blobs: the attestation and two assertions (counters 1, 2) Yes, a replayed counter
 * No; `ios-key list|show|revoke`; and `appraise` offline with --ios-app-id. Runs dist/: `npm run build` first.
 */
describe("attestd App Attest: dev-ca, ios-app, device-sim, serve, ios-key, appraise", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-appattest-e2e-"));
  const ca = path.join(dir, "app-attest-ca");
  const data = ["--data-dir", dir];
  /** store commands take the data dir; dev-ca and device-sim write only what they are told to */
  const STORE_COMMANDS = new Set(["tenant", "key", "ios-app", "ios-key", "appraise"]);
  const cli = (...args: string[]) => attestdCli([...args, ...(STORE_COMMANDS.has(args[0]!) ? data : [])]);
  const ok = (...args: string[]) => {
    const r = cli(...args);
    assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
    return r;
  };
  let server: ServerProcess;
  let apiKey: string;

  const nonce = async () => {
    const res = await request(`${server.url}/v2/nonces`, { method: "POST", headers: { "x-vendor-attest-api-key": apiKey }, dispatcher: server.dispatcher });
    return ((await res.body.json()) as { nonce: string }).nonce;
  };
  const post = async (file: string, n: string) => {
    const res = await request(`${server.url}/v2/blobs?nonce=${n}`, {
      method: "POST",
      headers: { "x-vendor-attest-api-key": apiKey, "content-type": "application/octet-stream" },
      body: readFileSync(file),
      dispatcher: server.dispatcher,
    });
    assert.equal(res.statusCode, 200);
    return (await res.body.json()) as { status: string; verdict: string; chipId: string; version: string };
  };
  const sim = (n: string, out: string, ...extra: string[]) => ok("device-sim", "--format", "app-attest", "--ca", ca, "--nonce", n, "--out", out, ...extra);

  before(async () => {
    const written = ok("dev-ca", "--app-attest", "--out", ca);
    assert.match(written.stderr, /--app-attest-roots .*app-attest-root\.pem/);
    ok("tenant", "create", "acme");
    apiKey = ok("key", "create", "--tenant", "acme").stdout.trim();
    server = await startServer([...data, "--insecure-http", "--app-attest-roots", path.join(ca, "app-attest-root.pem")]);
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("ios-app add, list and remove; refusals are one line, exit 1", () => {
    const added = JSON.parse(ok("ios-app", "add", "--tenant", "acme", "--app-id", "DEMOTEAM01.com.example.attestd.demo", "--environment", "both").stdout);
    assert.match(added.id, /^ia_/);
    assert.equal(added.environment, "both");
    ok("ios-app", "add", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.other");
    assert.deepEqual(JSON.parse(ok("ios-app", "list", "--tenant", "acme").stdout).map((a: { appId: string }) => a.appId), ["ABCDE12345.com.example.other", "DEMOTEAM01.com.example.attestd.demo"]);
    ok("ios-app", "remove", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.other");
    const dup = cli("ios-app", "add", "--tenant", "acme", "--app-id", "DEMOTEAM01.com.example.attestd.demo");
    assert.equal(dup.status, 1);
    assert.match(dup.stderr, /registered DEMOTEAM01\.com\.example\.attestd\.demo already/);
    assert.equal(cli("ios-app", "add", "--tenant", "acme", "--app-id", "com.example.app").status, 1);
    assert.equal(cli("ios-app", "remove", "--tenant", "acme", "--app-id", "ABCDE12345.nope").status, 1);
  });

  it("ios-app set-developer-key / clear-developer-key, and add with one: shown as its key id only", () => {
    const p8 = path.join(dir, "AuthKey_KEY1234567.p8");
    writeFileSync(p8, generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }));
    const added = ok("ios-app", "add", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.keyed", "--developer-key-id", "KEY1234567", "--developer-key-file", p8);
    assert.deepEqual(JSON.parse(added.stdout).developerKey, { keyId: "KEY1234567" });
    assert.doesNotMatch(added.stdout, /PRIVATE|sealed/);
    const half = cli("ios-app", "add", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.half", "--developer-key-id", "KEY1234567");
    assert.equal(half.status, 1);
    assert.match(half.stderr, /both --developer-key-id ID and --developer-key-file FILE\.p8/);
    const set = ok("ios-app", "set-developer-key", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.keyed", "--developer-key-id", "KEY7654321", "--developer-key-file", p8);
    assert.deepEqual(JSON.parse(set.stdout).developerKey, { keyId: "KEY7654321" });
    const notAKey = cli("ios-app", "set-developer-key", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.keyed", "--developer-key-id", "KEY7654321", "--developer-key-file", path.join(ca, "app-attest-root.pem"));
    assert.equal(notAKey.status, 1);
    assert.match(notAKey.stderr, /not an EC P-256 private key/);
    const listed = ok("ios-app", "list", "--tenant", "acme").stdout;
    assert.deepEqual(JSON.parse(listed).find((a: { appId: string }) => a.appId === "ABCDE12345.com.example.keyed").developerKey, { keyId: "KEY7654321" });
    assert.doesNotMatch(listed, /PRIVATE|sealed/);
    assert.equal(JSON.parse(ok("ios-app", "clear-developer-key", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.keyed").stdout).developerKey, null);
    ok("ios-app", "remove", "--tenant", "acme", "--app-id", "ABCDE12345.com.example.keyed");
  });

  it("nonce → device-sim → Yes: the attestation, two assertions with rising counters; a replayed counter is No", async () => {
    const keyFile = path.join(dir, "key.json");
    const blob = path.join(dir, "blob");
    let n = await nonce();
    sim(n, blob, "--key-file", keyFile);
    const attested = await post(blob, n);
    assert.deepEqual([attested.status, attested.verdict], ["Success", "Yes"]);
    const keyId = JSON.parse(readFileSync(keyFile, "utf8")).keyId as string;
    assert.equal(attested.chipId, keyId);
    for (const counter of ["1", "2"]) {
      n = await nonce();
      sim(n, blob, "--assertion", "--key-file", keyFile);
      const r = await post(blob, n);
      assert.deepEqual([r.status, r.verdict, r.version], ["Success", "Yes", counter]);
    }
    n = await nonce();
    sim(n, blob, "--assertion", "--key-file", keyFile, "--counter", "2");
    assert.deepEqual([(await post(blob, n)).status], ["NonceMismatch"]);

    const shown = JSON.parse(ok("ios-key", "show", "--tenant", "acme", "--key-id", keyId).stdout);
    assert.deepEqual([shown.counter, shown.appId, shown.revokedAt], [2, "DEMOTEAM01.com.example.attestd.demo", null]);
    assert.deepEqual(JSON.parse(ok("ios-key", "list", "--tenant", "acme").stdout).items.map((k: { keyId: string }) => k.keyId), [keyId]);
    ok("ios-key", "revoke", "--tenant", "acme", "--key-id", keyId);
    n = await nonce();
    sim(n, blob, "--assertion", "--key-file", keyFile);
    assert.deepEqual([(await post(blob, n)).status], ["Revoked"]);
    assert.equal(cli("ios-key", "show", "--tenant", "acme", "--key-id", "AAAA").status, 1);
  });

  it("device-sim cases: each appraises to its rule (wrong nonce, other CA, a counter above 0)", async () => {
    const blob = path.join(dir, "case");
    const cases: [string[], string][] = [[["--wrong-nonce"], "NonceMismatch"], [["--other-ca"], "CertificateInvalid"], [["--counter", "3"], "Success"]];
    for (const [flags, status] of cases) {
      const n = await nonce();
      sim(n, blob, ...flags);
      const r = await post(blob, n);
      assert.deepEqual([r.status, r.verdict], [status, "No"], flags.join(" "));
    }
    // a well-formed nonce, so that what is refused is the flag (a bad nonce is refused first, whatever the format)
    const wellFormed = Buffer.alloc(32, 7).toString("base64url");
    const refused = cli("device-sim", "--format", "app-attest", "--ca", ca, "--nonce", wellFormed, "--out", blob, "--assertion");
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /--key-file/);
    const wrongFormat = cli("device-sim", "--format", "vendor", "--ca", ca, "--nonce", wellFormed, "--out", blob, "--wrong-key-id");
    assert.equal(wrongFormat.status, 1);
    assert.match(wrongFormat.stderr, /--wrong-key-id applies to --format app-attest/);
  });

  it("appraise offline: a real iPhone attestation with --ios-app-id, --ios-environment, --at and --challenge-hex", () => {
    const vector = path.join(REPO, "test/vectors/app-attest/nodeappattest-prod.cbor");
    const base = [
      "appraise", vector, "--challenge-hex", "64653565303335392d383466372d346464372d613938642d353336336539343135666231",
      "--at", "2024-02-07T21:08:56.308Z",
      // android-key's sources as files: appraise would wait for Google's status list otherwise
      "--android-roots", path.join(REPO, "test/vectors/android-key/android_keyattestation/roots.json"),
      "--android-status", path.join(REPO, "test/vectors/android-key/google_android-key-attestation/status.json"),
      "--ios-app-id", "V8H6LQ9448.io.uebelacker.AppAttestExample", "--detail",
    ];
    const yes = JSON.parse(ok(...base).stdout);
    assert.deepEqual([yes.record.verdict, yes.detail.rule, yes.format], ["Yes", "pass", "app-attest"]);
    const dev = JSON.parse(ok(...base, "--ios-environment", "development").stdout);
    assert.equal(dev.detail.rule, "environment");
    assert.equal(cli(...base.slice(0, -3), "--ios-app-id", "nope").status, 1);
  });
});
