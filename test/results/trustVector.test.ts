import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import type { AppraisalChecks, AppraisalStatus, VerdictRecord, VerdictValue } from "../../src/attestation/types.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { EAR_PROFILE, earAppraisal, earClaims } from "../../src/results/ear.ts";
import { checksFromStatus, earStatus, trustVector, type TrustVector } from "../../src/results/trustVector.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The mapping of attestd's checks onto the trustworthiness vector (src/results/trustVector.ts), row by row as
 * docs/results.md lists it, and the claims-set of a stored verdict. What the formats put into `detail.checks` is
 * tested through real appraisals in test/http/ear.http.test.ts.
 */

const authenticated = { chain: "pass", revocation: "pass", nonce: "pass" } as const;
/** a play-integrity token that opened and answers this request */
const played = (): AppraisalChecks => ({ signature: "pass", nonce: "pass", requestPackage: "match", freshness: "fresh" });

describe("trustworthiness vector: one row per check", () => {
  const rows: [string, AppraisalChecks, TrustVector][] = [
    ["app-attest: a Yes attestation", { chain: "pass", nonce: "pass", key: "match", app: "allowed", counter: "pass", environment: "allowed" }, { "instance-identity": 2, executables: 2, hardware: 2, "storage-opaque": 2 }],
    ["app-attest: a Yes assertion", { key: "known", signature: "pass", nonce: "pass", app: "allowed", counter: "pass" }, { "instance-identity": 2, executables: 2, "storage-opaque": 2 }],
    ["app-attest: a key id not its key's", { chain: "pass", nonce: "pass", key: "mismatch" }, { "instance-identity": 99, hardware: 2 }],
    ["app-attest: a key never attested", { key: "unknown" }, { "instance-identity": 99 }],
    ["app-attest: a revoked key", { key: "revoked" }, { "instance-identity": 96 }],
    ["app-attest: a replayed counter", { key: "known", signature: "pass", nonce: "pass", app: "allowed", counter: "fail" }, { "instance-identity": 99, executables: 2 }],
    ["app-attest: an environment the app does not allow", { chain: "pass", nonce: "pass", key: "match", app: "allowed", counter: "pass", environment: "refused" }, { "instance-identity": 2, configuration: 96, executables: 2, hardware: 2, "storage-opaque": 2 }],
    ["trust sources unavailable → verifier malfunction", { trust: "unavailable" }, { "instance-identity": -1, hardware: -1 }],
    ["the device reported an error → unexpected evidence", { evidence: "device-error" }, { "instance-identity": 1 }],
    ["chain fails → cryptographic validation failed", { chain: "fail" }, { "instance-identity": 99, hardware: 99 }],
    ["a revoked certificate → untrustworthy instance, contraindicated hardware", { chain: "pass", revocation: "revoked" }, { "instance-identity": 96, hardware: 96 }],
    ["the data signature fails", { chain: "pass", revocation: "pass", signature: "fail" }, { "instance-identity": 99, hardware: 2 }],
    ["the nonce does not match", { ...authenticated, nonce: "fail" }, { "instance-identity": 99, hardware: 2 }],
    ["authenticated → recognized instance, genuine hardware", authenticated, { "instance-identity": 2, hardware: 2 }],
    ["vendor: tamper bit", { ...authenticated, signature: "pass", tamper: "set" }, { "instance-identity": 2, hardware: 96 }],
    ["vendor: measurements match", { ...authenticated, signature: "pass", tamper: "clear", measurements: "match" }, { "instance-identity": 2, executables: 2, hardware: 2 }],
    ["vendor: measurements differ", { ...authenticated, signature: "pass", tamper: "clear", measurements: "differ" }, { "instance-identity": 2, executables: 96, hardware: 2 }],
    ["vendor: no reference values", { ...authenticated, signature: "pass", tamper: "clear", measurements: "no-reference" }, { "instance-identity": 2, executables: 33, hardware: 2 }],
    [
      "android-key: the good phone",
      { ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "current" },
      { "instance-identity": 2, configuration: 2, executables: 3, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "android-key: StrongBox, allow-listed custom OS, allowed app",
      { ...authenticated, securityLevel: "strongbox", bootState: "self-signed-allowed", bootloader: "locked", patchLevel: "current", app: "allowed" },
      { "instance-identity": 2, configuration: 2, executables: 2, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "android-key: software key",
      { ...authenticated, securityLevel: "software", bootState: "verified", bootloader: "locked", patchLevel: "current" },
      { "instance-identity": 2, configuration: 2, executables: 3, hardware: 96, "storage-opaque": 32 },
    ],
    [
      "android-key: security levels disagree",
      { ...authenticated, securityLevel: "mismatch", bootState: "verified", bootloader: "locked", patchLevel: "current" },
      { "instance-identity": 2, configuration: 2, executables: 3, hardware: 96 },
    ],
    [
      "android-key: unlocked, unverified boot, an old patch",
      { ...authenticated, securityLevel: "tee", bootState: "unverified", bootloader: "unlocked", patchLevel: "outdated" },
      { "instance-identity": 2, configuration: 96, executables: 96, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "android-key: an old patch only → a warning",
      { ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "outdated" },
      { "instance-identity": 2, configuration: 32, executables: 3, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "android-key: under the policy's minimum patch level, no patch level known",
      { ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "below-minimum" },
      { "instance-identity": 2, configuration: 96, executables: 3, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "android-key: unknown patch level claims nothing of it",
      { ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "unknown" },
      { "instance-identity": 2, configuration: 2, executables: 3, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "android-key: refused app on a verified boot; Knox warranty bit",
      { ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "current", app: "refused", tamper: "set" },
      { "instance-identity": 2, configuration: 2, executables: 96, hardware: 96, "storage-opaque": 2 },
    ],
    [
      "android-key: allowed app does not lift a failed boot; self-signed key not allowed; Knox unreadable",
      { ...authenticated, securityLevel: "tee", bootState: "self-signed", bootloader: "locked", patchLevel: "current", app: "allowed", tamper: "unreadable" },
      { "instance-identity": 2, configuration: 2, executables: 96, hardware: 96, "storage-opaque": 2 },
    ],
    [
      "android-key: no hardware RootOfTrust",
      { ...authenticated, securityLevel: "tee", bootState: "absent", patchLevel: "unknown" },
      { "instance-identity": 2, executables: 96, hardware: 2, "storage-opaque": 2 },
    ],
    // play-integrity: no chain; the token's signature (Google's key), nonce, package and time authenticate it
    ["play-integrity: no app registered, or Google's decoding unavailable", { trust: "unavailable" }, { "instance-identity": -1, hardware: -1 }],
    ["play-integrity: the token does not open", { signature: "fail" }, { "instance-identity": 99 }],
    ["play-integrity: opened, nonce fails", { signature: "pass", nonce: "fail" }, { "instance-identity": 99 }],
    ["play-integrity: another app's request", { ...played(), requestPackage: "mismatch", freshness: undefined }, { "instance-identity": 99 }],
    ["play-integrity: stale", { ...played(), freshness: "stale" }, { "instance-identity": 99 }],
    ["play-integrity: dated ahead", { ...played(), freshness: "future" }, { "instance-identity": 99 }],
    [
      "play-integrity: STRONG, recognized app, listed certificate",
      { ...played(), appRecognition: "recognized", app: "allowed", deviceRecognition: "strong" },
      { "instance-identity": 2, configuration: 2, executables: 2, hardware: 2, "storage-opaque": 2 },
    ],
    [
      "play-integrity: DEVICE, recognized app",
      { ...played(), appRecognition: "recognized", deviceRecognition: "device" },
      { "instance-identity": 2, configuration: 2, executables: 2, hardware: 2 },
    ],
    [
      "play-integrity: BASIC only → warnings",
      { ...played(), appRecognition: "recognized", deviceRecognition: "basic" },
      { "instance-identity": 2, configuration: 32, executables: 33, hardware: 2 },
    ],
    [
      "play-integrity: no device label, unrecognized version",
      { ...played(), appRecognition: "unrecognized", deviceRecognition: "none" },
      { "instance-identity": 2, executables: 96, hardware: 96 },
    ],
    [
      "play-integrity: app not evaluated, certificate not listed",
      { ...played(), appRecognition: "unevaluated", app: "refused", deviceRecognition: "device" },
      { "instance-identity": 2, configuration: 2, executables: 96, hardware: 2 },
    ],
    ["play-integrity: a pass without chain is not enough beside a failed chain", { chain: "fail", signature: "pass", nonce: "pass" }, { "instance-identity": 99, hardware: 99 }],
  ];
  for (const [name, checks, expected] of rows) {
    it(name, () => assert.deepEqual(trustVector(checks), expected));
  }

  it("claims come in AR4SI's order", () => {
    const v = trustVector({ ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "current" });
    assert.deepEqual(Object.keys(v), ["instance-identity", "configuration", "executables", "hardware", "storage-opaque"]);
  });
});

describe("device pin (detail.device, written by per-device pinning)", () => {
  it("first and matched affirm the instance; changed and downgrade contraindicate it; none adds nothing", () => {
    assert.equal(trustVector(authenticated, "first")["instance-identity"], 2);
    assert.equal(trustVector(authenticated, "matched")["instance-identity"], 2);
    assert.equal(trustVector(authenticated, "changed")["instance-identity"], 96);
    assert.equal(trustVector(authenticated, "downgrade")["instance-identity"], 96);
    assert.deepEqual(trustVector(authenticated, "none"), trustVector(authenticated));
    // a pin never lifts a failed authentication
    assert.equal(trustVector({ ...authenticated, nonce: "fail" }, "matched")["instance-identity"], 99);
  });
});

describe("ear.status", () => {
  it("is the worst tier of the vector", () => {
    assert.equal(earStatus({ "instance-identity": 2, hardware: 2 }, "Yes"), "affirming");
    assert.equal(earStatus({ "instance-identity": 2, configuration: 32 }, "Yes"), "warning");
    assert.equal(earStatus({ "instance-identity": 2, executables: 33 }, "Unknown"), "warning");
    assert.equal(earStatus({ "instance-identity": 1 }, "Unknown"), "none");
    assert.equal(earStatus({ "instance-identity": 96, configuration: 32 }, "No"), "contraindicated");
  });

  it("is contraindicated whenever the verdict is No, whatever the vector says", () => {
    assert.equal(earStatus({ "instance-identity": -1, hardware: -1 }, "No"), "contraindicated");
    assert.equal(earStatus({ "instance-identity": 2, hardware: 2 }, "No"), "contraindicated");
  });
});

const record = (status: AppraisalStatus, verdict: VerdictValue): VerdictRecord => ({
  measurements: "",
  tamperBit: "0",
  IMEI: "",
  status,
  nonce: "n".repeat(43),
  chipId: "01",
  verdict,
  MAC: "",
  version: "300",
  createdDate: new Date(T0).toISOString(),
  updateDate: new Date(T0).toISOString(),
});

const stored = (detail: Record<string, unknown>, status: AppraisalStatus = "Success", verdict: VerdictValue = "Yes"): StoredVerdict => ({
  objectId: "obj1",
  tenantId: "t1",
  format: "android-key",
  record: record(status, verdict),
  reason: "",
  detail,
  createdAt: new Date(T0).toISOString(),
});

describe("the claims-set of a stored verdict", () => {
  const goodPhone: AppraisalChecks = { ...authenticated, securityLevel: "tee", bootState: "verified", bootloader: "locked", patchLevel: "current" };
  const labels = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"];

  it("carries the profile, iat, verifier, nonce, one submod named after the format, and the verdict it stands for", () => {
    const claims = earClaims(
      stored({ checks: goodPhone, appraisalPolicyId: "urn:x", deviceIntegrity: { deviceRecognitionVerdict: labels } }),
      T0 + 1999,
      { developer: "attestd", build: "attestd test" },
    );
    assert.deepEqual(claims, {
      eat_profile: EAR_PROFILE,
      iat: Math.floor(T0 / 1000) + 1,
      "ear.verifier-id": { developer: "attestd", build: "attestd test" },
      eat_nonce: "n".repeat(43),
      submods: {
        "android-key": {
          "ear.status": "affirming",
          "ear.trustworthiness-vector": { "instance-identity": 2, configuration: 2, executables: 3, hardware: 2, "storage-opaque": 2 },
          "ear.appraisal-policy-id": "urn:x",
          "attestd.device-integrity": { deviceRecognitionVerdict: labels },
        },
      },
      "attestd.verdict": { objectId: "obj1", status: "Success", verdict: "Yes", createdDate: new Date(T0).toISOString() },
    });
  });

  it("reads detail.device when the relying party named the device, and works without it", () => {
    const changed = earAppraisal(stored({ checks: goodPhone, device: { deviceId: "acct-7:phone", pin: "changed", changes: [{ fact: "verifiedBootKey", from: "aa", to: "bb" }] } }, "Success", "No"));
    assert.equal(changed["ear.status"], "contraindicated");
    assert.equal(changed["ear.trustworthiness-vector"]["instance-identity"], 96);
    assert.deepEqual(changed["attestd.device"], {
      deviceId: "acct-7:phone",
      pin: "changed",
      changes: [{ fact: "verifiedBootKey", from: "aa", to: "bb" }],
    });
    const matched = earAppraisal(stored({ checks: goodPhone, device: { deviceId: "acct-7:phone", pin: "matched" } }));
    assert.equal(matched["ear.status"], "affirming");
    assert.deepEqual(matched["attestd.device"], { deviceId: "acct-7:phone", pin: "matched" });
    const without = earAppraisal(stored({ checks: goodPhone }));
    assert.equal(without["attestd.device"], undefined);
    // a malformed device entry is ignored rather than trusted
    assert.equal(earAppraisal(stored({ checks: goodPhone, device: { deviceId: 7, pin: "matched" } }))["attestd.device"], undefined);
  });

  it("a verdict stored before detail.checks existed: the checks its status implies", () => {
    assert.deepEqual(checksFromStatus("Revoked"), { chain: "pass", revocation: "revoked" });
    const legacy = earAppraisal(stored({}, "Success", "No"));
    assert.deepEqual(legacy["ear.trustworthiness-vector"], { "instance-identity": 2, hardware: 2 });
    assert.equal(legacy["ear.status"], "contraindicated");
    assert.equal(legacy["ear.appraisal-policy-id"], undefined);
    const deviceError = earAppraisal({ ...stored({}, "DeviceError", "Unknown"), format: "vendor" });
    assert.deepEqual(deviceError, { "ear.status": "none", "ear.trustworthiness-vector": { "instance-identity": 1 } });
  });
});

describe("docs/results.md", () => {
  it("lists every AR4SI value the mapping uses, so the table and the code cannot drift apart silently", () => {
    const doc = readFileSync(new URL("../../docs/results.md", import.meta.url), "utf8");
    for (const value of [-1, 1, 2, 3, 32, 33, 96, 99]) assert.match(doc, new RegExp(`\\| ${value} \\|`), `value ${value}`);
  });
});
