import "reflect-metadata";
import assert from "node:assert/strict";
import { createHash, webcrypto } from "node:crypto";
import { describe, it } from "node:test";
import * as x509 from "@peculiar/x509";
import { APP_ATTEST_NONCE_OID, appAttestNonceExtension, uncompressedPoint, validateAppAttestChain } from "../../src/attestation/chain/appAttestChain.ts";

/**
 * App Attest's certificate path (src/attestation/chain/appAttestChain.ts) on certificates made here: each rule's
 * reason, the nonce extension's exact shape, the key's point, and the intermediate index (parsed and verified
 * once per roots list, yet its validity checked at every appraisal, and never filled by a chain that failed).
 */

const crypto = webcrypto;
const P384 = { name: "ECDSA", namedCurve: "P-384" } as const;
const P256 = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN_384 = { name: "ECDSA", hash: "SHA-384" } as const;
const DAY = 86_400_000;
const NOW = new Date("2026-11-26T12:00:00.000Z");
const NONCE = new Uint8Array(createHash("sha256").update("the nonce").digest());

type Keys = webcrypto.CryptoKeyPair;
const newKeys = async (alg: typeof P384 | typeof P256 = P384) => (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as Keys;

interface Ca {
  der: Uint8Array;
  name: string;
  keys: Keys;
}

async function makeRoot(name = "CN=test App Attestation Root CA"): Promise<Ca> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + 3650 * DAY),
    keys: keys as never,
    signingAlgorithm: SIGN_384,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  }, crypto as never);
  return { der: new Uint8Array(cert.rawData), name, keys };
}

async function makeIntermediate(root: Ca, o: { days?: number; ca?: boolean; keys?: Keys } = {}): Promise<Ca> {
  const keys = o.keys ?? (await newKeys());
  const name = "CN=test App Attestation CA 1";
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "02",
    subject: name,
    issuer: root.name,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + (o.days ?? 3650) * DAY),
    publicKey: keys.publicKey as never,
    signingKey: root.keys.privateKey as never,
    signingAlgorithm: SIGN_384,
    extensions: [new x509.BasicConstraintsExtension(o.ca ?? true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  }, crypto as never);
  return { der: new Uint8Array(cert.rawData), name, keys };
}

function nonceExtensionValue(nonce: Uint8Array, tag = 0xa1): Uint8Array {
  return Uint8Array.from([0x30, nonce.length + 4, tag, nonce.length + 2, 0x04, nonce.length, ...nonce]);
}

async function makeLeaf(issuer: Ca, o: { keyAlg?: typeof P384 | typeof P256; ca?: boolean; extension?: Uint8Array } = {}): Promise<{ der: Uint8Array; keys: Keys }> {
  const keys = await newKeys(o.keyAlg ?? P256);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "03",
    subject: "CN=a credential, OU=AAA Certification",
    issuer: issuer.name,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + 30 * DAY),
    publicKey: keys.publicKey as never,
    signingKey: issuer.keys.privateKey as never,
    signingAlgorithm: SIGN_384,
    extensions: [new x509.BasicConstraintsExtension(o.ca ?? false, undefined, true), new x509.Extension(APP_ATTEST_NONCE_OID, false, o.extension ?? nonceExtensionValue(NONCE))],
  }, crypto as never);
  return { der: new Uint8Array(cert.rawData), keys };
}

