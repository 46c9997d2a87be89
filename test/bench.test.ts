import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, X509Certificate } from "node:crypto";
import { makeAppAttestAssertion, makeAppAttestAttestation, makeAppAttestCa } from "../src/attestation/sim/appAttest.ts";
import { appAttestAssertionFloor, appAttestAttestationFloor } from "../bench/lib/appAttestFloor.ts";
import { APP_ATTEST_HTTP_TARGET } from "../bench/sections/appAttestHttp.ts";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { parseBenchArgs, runBench } from "../bench/run.ts";
import { CHAINS, VECTORS } from "../bench/sections/android.ts";
import { androidFloor } from "../bench/lib/androidFloor.ts";
import { playFloorKeys, playIntegrityFloor } from "../bench/lib/playIntegrityFloor.ts";
import { createPlayFixture } from "../bench/lib/playIntegrityFixture.ts";
import { PLAY_HTTP_TARGET } from "../bench/sections/playIntegrityHttp.ts";
import { makePlayIntegrityToken } from "../src/attestation/sim/playIntegrity.ts";
import { parsePemBundle } from "../src/attestation/encoding/pem.ts";
import { findExtension, readCertificate } from "../src/attestation/encoding/derChain.ts";
import { KEY_DESCRIPTION_OID, parseKeyDescription } from "../src/attestation/encoding/keyDescription.ts";

/**
 * The bench's own smoke test: the quick mode of the library-level android-key section, checked for the shape of
 * the JSON it writes. Timings are never asserted here (speed targets live in the benchmark's output, not in
 * timed unit tests that would flake on a busy machine).
 */
describe("bench (quick, android-key section only)", { skip: !existsSync(VECTORS) && `no vectors at ${VECTORS}` }, () => {
  const out = mkdtempSync(path.join(tmpdir(), "attestd-bench-test-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("parses its flags", () => {
    const o = parseBenchArgs(["--quick", "--only", "android", "--out", out]);
    assert.equal(o.quick, true);
    assert.deepEqual(o.only, ["android"]);
    assert.equal(o.profile, "auto");
    assert.equal(o.outDir, out);
    assert.throws(() => parseBenchArgs(["--only", "nope"]), /unknown section/);
    assert.deepEqual(parseBenchArgs(["--only", "results,android"]).only, ["results", "android"]);
    assert.deepEqual(parseBenchArgs(["--only", "android-https"]).only, ["android-https"]);
    assert.deepEqual(parseBenchArgs(["--only", "play-integrity-https"]).only, ["play-integrity-https"]);
    assert.ok(parseBenchArgs([]).only.includes("play-integrity-https"), "in the default run, as the other HTTPS sections");
  });

  it("writes quick.json with one result per chain and library", async () => {
    const run = await runBench({ quick: true, only: ["android"], profile: "never", outDir: out, print: false });
    assert.deepEqual(run.files, [path.join(out, "quick.json")]);
    const json = JSON.parse(readFileSync(run.files[0]!, "utf8"));
    assert.deepEqual(json, JSON.parse(JSON.stringify(run.results)));

    assert.equal(json.schema, "attestd-bench/1");
    assert.equal(json.quick, true);
    assert.equal(typeof json.environment.node, "string");
    assert.equal(typeof json.environment.cpus, "number");
    assert.equal(json.sections.http, undefined);
    assert.equal(json.sections.cluster, undefined);

    const a = json.sections.android;
    assert.equal(a.status, "ok", a.message);
    assert.equal(a.chains.length, CHAINS.length);
    for (const c of a.chains) {
      assert.equal(typeof c.name, "string");
      assert.ok(!Number.isNaN(Date.parse(c.at)), "pinned time is a date");
      assert.ok(c.certificates >= 2);
      for (const lib of ["attestd", "attestdCold", "floor", "simplewebauthn", "pkijs"]) {
        const r = c.results[lib];
        assert.ok(r, `${c.name}: ${lib} result`);
        for (const k of ["iterations", "seconds", "opsPerSec", "usPerOp"]) assert.equal(typeof r[k], "number", `${lib}.${k}`);
        assert.ok(r.iterations > 0, `${c.name}: ${lib} ran`);
        assert.equal(typeof r.outcome, "string");
        assert.equal(typeof r.accepted, "boolean");
      }
      // every real chain appraises at its pinned time (a verdict, not a broken chain)
      assert.equal(c.results.attestd.accepted, true, `${c.name}: ${c.results.attestd.outcome}`);
      for (const k of ["vsSimplewebauthn", "vsPkijs", "coldVsSimplewebauthn", "coldVsPkijs"]) {
        assert.equal(typeof c.speedup[k], "number");
      }
      // the floor (issue 15) accepts every real chain too: its timing is of the same work, not of a refusal
      assert.equal(c.results.floor.accepted, true, `${c.name}: floor ${c.results.floor.outcome}`);
      assert.equal(typeof c.timesFloor, "number");
    }
    assert.equal(typeof a.summary.met, "boolean");
    assert.equal(typeof a.summary.speedupVsPkijs, "number");
    assert.equal(typeof a.summary.timesFloor, "number");
    assert.equal(typeof a.summary.floorMet, "boolean");
    assert.match(run.summary, /android-key appraisal/);
  });

  it("has a floor that does the unavoidable checks: leaf signature, challenge, status list", () => {
    const ders = parsePemBundle(readFileSync(path.join(VECTORS, CHAINS[1]!.file), "utf8"), "chain");
    const body = Buffer.concat(ders);
    const challenge = parseKeyDescription(findExtension(readCertificate(ders[0]!), KEY_DESCRIPTION_OID)!.value).attestationChallenge;
    const none = new Map<string, unknown>();
    assert.equal(androidFloor(body, challenge, none), true);
    assert.equal(androidFloor(body, Buffer.alloc(challenge.length), none), false, "another challenge");
    const issuerSerial = readCertificate(ders[1]!).serialHex.replace(/^0+/, "");
    assert.equal(androidFloor(body, challenge, new Map([[issuerSerial, true]])), false, "a revoked issuer");
    const forged = Buffer.from(body);
    forged[ders[0]!.length - 10]! ^= 1; // inside the leaf's signature
    assert.equal(androidFloor(forged, challenge, none), false, "a broken leaf signature");
  });
});

