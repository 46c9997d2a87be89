import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { generateKeyPairSync } from "node:crypto";
import { appraise } from "../../src/attestation/appraise.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { trustVector } from "../../src/results/trustVector.ts";
import { independentJwe, independentJws } from "../helpers/independentJose.ts";
import { CERT_HEX, emptyTrust, joseToken, makeApp, NONCE, NOW, openAndAppraise, PACKAGE, payload, type TestApp } from "./fixtures.ts";

/**
 * Every rule of the play-integrity format (src/attestation/formats/playIntegrity.ts, docs/play-integrity.md
 * "Rules"), through the production path: openWithApps, then appraise. Assertions are on status, verdict, the rule
 * id, the record and the checks; reasons only where they are the contract (naming the rule).
 */

const app = makeApp();

async function verdictFor(p: unknown, opts: { apps?: TestApp[]; nonce?: string; now?: Date; tokenApp?: TestApp } = {}) {
  const token = await joseToken(p, opts.tokenApp ?? app);
  return (await openAndAppraise(token, opts.apps ?? [app], opts)).result;
}

function expectRule(r: { record: { status: string; verdict: string }; detail: Record<string, unknown>; reason: string }, status: string, verdict: string, rule: string) {
  assert.deepEqual({ status: r.record.status, verdict: r.record.verdict, rule: r.detail.rule }, { status, verdict, rule }, r.reason);
  assert.ok(r.reason.startsWith(`rule ${rule}: `), r.reason);
}

async function malformedReason(token: string | Uint8Array, apps: TestApp[] = [app]): Promise<string> {
  try {
    await openAndAppraise(token, apps);
  } catch (e) {
    if (isAppError(e) && e.entry.code === "4000006") return e.reason;
    throw e;
  }
  assert.fail("expected BLOB_MALFORMED");
}

