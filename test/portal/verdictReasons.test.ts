import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { AppAttestRuleId } from "../../src/attestation/formats/appAttest.ts";
import type { PlayRuleId } from "../../src/attestation/formats/playIntegrity.ts";
import type { AppraisalResult, AppraisalChecks } from "../../src/attestation/types.ts";
import {
  ANDROID_SENTENCES,
  APP_ATTEST_ASSERTION_SENTENCES,
  APP_ATTEST_ATTESTATION_SENTENCES,
  explainVerdict,
  PIN_SENTENCES,
  PLAY_SENTENCES,
  VENDOR_SENTENCES,
  verdictDeviceId,
} from "../../src/portal/verdictReasons.ts";
import { androidTrust, appraiseAt, challengeOf, nonceFor, pemBlob, WRONG_NONCE } from "../android/fixtures.ts";

/** A stored verdict of `format` as the explanation reads it: status, verdict, detail (rule, checks, device). */
const verdict = (format: string, status: string, v: string, detail: Record<string, unknown>, reason = "the appraisal's own words") => ({
  format,
  record: { status, verdict: v } as never,
  detail,
  reason,
});
const ofResult = (r: AppraisalResult) => ({ format: r.format, record: r.record, detail: r.detail, reason: r.reason });

/**
 * src/portal/verdictReasons.ts: every rule of every format has a sentence for people (the vendor rules are also
 * reached by real blobs in test/http/portalVerdictWords.test.ts), android-key's is chosen from real appraisals'
 * checks, and what the module does not know falls back to the stored reason rather than to a wrong sentence.
 */
