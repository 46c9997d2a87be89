import { test, describe } from "node:test";
import assert from "node:assert/strict";
import {
  WRONG_NONCE,
  androidTrust,
  appraiseAt,
  challengeOf,
  derBlob,
  grapheneRoots,
  nonceFor,
  pemBlob,
  trustWithRoots,
} from "./fixtures.ts";
import { androidKeyFormat } from "../../src/attestation/formats/androidKey.ts";
import { readCertificate, splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import type { AndroidTrust } from "../../src/attestation/types.ts";

/** Real chains from real devices, each appraised at a moment inside its (sometimes weeks-long) validity. */
interface Vector {
  name: string;
  blob: () => Buffer;
  at: string;
}

const verifiedLocked: Vector[] = [
  { name: "Pixel 9 Pro (caiman) TEE, KeyMint 400, RKP", blob: () => pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem"), at: "2025-10-01T00:00:00Z" },
  { name: "Pixel 9 Pro (caiman) StrongBox, RKP", blob: () => pemBlob("android_keyattestation/testdata/caiman/sdk36/SB_EC_RKP.pem"), at: "2025-10-01T00:00:00Z" },
  { name: "Pixel 9a (tegu) TEE on the CA1 EC root", blob: () => pemBlob("android_keyattestation/testdata/tegu/sdk36/TEE_EC_2026_ROOT.pem"), at: "2026-03-01T00:00:00Z" },
  { name: "Pixel 9a (tegu) StrongBox on the CA1 EC root", blob: () => pemBlob("android_keyattestation/testdata/tegu/sdk36/SB_EC_2026_ROOT.pem"), at: "2026-03-01T00:00:00Z" },
  { name: "Pixel 8a (simplewebauthn case1), RKP", blob: () => pemBlob("simplewebauthn_android-key/case1_android-key/chain.pem"), at: "2025-02-02T10:00:00Z" },
  { name: "Sony Xperia 10 III, factory batch certificate", blob: () => pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem"), at: "2025-06-01T00:00:00Z" },
  { name: "Galaxy S9+ (simplewebauthn case2)", blob: () => pemBlob("simplewebauthn_android-key/case2_android-key/chain.pem"), at: "2025-07-15T00:00:00Z" },
  {
    name: "Auditor Pixel 7a StrongBox, factory, ATTEST_KEY at position 1, root left out",
    blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples/4/0_cert-${i}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
  {
    name: "Auditor Pixel 7a StrongBox, RKP, ATTEST_KEY",
    blob: () => derBlob(...[0, 1, 2, 3, 4].map((i) => `grapheneos_auditor_samples/4/1_cert-${i}.der.x509`)),
    at: "2023-07-15T00:00:00Z",
  },
  {
    name: "Auditor Pixel 6 Pro TEE",
    blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples_history/3/0_cert-${i}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
  {
    name: "Auditor Pixel 6 Pro StrongBox",
    blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples_history/3/1_strongbox-0_cert-${i}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
  {
    name: "Auditor Pixel 4 (flame) TEE",
    blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples_history/2/flame-cert-${i}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
  {
    name: "Auditor Pixel 4 (flame) StrongBox",
    blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples_history/2/flame-strongbox-cert-${i}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
  {
    name: "Auditor Pixel 2 XL (taimen), attestation version 2, batch certificate, random challenge",
    blob: () => derBlob(...["attestation", "batch", "intermediate"].map((n) => `grapheneos_auditor_samples_history/0/taimen_${n}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
  {
    name: "Auditor Pixel 2 XL (taimen), challenge \"sample\"",
    blob: () => derBlob(...["attestation", "batch", "intermediate"].map((n) => `grapheneos_auditor_samples_history/1/taimen_${n}.der.x509`)),
    at: "2025-01-01T00:00:00Z",
  },
];

describe("verified, locked real devices", () => {
  const trust = androidTrust();
  for (const v of verifiedLocked) {
    test(`${v.name}: Yes with the matching nonce, NonceMismatch without`, () => {
      const blob = v.blob();
      assert.equal(androidKeyFormat.matches(blob), true);
      const nonce = nonceFor(challengeOf(blob, trust, v.at));
      const ok = appraiseAt(blob, nonce, trust, v.at);
      assert.equal(ok.record.status, "Success", ok.reason);
      assert.equal(ok.record.verdict, "Yes", ok.reason);
      assert.equal(ok.record.tamperBit, "0");
      assert.equal(ok.record.nonce, nonce);
      assert.equal(ok.record.MAC, "");
      assert.match(ok.record.measurements, /^[0-9a-f]{64,128}$|^[0-9a-f]*$/);
      const leafSerial = readCertificate(splitDerCertificates(blob)![0]!).serialHex;
      assert.equal(ok.record.chipId, leafSerial);
      assert.equal(ok.record.version, String((ok.detail.keyDescription as { attestationVersion: number }).attestationVersion));
      assert.equal(ok.record.createdDate, new Date(v.at).toISOString());
      JSON.stringify(ok.detail); // JSON-safe

      const bad = appraiseAt(blob, WRONG_NONCE, trust, v.at);
      assert.equal(bad.record.status, "NonceMismatch");
      assert.equal(bad.record.verdict, "No");
    });
  }

  test("the record maps boot key, boot hash and version (caiman TEE)", () => {
    const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const at = "2025-10-01T00:00:00Z";
    const r = appraiseAt(blob, "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4", trust, at);
    assert.equal(r.record.verdict, "Yes");
    assert.equal(r.record.measurements, "00".repeat(32) + "06a23925b6547ec124086ca5eddd35c35f58ce6eb68a13afdfd4195c41c61ed4");
    assert.equal(r.record.version, "400");
    assert.equal(r.record.chipId, "01");
    assert.equal(r.record.IMEI, "");
    const kd = r.detail.keyDescription as Record<string, any>;
    assert.equal(kd.hardwareEnforced.attestationIdModel, "Pixel 9 Pro");
    assert.deepEqual(kd.softwareEnforced.attestationApplicationId.packages, [{ name: "com.google.android.attestation", version: 0 }]);
    assert.deepEqual(r.detail.anchor, {
      spkiSha256: "feb2ea7551ee316ed4bb443c8293b884dbfdea40b603ee3e4f4a897e4580fbae",
      subject: "serialNumber=f92009e853b6b045",
      carried: true,
    });
  });

  test("the same chains pass with GrapheneOS's five pinned root files", () => {
    const t = androidTrust(grapheneRoots());
    const v = verifiedLocked[2]!; // tegu, CA1 root left out of nothing: chain carries it
    const blob = v.blob();
    assert.equal(appraiseAt(blob, nonceFor(challengeOf(blob, t, v.at)), t, v.at).record.verdict, "Yes");
  });

  test("RKP intermediates expire: the Pixel 8a chain is CertificateInvalid a day later", () => {
    const blob = pemBlob("simplewebauthn_android-key/case1_android-key/chain.pem");
    const nonce = nonceFor(challengeOf(blob, trust, "2025-02-02T10:00:00Z"));
    const r = appraiseAt(blob, nonce, trust, "2025-02-03T10:00:00Z");
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /not valid at/);
    assert.equal(r.record.measurements, "");
    assert.equal(r.record.tamperBit, "");
  });

  test("the leaf's own validity is ignored (device-written 1970..2048)", () => {
    const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const leaf = readCertificate(splitDerCertificates(blob)![0]!);
    assert.equal(leaf.notBefore.toISOString(), "1970-01-01T00:00:00.000Z");
    assert.equal(appraiseAt(blob, "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4", trust, "2025-10-01T00:00:00Z").record.verdict, "Yes");
  });
});

describe("GrapheneOS (SelfSigned boot)", () => {
  const blob = derBlob(...[0, 1, 2, 3, 4].map((i) => `grapheneos_auditor_samples/5/0_cert_${i}.der`));
  const at = "2025-11-15T00:00:00Z";
  const bootKey = "9e6a8f3e0d761a780179f93acd5721ba1ab7c8c537c7761073c0a754b0e932de";

  test("No by default", () => {
    const trust = androidTrust();
    const r = appraiseAt(blob, nonceFor(challengeOf(blob, trust, at)), trust, at);
    assert.equal(r.record.status, "Success");
    assert.equal(r.record.verdict, "No");
    assert.match(r.reason, /SelfSigned/);
    assert.equal(r.record.tamperBit, "0");
  });

  test("Yes with its boot key allow-listed", () => {
    const trust = androidTrust({ allowedBootKeys: [{ key: bootKey, label: "GrapheneOS Pixel 9" }] });
    const r = appraiseAt(blob, nonceFor(challengeOf(blob, trust, at)), trust, at);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.match(r.reason, /GrapheneOS Pixel 9/);
    assert.ok(r.record.measurements.startsWith(bootKey));
  });

  test("a models restriction applies only to attested models", () => {
    // this sample attests no model, so an entry restricted to models does not admit it
    const trust = androidTrust({ allowedBootKeys: [{ key: bootKey, label: "GrapheneOS", models: ["Pixel 9"] }] });
    assert.equal(appraiseAt(blob, nonceFor(challengeOf(blob, trust, at)), trust, at).record.verdict, "No");
  });
});

describe("devices that must not pass", () => {
  const trust = androidTrust();
  const cases: (Vector & { expect: RegExp })[] = [
    { name: "Pixel 8a (akita) unlocked, Unverified, RKP", blob: () => pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_EC_NONE.pem"), at: "2024-09-20T00:00:00Z", expect: /unlocked/ },
    { name: "Pixel 8a (akita) StrongBox RSA unlocked", blob: () => pemBlob("android_keyattestation/testdata/akita/sdk34/SB_RSA_NONE.pem"), at: "2024-09-20T00:00:00Z", expect: /Unverified/ },
    { name: "Pixel 3 (blueline) unlocked, factory", blob: () => pemBlob("android_keyattestation/testdata/blueline/sdk28/TEE_EC_NONE.pem"), at: "2025-01-01T00:00:00Z", expect: /unlocked/ },
    { name: "Pixel 3 (blueline) StrongBox unlocked", blob: () => pemBlob("android_keyattestation/testdata/blueline/sdk28/SB_RSA_NONE.pem"), at: "2025-01-01T00:00:00Z", expect: /unlocked/ },
    {
      name: "google/android-key-attestation TEE (dev device)",
      blob: () => derBlob(...[0, 1, 2, 3].map((i) => `google_android-key-attestation/der/algorithm_EC_SecurityLevel_TEE/cert${i}.der`)),
      at: "2025-01-01T00:00:00Z",
      expect: /unlocked/,
    },
    { name: "Pixel 9a (tegu) sdk37, attestation version 500, unlocked", blob: () => pemBlob("android_keyattestation/testdata/tegu/sdk37/TEE_TRUSTED_CONF.pem"), at: "2026-07-10T00:00:00Z", expect: /unlocked/ },
    { name: "Pixel 9 (tokay) ML-DSA leaf, KeyMint 500 unknown tag", blob: () => pemBlob("android_keyattestation/testdata/tokay/sdk37/TEE_MLDSA_RKP.pem"), at: "2026-05-01T00:00:00Z", expect: /unlocked/ },
  ];
  for (const c of cases) {
    test(`${c.name}: Success, No, tamperBit 1`, () => {
      const blob = c.blob();
      const r = appraiseAt(blob, nonceFor(challengeOf(blob, trust, c.at)), trust, c.at);
      assert.equal(r.record.status, "Success", r.reason);
      assert.equal(r.record.verdict, "No");
      assert.equal(r.record.tamperBit, "1");
      assert.match(r.reason, c.expect);
    });
  }

  test("the IMEI is reported when attested (akita BASE+IMEI)", () => {
    const blob = pemBlob("android_keyattestation/testdata/akita/sdk34/TEE_RSA_BASE+IMEI.pem");
    const at = "2024-09-20T00:00:00Z";
    const r = appraiseAt(blob, "challenge", trust, at);
    assert.equal(r.record.status, "Success");
    assert.equal(r.record.IMEI, "351163520096208");
  });

  test("software attestation (marlin, simplewebauthn case0) to non-Google roots: CertificateInvalid", () => {
    for (const [blob, at] of [
      [pemBlob("android_keyattestation/testdata/marlin/sdk29/TEE_EC_NONE.pem"), "2025-01-01T00:00:00Z"],
      [pemBlob("simplewebauthn_android-key/case0_android-key/chain.pem"), "2025-01-01T00:00:00Z"],
    ] as const) {
      const r = appraiseAt(blob, nonceFor(challengeOf(blob, trust, at)), trust, at);
      assert.equal(r.record.status, "CertificateInvalid", r.reason);
      assert.equal(r.record.verdict, "No");
      assert.match(r.reason, /not a pinned root/);
    }
  });

  test("software attestation with its own root pinned is still No (security level Software)", () => {
    for (const [blob, at] of [
      [pemBlob("android_keyattestation/testdata/marlin/sdk29/TEE_RSA_NONE.pem"), "2025-01-01T00:00:00Z"],
      [pemBlob("simplewebauthn_android-key/case0_android-key/chain.pem"), "2025-01-01T00:00:00Z"],
    ] as const) {
      const ders = splitDerCertificates(blob)!;
      const t = trustWithRoots([ders[ders.length - 1]!]);
      const r = appraiseAt(blob, nonceFor(challengeOf(blob, t, at)), t, at);
      assert.equal(r.record.status, "Success", r.reason);
      assert.equal(r.record.verdict, "No");
      assert.match(r.reason, /Software/);
    }
  });

  test("google StrongBox chains ending at root e35d38c6897d47e8: CertificateInvalid", () => {
    for (const alg of ["EC", "RSA"]) {
      const dir = `google_android-key-attestation/der/algorithm_${alg}_SecurityLevel_StrongBox`;
      for (const order of [[0, 1, 2, 3], [0, 2, 1, 3]]) {
        const blob = derBlob(...order.map((i) => `${dir}/cert${i}.der`));
        const r = appraiseAt(blob, "abc", trust, "2025-01-01T00:00:00Z");
        assert.equal(r.record.status, "CertificateInvalid", r.reason);
        assert.equal(r.record.verdict, "No");
      }
    }
  });

  test("a valid chain whose root is not pinned: CertificateInvalid (caiman with only CA1 pinned)", () => {
    const roots = grapheneRoots();
    const ca1 = roots.rootsDer[4]!;
    const t = trustWithRoots([ca1]);
    const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const r = appraiseAt(blob, "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4", t, "2025-10-01T00:00:00Z");
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /not a pinned root/);
  });

  test("invalid/tags_not_in_ascending_order: CertificateInvalid (edited leaf: bad signature, tags out of order)", () => {
    const blob = pemBlob("android_keyattestation/testdata/invalid/tags_not_in_ascending_order.pem");
    const r = appraiseAt(blob, "challenge", trust, "2025-01-01T00:00:00Z");
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.record.verdict, "No");
    assert.match(r.reason, /ascending order/);
    assert.match(r.reason, /signature does not verify/);
  });

  test("invalid/malformed_rot_device_locked: CertificateInvalid although its chain and challenge are good", () => {
    const blob = pemBlob("android_keyattestation/testdata/invalid/malformed_rot_device_locked.pem");
    const nonce = Buffer.from("019b115a17fdf26b371309467080d0aec1b5a0c1c6a7a3350b920560659fa79b", "hex").toString("base64url");
    const r = appraiseAt(blob, nonce, trust, "2025-01-01T00:00:00Z");
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.record.verdict, "No");
    assert.match(r.reason, /BOOLEAN encoded as 01/);
    assert.doesNotMatch(r.reason, /signature/);
  });
});

describe("revocation", () => {
  const sony = pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem");
  const at = "2025-06-01T00:00:00Z";
  const nonce = () => nonceFor(challengeOf(sony, androidTrust(), at));

  for (const status of ["REVOKED", "SUSPENDED"] as const) {
    test(`a status list naming the Sony batch certificate's serial (${status}): Revoked`, () => {
      const batchSerial = readCertificate(splitDerCertificates(sony)![1]!).serialHex; // "e61a36a0ab7d8635" style hex
      const trust: AndroidTrust = androidTrust({ status: new Map([[batchSerial.replace(/^0+/, ""), { status, reason: "KEY_COMPROMISE" }]]) });
      const r = appraiseAt(sony, nonce(), trust, at);
      assert.equal(r.record.status, "Revoked");
      assert.equal(r.record.verdict, "No");
      assert.match(r.reason, new RegExp(status));
    });
  }

  test("a status list naming an RKP intermediate: Revoked; the leaf's serial 1 is never looked up", () => {
    const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const inter = readCertificate(splitDerCertificates(blob)![1]!).serialHex.replace(/^0+/, "");
    const revoked = androidTrust({ status: new Map([[inter, { status: "REVOKED" }]]) });
    assert.equal(appraiseAt(blob, "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4", revoked, "2025-10-01T00:00:00Z").record.status, "Revoked");
    const one = androidTrust({ status: new Map([["1", { status: "REVOKED" }]]) });
    assert.equal(appraiseAt(blob, "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4", one, "2025-10-01T00:00:00Z").record.verdict, "Yes");
  });
});

describe("trust that cannot be used fails closed", () => {
  const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
  const nonce = "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4";
  const at = "2025-10-01T00:00:00Z";

  test("stale trust → CertificateInvalid", () => {
    const r = appraiseAt(blob, nonce, androidTrust({ fresh: false }), at);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /stale/);
  });

  test("no roots → CertificateInvalid", () => {
    const r = appraiseAt(blob, nonce, androidTrust({ rootsDer: [], pinnedRootSpkiSha256: new Set() }), at);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /no Android attestation roots/);
  });
});