describe("play-integrity: Yes", () => {
  it("a standard request's token that meets every rule is Success / Yes, with the record, labels, checks and facts", async () => {
    const r = await verdictFor(payload());
    expectRule(r, "Success", "Yes", "pass");
    assert.equal(r.format, "play-integrity");
    assert.deepEqual(
      { measurements: r.record.measurements, version: r.record.version, chipId: r.record.chipId, tamperBit: r.record.tamperBit, IMEI: r.record.IMEI, MAC: r.record.MAC, nonce: r.record.nonce },
      { measurements: CERT_HEX, version: "42", chipId: "", tamperBit: "", IMEI: "", MAC: "", nonce: NONCE },
    );
    assert.equal(r.record.createdDate, NOW.toISOString());
    assert.deepEqual((r.detail.deviceIntegrity as { deviceRecognitionVerdict: string[] }).deviceRecognitionVerdict,
      ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"]);
    assert.deepEqual(r.detail.checks, { signature: "pass", nonce: "pass", requestPackage: "match", freshness: "fresh", appRecognition: "recognized", app: "allowed", deviceRecognition: "strong" });
    assert.deepEqual(r.facts, { format: "play-integrity", identity: { appPackages: PACKAGE, appSignatureDigests: CERT_HEX }, levels: { sdkVersion: 35 } });
    assert.equal(r.detail.decodedBy, "local");
    assert.equal(r.detail.requestKind, "standard");
    const p = r.detail.payload as { appIntegrity: { certificateSha256Digest: string[] }; ignoredFields: string[] };
    assert.deepEqual(p.appIntegrity.certificateSha256Digest, [CERT_HEX]);
    assert.deepEqual(p.ignoredFields, []);
    assert.match(String(r.detail.appraisalPolicyId), /^urn:attestd:appraisal-policy:sha-256:[0-9a-f]{64}$/);
    assert.deepEqual(trustVector(r.detail.checks as never), { "instance-identity": 2, configuration: 2, executables: 2, hardware: 2, "storage-opaque": 2 });
  });

  it("a classic request (requestDetails.nonce) binds the same way", async () => {
    const r = await verdictFor(payload({ requestDetails: { requestHash: undefined, nonce: NONCE } }));
    expectRule(r, "Success", "Yes", "pass");
    assert.equal(r.detail.requestKind, "classic");
  });

  it("surrounding whitespace is ignored; int64 fields as numbers are read too", async () => {
    const token = await joseToken(payload({ requestDetails: { timestampMillis: NOW.getTime() - 1000 }, appIntegrity: { versionCode: 7 } }), app);
    const { result } = await openAndAppraise(`\r\n  ${token}\n`, [app]);
    expectRule(result, "Success", "Yes", "pass");
    assert.equal(result.record.version, "7");
  });

  it("unknown payload fields are not copied but named in ignoredFields", async () => {
    const r = await verdictFor({ ...payload({ deviceIntegrity: { deviceRecall: { values: {} } } }), newThing: 1 });
    expectRule(r, "Success", "Yes", "pass");
    assert.deepEqual((r.detail.payload as { ignoredFields: string[] }).ignoredFields.sort(), [".deviceIntegrity.deviceRecall", ".newThing"]);
  });

  it("the token of the second registered app opens with that app's keys and is judged by its policy", async () => {
    const other = makeApp({ packageName: "com.example.other", certDigests: [] });
    const r = await verdictFor(payload({ requestDetails: { requestPackageName: "com.example.other" }, appIntegrity: { packageName: "com.example.other" } }), { apps: [app, other], tokenApp: other });
    expectRule(r, "Success", "Yes", "pass");
    assert.equal((r.detail.app as { packageName: string }).packageName, "com.example.other");
    assert.equal((r.detail.checks as { app?: string }).app, undefined, "no digests listed: any certificate");
  });
});

describe("play-integrity: rules 1–3, opening", () => {
  it("no-app: a tenant with no Play app → CertificateInvalid / No, trust unavailable", async () => {
    const r = await verdictFor(payload(), { apps: [] });
    expectRule(r, "CertificateInvalid", "No", "no-app");
    assert.deepEqual(r.detail.checks, { trust: "unavailable" });
    assert.equal(r.facts, undefined);
  });

  it("no evidence at all reads as no-app", () => {
    return joseToken(payload(), app).then((token) => {
      const r = appraise({ blob: Buffer.from(token), nonce: NONCE, trust: emptyTrust, now: NOW });
      expectRule(r, "CertificateInvalid", "No", "no-app");
    });
  });

  it("decode-failed (Google could not be asked) → CertificateInvalid / Unknown", async () => {
    const token = await joseToken(payload(), app);
    const r = appraise({ blob: Buffer.from(token), nonce: NONCE, trust: emptyTrust, now: NOW, playIntegrity: { opened: false, why: "decode-failed", reason: "Google's decodeIntegrityToken could not be reached" } });
    expectRule(r, "CertificateInvalid", "Unknown", "decode-failed");
    assert.deepEqual(r.detail.checks, { trust: "unavailable" });
  });

  it("not-opened: another app's token (keys the tenant did not register) → SignatureInvalid / No", async () => {
    const stranger = makeApp();
    const r = await verdictFor(payload(), { tokenApp: stranger });
    expectRule(r, "SignatureInvalid", "No", "not-opened");
    assert.match(r.reason, /no registered app's response keys decrypt it \(1 tried\)/);
    assert.deepEqual(r.detail.checks, { signature: "fail" });
    assert.equal(r.record.measurements, "");
  });

  it("not-opened: encrypted with the app's key but signed by another key", async () => {
    const forger = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const token = await joseToken(payload(), { ...app, signingKey: forger });
    const { result } = await openAndAppraise(token, [app]);
    expectRule(result, "SignatureInvalid", "No", "not-opened");
    assert.match(result.reason, /signature does not verify/);
  });

  it("not-opened: one bit of the ciphertext changed", async () => {
    const token = await joseToken(payload(), app);
    const parts = token.split(".");
    const ct = Buffer.from(parts[3]!, "base64url");
    ct[5]! ^= 1;
    parts[3] = ct.toString("base64url");
    const { result } = await openAndAppraise(parts.join("."), [app]);
    expectRule(result, "SignatureInvalid", "No", "not-opened");
  });

  it("not-opened: a JWS alg other than ES256, extra JWS header parameters, a nested JWE, a non-object payload", async () => {
    const enc = (jws: string) => independentJwe(jws, app.decryptionKey);
    const cases: [string, string, RegExp][] = [
      ["ES384 header", enc(independentJws(payload(), app.signingKey, { alg: "ES384" })), /alg "ES384", expected ES256/],
      ["none", enc(independentJws(payload(), app.signingKey, { alg: "none" })), /expected ES256/],
      ["b64 crit", enc(independentJws(payload(), app.signingKey, { alg: "ES256", b64: false, crit: ["b64"] })), /refused parameter/],
      ["nested JWE", enc(await joseToken(payload(), app)), /not a compact JWS \(5 parts\)/],
      ["JSON array", enc(independentJws("[1,2]", app.signingKey)), /not a JSON object/],
      ["JWE as the JWS payload", enc(independentJws(await joseToken(payload(), app), app.signingKey)), /not UTF-8 JSON/],
    ];
    for (const [name, token, why] of cases) {
      const { result } = await openAndAppraise(token, [app]);
      expectRule(result, "SignatureInvalid", "No", "not-opened");
      assert.match(result.reason, why, name);
    }
  });

  it("apps decoded by Google are not tried locally, and the reason says so", async () => {
    const google = { ...makeApp(), responseKeys: undefined };
    const { responseKeys: _k, ...noKeys } = google.registered;
    const r = await verdictFor(payload(), { apps: [{ ...google, registered: { ...noKeys, serviceAccount: { clientEmail: "a@b.iam.gserviceaccount.com", privateKeyPem: "x" } } }] });
    expectRule(r, "SignatureInvalid", "No", "not-opened");
    assert.match(r.reason, /1 app\(s\) are decoded by Google/);
  });
});

describe("play-integrity: rules 4–6, binding", () => {
  it("nonce: another nonce → NonceMismatch / No", async () => {
    const r = await verdictFor(payload(), { nonce: Buffer.alloc(32, 1).toString("base64url") });
    expectRule(r, "NonceMismatch", "No", "nonce");
    assert.equal(r.record.measurements, CERT_HEX, "the token authenticated: the record is filled");
    assert.equal(r.facts, undefined);
    assert.deepEqual((r.detail.deviceIntegrity as { deviceRecognitionVerdict: string[] }).deviceRecognitionVerdict, []);
  });

  it("nonce: neither requestHash nor nonce, or the 32 decoded bytes rather than the string", async () => {
    expectRule(await verdictFor(payload({ requestDetails: { requestHash: undefined } })), "NonceMismatch", "No", "nonce");
    const bytesB64 = Buffer.from(NONCE, "base64url").toString("base64");
    expectRule(await verdictFor(payload({ requestDetails: { requestHash: bytesB64 } })), "NonceMismatch", "No", "nonce");
  });

  it("package: requestPackageName or appIntegrity.packageName not the registered package → NonceMismatch / No", async () => {
    const a = await verdictFor(payload({ requestDetails: { requestPackageName: "com.evil" } }));
    expectRule(a, "NonceMismatch", "No", "package");
    assert.equal((a.detail.checks as { requestPackage: string }).requestPackage, "mismatch");
    expectRule(await verdictFor(payload({ appIntegrity: { packageName: "com.evil" } })), "NonceMismatch", "No", "package");
  });

  it("freshness: older than maxAgeSeconds, or dated more than 60 s ahead → NonceMismatch / No; the bounds themselves pass", async () => {
    const at = (ms: number) => payload({ requestDetails: { timestampMillis: String(NOW.getTime() + ms) } });
    const stale = await verdictFor(at(-301_000));
    expectRule(stale, "NonceMismatch", "No", "freshness");
    assert.equal((stale.detail.checks as { freshness: string }).freshness, "stale");
    const future = await verdictFor(at(61_000));
    expectRule(future, "NonceMismatch", "No", "freshness");
    assert.equal((future.detail.checks as { freshness: string }).freshness, "future");
    expectRule(await verdictFor(at(-300_000)), "Success", "Yes", "pass");
    expectRule(await verdictFor(at(60_000)), "Success", "Yes", "pass");
  });
});

describe("play-integrity: rule 7, the policy", () => {
  it("app-recognition: UNRECOGNIZED_VERSION and UNEVALUATED → Success / No", async () => {
    const u = await verdictFor(payload({ appIntegrity: { appRecognitionVerdict: "UNRECOGNIZED_VERSION" } }));
    expectRule(u, "Success", "No", "app-recognition");
    assert.equal(trustVector(u.detail.checks as never).executables, 96);
    const e = await verdictFor(payload({ appIntegrity: { appRecognitionVerdict: "UNEVALUATED", packageName: undefined, certificateSha256Digest: undefined, versionCode: undefined } }));
    expectRule(e, "Success", "No", "app-recognition");
    assert.match(e.reason, /also cert-digest: the token names no signing certificate/);
  });

  it("cert-digest: a certificate the tenant did not list → Success / No; none listed accepts any", async () => {
    const other = Buffer.alloc(32, 0x11).toString("base64url");
    expectRule(await verdictFor(payload({ appIntegrity: { certificateSha256Digest: [other] } })), "Success", "No", "cert-digest");
    const any = makeApp({ certDigests: [] });
    expectRule(await verdictFor(payload({ appIntegrity: { certificateSha256Digest: [other] } }), { apps: [any], tokenApp: any }), "Success", "Yes", "pass");
    const upper = makeApp({ certDigests: [CERT_HEX.toUpperCase()] });
    expectRule(await verdictFor(payload(), { apps: [upper], tokenApp: upper }), "Success", "Yes", "pass");
  });

  it("device-floor: labels below the floor → No; labels imply the ones below them; VIRTUAL and empty meet no floor", async () => {
    const dev = (labels: string[] | undefined) => payload({ deviceIntegrity: { deviceRecognitionVerdict: labels } });
    expectRule(await verdictFor(dev(["MEETS_BASIC_INTEGRITY"])), "Success", "No", "device-floor");
    expectRule(await verdictFor(dev(["MEETS_VIRTUAL_INTEGRITY"])), "Success", "No", "device-floor");
    const none = await verdictFor(dev(undefined));
    expectRule(none, "Success", "No", "device-floor");
    assert.equal((none.detail.checks as { deviceRecognition: string }).deviceRecognition, "none");
    const only = await verdictFor(dev(["MEETS_DEVICE_INTEGRITY"]));
    expectRule(only, "Success", "Yes", "pass");
    assert.deepEqual((only.detail.deviceIntegrity as { deviceRecognitionVerdict: string[] }).deviceRecognitionVerdict, ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"]);
    const strong = makeApp({ deviceFloor: "MEETS_STRONG_INTEGRITY" });
    expectRule(await verdictFor(dev(["MEETS_DEVICE_INTEGRITY"]), { apps: [strong], tokenApp: strong }), "Success", "No", "device-floor");
    const basic = makeApp({ deviceFloor: "MEETS_BASIC_INTEGRITY" });
    const b = await verdictFor(dev(["MEETS_BASIC_INTEGRITY"]), { apps: [basic], tokenApp: basic });
    expectRule(b, "Success", "Yes", "pass");
    assert.equal(trustVector(b.detail.checks as never).configuration, 32, "a BASIC-only device is a warning in the EAR");
  });

  it("legacyDeviceRecognitionVerdict is recorded and never decides", async () => {
    const r = await verdictFor(payload({ deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY"], legacyDeviceRecognitionVerdict: ["MEETS_DEVICE_INTEGRITY"] } }));
    expectRule(r, "Success", "No", "device-floor");
  });

  it("licensing, Play Protect and app access risk decide only when the app requires them", async () => {
    const weak = payload({
      accountDetails: { appLicensingVerdict: "UNLICENSED" },
      environmentDetails: { playProtectVerdict: "HIGH_RISK", appAccessRiskVerdict: { appsDetected: ["UNKNOWN_CAPTURING", "KNOWN_CONTROLLING"] } },
    });
    expectRule(await verdictFor(weak), "Success", "Yes", "pass");
    const strict = makeApp({ require: { licensed: true, playProtect: true, appAccessRisk: true } });
    const r = await verdictFor(weak, { apps: [strict], tokenApp: strict });
    expectRule(r, "Success", "No", "licensing");
    assert.deepEqual((r.detail.failures as { rule: string }[]).map((f) => f.rule), ["licensing", "play-protect", "app-access-risk"]);
    assert.match(r.reason, /UNKNOWN_CAPTURING, KNOWN_CONTROLLING/);
    expectRule(await verdictFor(payload(), { apps: [strict], tokenApp: strict }), "Success", "Yes", "pass");
    const absent = await verdictFor(payload({ accountDetails: undefined, environmentDetails: undefined }), { apps: [strict], tokenApp: strict });
    assert.deepEqual((absent.detail.failures as { rule: string }[]).map((f) => f.rule), ["licensing", "play-protect", "app-access-risk"]);
    const onlyRisk = makeApp({ require: { licensed: false, playProtect: false, appAccessRisk: true } });
    expectRule(await verdictFor(payload({ environmentDetails: { appAccessRiskVerdict: { appsDetected: ["KNOWN_OVERLAYS", "UNKNOWN_INSTALLED"] } } }), { apps: [onlyRisk], tokenApp: onlyRisk }), "Success", "Yes", "pass");
  });
});

describe("play-integrity: rule 0, unreadable tokens and payloads are BLOB_MALFORMED", () => {
  it("the structure: part sizes, base64url, the header's own rules, the length bound", async () => {
    const good = await joseToken(payload(), app);
    const [h, k, iv, ct, tag] = good.split(".") as [string, string, string, string, string];
    const hdr = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const cases: [string, string, RegExp][] = [
      ["short iv", [h, k, iv.slice(0, 12), ct, tag].join("."), /^play-integrity: iv: 9 bytes, expected 12/],
      ["short tag", [h, k, iv, ct, tag.slice(0, 16)].join("."), /tag: 12 bytes, expected 16/],
      ["long key", [h, k + "AAAA", iv, ct, tag].join("."), /encrypted key: 43 bytes, expected 40/],
      ["padding", [h, k, iv, ct, tag + "=="].join("."), /tag: not base64url/],
      // 16 bytes are 22 characters whose last carries 4 unused bits: "B" sets one of them
      ["non-canonical", [h, k, iv, ct, tag.slice(0, -1) + "B"].join("."), /tag: not canonical base64url/],
      ["empty ciphertext", [h, k, iv, "", tag].join("."), /ciphertext: not base64url/],
      ["zip", [hdr({ alg: "A256KW", enc: "A256GCM", zip: "DEF" }), k, iv, ct, tag].join("."), /compressed \(zip\) tokens are refused/],
      ["crit", [hdr({ alg: "A256KW", enc: "A256GCM", crit: ["exp"], exp: 1 }), k, iv, ct, tag].join("."), /critical extensions \(crit\) are refused/],
      ["unknown header", [hdr({ alg: "A256KW", enc: "A256GCM", jku: "https://x" }), k, iv, ct, tag].join("."), /unknown parameter\(s\) jku/],
      ["too long", [h, k, iv, "A".repeat(20_000), tag].join("."), /characters, more than 16384/],
    ];
    for (const [name, token, why] of cases) assert.match(await malformedReason(token), why, name);
  });

  it("a text that is not token-shaped falls to the vendor reader, whose reason says why it is not play-integrity either", async () => {
    const good = await joseToken(payload(), app);
    const four = good.split(".").slice(0, 4).join(".");
    assert.match(await malformedReason(four), /not play-integrity either: a compact JWE has 5 dot-separated parts, this text has 4/);
    const rsa = [Buffer.from('{"alg":"RSA-OAEP","enc":"A256GCM"}').toString("base64url"), ...good.split(".").slice(1)].join(".");
    assert.match(await malformedReason(rsa), /its protected header does not say alg A256KW, enc A256GCM/);
  });

  it("a signed payload whose fields cannot be read", async () => {
    const cases: [unknown, RegExp][] = [
      [payload({ requestDetails: { timestampMillis: "12.5" } }), /requestDetails.timestampMillis is not a non-negative integer/],
      [payload({ requestDetails: undefined }), /\.requestDetails is missing/],
      [payload({ appIntegrity: { certificateSha256Digest: ["nothex"] } }), /certificateSha256Digest\[0\] is not the base64url of a SHA-256/],
      [payload({ deviceIntegrity: { deviceRecognitionVerdict: "MEETS_DEVICE_INTEGRITY" } }), /deviceRecognitionVerdict is not a list/],
      [payload({ appIntegrity: { appRecognitionVerdict: "play recognized\n" } }), /appRecognitionVerdict is not printable ASCII|is not a verdict value/],
      [payload({ requestDetails: { requestPackageName: 5 } }), /requestPackageName is not a string/],
    ];
    for (const [p, why] of cases) assert.match(await malformedReason(await joseToken(p, app)), why);
  });
});

describe("play-integrity: detection", () => {
  it("is recognised by the bytes alone and never taken for another format's", async () => {
    const { looksLikePlayIntegrityToken } = await import("../../src/attestation/encoding/playIntegrityToken.ts");
    const { detectFormat } = await import("../../src/attestation/appraise.ts");
    const token = await joseToken(payload(), app);
    assert.equal(looksLikePlayIntegrityToken(Buffer.from(` ${token}\n`)), true);
    assert.equal(detectFormat(Buffer.from(token)).name, "play-integrity");
    assert.equal(looksLikePlayIntegrityToken(Buffer.from(token + "\u00e9")), false, "not ASCII");
    assert.equal(looksLikePlayIntegrityToken(Buffer.from('{"x5c": []}')), false);
    assert.equal(looksLikePlayIntegrityToken(Uint8Array.of(2, 0, 1)), false);
    assert.equal(looksLikePlayIntegrityToken(Buffer.from(independentJws({ a: 1 }, app.signingKey))), false, "a JWS has three parts");
  });
});

describe("play-integrity: the appraisal policy id", () => {
  it("names the app's policy too: another floor, another id; the same policy, the same id", async () => {
    const token = await joseToken(payload(), app);
    const id = async (a: TestApp) => {
      const ev = await openAndAppraise(token, [a]);
      return ev.result.detail.appraisalPolicyId;
    };
    const same = { ...app, registered: { ...app.registered, policy: { ...app.registered.policy } } };
    const stricter = { ...app, registered: { ...app.registered, policy: { ...app.registered.policy, deviceFloor: "MEETS_STRONG_INTEGRITY" as const } } };
    assert.equal(await id(same), await id(app));
    assert.notEqual(await id(stricter), await id(app));
    const unopened = appraise({ blob: Buffer.from(token), nonce: NONCE, trust: emptyTrust, now: NOW });
    const { appraisalPolicyId } = await import("../../src/attestation/policy/policyId.ts");
    assert.equal(unopened.detail.appraisalPolicyId, appraisalPolicyId(emptyTrust));
  });
});
