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
  reasonInWords,
  VENDOR_SENTENCES,
  verdictDeviceId,
} from "../../src/portal/verdictReasons.ts";
import { STATS_REASON_CHARS } from "../../src/store/historyQueries.ts";
import { makeAppAttestAssertion, makeAppAttestAttestation } from "../../src/attestation/sim/appAttest.ts";
import { androidTrust, appraiseAt, challengeOf, nonceFor, pemBlob, WRONG_NONCE } from "../android/fixtures.ts";
import { NONCE as ATTEST_NONCE, NOW as ATTEST_NOW, appraiseAssertion, appraiseAttestation, demoCa, knownKey } from "../appAttest/fixtures.ts";
import { joseToken, makeApp, openAndAppraise, payload } from "../playIntegrity/fixtures.ts";

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

/**
 * reasonInWords: the overview's counters keep the reason text and the status only (verdict_stats), so the sentence
 * is chosen from the text the formats write. Real appraisals' reasons give the words explainVerdict gives the
 * stored verdict; what the text does not tell beyond doubt (an unknown form, a pairing no format writes, a cut-off
 * text whose deciding words are gone) gives nothing, and the overview shows the text itself.
 */
describe("a counted reason in words, from its text alone", () => {
  /** the counters' reason is the stored one cut to STATS_REASON_CHARS */
  const counted = (r: AppraisalResult) => [...r.reason].slice(0, STATS_REASON_CHARS).join("");
  const sameWords = (r: AppraisalResult) => {
    const expected = explainVerdict(ofResult(r));
    assert.notEqual(expected.sentence, r.reason, `explainVerdict knows ${r.reason}`);
    assert.deepEqual(reasonInWords(counted(r), r.record.status), expected, r.reason);
  };

  it("android-key, real chains: pass, nonce, trust, bootloader and chain, as the Verdicts pages say them", () => {
    const trust = androidTrust();
    const at = "2025-10-01T00:00:00Z";
    const good = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    sameWords(appraiseAt(good, nonceFor(challengeOf(good, trust, at)), trust, at));
    sameWords(appraiseAt(good, WRONG_NONCE, trust, at));
    sameWords(appraiseAt(good, WRONG_NONCE, androidTrust({ fresh: false }), at));
    sameWords(appraiseAt(good, WRONG_NONCE, androidTrust({ pinnedRootSpkiSha256: new Set(["00".repeat(32)]) }), at));
    const unlocked = pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_EC_NONE.pem");
    const uat = "2024-09-20T00:00:00Z";
    const no = appraiseAt(unlocked, nonceFor(challengeOf(unlocked, trust, uat)), trust, uat);
    assert.equal(explainVerdict(ofResult(no)).sentence, ANDROID_SENTENCES.bootloader);
    sameWords(no);
  });

  it("android-key: each policy failure, as androidPolicy.ts words it, by its check; the app check only when whole", () => {
    const cases: [string, keyof typeof ANDROID_SENTENCES][] = [
      ["security level Software is not TrustedEnvironment or StrongBox; bootloader unlocked (deviceLocked = false)", "security-level"],
      ["attestationSecurityLevel TrustedEnvironment differs from keyMintSecurityLevel Software", "security-level"],
      ["no hardware-enforced RootOfTrust", "root-of-trust"],
      ["bootloader unlocked (deviceLocked = false); verifiedBootState Unverified", "bootloader"],
      [`SelfSigned boot with key ${"ab".repeat(32)}, not on the allow-list`, "boot-state"],
      ["verifiedBootState Failed", "boot-state"],
      ["Samsung Knox warranty bit set", "knox-tamper"],
      ["Samsung Knox extension unreadable (bad length): its warranty bit cannot be read", "knox-unreadable"],
      ["osPatchLevel 202301 is older than the minimum 202401", "patch-level"],
      ["no usable hardware-enforced osPatchLevel (minimum 202401)", "patch-level"],
      ["app com.example.a (signing digests ab) is not on the app allow-list", "app"],
    ];
    for (const [reason, rule] of cases) {
      assert.deepEqual(reasonInWords(reason, "Success"), { sentence: ANDROID_SENTENCES[rule], rule: `android-key ${rule}` }, reason);
    }
    assert.equal(reasonInWords(`app ${"com.example.long.".repeat(20)}`, "Success"), undefined, "a cut-off app failure");
    assert.equal(reasonInWords("certificate 2 (serial 0a) is REVOKED (KEY_COMPROMISE)", "Revoked")?.sentence, ANDROID_SENTENCES.revoked);
    // a long trust reason cut before its " (fail closed)" is not taken for a chain's
    const cut = [...`the Android attestation status list could not be fetched (${"x".repeat(300)}) (fail closed)`].slice(0, STATS_REASON_CHARS).join("");
    assert.equal(reasonInWords(cut, "CertificateInvalid"), undefined);
  });

  it("vendor: 'rule N (Status/Verdict)' as the container's rules write it; a pairing no rule makes keeps its text", () => {
    const cases: [string, string, string][] = [
      ["rule 1 (DeviceError/Unknown): the device reported exitCode 3 (\"no key\")", "DeviceError", "1"],
      ["rule 2 (CertificateInvalid/No): certificate 0 is not valid at 2026-11-26T12:00:00.000Z", "CertificateInvalid", "2"],
      ["rule 3 (Revoked/No): the leaf CN=dev, serial 0a, is REVOKED (KEY_COMPROMISE)", "Revoked", "3"],
      ["rule 4 (SignatureInvalid/No): the signature over data does not verify (ecdsa-with-SHA256)", "SignatureInvalid", "4"],
      ["rule 5 (NonceMismatch/No): the NONCE record is not the query nonce", "NonceMismatch", "5"],
      ["rule 6 (Success/No): TAMPER_BIT is 1", "Success", "6"],
      ['rule 7 (Success/Unknown): no reference values for ("X1", "2.0")', "Success", "7:no-reference"],
      ['rule 7 (Success/No): measurements differ from the reference values for ("X1", "1.0"): PCR0', "Success", "7:differ"],
      ['rule 7 (Success/Yes): measurements equal the reference values for ("X1", "1.0")', "Success", "7:match"],
    ];
    for (const [reason, status, rule] of cases) {
      assert.deepEqual(reasonInWords(reason, status), { sentence: VENDOR_SENTENCES[rule as "1"], rule: `vendor rule ${rule.replace(":", " ")}` }, reason);
    }
    for (const [reason, status] of [
      ["rule 3 (SignatureInvalid/No): the signature does not verify", "SignatureInvalid"],
      ["rule 8 (SignatureInvalid/No): a rule no container has", "SignatureInvalid"],
      ["rule 6 (Success/No): TAMPER_BIT is 1", "Revoked"],
      ["rule 1: the device reported an error", "DeviceError"],
      ["something the portal never heard of", "Success"],
      ["", "CertificateInvalid"],
    ]) {
      assert.equal(reasonInWords(reason!, status!), undefined, reason);
    }
  });

  it("play-integrity, real tokens: each rule's reason, the ids it shares with app-attest told apart by their words", async () => {
    const app = makeApp();
    const appraised = async (p: unknown, apps = [app]) => (await openAndAppraise(await joseToken(p, app), apps)).result;
    const results = [
      await appraised(payload()),
      await appraised(payload({ requestDetails: { requestHash: undefined } })),
      await appraised(payload({ requestDetails: { requestPackageName: "com.example.other" } })),
      await appraised(payload(), []),
      await appraised(payload({ appIntegrity: { appRecognitionVerdict: "UNRECOGNIZED_VERSION" } })),
    ];
    assert.deepEqual(results.map((r) => r.detail.rule), ["pass", "nonce", "package", "no-app", "app-recognition"], results.map((r) => r.reason).join("\n"));
    for (const r of results) sameWords(r);
  });

  it("app-attest, real attestations and assertions: each kind's words, the shared ids by their words", async () => {
    const ca = await demoCa();
    const made = (o: Partial<Parameters<typeof makeAppAttestAttestation>[1]>) => makeAppAttestAttestation(ca, { nonce: ATTEST_NONCE, now: ATTEST_NOW, ...o });
    const { blob, key } = await made({});
    const attestations = [
      await appraiseAttestation(blob),
      await appraiseAttestation(blob, { apps: [] }),
      await appraiseAttestation((await made({ wrongNonce: true })).blob),
      await appraiseAttestation((await made({ otherAppId: "DEMOTEAM01.com.example.other" })).blob),
      await appraiseAttestation((await made({ counter: 1 })).blob),
      await appraiseAttestation((await made({ otherCa: true })).blob),
    ];
    assert.deepEqual(attestations.map((r) => r.detail.rule), ["pass", "no-app", "nonce", "app-id", "counter", "chain"]);
    const good = makeAppAttestAssertion(key, { nonce: ATTEST_NONCE }).body;
    const assertions = [
      await appraiseAssertion(good, knownKey(key)),
      await appraiseAssertion(good, knownKey(key, { counter: 1_000_000 })),
      await appraiseAssertion(good, undefined),
      await appraiseAssertion(good, knownKey(key, { revoked: true })),
      await appraiseAssertion(good, knownKey(key, { appId: "DEMOTEAM01.com.example.other" })),
    ];
    assert.deepEqual(assertions.map((r) => r.detail.rule), ["pass", "counter", "unknown-key", "revoked-key", "app-id"], assertions.map((r) => r.reason).join("\n"));
    for (const r of [...attestations, ...assertions]) sameWords(r);
    assert.equal(reasonInWords("rule nonce: a why no format writes", "NonceMismatch"), undefined, "a shared id with unknown words is no guess");
    assert.equal(reasonInWords("rule later-rule: a rule this portal does not know", "Success"), undefined);
  });

  it("a device pin: its sentence, with the appraisal's rule as reference when the text names it", () => {
    const pinned = "device pin changed: chipId aa → bb; appraisal: rule 7 (Success/Yes): measurements equal the reference values for (\"X1\", \"1.0\")";
    assert.deepEqual(reasonInWords(pinned, "Success"), { sentence: PIN_SENTENCES.changed, rule: "device pin changed, after vendor rule 7 match" });
    assert.deepEqual(reasonInWords("device pin downgrade: osPatchLevel 202401 → 202301; appraisal: rule pass: signed by the key", "Success"), {
      sentence: PIN_SENTENCES.downgrade,
      rule: "device pin downgrade",
    }, "the appraisal's words are not known: the pin alone");
    assert.equal(reasonInWords("device pin matched: nothing", "Success"), undefined);
  });
});