describe("App Attest's certificate path", () => {
  it("a chain to the root validates; the nonce extension and the key's uncompressed point are read from the leaf", async () => {
    const root = await makeRoot();
    const inter = await makeIntermediate(root);
    const leaf = await makeLeaf(inter);
    const r = validateAppAttestChain([leaf.der, inter.der], [root.der], NOW);
    assert.equal(r.ok, true, r.reason);
    assert.match(r.reason, /^chain to CN=test App Attestation Root CA/);
    assert.deepEqual(appAttestNonceExtension(r.leaf!), NONCE);
    const raw = new Uint8Array(await crypto.subtle.exportKey("raw", leaf.keys.publicKey));
    assert.deepEqual(uncompressedPoint(r.leaf!), raw);
    assert.equal(raw[0], 0x04);
  });

  it("refuses, each with its reason: a leaf that is a CA, a P-384 leaf key, an intermediate that is not a CA, bytes after a certificate, another root, no root", async () => {
    const root = await makeRoot();
    const inter = await makeIntermediate(root);
    const reasonOf = (x5c: Uint8Array[], roots: Uint8Array[] = [root.der]) => {
      const r = validateAppAttestChain(x5c, roots, NOW);
      assert.equal(r.ok, false);
      return r.reason;
    };
    assert.equal(reasonOf([(await makeLeaf(inter, { ca: true })).der, inter.der]), "the credential certificate is a CA");
    assert.equal(reasonOf([(await makeLeaf(inter, { keyAlg: P384 })).der, inter.der]), "the credential certificate's key is not EC P-256");
    const notCa = await makeIntermediate(root, { ca: false });
    assert.equal(reasonOf([(await makeLeaf(notCa)).der, notCa.der]), "x5c[1] is not a CA");
    const good = await makeLeaf(inter);
    assert.match(reasonOf([Uint8Array.from([...good.der, 0]), inter.der]), /^x5c\[0\] is not DER \(Certificate: bytes after the certificate\)$/);
    assert.match(reasonOf([good.der, Uint8Array.from([...inter.der, 0])]), /^x5c\[1\] (is not DER|is not a certificate)/);
    assert.equal(reasonOf([good.der, inter.der], [(await makeRoot()).der]), "the chain does not lead to a trusted App Attestation root (valid at the appraisal time)");
    assert.equal(reasonOf([Uint8Array.from([1, 2, 3]), inter.der]), "x5c[0] is not a certificate");
    assert.equal(reasonOf([good.der, inter.der], []), "no App Attestation root is configured");
    assert.equal(reasonOf([]), "x5c is empty");
    // the leaf alone cannot reach the root: its issuer is the intermediate
    assert.equal(reasonOf([good.der]), "the chain does not lead to a trusted App Attestation root (valid at the appraisal time)");
  });

  it("the nonce extension is read only in its exact shape: 32 bytes in [1] EXPLICIT OCTET STRING", async () => {
    const root = await makeRoot();
    const inter = await makeIntermediate(root);
    const read = async (extension: Uint8Array) => {
      const r = validateAppAttestChain([(await makeLeaf(inter, { extension })).der, inter.der], [root.der], NOW);
      assert.equal(r.ok, true, r.reason);
      return appAttestNonceExtension(r.leaf!);
    };
    assert.equal(await read(nonceExtensionValue(NONCE.subarray(0, 31))), undefined, "31 bytes");
    assert.equal(await read(nonceExtensionValue(NONCE, 0xa2)), undefined, "[2] instead of [1]");
    const withNull = nonceExtensionValue(NONCE);
    assert.equal(await read(Uint8Array.from([0x30, withNull[1]! + 2, ...withNull.subarray(2), 0x05, 0x00])), undefined, "a NULL after the [1]");
    assert.equal(await read(Uint8Array.from([0x04, 0x20, ...NONCE])), undefined, "a bare OCTET STRING");
  });

  it("an intermediate verified once is taken from the index, yet its validity is still checked at each appraisal", async () => {
    const root = await makeRoot();
    const shortLived = await makeIntermediate(root, { days: 2 });
    const roots = [root.der];
    for (let i = 0; i < 3; i++) {
      const r = validateAppAttestChain([(await makeLeaf(shortLived)).der, shortLived.der], roots, NOW);
      assert.equal(r.ok, true, r.reason);
    }
    const later = new Date(NOW.getTime() + 5 * DAY);
    const r = validateAppAttestChain([(await makeLeaf(shortLived)).der, shortLived.der], roots, later);
    assert.equal(r.ok, false);
    assert.match(r.reason, /^x5c\[1\] \(CN=test App Attestation CA 1\) is not valid at /);
  });

  it("the index neither trusts a look-alike intermediate nor carries over to another roots list, and a failed chain adds nothing to it", async () => {
    const root = await makeRoot();
    const inter = await makeIntermediate(root);
    const roots = [root.der];
    assert.equal(validateAppAttestChain([(await makeLeaf(inter)).der, inter.der], roots, NOW).ok, true);

    // the same name, another key, signed by another root with the same name: not Apple's intermediate
    const impostorRoot = await makeRoot();
    const impostor = await makeIntermediate(impostorRoot);
    const forged = validateAppAttestChain([(await makeLeaf(impostor)).der, impostor.der], roots, NOW);
    assert.equal(forged.ok, false);
    assert.equal(forged.reason, "the chain does not lead to a trusted App Attestation root (valid at the appraisal time)");
    // …and asked again, still not (nothing of the failed chain was kept)
    assert.equal(validateAppAttestChain([(await makeLeaf(impostor)).der, impostor.der], roots, NOW).ok, false);

    // a leaf signed by another key under the genuine intermediate's bytes: its own link is always checked
    const stranger = await makeIntermediate(impostorRoot, { keys: await newKeys() });
    const wrongSigner = await makeLeaf({ ...inter, keys: stranger.keys });
    const r = validateAppAttestChain([wrongSigner.der, inter.der], roots, NOW);
    assert.equal(r.ok, false);
    assert.equal(r.reason, "x5c[0] is not issued by x5c[1]");

    // the genuine intermediate under a roots list without its root
    const other = validateAppAttestChain([(await makeLeaf(inter)).der, inter.der], [impostorRoot.der], NOW);
    assert.equal(other.ok, false);
    assert.equal(other.reason, "the chain does not lead to a trusted App Attestation root (valid at the appraisal time)");
  });
});
