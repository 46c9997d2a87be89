import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import type { FastifyBaseLogger } from "fastify";
import pino from "pino";
import { ManualClock } from "../../src/clock.ts";
import { pemBlob, vec } from "../android/fixtures.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * One real chain end to end over HTTP: a Sony Xperia 10 III (factory batch certificate, root 2016, TEE, Verified +
 * locked) whose 32-byte attestation challenge is seeded as a nonce through the store interface, at a pinned time
 * inside the chain's validity. The roots and status list are Google's real files from test/vectors.
 */
const AT = Date.parse("2025-06-01T00:00:00Z");
const SONY = "android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem";
const SONY_CHALLENGE = Buffer.from("3eafe4d5dd0090de5a42b432b42481af5ce29963656b2584c59a492de16d00c9", "hex");

describe("android-key over HTTP (real device chain)", () => {
  let t: TestRuntime;
  const blob = pemBlob(SONY);

  const seed = async (nonce: string) =>
    t.runtime.stores.nonces.issue({ nonce, tenantId: t.tenant.tenantId, createdAtMs: AT, expiresAtMs: AT + 300_000 }, 1000, AT);
  const post = (nonce: string) =>
    t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" },
      payload: blob,
    });

  // no --android-roots: the roots built into attestd; the status list from a file (Google's sample)
  const statusFile = vec("google_android-key-attestation/status.json");
  before(async () => {
    t = await startTestRuntime({ androidStatus: statusFile }, { clock: new ManualClock(AT) });
  });
  after(async () => t.close());

  it("/readyz reports both Android trust sources loaded, naming neither's file", async () => {
    const res = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(body.degraded, []);
    const android = body.checks.filter((c: { name: string }) => c.name.startsWith("android-"));
    assert.deepEqual(android, [
      { name: "android-roots", ok: true, state: "ok" },
      { name: "android-status", ok: true, state: "ok" },
    ]);
    assert.ok(!res.body.includes(statusFile), res.body);
  });

  it("the matching challenge → Success / Yes, with the record mapping of blob-format.md", async () => {
    const nonce = SONY_CHALLENGE.toString("base64url");
    await seed(nonce);
    const res = await post(nonce);
    assert.equal(res.statusCode, 200, res.body);
    const v = res.json();
    assert.equal(v.status, "Success");
    assert.equal(v.verdict, "Yes");
    assert.equal(v.tamperBit, "0");
    assert.equal(v.MAC, "");
    assert.equal(v.version, "3");
    assert.ok(v.measurements.startsWith("81d1bb21455394da"), v.measurements);
    assert.match(v.chipId, /^[0-9a-f]+$/);

    const full = await t.runtime.app.inject({ method: "GET", url: `${res.headers.location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    assert.equal(full.statusCode, 200);
    const attestation = full.json().attestation;
    assert.equal(attestation.format, "android-key");
    assert.match(JSON.stringify(attestation.detail), /com\.android\.vending/);
    // the default answer stays exactly the eleven fields
    const plain = await t.runtime.app.inject({ method: "GET", url: String(res.headers.location), headers: { [KEY_HEADER]: t.key } });
    assert.deepEqual(plain.json(), v);
  });

  it("another nonce → NonceMismatch / No", async () => {
    const nonce = Buffer.alloc(32, 7).toString("base64url");
    await seed(nonce);
    const res = await post(nonce);
    assert.equal(res.json().status, "NonceMismatch");
    assert.equal(res.json().verdict, "No");
  });

  it("`attestd appraise` gives the same verdict offline, and explains it with --detail", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-appraise-"));
    const file = path.join(dir, "sony.der");
    writeFileSync(file, blob);
    const common = [
      "--android-roots", vec("android_keyattestation/roots.json"),
      "--android-status", vec("google_android-key-attestation/status.json"),
      "--data-dir", dir, "--at", "2025-06-01T00:00:00Z",
    ];
    const ok = attestdCli(["appraise", file, "--challenge-hex", SONY_CHALLENGE.toString("hex"), ...common]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).verdict, "Yes");
    const detailed = attestdCli(["appraise", file, "--nonce", Buffer.alloc(32, 1).toString("base64url"), "--detail", ...common]);
    const d = JSON.parse(detailed.stdout);
    assert.equal(d.record.status, "NonceMismatch");
    assert.equal(d.format, "android-key");
    assert.equal(typeof d.reason, "string");
    writeFileSync(file, Buffer.from([0x30, 0x82, 0x01]));
    const broken = attestdCli(["appraise", file, "--challenge-hex", "00", ...common]);
    assert.equal(broken.status, 2);
    assert.equal(JSON.parse(broken.stdout).error.code, "4000006");
  });
});

describe("android-key over HTTP with no network and no cached status list", () => {
  let t: TestRuntime;
  const lines: { level: number; msg: string }[] = [];
  before(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l) as { level: number; msg: string });
        done();
      },
    });
    // nothing configured: built-in roots, Google's status URL, and the test runtime's network is down
    t = await startTestRuntime({}, { clock: new ManualClock(AT), logger: pino({ level: "info" }, sink) as unknown as FastifyBaseLogger });
  });
  after(async () => t.close());

  it("the genuine chain is refused, CertificateInvalid; what the tenant reads says why in words, naming no URL or server path", async () => {
    const nonce = SONY_CHALLENGE.toString("base64url");
    await t.runtime.stores.nonces.issue({ nonce, tenantId: t.tenant.tenantId, createdAtMs: AT, expiresAtMs: AT + 300_000 }, 1000, AT);
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" },
      payload: pemBlob(SONY),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().status, res.json().verdict], ["CertificateInvalid", "No"]);
    const location = String(res.headers.location);
    const objectId = location.split("/").pop()!;
    const reason =
      "the Android attestation status list could not be fetched (fetch failed: ENOTFOUND) and no usable copy is in the disk cache (fail closed)";

    const full = await t.runtime.app.inject({ method: "GET", url: `${location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    assert.equal(full.json().attestation.reason, reason);
    const stored = await t.runtime.stores.durable.getVerdict(objectId);
    assert.equal(stored?.reason, reason);
    const ear = await t.runtime.app.inject({ method: "GET", url: location, headers: { [KEY_HEADER]: t.key, accept: "application/eat+jwt" } });
    assert.equal(ear.statusCode, 200, ear.body);
    const people = portalPeople(t);
    await people.add("vic@acme.example", "viewer", "acme");
    const page = await people.as("vic@acme.example", { url: `/portal/api/verdicts/${objectId}` });
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.json().reason, reason);
    const seen = {
      answer: res.body,
      "?detail=full": full.body,
      record: JSON.stringify(stored),
      EAR: Buffer.from(ear.body.split(".")[1]!, "base64url").toString("utf8"),
      portal: page.body,
    };
    for (const [where, text] of Object.entries(seen)) {
      assert.doesNotMatch(text, /https?:\/\//, `${where} names a URL`);
      assert.ok(!text.includes(t.dir), `${where} names the data directory: ${text}`);
    }

    // the operator reads the whole sentence, the URL and the cache path with it, in the service log
    const sentence =
      "the Android attestation status list could not be fetched from https://android.googleapis.com/attestation/status " +
      `(fetch failed: ENOTFOUND) and no cached copy is in ${path.join(t.dir, "android-trust")}`;
    assert.ok(
      lines.some((l) => l.level === 40 && l.msg === `android-key appraisal fails closed: ${sentence}`),
      JSON.stringify(lines.map((l) => l.msg)),
    );
    const ready = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json().degraded, ["android-status"]);
  });
});

