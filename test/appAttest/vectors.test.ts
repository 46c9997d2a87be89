import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { appraise } from "../../src/attestation/appraise.ts";
import { parsePemBundle } from "../../src/attestation/encoding/pem.ts";
import type { IosEnvironment, TrustConfig } from "../../src/attestation/types.ts";
import { nonceForChallenge } from "../../src/cli/appraiseCommand.ts";
import { readAppAttestAttestation } from "../../src/attestation/encoding/appAttestObject.ts";
import { appAttestReceiptCheck } from "../../src/attestation/encoding/appAttestReceipt.ts";

const receiptOf = (blob: Uint8Array) => Buffer.from(readAppAttestAttestation(blob).receipt);

/**
 * Real iPhone attestations (test/vectors/app-attest/README.md): each appraises as MANIFEST.tsv says, at its `at`
 * time, with its challenge, app id and environment, against Apple's App Attestation Root CA as attestd ships it.
 */

const dir = new URL("../vectors/app-attest/", import.meta.url);
const appleRoot = parsePemBundle(readFileSync(new URL("../../src/trust/appleAppAttestationRootCa.pem", import.meta.url), "utf8"));
const trust: TrustConfig = {
  vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] },
  android: { pinnedRootSpkiSha256: new Set(), rootsDer: [], status: new Map(), fresh: false, allowedBootKeys: [], policy: {} },
  appAttest: { rootsDer: appleRoot },
};

const [head, ...rows] = readFileSync(new URL("MANIFEST.tsv", dir), "utf8").trim().split("\n");
const cols = head!.split("\t");
const manifest = rows.map((line) => Object.fromEntries(line.split("\t").map((v, i) => [cols[i]!, v])) as Record<string, string>);

test("the manifest lists every vector", () => {
  assert.equal(manifest.length, 9);
});

for (const v of manifest) {
  const blob = new Uint8Array(readFileSync(new URL(v.file!, dir)));
  const nonce = nonceForChallenge(Buffer.from(v.challenge_hex!, "hex"));
  const at = new Date(v.at!);
  const apps = [{ appId: v.app_id!, environment: v.environment as IosEnvironment }];

  test(`${v.name}: ${v.expected_status} / ${v.expected_verdict}`, () => {
    const r = appraise({ blob, nonce, trust, now: at, appAttest: { apps } });
    assert.equal(r.format, "app-attest");
    assert.equal(r.record.status, v.expected_status, r.reason);
    assert.equal(r.record.verdict, v.expected_verdict, r.reason);
    assert.equal(r.detail.rule, "pass");
    assert.equal(r.record.measurements, v.app_id);
    const keyId = /keyId ([A-Za-z0-9+/=]+)/.exec(v.decoded!)![1]!;
    assert.equal(r.record.chipId, keyId);
    assert.deepEqual(r.appAttest && { kind: r.appAttest.kind, keyId: r.appAttest.kind === "attested" ? r.appAttest.keyId : "" }, { kind: "attested", keyId });
    assert.equal(r.appAttest?.kind === "attested" && r.appAttest.environment, v.environment);
  });

  test(`${v.name}: refused with another challenge, another app, the other environment, out of date, or no root`, () => {
    const other = appraise({ blob, nonce: nonceForChallenge(Buffer.from("another challenge")), trust, now: at, appAttest: { apps } });
    assert.equal(other.detail.rule, "nonce");
    assert.equal(other.record.status, "NonceMismatch");
    const otherApp = appraise({ blob, nonce, trust, now: at, appAttest: { apps: [{ appId: "ABCDE12345.com.example.other", environment: "both" }] } });
    assert.equal(otherApp.detail.rule, "app-id");
    const flipped: IosEnvironment = v.environment === "production" ? "development" : "production";
    const env = appraise({ blob, nonce, trust, now: at, appAttest: { apps: [{ appId: v.app_id!, environment: flipped }] } });
    assert.deepEqual([env.detail.rule, env.record.status, env.record.verdict], ["environment", "Success", "No"]);
    const later = appraise({ blob, nonce, trust, now: new Date("2031-01-01T00:00:00Z"), appAttest: { apps } });
    assert.equal(later.detail.rule, "chain");
    const noRoot = appraise({ blob, nonce, trust: { ...trust, appAttest: { rootsDer: [] } }, now: at, appAttest: { apps } });
    assert.deepEqual([noRoot.detail.rule, noRoot.record.status], ["chain", "CertificateInvalid"]);
    const noApp = appraise({ blob, nonce, trust, now: at });
    assert.deepEqual([noApp.detail.rule, noApp.record.verdict], ["no-app", "No"]);
  });
}

// As `serve` and `attestd appraise` judge them with Apple's root in force: the receipt each carries is Apple's, for
// this key and app; one changed byte of it refuses the attestation (rule receipt), and with no check it says so.
for (const v of manifest) {
  const blob = new Uint8Array(readFileSync(new URL(v.file!, dir)));
  const nonce = nonceForChallenge(Buffer.from(v.challenge_hex!, "hex"));
  const at = new Date(v.at!);
  const apps = [{ appId: v.app_id!, environment: v.environment as IosEnvironment }];

  test(`${v.name}: its receipt is Apple's for this key and app; a changed receipt is refused`, () => {
    const r = appraise({ blob, nonce, trust, now: at, appAttest: { apps, receiptCheck: appAttestReceiptCheck() } });
    assert.deepEqual([r.detail.rule, r.record.verdict, (r.detail.checks as { receipt?: string }).receipt], ["pass", "Yes", "pass"], r.reason);
    const unchecked = appraise({ blob, nonce, trust, now: at, appAttest: { apps } });
    assert.equal((unchecked.detail.checks as { receipt?: string }).receipt, "not-checked");
    // the receipt is attStmt.receipt inside the CBOR: flip a byte in the middle of it, found by its bytes
    const receipt = receiptOf(blob);
    const at0 = Buffer.from(blob).indexOf(receipt);
    assert.ok(at0 > 0);
    const changed = Uint8Array.from(blob);
    changed[at0 + Math.floor(receipt.length / 2)]! ^= 0x01;
    const refused = appraise({ blob: changed, nonce, trust, now: at, appAttest: { apps, receiptCheck: appAttestReceiptCheck() } });
    assert.deepEqual([refused.detail.rule, refused.record.status, refused.record.verdict], ["receipt", "Success", "No"], refused.reason);
  });
}
