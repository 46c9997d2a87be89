import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { readDerHeader, splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { challengeMatches } from "../../src/nonces/nonce.ts";
import { vendorContainerFormat } from "../../src/attestation/formats/vendorContainer.ts";
import { createDevCa, createRootCertificate, issueDeviceLeaf, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import type { TrustConfig } from "../../src/attestation/types.ts";
import type { AppError } from "../../src/errors/AppError.ts";
import {
  appraiseAt,
  keyDescriptionExtension,
  nonceFor,
  pemBlob,
  syntheticChain,
  androidTrust,
} from "../android/fixtures.ts";

/**
 * Every byte of a chain is either signed or checked: a second encoding of the same certificate (a signature BIT
 * STRING declaring unused bits, a root re-signed badly under the pinned key) must not pass, and an empty
 * challenge matches nothing.
 */

/** A copy of a DER certificate with its signature BIT STRING's unused-bits octet set to `n`. */
function withSignatureUnusedBits(cert: Uint8Array, n: number): Buffer {
  const b = Buffer.from(cert);
  const outer = readDerHeader(b, 0)!;
  let pos = outer.headerLength;
  for (let i = 0; i < 2; i++) {
    const h = readDerHeader(b, pos)!;
    pos += h.headerLength + h.length; // tbsCertificate, signatureAlgorithm
  }
  const bits = readDerHeader(b, pos)!;
  assert.equal(b[pos], 0x03);
  assert.equal(b[pos + bits.headerLength], 0, "DER signatures declare 0 unused bits");
  b[pos + bits.headerLength] = n;
  return b;
}

/** A copy with one bit of the signature flipped (the TBS, names and key unchanged). */
function withFlippedSignature(cert: Uint8Array): Buffer {
  const b = Buffer.from(cert);
  b[b.length - 3] = b[b.length - 3]! ^ 0x10;
  return b;
}

describe("android-key: exact encodings", () => {
  const CAIMAN = "android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem";
  const NONCE = "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4";
  const AT = "2025-10-01T00:00:00Z";
  const trust = androidTrust();
  const certs = (): Buffer[] => splitDerCertificates(pemBlob(CAIMAN))!.map((d) => Buffer.from(d));

  it("the unmodified chain is Yes (the control)", () => {
    assert.equal(appraiseAt(Buffer.concat(certs()), NONCE, trust, AT).record.verdict, "Yes");
  });

  for (const [index, role] of [[0, "leaf"], [2, "intermediate"], [4, "carried root"]] as const) {
    it(`a signature BIT STRING with unused bits on the ${role}: CertificateInvalid`, () => {
      const c = certs();
      c[index] = withSignatureUnusedBits(c[index]!, 3);
      const r = appraiseAt(Buffer.concat(c), NONCE, trust, AT);
      assert.equal(r.record.status, "CertificateInvalid");
      assert.equal(r.reason, `certificate ${index}'s signature BIT STRING declares 3 unused bits (not DER)`);
    });
  }

  it("a carried root under the pinned key whose own signature is broken: CertificateInvalid", () => {
    const c = certs();
    c[4] = withFlippedSignature(c[4]!);
    const r = appraiseAt(Buffer.concat(c), NONCE, trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /certificate 4 carries a pinned key but is not self-signed/);
    // the same chain without the root is anchored by the configured copy, and passes
    assert.equal(appraiseAt(Buffer.concat(c.slice(0, 4)), NONCE, trust, AT).record.verdict, "Yes");
  });

  it("an empty attestationChallenge never matches, not even an empty nonce", async () => {
    const c = await syntheticChain([keyDescriptionExtension({ challenge: new Uint8Array(0) })]);
    for (const nonce of ["", nonceFor(Buffer.alloc(32, 1)), "challenge"]) {
      const r = appraiseAt(c.blob, nonce, c.trust, "2026-01-15T00:00:00Z");
      assert.equal(r.record.status, "NonceMismatch", `nonce ${JSON.stringify(nonce)}: ${r.reason}`);
      assert.equal(r.record.verdict, "No");
    }
  });

  it("an empty nonce matches no challenge", () => {
    assert.equal(challengeMatches("", new Uint8Array(0)), false);
    assert.equal(challengeMatches("", Buffer.from("x")), false);
    assert.equal(challengeMatches("abc", Buffer.from("abc")), true, "the control");
  });
});

describe("vendor container: exact encodings", () => {
  const NOW = new Date("2026-11-22T12:00:00Z");
  const NONCE = Buffer.alloc(32, 0x5a).toString("base64url");
  let ca: DevCa;
  let trust: TrustConfig;
  before(async () => {
    ca = await createDevCa({ now: NOW });
    trust = {
      vendor: { rootsDer: [ca.root.certDer], revocations: new Map(), referenceValues: demoReferenceValues() },
      android: androidTrust(),
    };
  });
  const appraise = (blob: Uint8Array, nonce = NONCE) => vendorContainerFormat.appraise({ blob, nonce, trust, now: NOW });

  it("a leaf or intermediate signature BIT STRING with unused bits is not DER: BLOB_MALFORMED (blob-format.md)", async () => {
    const leaf = await issueDeviceLeaf(ca, { now: NOW });
    assert.equal(appraise(encodeVendorBlob({ ca, leaf, nonce: NONCE, now: NOW })).record.verdict, "Yes", "the control");
    const badLeaf = { ...leaf, certDer: withSignatureUnusedBits(leaf.certDer, 1) };
    const badInter = withSignatureUnusedBits(ca.intermediate.certDer, 2);
    for (const [blob, index] of [
      [encodeVendorBlob({ ca, leaf: badLeaf, nonce: NONCE, now: NOW }), 0],
      [encodeVendorBlob({ leaf, chain: [badInter], nonce: NONCE, now: NOW }), 1],
    ] as const) {
      assert.throws(() => appraise(blob), (e: AppError) => {
        assert.equal(e.entry.code, "4000006");
        assert.equal(e.reason, `vendor container: certificate ${index}: not DER (its signature BIT STRING declares ${index + 1} unused bits)`);
        return true;
      });
    }
  });

  it("a carried root with the operator root's name and key but a broken signature: CertificateInvalid", async () => {
    const leaf = await issueDeviceLeaf(ca, { now: NOW });
    const withRoot = (root: Uint8Array) => encodeVendorBlob({ leaf, chain: [ca.intermediate.certDer, root], nonce: NONCE, now: NOW });
    assert.equal(appraise(withRoot(ca.root.certDer)).record.verdict, "Yes", "the operator's own root, carried");
    const r = appraise(withRoot(withFlippedSignature(ca.root.certDer)));
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /not one of the operator's vendor roots/);
  });

  it("a re-issued root (same name and key, genuinely self-signed) still stands for the operator's", async () => {
    const leaf = await issueDeviceLeaf(ca, { now: NOW });
    const reissued = await createRootCertificate({ subject: ca.root.subject, privateKey: ca.root.privateKey!, now: NOW, serial: "7a" });
    const r = appraise(encodeVendorBlob({ leaf, chain: [ca.intermediate.certDer, reissued.certDer], nonce: NONCE, now: NOW }));
    assert.equal(r.record.verdict, "Yes", r.reason);
  });

  it("an empty nonce never matches", async () => {
    const leaf = await issueDeviceLeaf(ca, { now: NOW });
    assert.equal(appraise(encodeVendorBlob({ ca, leaf, nonce: NONCE, now: NOW }), "").record.status, "NonceMismatch");
  });
});