describe("verdict reasons in words", () => {
  it("every sentence is a sentence, and none repeats another of its format", () => {
    for (const table of [VENDOR_SENTENCES, ANDROID_SENTENCES, PLAY_SENTENCES, APP_ATTEST_ATTESTATION_SENTENCES, APP_ATTEST_ASSERTION_SENTENCES, PIN_SENTENCES]) {
      const sentences = Object.values(table);
      assert.equal(new Set(sentences).size, sentences.length);
      for (const s of sentences) assert.match(s, /^[A-Z].{20,}\.$/, s);
    }
  });

  it("play-integrity: each rule id its sentence; an unknown id keeps the stored reason", () => {
    const ids = Object.keys(PLAY_SENTENCES) as PlayRuleId[];
    assert.equal(ids.length, 13);
    for (const id of ids) {
      const why = explainVerdict(verdict("play-integrity", "Success", "No", { rule: id }));
      assert.deepEqual(why, { sentence: PLAY_SENTENCES[id], rule: `play-integrity rule ${id}` });
    }
    assert.deepEqual(explainVerdict(verdict("play-integrity", "Success", "No", { rule: "later-rule" })), { sentence: "the appraisal's own words", rule: "play-integrity" });
  });

  it("app-attest: each rule of an attestation and of an assertion its own sentence; a rule of the other kind keeps the stored reason", () => {
    const ruleIds: AppAttestRuleId[] = ["no-app", "chain", "nonce", "key-id", "app-id", "counter", "environment", "receipt", "unknown-key", "revoked-key", "signature", "pass"];
    const covered = new Set([...Object.keys(APP_ATTEST_ATTESTATION_SENTENCES), ...Object.keys(APP_ATTEST_ASSERTION_SENTENCES)]);
    assert.deepEqual([...covered].sort(), [...ruleIds].sort(), "every rule id has a sentence in one kind or both");
    for (const [kind, table, prefix] of [["attestation", APP_ATTEST_ATTESTATION_SENTENCES, "app-attest rule"], ["assertion", APP_ATTEST_ASSERTION_SENTENCES, "app-attest assertion rule"]] as const) {
      for (const [id, sentence] of Object.entries(table)) {
        assert.deepEqual(explainVerdict(verdict("app-attest", "Success", "No", { kind, rule: id })), { sentence, rule: `${prefix} ${id}` });
      }
    }
    assert.notEqual(APP_ATTEST_ATTESTATION_SENTENCES.counter, APP_ATTEST_ASSERTION_SENTENCES.counter, "the same id says what it means for its kind");
    assert.equal(explainVerdict(verdict("app-attest", "Revoked", "No", { kind: "attestation", rule: "revoked-key" })).sentence, "the appraisal's own words");
    assert.equal(explainVerdict(verdict("app-attest", "Success", "No", { rule: "pass" })).sentence, "the appraisal's own words");
  });

  it("vendor: rules 1 to 6 by number, rule 7 by what the measurements did; anything else keeps the stored reason", () => {
    for (let rule = 1; rule <= 6; rule++) {
      assert.equal(explainVerdict(verdict("vendor", "Success", "No", { rule })).sentence, VENDOR_SENTENCES[String(rule) as "1"]);
    }
    for (const m of ["no-reference", "differ", "match"] as const) {
      const why = explainVerdict(verdict("vendor", "Success", "No", { rule: 7, checks: { measurements: m } }));
      assert.deepEqual(why, { sentence: VENDOR_SENTENCES[`7:${m}`], rule: `vendor rule 7 ${m}` });
    }
    assert.equal(explainVerdict(verdict("vendor", "Success", "No", { rule: 8 })).sentence, "the appraisal's own words");
    assert.equal(explainVerdict(verdict("vendor", "Success", "No", {})).sentence, "the appraisal's own words");
  });

  it("android-key, real chains: Yes is pass, a wrong nonce is nonce, an unlocked Pixel is bootloader, stale trust is trust", () => {
    const trust = androidTrust();
    const at = "2025-10-01T00:00:00Z";
    const good = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const yes = appraiseAt(good, nonceFor(challengeOf(good, trust, at)), trust, at);
    assert.equal(yes.record.verdict, "Yes");
    assert.deepEqual(explainVerdict(ofResult(yes)), { sentence: ANDROID_SENTENCES.pass, rule: "android-key pass" });
    assert.equal(explainVerdict(ofResult(appraiseAt(good, WRONG_NONCE, trust, at))).sentence, ANDROID_SENTENCES.nonce);
    const stale = appraiseAt(good, WRONG_NONCE, androidTrust({ fresh: false }), at);
    assert.equal(explainVerdict(ofResult(stale)).sentence, ANDROID_SENTENCES.trust);

    const unlocked = pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_EC_NONE.pem");
    const uat = "2024-09-20T00:00:00Z";
    const no = appraiseAt(unlocked, nonceFor(challengeOf(unlocked, trust, uat)), trust, uat);
    assert.equal(no.record.verdict, "No", no.reason);
    assert.equal(explainVerdict(ofResult(no)).sentence, ANDROID_SENTENCES.bootloader);
    const strangerRoots = androidTrust({ pinnedRootSpkiSha256: new Set(["00".repeat(32)]) });
    assert.equal(explainVerdict(ofResult(appraiseAt(good, WRONG_NONCE, strangerRoots, at))).sentence, ANDROID_SENTENCES.chain);
  });

  it("android-key, each policy check by the checks it leaves", () => {
    const cases: [Partial<AppraisalChecks>, keyof typeof ANDROID_SENTENCES][] = [
      [{ securityLevel: "software" }, "security-level"],
      [{ securityLevel: "mismatch" }, "security-level"],
      [{ securityLevel: "tee", bootState: "absent" }, "root-of-trust"],
      [{ securityLevel: "tee", bootloader: "unlocked", bootState: "unverified" }, "bootloader"],
      [{ securityLevel: "tee", bootloader: "locked", bootState: "self-signed" }, "boot-state"],
      [{ securityLevel: "tee", bootloader: "locked", bootState: "failed" }, "boot-state"],
      [{ securityLevel: "tee", bootloader: "locked", bootState: "verified", tamper: "set" }, "knox-tamper"],
      [{ securityLevel: "tee", bootloader: "locked", bootState: "verified", tamper: "unreadable" }, "knox-unreadable"],
      [{ securityLevel: "tee", bootloader: "locked", bootState: "verified", patchLevel: "below-minimum" }, "patch-level"],
      [{ securityLevel: "strongbox", bootloader: "locked", bootState: "self-signed-allowed", app: "refused" }, "app"],
      [{ securityLevel: "tee", bootloader: "locked", bootState: "verified" }, "policy"],
    ];
    for (const [checks, rule] of cases) {
      assert.deepEqual(explainVerdict(verdict("android-key", "Success", "No", { checks })), { sentence: ANDROID_SENTENCES[rule], rule: `android-key ${rule}` }, rule);
    }
    assert.equal(explainVerdict(verdict("android-key", "Revoked", "No", { checks: { chain: "pass", revocation: "revoked" } })).sentence, ANDROID_SENTENCES.revoked);
    assert.deepEqual(explainVerdict(verdict("android-key", "Success", "No", {})), { sentence: "the appraisal's own words", rule: "android-key" }, "no checks kept: no guess");
    const reached = new Set([...cases.map(([, r]) => r), "trust", "chain", "revoked", "nonce", "pass"]);
    assert.deepEqual([...reached].sort(), Object.keys(ANDROID_SENTENCES).sort(), "every android-key sentence is reachable");
  });

  it("a device pin that refused the device speaks first, and keeps the appraisal's rule as reference", () => {
    const device = { deviceId: "phone-1", pin: "changed", changes: [{ fact: "chipId", from: "aa", to: "bb" }] };
    const why = explainVerdict(verdict("vendor", "Success", "No", { rule: 7, checks: { measurements: "match" }, device }));
    assert.deepEqual(why, { sentence: PIN_SENTENCES.changed, rule: "device pin changed, after vendor rule 7 match" });
    const down = explainVerdict(verdict("play-integrity", "Success", "No", { rule: "pass", device: { ...device, pin: "downgrade" } }));
    assert.equal(down.sentence, PIN_SENTENCES.downgrade);
    const matched = explainVerdict(verdict("vendor", "Success", "Yes", { rule: 7, checks: { measurements: "match" }, device: { ...device, pin: "matched" } }));
    assert.equal(matched.sentence, VENDOR_SENTENCES["7:match"]);
    assert.equal(verdictDeviceId({ detail: { device } }), "phone-1");
    assert.equal(verdictDeviceId({ detail: {} }), undefined);
  });
});