/**
 * The issue-14 section (signing and pinning per verdict), quick: its JSON shape, and that what it timed were the
 * verdicts it meant to time (Yes, first pins, matched pins; an EAR that verifies), never the timings themselves.
 */
describe("bench (quick, results section only)", () => {
  const out = mkdtempSync(path.join(tmpdir(), "attestd-bench-test-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("writes the EAR and pinning figures per store", async () => {
    const run = await runBench({ quick: true, only: ["results"], profile: "never", outDir: out, print: false });
    const json = JSON.parse(readFileSync(run.files[0]!, "utf8"));
    assert.equal(json.sections.android, undefined);
    const r = json.sections.results;
    assert.equal(r.status, "ok", r.message);
    assert.equal(r.ear.verified, true);
    for (const k of ["plain", "ear"]) {
      assert.ok(r.ear[k].calls > 0, `${k} ran`);
      for (const m of ["usPerOp", "cpuUsPerOp"]) assert.equal(typeof r.ear[k][m], "number", `${k}.${m}`);
      assert.ok(r.ear[k].bytes > 0);
    }
    // a compact JWS is three base64url parts: never shorter than the record it signs
    assert.ok(r.ear.ear.bytes > r.ear.plain.bytes);
    assert.equal(typeof r.ear.perVerdictRatio, "number");
    // over HTTPS: the Accept: application/eat+jwt run answered signed results, and both runs answered
    assert.equal(r.earHttps.status, undefined, r.earHttps.message);
    assert.equal(r.earHttps.answeredEar, true);
    assert.equal(r.earHttps.rounds.length, 1);
    for (const k of ["plain", "ear"]) assert.ok(r.earHttps.rounds[0][k].requests2xx > 0, `${k} over HTTPS answered`);
    const stores = r.pinning.backends.map((b: { store: string }) => b.store);
    assert.equal(stores[0], "sqlite");
    if (!r.pinning.skipped) assert.deepEqual(stores, ["sqlite", "postgres"]);
    const expected = { plain: "Yes/unnamed", firstPin: "Yes/first", repeat: "Yes/matched" } as const;
    for (const b of r.pinning.backends) {
      for (const [v, outcome] of Object.entries(expected)) {
        assert.deepEqual(b[v].outcomes, { [outcome]: b[v].verdicts }, `${b.store} ${v}: every verdict ${outcome}`);
        assert.equal(b[v].rounds.length, r.how.rounds);
        for (const m of ["usPerVerdict", "cpuUsPerVerdict"]) assert.equal(typeof b[v][m], "number", `${b.store} ${v}.${m}`);
        if (b.store === "postgres") assert.equal(typeof b[v].backingCpuUsPerVerdict, "number");
      }
      for (const k of ["firstPin", "repeat"]) {
        for (const m of ["ratio", "wallRatio", "addedCpuUs"]) assert.equal(typeof b[m][k], "number", `${b.store} ${m}.${k}`);
      }
    }
    assert.deepEqual(r.notes.filter((n: string) => /unexpected/.test(n)), []);
    assert.match(run.summary, /Signed results and device pinning/);
  });
});

