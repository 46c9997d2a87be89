import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { before, describe, it } from "node:test";
import { appraise } from "../../src/attestation/appraise.ts";
import { parseStatusList } from "../../src/attestation/chain/statusList.ts";
import { parseAllowedBootKeys } from "../../src/attestation/policy/bootKeys.ts";
import { patchWithinYear } from "../../src/attestation/policy/integrityLabels.ts";
import {
  androidDevCaAllowedBootKeysJson,
  androidDevCaStatusJson,
  createAndroidDevCa,
  type AndroidDevCa,
} from "../../src/attestation/sim/androidCa.ts";
import { buildAndroidChain, encodeAndroidChain, type BuildAndroidChainOptions } from "../../src/attestation/sim/androidDeviceSim.ts";
import type { AndroidPolicy, AndroidTrust, AppraisalResult } from "../../src/attestation/types.ts";
import { parseAndroidRoots } from "../../src/trust/androidTrustSource.ts";
import { T0 } from "../helpers/clock.ts";
import { WRONG_NONCE, androidTrust, appraiseAt, challengeOf, nonceFor, pemBlob, trustConfig } from "./fixtures.ts";

/**
 * The integrity labels of docs/android-key.md ("Integrity labels"), at each boundary: the patch-level arithmetic
 * alone, then the simulator flag by flag (appraised at T0, 2026-11-22), then real chains.
 */

const BASIC = ["MEETS_BASIC_INTEGRITY"];
const DEVICE = [...BASIC, "MEETS_DEVICE_INTEGRITY"];
const STRONG = [...DEVICE, "MEETS_STRONG_INTEGRITY"];

const labelsOf = (r: AppraisalResult) => (r.detail.deviceIntegrity as { deviceRecognitionVerdict: string[] }).deviceRecognitionVerdict;

describe("patch level within the last year", () => {
  const at = (iso: string) => new Date(iso);

  it("YYYYMM compares by month: the same month a year earlier still counts", () => {
    const now = at("2026-11-22T10:00:00Z");
    assert.equal(patchWithinYear(202511, now), true);
    assert.equal(patchWithinYear(202510, now), false);
    assert.equal(patchWithinYear(202611, now), true);
    // on the first of the month, a year back is still that month
    assert.equal(patchWithinYear(202512, at("2026-12-01T00:00:00Z")), true);
    assert.equal(patchWithinYear(202511, at("2026-12-01T00:00:00Z")), false);
  });

  it("YYYYMMDD compares by day: exactly one year old counts, a day more does not", () => {
    const now = at("2026-11-22T23:59:59Z");
    assert.equal(patchWithinYear(20251122, now), true);
    assert.equal(patchWithinYear(20251121, now), false);
    // the day is the UTC date of the appraisal
    assert.equal(patchWithinYear(20251122, at("2026-11-23T00:00:00Z")), false);
  });

  it("on 29 February a year back is 29 February of a year that has none: the 28th is older, 1 March within", () => {
    const now = at("2028-02-29T12:00:00Z");
    assert.equal(patchWithinYear(20270228, now), false);
    assert.equal(patchWithinYear(20270301, now), true);
    assert.equal(patchWithinYear(202702, now), true);
    assert.equal(patchWithinYear(202701, now), false);
  });

  it("a value that is no patch level is neither", () => {
    for (const v of [0, -1, 202513, 2025, 20251232]) assert.equal(patchWithinYear(v, at("2026-11-22T00:00:00Z")), undefined, String(v));
  });
});