describe("android-key policy per tenant (--android-policy)", () => {
  let t: TestRuntime;
  const blob = pemBlob(SONY);
  const nonce = SONY_CHALLENGE.toString("base64url");

  const appraiseAs = async (tenantName: string) => {
    const who = await t.addTenant(tenantName);
    // the chain's challenge is fixed, so forget the previous tenant's (spent) copy of this nonce first
    await t.runtime.stores.nonces.purgeExpired(AT + 300_000, 0);
    await t.runtime.stores.nonces.issue({ nonce, tenantId: who.tenant.tenantId, createdAtMs: AT, expiresAtMs: AT + 300_000 }, 1000, AT);
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}`,
      headers: { [KEY_HEADER]: who.key, "content-type": "application/octet-stream" },
      payload: blob,
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };

  before(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-policy-"));
    const policy = path.join(dir, "policy.json");
    // The Sony chain: osPatchLevel 202307, app com.android.vending
    writeFileSync(
      policy,
      JSON.stringify({
        default: { minOsPatchLevel: 202301 },
        tenants: {
          strict: { minOsPatchLevel: 202401 },
          "own-app": { allowedApps: [{ packageName: "com.example.bank" }] },
          "store-app": { allowedApps: [{ packageName: "com.android.vending" }] },
        },
      }),
    );
    t = await startTestRuntime(
      {
        androidRoots: vec("android_keyattestation/roots.json"),
        androidStatus: vec("google_android-key-attestation/status.json"),
        androidPolicy: policy,
      },
      { clock: new ManualClock(AT) },
    );
  });
  after(async () => t.close());

  it("the default policy admits the device; a tenant's stricter patch level or app allow-list refuses it", async () => {
    assert.equal((await appraiseAs("plain")).verdict, "Yes");
    const strict = await appraiseAs("strict");
    assert.equal(strict.status, "Success");
    assert.equal(strict.verdict, "No");
    assert.equal((await appraiseAs("own-app")).verdict, "No");
    assert.equal((await appraiseAs("store-app")).verdict, "Yes");
  });

  it("a malformed policy file stops start-up with one line naming the field", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-policy-bad-"));
    const policy = path.join(dir, "policy.json");
    writeFileSync(policy, JSON.stringify({ tenants: { acme: { minPatchLevel: 202401 } } }));
    const r = attestdCli(["serve", "--insecure-http", "--port", "0", "--data-dir", dir, "--android-policy", policy]);
    assert.equal(r.status, 1);
    assert.match(r.stderr.trim(), /^attestd: --android-policy .*\.tenants\.acme: unknown key "minPatchLevel"$/);
  });
});
