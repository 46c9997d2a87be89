import { test, describe, before } from "node:test";
import assert from "node:assert/strict";
import {
  androidTrust,
  appraiseAt,
  challengeOf,
  derBlob,
  issue,
  keyDescriptionExtension,
  nonceFor,
  pemBlob,
  testRoot,
  trustWithRoots,
  x509,
  type TestCa,
} from "./fixtures.ts";
import { readCertificate, splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { provisioningOf, PROVISIONING_INFO_OID } from "../../src/attestation/chain/provisioning.ts";
import { parseAndroidPolicies } from "../../src/trust/androidPolicyFile.ts";
import type { AndroidTrust } from "../../src/attestation/types.ts";

/**
 * Google's 2016 root expired on 2026-05-24 and the factory intermediates of pre-RKP devices with it. Appraised
 * today (2026-11-22), genuine factory-provisioned phones must get the verdict the rest of the policy gives, unless
 * the policy says `factoryExpiry: refuse`; RKP chains stay strict about their short-lived intermediates.
 */
const TODAY = "2026-11-22T12:00:00Z";

const sony = () => pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem");
const taimen = () => derBlob(...["attestation", "batch", "intermediate"].map((n) => `grapheneos_auditor_samples_history/0/taimen_${n}.der.x509`));

interface Case {
  name: string;
  blob: () => Buffer;
  verdict: "Yes" | "No";
  /** indexes of the expired factory certificates the verdict relies on */
  expired: number[];
}

const factoryChains: Case[] = [
  { name: "Sony Xperia 10 III (batch certificate and intermediate expired 2026-05-24)", blob: sony, verdict: "Yes", expired: [1, 2] },
  { name: "Pixel 2 XL taimen (root left out, batch and intermediate expired 2026-05-24)", blob: taimen, verdict: "Yes", expired: [1, 2] },
  { name: "Galaxy S9+ (simplewebauthn case2; 2016 root carried)", blob: () => pemBlob("simplewebauthn_android-key/case2_android-key/chain.pem"), verdict: "Yes", expired: [] },
  { name: "Pixel 4 flame TEE", blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples_history/2/flame-cert-${i}.der.x509`)), verdict: "Yes", expired: [] },
  { name: "Pixel 7a StrongBox with attest key", blob: () => derBlob(...[0, 1, 2, 3].map((i) => `grapheneos_auditor_samples/4/0_cert-${i}.der.x509`)), verdict: "Yes", expired: [] },
  { name: "Pixel 3 blueline (unlocked developer device)", blob: () => pemBlob("android_keyattestation/testdata/blueline/sdk28/TEE_EC_NONE.pem"), verdict: "No", expired: [] },
  { name: "google/android-key-attestation TEE (unlocked developer device)", blob: () => derBlob(...[0, 1, 2, 3].map((i) => `google_android-key-attestation/der/algorithm_EC_SecurityLevel_TEE/cert${i}.der`)), verdict: "No", expired: [] },
];

const withPolicy = (factoryExpiry?: "accept" | "refuse"): AndroidTrust =>
  androidTrust({ policy: factoryExpiry ? { factoryExpiry } : {} });

describe("real factory-provisioned chains appraised on 2026-11-22", () => {
  for (const c of factoryChains) {
    test(`${c.name}: ${c.verdict} by default${c.expired.length ? ", CertificateInvalid under factoryExpiry: refuse" : ""}`, () => {
      const blob = c.blob();
      const nonce = nonceFor(challengeOf(blob, withPolicy(), TODAY));
      for (const policy of [undefined, "accept"] as const) {
        const r = appraiseAt(blob, nonce, withPolicy(policy), TODAY);
        assert.equal(r.record.status, "Success", r.reason);
        assert.equal(r.record.verdict, c.verdict, r.reason);
        assert.equal(r.detail.provisioning, "factory");
        if (c.expired.length) {
          const fe = r.detail.factoryExpiry as { policy: string; expiredAccepted: { index: number; notAfter: string }[] };
          assert.equal(fe.policy, "accept");
          assert.deepEqual(fe.expiredAccepted.map((e) => e.index), c.expired);
          assert.ok(fe.expiredAccepted.every((e) => e.notAfter.startsWith("2026-05-24T")), JSON.stringify(fe));
          if (c.verdict === "Yes") assert.match(r.reason, /expired factory certificate\(s\) 1, 2 accepted \(factoryExpiry: accept\)/);
        } else {
          assert.equal(r.detail.factoryExpiry, undefined, "nothing expired that the verdict relied on");
        }
      }
      const refused = appraiseAt(blob, nonce, withPolicy("refuse"), TODAY);
      if (c.expired.length) {
        assert.equal(refused.record.status, "CertificateInvalid");
        assert.equal(refused.record.verdict, "No");
        assert.match(refused.reason, /certificate 1 \(.*\) is not valid at 2026-11-22.*refused by the policy factoryExpiry: refuse/);
        assert.equal(refused.record.measurements, "", "an unauthenticated record claims nothing");
      } else {
        assert.equal(refused.record.verdict, c.verdict, "refuse changes nothing when no factory certificate has expired");
      }
    });
  }

  test("before the expiry the same chains need no allowance", () => {
    const blob = sony();
    const nonce = nonceFor(challengeOf(blob, withPolicy(), TODAY));
    const r = appraiseAt(blob, nonce, withPolicy("refuse"), "2026-05-01T00:00:00Z");
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.equal(r.detail.factoryExpiry, undefined);
  });
});

describe("what the allowance does not cover", () => {
  test("RKP chains stay strict: an expired RKP intermediate is CertificateInvalid under accept", () => {
    for (const [file, nonce] of [
      ["android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem", "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4"],
      ["android_keyattestation/testdata/tegu/sdk36/TEE_EC_2026_ROOT.pem", "6417f92c-daef-4cc1-8828-5bb39338ffd5"],
    ] as const) {
      const r = appraiseAt(pemBlob(file), nonce, withPolicy("accept"), TODAY);
      assert.equal(r.record.status, "CertificateInvalid", file);
      assert.match(r.reason, /is not valid at 2026-11-22/);
      assert.doesNotMatch(r.reason, /factoryExpiry/);
    }
  });

  test("a factory certificate not yet valid is refused whatever the policy", () => {
    const blob = sony();
    const nonce = nonceFor(challengeOf(blob, withPolicy(), TODAY));
    const r = appraiseAt(blob, nonce, withPolicy("accept"), "2016-01-01T00:00:00Z");
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /not valid at 2016-01-01/);
  });

  test("revocation still applies to an expired factory chain", () => {
    const blob = sony();
    const nonce = nonceFor(challengeOf(blob, withPolicy(), TODAY));
    const batch = readCertificate(splitDerCertificates(blob)![1]!).serialHex.replace(/^0+/, "");
    const r = appraiseAt(blob, nonce, androidTrust({ status: new Map([[batch, { status: "REVOKED" }]]) }), TODAY);
    assert.equal(r.record.status, "Revoked");
    assert.equal(r.record.verdict, "No");
  });

  test("a bad signature on an expired factory intermediate is still CertificateInvalid", () => {
    const blob = sony();
    const nonce = nonceFor(challengeOf(blob, withPolicy(), TODAY));
    const ders = splitDerCertificates(blob)!.map((d) => Buffer.from(d));
    const inter = ders[2]!;
    inter[inter.length - 5] = inter[inter.length - 5]! ^ 0x01; // inside the RSA signature
    const r = appraiseAt(Buffer.concat(ders), nonce, withPolicy("accept"), TODAY);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /signature does not verify/);
  });

  test("the wrong nonce is still NonceMismatch", () => {
    const r = appraiseAt(sony(), Buffer.alloc(32, 1).toString("base64url"), withPolicy("accept"), TODAY);
    assert.equal(r.record.status, "NonceMismatch");
  });
});

describe("synthetic factory chains", () => {
  const CHALLENGE = Buffer.alloc(32, 0x42);
  const NONCE = nonceFor(CHALLENGE);
  const EXPIRED = { notBefore: new Date("2016-05-26T00:00:00Z"), notAfter: new Date("2026-05-24T00:00:00Z") };
  let root: TestCa;
  before(async () => {
    root = await testRoot("2.5.4.5=0123456789abcdef"); // @peculiar/x509 names serialNumber and title by OID
  });

  async function chain(factoryName: string, o: { extensions?: x509.Extension[] } = {}) {
    const inter = await issue(root, {
      subject: factoryName,
      serialNumber: "f0",
      ca: true,
      keyUsage: x509.KeyUsageFlags.keyCertSign,
      ...EXPIRED,
      extensions: o.extensions ?? [],
    });
    const leaf = await issue(inter, { subject: "CN=Android Keystore Key", serialNumber: "01", extensions: [keyDescriptionExtension()] });
    return Buffer.concat([leaf.der, inter.der, root.der]);
  }

  test("named as Google's factories name intermediates (serialNumber, title): accepted and reported", async () => {
    const r = appraiseAt(await chain("2.5.4.5=8d2e4c0a11b3f7e9, 2.5.4.12=TEE"), NONCE, trustWithRoots([root.der]), TODAY);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.equal(r.detail.provisioning, "factory");
    assert.ok(r.detail.factoryExpiry);
  });

  test("an expired factory intermediate without the CA flag is still refused for that", async () => {
    // (at position 1 a non-CA is a factory batch certificate, which is allowed; above it every issuer is a CA)
    const top = await issue(root, { subject: "2.5.4.5=8d2e4c0a11b3f7e9, 2.5.4.12=TEE", serialNumber: "f0", ca: false, ...EXPIRED });
    const batch = await issue(top, { subject: "2.5.4.5=77aa, 2.5.4.12=TEE", serialNumber: "f1", ca: false, ...EXPIRED });
    const leaf = await issue(batch, { subject: "CN=Android Keystore Key", serialNumber: "01", extensions: [keyDescriptionExtension()] });
    const r = appraiseAt(Buffer.concat([leaf.der, batch.der, top.der, root.der]), NONCE, trustWithRoots([root.der]), TODAY);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /certificate 2 issues certificate 1 but is not a CA/);
  });

  test("an intermediate of no known shape gets no allowance", async () => {
    const r = appraiseAt(await chain("CN=Some Intermediate"), NONCE, trustWithRoots([root.der]), TODAY);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /not valid at/);
  });

  test("a factory-named intermediate that carries ProvisioningInfo is RKP, and strict", async () => {
    const r = appraiseAt(
      await chain("2.5.4.5=8d2e4c0a11b3f7e9, 2.5.4.12=TEE", { extensions: [new x509.Extension(PROVISIONING_INFO_OID, false, new Uint8Array([0xa1, 0x01, 0x01]))] }),
      NONCE, trustWithRoots([root.der]), TODAY,
    );
    assert.equal(r.record.status, "CertificateInvalid");
  });
});

describe("provisioning classification (chain/provisioning.ts)", () => {
  const facts = (file: string) => splitDerCertificates(pemBlob(file))!.map((d) => readCertificate(d));
  const ANY = "00".repeat(32);

  test("Google's own chains: factory (old and new naming), RKP (ProvisioningInfo, Droid CA2)", () => {
    const s = facts("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem");
    assert.equal(provisioningOf(s.slice(1, 3), ANY), "factory", "serialNumber without title (Sony)");
    const b = facts("android_keyattestation/testdata/blueline/sdk28/TEE_EC_NONE.pem");
    assert.equal(provisioningOf(b.slice(1, 3), ANY), "factory", "serialNumber with title=TEE");
    const c = facts("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    assert.equal(provisioningOf(c.slice(1, 4), ANY), "rkp");
    assert.equal(provisioningOf(c.slice(3, 4), ANY), "rkp", "Droid CA2 alone names the chain RKP");
    assert.equal(provisioningOf([], ANY), "unknown");
  });

  test("a factory-shaped chain to Key Attestation CA1 (RKP-only root) is not factory", () => {
    const b = facts("android_keyattestation/testdata/blueline/sdk28/TEE_EC_NONE.pem");
    assert.equal(provisioningOf(b.slice(1, 3), "3ee44512a1af2beb39c889490c60ea3f82e43f5d5a5532f5ab9419f676cd07ec"), "unknown");
  });
});

describe("factoryExpiry in --android-policy", () => {
  test("a default and per-tenant values; anything else stops start-up", () => {
    const p = parseAndroidPolicies(JSON.stringify({ default: { factoryExpiry: "accept" }, tenants: { bank: { factoryExpiry: "refuse" } } }));
    assert.equal(p.default.factoryExpiry, "accept");
    assert.equal(p.tenants.get("bank")?.factoryExpiry, "refuse");
    assert.throws(
      () => parseAndroidPolicies(JSON.stringify({ tenants: { bank: { factoryExpiry: "ignore" } } }), "p.json"),
      /p\.json\.tenants\.bank\.factoryExpiry: expected "accept" or "refuse"/,
    );
  });
});