describe("integrity labels: the Android simulator, flag by flag", () => {
  let ca: AndroidDevCa;
  let trust: AndroidTrust;

  before(async () => {
    ca = await createAndroidDevCa({ now: new Date(T0) });
    trust = {
      ...parseAndroidRoots(Buffer.from(ca.root.certPem), "root.pem"),
      status: parseStatusList(androidDevCaStatusJson(ca), "status.json"),
      fresh: true,
      allowedBootKeys: [],
      policy: {},
    };
  });

  async function simulate(
    opts: Partial<BuildAndroidChainOptions> = {},
    o: { policy?: AndroidPolicy; allowBootKeys?: boolean; nonce?: string } = {},
  ): Promise<AppraisalResult> {
    const nonce = randomBytes(32).toString("base64url");
    const certs = await buildAndroidChain({ ca, nonce, now: new Date(T0), ...opts });
    const android: AndroidTrust = {
      ...trust,
      policy: o.policy ?? {},
      allowedBootKeys: o.allowBootKeys ? parseAllowedBootKeys(androidDevCaAllowedBootKeysJson()) : [],
    };
    return appraise({ blob: encodeAndroidChain(certs), nonce: o.nonce ?? nonce, trust: trustConfig(android), now: new Date(T0) });
  }

  const cases: [string, Partial<BuildAndroidChainOptions>, { allowBootKeys?: boolean }, string[]][] = [
    ["default: TEE, locked, Verified, this month's patch → all three", {}, {}, STRONG],
    ["--security-level strongbox → all three", { securityLevel: "strongbox" }, {}, STRONG],
    ["--provisioning factory → all three", { provisioning: "factory" }, {}, STRONG],
    ["--security-level software → none: no secure hardware speaks", { securityLevel: "software" }, {}, []],
    ["--unlocked → basic only", { unlocked: true }, {}, BASIC],
    ["--boot-state unverified → basic only", { bootState: "unverified" }, {}, BASIC],
    ["--boot-state failed → none", { bootState: "failed" }, {}, []],
    ["--boot-state self-signed, key not allow-listed → basic only", { bootState: "self-signed" }, {}, BASIC],
    ["--boot-state self-signed, allow-listed key → all three", { bootState: "self-signed" }, { allowBootKeys: true }, STRONG],
    ["--knox (warranty intact) → all three", { knox: true }, {}, STRONG],
    ["--knox-warranty → basic only", { knoxWarranty: true }, {}, BASIC],
    ["--patch-level 202511 at 2026-11-22: exactly a year old → all three", { patchLevel: 202511 }, {}, STRONG],
    ["--patch-level 202510 at 2026-11-22: a month more → device, not strong", { patchLevel: 202510 }, {}, DEVICE],
    ["--revoked-intermediate → none (Revoked)", { revokedIntermediate: true }, {}, []],
    ["--wrong-nonce → none (NonceMismatch)", { wrongNonce: true }, {}, []],
    ["--chain-extension → none (CertificateInvalid)", { chainExtension: true }, {}, []],
  ];
  for (const [name, opts, o, expected] of cases) {
    it(name, async () => {
      const r = await simulate(opts, o);
      assert.deepEqual(labelsOf(r), expected, r.reason);
    });
  }

  it("labels describe the device, not the tenant's policy: a refused patch level or app leaves them as they are", async () => {
    const oldForPolicy = await simulate({ patchLevel: 202511 }, { policy: { minOsPatchLevel: 202611 } });
    assert.equal(oldForPolicy.record.verdict, "No");
    assert.deepEqual(labelsOf(oldForPolicy), STRONG);
    const otherApp = await simulate({ packageName: "com.other.app" }, { policy: { allowedApps: [{ packageName: "com.example.wallet" }] } });
    assert.equal(otherApp.record.verdict, "No");
    assert.deepEqual(labelsOf(otherApp), STRONG);
    // and the checks say what refused it
    assert.equal((oldForPolicy.detail.checks as { patchLevel: string }).patchLevel, "below-minimum");
    assert.equal((otherApp.detail.checks as { app: string }).app, "refused");
  });
});

describe("integrity labels: real chains", () => {
  const SONY = "android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem";

  it("Sony Xperia 10 III (osPatchLevel 202307): strong up to July 2024, device from August", () => {
    const trust = androidTrust();
    const blob = pemBlob(SONY);
    const nonce = nonceFor(challengeOf(blob, trust, "2024-07-31T23:59:59Z"));
    const july = appraiseAt(blob, nonce, trust, "2024-07-31T23:59:59Z");
    assert.equal(july.record.verdict, "Yes", july.reason);
    assert.deepEqual(labelsOf(july), STRONG);
    const august = appraiseAt(blob, nonce, trust, "2024-08-01T00:00:00Z");
    assert.equal(august.record.verdict, "Yes", august.reason);
    assert.deepEqual(labelsOf(august), DEVICE);
    // another nonce: authenticated chain, but not this attestation → no label
    assert.deepEqual(labelsOf(appraiseAt(blob, WRONG_NONCE, trust, "2024-07-31T23:59:59Z")), []);
  });

  it("Pixel 8a (akita), unlocked and Unverified: basic only", () => {
    const trust = androidTrust();
    const blob = pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_EC_NONE.pem");
    const at = "2024-09-20T00:00:00Z";
    const r = appraiseAt(blob, nonceFor(challengeOf(blob, trust, at)), trust, at);
    assert.equal(r.record.verdict, "No");
    assert.deepEqual(labelsOf(r), BASIC);
  });

  it("Pixel 9 Pro (caiman), patched 2025-11, appraised 2025-10: all three", () => {
    const trust = androidTrust();
    const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const at = "2025-10-01T00:00:00Z";
    assert.deepEqual(labelsOf(appraiseAt(blob, nonceFor(challengeOf(blob, trust, at)), trust, at)), STRONG);
  });

  it("trust unavailable (fail closed): no label", () => {
    const trust = androidTrust({ fresh: false, unavailableReason: "the status list is stale" });
    const blob = pemBlob(SONY);
    const r = appraiseAt(blob, WRONG_NONCE, trust, "2024-07-31T23:59:59Z");
    assert.equal(r.record.status, "CertificateInvalid");
    assert.deepEqual(labelsOf(r), []);
  });
});