/**
 * The start-up section (issue 21), quick: that it timed what it names (the commands answered, the server became
 * ready) and reports each figure against its target. The timings themselves are never asserted here.
 */
describe("bench (quick, startup section only)", () => {
  const out = mkdtempSync(path.join(tmpdir(), "attestd-bench-test-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("times --help, tenant list and serve → /readyz beside node -e 0", async () => {
    const run = await runBench({ quick: true, only: ["startup"], profile: "never", outDir: out, print: false });
    const s = JSON.parse(readFileSync(run.files[0]!, "utf8")).sections.startup;
    assert.equal(s.status, "ok", s.message);
    assert.equal(s.runs, 2);
    for (const k of ["node", "help", "tenantList", "readyz"]) {
      assert.equal(s[k].samplesMs.length, 2, `${k}: one sample per round`);
      assert.ok(s[k].samplesMs.every((x: number) => x > 0), `${k} was timed`);
      assert.equal(typeof s[k].medianMs, "number");
    }
    assert.deepEqual([s.help.target, s.tenantList.target, s.readyz.targetMs], [5, 10, 1500]);
    for (const k of ["help", "tenantList"]) {
      assert.equal(typeof s[k].ratio, "number");
      assert.equal(s[k].met, s[k].ratio <= s[k].target);
    }
    assert.equal(s.readyz.met, s.readyz.medianMs <= s.readyz.targetMs);
    assert.ok(s.readyz.firstStartMs > 0);
    assert.match(run.summary, /Start-up \(issue 21\)/);
  });
});

/**
 * The Play Integrity over HTTPS section (issue 23 item 6), quick: that both servers answered what the comparison
 * assumes (attestd Yes for the registered demo app, the floor baseline Success), and the JSON and table carry the
 * ratio against its target. The floor itself refuses what no verifier may accept. Timings are never asserted.
 */
describe("bench (quick, play-integrity-https section only)", () => {
  const out = mkdtempSync(path.join(tmpdir(), "attestd-bench-test-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("has a floor that decrypts, verifies and compares the nonce", async () => {
    const fx = createPlayFixture();
    const keys = playFloorKeys(fx.keys.decryptionKey, fx.keys.verificationKey);
    const nonce = "bench-nonce";
    const payload = await playIntegrityFloor(await makePlayIntegrityToken(fx.ca, { nonce }), nonce, keys);
    assert.equal(payload?.requestDetails?.requestHash, nonce);
    assert.equal(await playIntegrityFloor(await makePlayIntegrityToken(fx.ca, { nonce }), "another nonce", keys), undefined, "another nonce");
    assert.equal(await playIntegrityFloor(await makePlayIntegrityToken(fx.ca, { nonce, classic: true }), nonce, keys) !== undefined, true, "a classic request's nonce");
    assert.equal(await playIntegrityFloor(await makePlayIntegrityToken(fx.ca, { nonce, tamperedSignature: true }), nonce, keys), undefined, "a broken signature");
    assert.equal(await playIntegrityFloor(await makePlayIntegrityToken(fx.ca, { nonce, otherAppKeys: true }), nonce, keys), undefined, "another app's keys");
  });

  it("compares attestd's Yes with the floor baseline's Success and reports the ratio against 60 %", async () => {
    const run = await runBench({ quick: true, only: ["play-integrity-https"], profile: "never", outDir: out, print: false });
    const s = JSON.parse(readFileSync(run.files[0]!, "utf8")).sections.playIntegrityHttps;
    assert.equal(s.status, "ok", s.message);
    assert.equal(s.verdict, "Success/Yes", s.notes.join("; "));
    assert.match(s.blobs.baseline.sample, /"status":"Success"/);
    for (const who of ["attestd", "baseline"]) {
      assert.ok(s.blobs[who].requests2xx > 0, `${who} answered`);
      for (const k of ["rps", "serverCores"]) assert.equal(typeof s.blobs[who][k], "number", `${who}.${k}`);
      for (const k of ["p50", "p99"]) assert.equal(typeof s.blobs[who].latencyMs[k], "number", `${who} ${k}`);
    }
    assert.equal(s.blobs.rounds.length, 1);
    assert.equal(typeof s.blobs.ratio, "number");
    assert.equal(s.blobs.target, PLAY_HTTP_TARGET);
    assert.equal(s.blobs.met, s.blobs.ratio >= PLAY_HTTP_TARGET);
    assert.equal(s.pool.tokensPerRound.length, 1);
    assert.ok(s.pool.tokenBytes > 0);
    assert.match(s.how.attestd, /play-app add/);
    assert.match(run.summary, /Play Integrity over HTTPS \(issue 23\)/);
  });
});

