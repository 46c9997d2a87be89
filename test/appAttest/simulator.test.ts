import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { X509Certificate } from "node:crypto";
import { appraise } from "../../src/attestation/appraise.ts";
import { APP_ATTEST_CA_FILES, loadAppAttestCa, makeAppAttestAttestation, saveAppAttestCa } from "../../src/attestation/sim/appAttest.ts";
import { builtInAppAttestTrust, loadAppAttestTrust } from "../../src/trust/appAttestRoots.ts";
import { APPS, NONCE, NOW, demoCa, trustOf } from "./fixtures.ts";

/** The simulator's PKI on disk (dev-ca --app-attest), and the trust it is appraised against. */

test("the demo CA round-trips through its directory; the intermediate's key is private; the root is a CA", async () => {
  const ca = await demoCa();
  const dir = path.join(mkdtempSync(path.join(tmpdir(), "attestd-aa-sim-")), "ca");
  const files = await saveAppAttestCa(ca, dir);
  assert.deepEqual(files.map((f) => path.basename(f)).sort(), Object.values(APP_ATTEST_CA_FILES).sort());
  assert.equal(statSync(path.join(dir, APP_ATTEST_CA_FILES.intermediateKey)).mode & 0o777, 0o600);
  assert.deepEqual(await loadAppAttestCa(dir), ca);
  assert.ok(new X509Certificate(ca.rootDer).ca);
  await assert.rejects(loadAppAttestCa(path.join(dir, "nope")), /not written by attestd dev-ca --app-attest/);
  // --app-attest-roots with the demo root, as serve reads it
  assert.deepEqual(loadAppAttestTrust(path.join(dir, APP_ATTEST_CA_FILES.root)).rootsDer, [ca.rootDer]);
  assert.throws(() => loadAppAttestTrust(path.join(dir, APP_ATTEST_CA_FILES.intermediateKey)), /--app-attest-roots/);
});

test("the built-in root is Apple's (its published fingerprint), and a demo attestation does not chain to it", async () => {
  const apple = builtInAppAttestTrust();
  assert.equal(new X509Certificate(apple.rootsDer[0]!).fingerprint256.replaceAll(":", ""), "1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932");
  assert.equal(loadAppAttestTrust(undefined), apple);
  const { blob } = await makeAppAttestAttestation(await demoCa(), { nonce: NONCE, now: NOW });
  const r = appraise({ blob, nonce: NONCE, trust: { ...trustOf(await demoCa()), appAttest: apple }, now: NOW, appAttest: { apps: APPS } });
  assert.deepEqual([r.detail.rule, r.record.status], ["chain", "CertificateInvalid"]);
  assert.match(readFileSync(new URL("../../src/trust/appleAppAttestationRootCa.pem", import.meta.url), "utf8"), /^-----BEGIN CERTIFICATE-----/);
});
