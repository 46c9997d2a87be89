import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { attestdCli, REPO } from "../helpers/serverProcess.ts";
import { CERT_HEX, joseToken, makeApp, NONCE, NOW, payload } from "./fixtures.ts";

/**
 * `attestd appraise FILE` offline for a Play Integrity token (docs/play-integrity.md, "Offline"): the app's
 * response keys and policy as flags, the token opened with them, then appraised as the service would. Runs the
 * built CLI (dist/): `npm run build` first.
 */

const vec = (p: string) => path.join(REPO, "test/vectors/android-key", p);

describe("attestd appraise, play-integrity", () => {
  const app = makeApp();
  const keys = app.registered.responseKeys!;
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-play-"));
  const file = path.join(dir, "token.txt");
  const base = [
    "appraise", file, "--nonce", NONCE, "--at", NOW.toISOString(), "--data-dir", dir,
    "--android-roots", vec("android_keyattestation/roots.json"),
    "--android-status", vec("google_android-key-attestation/status.json"),
  ];
  const play = [
    "--play-package", app.registered.policy.packageName,
    "--play-decryption-key", Buffer.from(keys.decryptionKey).toString("base64"),
    "--play-verification-key", Buffer.from(keys.verificationKeySpki).toString("base64"),
    "--play-cert-digest", CERT_HEX,
  ];

  it("opens the token with the flags' keys and appraises it: Yes, and with --detail the rule and the facts", async () => {
    writeFileSync(file, (await joseToken(payload(), app)) + "\n");
    const ok = attestdCli([...base, ...play]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.deepEqual([JSON.parse(ok.stdout).status, JSON.parse(ok.stdout).verdict], ["Success", "Yes"]);
    const d = JSON.parse(attestdCli([...base, ...play, "--detail"]).stdout);
    assert.equal(d.format, "play-integrity");
    assert.equal(d.detail.rule, "pass");
    assert.equal(d.facts.identity.appPackages, app.registered.policy.packageName);
  });

  it("the policy flags decide as the registry's policy would: floor, max age, required signals, digests", async () => {
    writeFileSync(file, await joseToken(payload({ deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_DEVICE_INTEGRITY"] }, accountDetails: { appLicensingVerdict: "UNLICENSED" } }), app));
    const rule = (...extra: string[]) => JSON.parse(attestdCli([...base, ...play, "--detail", ...extra]).stdout).detail.rule;
    assert.equal(rule(), "pass");
    assert.equal(rule("--play-device-floor", "MEETS_STRONG_INTEGRITY"), "device-floor");
    assert.equal(rule("--play-require", "licensed"), "licensing");
    // the token is 2 s old at NOW; a minute later it is past a 10 s window (the registry's least)
    assert.equal(rule("--play-max-age-seconds", "10", "--at", new Date(NOW.getTime() + 60_000).toISOString()), "freshness");
    const tooShort = attestdCli([...base, ...play, "--play-max-age-seconds", "1"]);
    assert.equal(tooShort.status, 1);
    assert.match(tooShort.stderr, /--play-max-age-seconds must be a whole number of seconds from 10 to 86400/);
    assert.equal(rule("--play-cert-digest", "11".repeat(32)), "pass", "one listed digest is enough");
  });

  it("without --play-package the verdict is no-app; another app's keys: not-opened; bad flags are refused with a clear line", async () => {
    writeFileSync(file, await joseToken(payload(), app));
    const none = JSON.parse(attestdCli([...base, "--detail"]).stdout);
    assert.deepEqual([none.record.status, none.record.verdict, none.detail.rule], ["CertificateInvalid", "No", "no-app"]);
    const other = makeApp().registered.responseKeys!;
    const wrong = [...play];
    wrong[3] = Buffer.from(other.decryptionKey).toString("base64");
    assert.equal(JSON.parse(attestdCli([...base, ...wrong, "--detail"]).stdout).detail.rule, "not-opened");
    const short = [...play];
    short[3] = Buffer.alloc(16).toString("base64");
    const bad = attestdCli([...base, ...short]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /--play-decryption-key: 16 bytes, expected 32/);
    assert.match(attestdCli([...base, ...play, "--play-device-floor", "STRONG"]).stderr, /--play-device-floor must be one of/);
  });

  it("a broken token is BLOB_MALFORMED, exit 2", () => {
    writeFileSync(file, "eyJhbGciOiJBMjU2S1ciLCJlbmMiOiJBMjU2R0NNIn0.a.b.c.d");
    const r = attestdCli([...base, ...play]);
    assert.equal(r.status, 2);
    assert.equal(JSON.parse(r.stdout).error.code, "4000006");
  });
});