describe("bench (quick, app-attest-https section only)", () => {
  const out = mkdtempSync(path.join(tmpdir(), "attestd-bench-test-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("has a floor that verifies the chain to the root, the nonce and the key id", async () => {
    const ca = await makeAppAttestCa();
    const root = new X509Certificate(ca.rootDer).publicKey;
    const nonce = Buffer.alloc(32, 7).toString("base64url");
    const { blob, key } = await makeAppAttestAttestation(ca, { nonce });
    assert.equal(appAttestAttestationFloor(blob, nonce, root), key.keyId);
    assert.equal(appAttestAttestationFloor(blob, Buffer.alloc(32, 8).toString("base64url"), root), undefined, "another nonce");
    assert.equal(appAttestAttestationFloor((await makeAppAttestAttestation(ca, { nonce, otherCa: true })).blob, nonce, root), undefined, "another CA");
    assert.equal(appAttestAttestationFloor((await makeAppAttestAttestation(ca, { nonce, wrongKeyId: true })).blob, nonce, root), undefined, "a wrong key id");

    // the assertion floor: the signature with the remembered key, the counter moved only forward
    const keys = new Map([[key.keyId, createPublicKey(createPrivateKey(key.privateKeyPem))]]);
    const counters = new Map<string, number>();
    const first = makeAppAttestAssertion(key, { nonce });
    assert.deepEqual(appAttestAssertionFloor(first.body, nonce, keys, counters), { keyId: key.keyId, counter: 1, fresh: true });
    assert.deepEqual(appAttestAssertionFloor(first.body, nonce, keys, counters), { keyId: key.keyId, counter: 1, fresh: false }, "a replay");
    assert.equal(appAttestAssertionFloor(makeAppAttestAssertion(first.key, { nonce, tamperedSignature: true }).body, nonce, keys, counters), undefined);
    assert.equal(appAttestAssertionFloor(makeAppAttestAssertion(first.key, { nonce, unknownKeyId: true }).body, nonce, keys, counters), undefined);
  });

  it("compares attestd's Yes with the floor baseline's Success and reports the ratio against 60 %", async () => {
    const run = await runBench({ quick: true, only: ["app-attest-https"], profile: "never", outDir: out, print: false });
    const s = JSON.parse(readFileSync(run.files[0]!, "utf8")).sections.appAttestHttps;
    assert.equal(s.status, "ok", s.message);
    assert.equal(s.verdict, "Success/Yes", s.notes.join("; "));
    assert.match(s.blobs.baseline.sample, /"status":"Success"/);
    for (const who of ["attestd", "baseline"]) assert.ok(s.blobs[who].requests2xx > 0, `${who} answered`);
    assert.equal(s.blobs.target, APP_ATTEST_HTTP_TARGET);
    assert.equal(s.blobs.met, s.blobs.ratio >= APP_ATTEST_HTTP_TARGET);
    assert.ok(s.pool.attestationBytes > 0);
    assert.match(s.how.attestd, /ios-app add/);
    assert.match(run.summary, /App Attest over HTTPS \(issue 25\)/);
  });

  it("the assertion workload: attestd answers Yes (each assertion's counter is new to it)", async () => {
    const run = await runBench({ quick: true, only: ["app-attest-assertion-https"], profile: "never", outDir: out, print: false });
    const s = JSON.parse(readFileSync(run.files[0]!, "utf8")).sections.appAttestAssertionHttps;
    assert.equal(s.status, "ok", s.message);
    assert.equal(s.verdict, "Success/Yes", s.notes.join("; "));
    for (const who of ["attestd", "baseline"]) assert.ok(s.blobs[who].requests2xx > 0, `${who} answered`);
    assert.equal(s.blobs.met, s.blobs.ratio >= APP_ATTEST_HTTP_TARGET);
    assert.match(run.summary, /App Attest assertions over HTTPS \(issue 25\)/);
  });
});
