import "reflect-metadata";
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import fc from "fast-check";
import * as x509 from "@peculiar/x509";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  AlgorithmIdentifier,
  Certificate,
  Extension as AsnExtension,
  Extensions as AsnExtensions,
  Name as AsnName,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from "@peculiar/asn1-x509";
import { isAppError } from "../../src/errors/AppError.ts";
import { readDerHeader } from "../../src/attestation/encoding/derChain.ts";
import {
  CertificateStructureError,
  KNOWN_EXTENSIONS,
  UNDERSTOOD_CRITICAL,
  decodeBasicConstraintsCa,
  decodeKeyUsage,
  encodeOid,
  readCertificateExtensions,
  readCertificateFields,
} from "../../src/attestation/encoding/certificateExtensions.ts";
import { vendorContainerFormat } from "../../src/attestation/formats/vendorContainer.ts";
import {
  createDevCa,
  issueCertificate,
  issueDeviceLeaf,
  type CertifiedKey,
  type DevCa,
  type LeafOptions,
} from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import type { AppraisalResult, TrustConfig } from "../../src/attestation/types.ts";

/**
 * The device leaf's extensions (RFC 5280, checked on every appraisal without a full parse): unknown critical
 * extensions, keyUsage without digitalSignature and cA fail rule 2; a structure that is not DER is BLOB_MALFORMED.
 * Then the header-only walker itself, against @peculiar/x509's parse and under mutation.
 */

const PINNED = new Date("2030-06-15T12:00:00.000Z");
const NONCE = Buffer.alloc(32, 0x3c).toString("base64url");
const MALFORMED = "4000006";
const PRIVATE_OID = "1.3.6.1.4.1.55555.7";

let ca: DevCa;
let trust: TrustConfig;

before(async () => {
  ca = await createDevCa({ now: PINNED });
  trust = {
    vendor: { rootsDer: [ca.root.certDer], revocations: new Map(), referenceValues: demoReferenceValues() },
    android: {} as TrustConfig["android"],
  };
});

// --- tiny DER builder, for extension values and hand-made certificates ---
function tlv(tag: number, ...content: Uint8Array[]): Uint8Array {
  const body = Buffer.concat(content);
  const n = body.length;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : n < 0x10000 ? [0x82, n >> 8, n & 0xff] : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Uint8Array.of(tag, ...len), body]);
}
const seq = (...c: Uint8Array[]) => tlv(0x30, ...c);
const oid = (dotted: string) => tlv(0x06, encodeOid(dotted));
const ia5 = (tag: number, s: string) => tlv(tag, Buffer.from(s, "ascii"));

function appraiseLeaf(leaf: CertifiedKey): AppraisalResult {
  const blob = encodeVendorBlob({ nonce: NONCE, now: PINNED, leaf, ca });
  return vendorContainerFormat.appraise({ blob, nonce: NONCE, trust, now: PINNED });
}

async function leafWith(opts: LeafOptions): Promise<CertifiedKey> {
  return issueDeviceLeaf(ca, { now: PINNED, ...opts });
}

function expectYes(r: AppraisalResult) {
  assert.equal(r.record.status, "Success", r.reason);
  assert.equal(r.record.verdict, "Yes", r.reason);
}

function expectInvalid(r: AppraisalResult, reason: RegExp) {
  assert.equal(r.record.status, "CertificateInvalid", r.reason);
  assert.equal(r.record.verdict, "No", r.reason);
  assert.match(r.reason, reason);
}

describe("leaf extensions (rule 2)", () => {
  it("an unknown critical extension → CertificateInvalid; non-critical → still Yes", async () => {
    const ext = (critical: boolean) => new x509.Extension(PRIVATE_OID, critical, Uint8Array.of(0x05, 0x00));
    expectInvalid(appraiseLeaf(await leafWith({ extensions: [ext(true)] })), /leaf .* unsupported critical extension 1\.3\.6\.1\.4\.1\.55555\.7/);
    expectYes(appraiseLeaf(await leafWith({ extensions: [ext(false)] })));
  });

  it("keyUsage must include digitalSignature when present", async () => {
    for (const keyUsage of [["keyEncipherment"], ["nonRepudiation"], ["keyAgreement", "dataEncipherment"]] as const) {
      expectInvalid(appraiseLeaf(await leafWith({ keyUsage: [...keyUsage] })), /keyUsage without digitalSignature/);
    }
    expectYes(appraiseLeaf(await leafWith({ keyUsage: ["digitalSignature"] })));
    expectYes(appraiseLeaf(await leafWith({ keyUsage: ["digitalSignature", "keyEncipherment", "nonRepudiation"] })));
    expectYes(appraiseLeaf(await leafWith({ keyUsage: [] }))); // no keyUsage extension at all
  });

  it("a leaf asserting cA → CertificateInvalid, also where OpenSSL's CA test would not see it", async () => {
    expectInvalid(appraiseLeaf(await leafWith({ ca: true })), /leaf .* asserts basicConstraints cA/);
    // X509_check_ca (node's `x509.ca`) is false when keyUsage lacks keyCertSign; the extension still says cA.
    expectInvalid(appraiseLeaf(await leafWith({ ca: true, keyUsage: ["digitalSignature"] })), /leaf .* asserts basicConstraints cA/);
    expectYes(appraiseLeaf(await leafWith({ omitBasicConstraints: true })));
  });

  it("critical extensions on the shared list are honoured; recognised but unprocessed ones are not", async () => {
    const san = new x509.SubjectAlternativeNameExtension([{ type: "dns", value: "device.example" }], true);
    const eku = new x509.ExtendedKeyUsageExtension(["1.3.6.1.5.5.7.3.2"], true);
    const policies = new x509.Extension("2.5.29.32", true, seq(seq(oid("2.5.29.32.0"))));
    expectYes(appraiseLeaf(await leafWith({ extensions: [san, eku, policies] })));

    const nameConstraints = seq(tlv(0xa0, seq(ia5(0x82, "example.com"))));
    const crlDp = seq(seq(tlv(0xa0, tlv(0xa0, ia5(0x86, "http://crl.example/v.crl")))));
    const aia = seq(seq(oid("1.3.6.1.5.5.7.48.2"), ia5(0x86, "http://ca.example/i.crt")));
    for (const [dotted, value, name] of [
      ["2.5.29.30", nameConstraints, "nameConstraints"],
      ["2.5.29.31", crlDp, "cRLDistributionPoints"],
      ["1.3.6.1.5.5.7.1.1", aia, "authorityInfoAccess"],
    ] as const) {
      expectInvalid(
        appraiseLeaf(await leafWith({ extensions: [new x509.Extension(dotted, true, value)] })),
        new RegExp(`unsupported critical extension ${name} \\(${dotted.replace(/\./g, "\\.")}\\)`),
      );
      expectYes(appraiseLeaf(await leafWith({ extensions: [new x509.Extension(dotted, false, value)] })));
    }
  });

  it("a repeated extension, or a keyUsage / basicConstraints that cannot be read → CertificateInvalid", async () => {
    const twice = new x509.Extension(PRIVATE_OID, false, Uint8Array.of(0x05, 0x00));
    expectInvalid(appraiseLeaf(await leafWith({ extensions: [twice, twice] })), /extension 1\.3\.6\.1\.4\.1\.55555\.7 appears twice/);
    const badKeyUsage = new x509.Extension("2.5.29.15", true, Uint8Array.of(0x05, 0x00));
    expectInvalid(appraiseLeaf(await leafWith({ keyUsage: [], extensions: [badKeyUsage] })), /keyUsage cannot be read/);
    const badBasic = new x509.Extension("2.5.29.19", true, Uint8Array.of(0x30, 0x03, 0x01, 0x01, 0x01));
    expectInvalid(appraiseLeaf(await leafWith({ omitBasicConstraints: true, extensions: [badBasic] })), /basicConstraints cannot be read/);
  });

  it("an intermediate with a critical nameConstraints is still refused (the list is shared, not widened)", async () => {
    const inter = await issueCertificate(ca.root as CertifiedKey, {
      subject: "CN=Constrained Intermediate", ca: true, pathLen: 0, now: PINNED,
      extensions: [new x509.Extension("2.5.29.30", true, seq(tlv(0xa0, seq(ia5(0x82, "example.com")))))],
    });
    const leaf = await issueDeviceLeaf(inter, { now: PINNED });
    const blob = encodeVendorBlob({ nonce: NONCE, now: PINNED, leaf, chain: [inter.certDer] });
    expectInvalid(vendorContainerFormat.appraise({ blob, nonce: NONCE, trust, now: PINNED }), /unsupported critical extension 2\.5\.29\.30/);
    assert.ok(!UNDERSTOOD_CRITICAL.has("2.5.29.30"));
  });

  it("a leaf whose structure is not DER along the walk → BLOB_MALFORMED", async () => {
    const leaf = await leafWith({});
    const der = Buffer.from(leaf.certDer);
    // Re-encode the [3] header with a non-minimal long-form length and grow the enclosing lengths by one.
    const exts = readCertificateExtensions(der);
    assert.ok(exts.length > 0);
    assert.deepEqual([der[0], der[1], der[4], der[5]], [0x30, 0x82, 0x30, 0x82]);
    const tbsEnd = 8 + der.readUInt16BE(6);
    let a3 = -1;
    for (let p = 8; p < tbsEnd;) {
      const len = der[p + 1]! < 0x80 ? der[p + 1]! : der.readUIntBE(p + 2, der[p + 1]! & 0x7f);
      const hl = der[p + 1]! < 0x80 ? 2 : 2 + (der[p + 1]! & 0x7f);
      if (der[p] === 0xa3) a3 = p;
      p += hl + len;
    }
    assert.ok(a3 > 0 && der[a3 + 1]! < 0x80, "the dev CA's [3] has a short-form length");
    const mutated = Buffer.concat([der.subarray(0, a3 + 1), Uint8Array.of(0x81), der.subarray(a3 + 1)]);
    mutated.writeUInt16BE(der.readUInt16BE(2) + 1, 2);
    mutated.writeUInt16BE(der.readUInt16BE(6) + 1, 6);
    assert.throws(() => readCertificateExtensions(mutated), CertificateStructureError);
    const blob = encodeVendorBlob({ nonce: NONCE, now: PINNED, leaf: { ...leaf, certDer: mutated }, ca });
    assert.throws(
      () => vendorContainerFormat.appraise({ blob, nonce: NONCE, trust, now: PINNED }),
      (e: unknown) => isAppError(e) && e.entry.code === MALFORMED && /certificate 0/.test(e.reason),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------

const KEY_USAGE_BITS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const KNOWN_OIDS = new Set(KNOWN_EXTENSIONS.map((e) => e.oid));

/** A private-looking OID with arcs up to 2^48 (asn1js, under @peculiar/x509, misreads arcs beyond 2^53). */
const arbOid = fc
  .tuple(
    fc.constantFrom("1.3.6.1.4.1", "2.999", "1.2.840.113635", "0.4.0.127"),
    fc.array(fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 2 ** 48 })), { minLength: 1, maxLength: 5 }),
  )
  .map(([prefix, arcs]) => [prefix, ...arcs].join("."));

const arbExtension: fc.Arbitrary<x509.Extension> = fc.oneof(
  fc.tuple(arbOid, fc.boolean(), fc.uint8Array({ maxLength: 300 })).map(([o, c, v]) => new x509.Extension(o, c, v)),
  fc.tuple(fc.subarray(KEY_USAGE_BITS, { minLength: 1 }), fc.boolean())
    .map(([bits, c]) => new x509.KeyUsagesExtension(bits.reduce((a, b) => a | b, 0), c)),
  fc.tuple(fc.boolean(), fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined }), fc.boolean())
    .map(([isCa, pathLen, c]) => new x509.BasicConstraintsExtension(isCa, isCa ? pathLen : undefined, c)),
  fc.boolean().map((c) => new x509.ExtendedKeyUsageExtension(["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"], c)),
  fc.boolean().map((c) => new x509.SubjectAlternativeNameExtension([{ type: "dns", value: "a.example" }, { type: "ip", value: "192.0.2.1" }], c)),
);

let signingKeys: webcrypto.CryptoKeyPair;

/** Compares the walker with @peculiar/x509's own reading of `der`. */
function assertAgrees(der: Uint8Array) {
  const theirs = new x509.X509Certificate(der).extensions;
  const ours = readCertificateExtensions(der);
  assert.equal(ours.length, theirs.length);
  ours.forEach((e, i) => {
    const t = theirs[i]!;
    assert.equal(e.oid, t.type);
    assert.equal(e.critical, t.critical, e.oid);
    assert.deepEqual(Buffer.from(e.value), Buffer.from(t.value), e.oid);
    assert.equal(e.known !== undefined, KNOWN_OIDS.has(e.oid));
    if (t instanceof x509.KeyUsagesExtension) assert.equal(decodeKeyUsage(e.value), t.usages);
    if (t instanceof x509.BasicConstraintsExtension) assert.equal(decodeBasicConstraintsCa(e.value), t.ca);
  });
}

describe("readCertificateExtensions", () => {
  before(async () => {
    signingKeys = (await webcrypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  });

  it("agrees with @peculiar/x509 on 50 generated certificates (OIDs, critical flags, values, keyUsage, cA)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arbExtension, { maxLength: 8 }), fc.boolean(), async (extensions, withEmptyList) => {
        const cert = await x509.X509CertificateGenerator.create({
          serialNumber: "01",
          subject: "CN=Walker Test",
          issuer: "CN=Walker Test CA",
          notBefore: new Date("2025-01-01T00:00:00Z"),
          notAfter: new Date("2035-01-01T00:00:00Z"),
          signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
          publicKey: signingKeys.publicKey,
          signingKey: signingKeys.privateKey,
          extensions: extensions.length || !withEmptyList ? extensions : [],
        });
        assertAgrees(new Uint8Array(cert.rawData));
      }),
      { numRuns: 50 },
    );
  });

  it("skips issuer/subject unique ids, and reads a v1 certificate as having no extensions", () => {
    const tbsParts = {
      serialNumber: Uint8Array.of(0x01).buffer,
      signature: new AlgorithmIdentifier({ algorithm: "1.2.840.10045.4.3.2" }),
      issuer: new AsnName(),
      validity: new Validity({ notBefore: new Date("2025-01-01T00:00:00Z"), notAfter: new Date("2035-01-01T00:00:00Z") }),
      subject: new AsnName(),
      subjectPublicKeyInfo: new SubjectPublicKeyInfo({
        algorithm: new AlgorithmIdentifier({ algorithm: "1.3.101.112" }),
        subjectPublicKey: new Uint8Array(32).buffer,
      }),
    };
    const build = (tbs: TBSCertificate) => new Uint8Array(AsnConvert.serialize(new Certificate({
      tbsCertificate: tbs,
      signatureAlgorithm: new AlgorithmIdentifier({ algorithm: "1.2.840.10045.4.3.2" }),
      signatureValue: new Uint8Array(8).buffer,
    })));
    const withIds = build(new TBSCertificate({
      ...tbsParts,
      version: Version.v3,
      issuerUniqueID: Uint8Array.of(1, 2, 3).buffer,
      subjectUniqueID: Uint8Array.of(4, 5).buffer,
      extensions: new AsnExtensions([
        new AsnExtension({ extnID: "2.5.29.15", critical: true, extnValue: new OctetString(new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature).value) }),
        new AsnExtension({ extnID: PRIVATE_OID, critical: false, extnValue: new OctetString(Uint8Array.of(0x05, 0x00)) }),
      ]),
    }));
    assert.ok(withIds.includes(0x81) && withIds.includes(0x82));
    assertAgrees(withIds);
    assert.deepEqual(readCertificateExtensions(withIds).map((e) => [e.oid, e.critical]), [["2.5.29.15", true], [PRIVATE_OID, false]]);
    const v1 = build(new TBSCertificate({ ...tbsParts, version: Version.v1 }));
    const outer = readDerHeader(v1, 0)!;
    const tbs = readDerHeader(v1, outer.headerLength)!;
    assert.equal(v1[outer.headerLength + tbs.headerLength], 0x02, "no [0] version: the tbsCertificate starts with the serial");
    assert.deepEqual(readCertificateExtensions(v1), []);
  });

  it("reads the subjectPublicKeyInfo's algorithm and named curve as OpenSSL does (P-256, P-384, RSA, Ed25519)", async () => {
    const cases: [string, webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams | { name: "Ed25519" }, string, string | undefined][] = [
      ["P-256", { name: "ECDSA", namedCurve: "P-256" }, "1.2.840.10045.2.1", "1.2.840.10045.3.1.7"],
      ["P-384", { name: "ECDSA", namedCurve: "P-384" }, "1.2.840.10045.2.1", "1.3.132.0.34"],
      ["RSA", { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, "1.2.840.113549.1.1.1", undefined],
      ["Ed25519", { name: "Ed25519" }, "1.3.101.112", undefined],
    ];
    for (const [label, params, algorithm, curve] of cases) {
      const subject = (await webcrypto.subtle.generateKey(params as never, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: "02",
        subject: "CN=Key Test",
        issuer: "CN=Walker Test CA",
        notBefore: new Date("2025-01-01T00:00:00Z"),
        notAfter: new Date("2035-01-01T00:00:00Z"),
        signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
        publicKey: subject.publicKey,
        signingKey: signingKeys.privateKey,
      });
      const der = new Uint8Array(cert.rawData);
      const fields = readCertificateFields(der);
      assert.deepEqual(fields.publicKeyAlgorithm, { oid: algorithm, parameterOid: curve }, label);
      assert.deepEqual(fields.extensions, readCertificateExtensions(der), label);
      // and OpenSSL's reading of the same key agrees on the curve
      const details = new (await import("node:crypto")).X509Certificate(der).publicKey.asymmetricKeyDetails;
      if (curve) assert.equal({ "1.2.840.10045.3.1.7": "prime256v1", "1.3.132.0.34": "secp384r1" }[curve], details?.namedCurve, label);
    }
  });

  it("refuses a subjectPublicKeyInfo whose algorithm is not a DER AlgorithmIdentifier (readCertificateFields only)", () => {
    const der = seq(
      seq(
        tlv(0xa0, tlv(0x02, Uint8Array.of(2))),
        tlv(0x02, Uint8Array.of(1)), seq(oid("1.2.840.10045.4.3.2")), seq(), seq(), seq(), seq(tlv(0x02, Uint8Array.of(5))),
      ),
      seq(oid("1.2.840.10045.4.3.2")),
      tlv(0x03, Uint8Array.of(0)),
    );
    assert.deepEqual(readCertificateExtensions(der), [], "the extensions walk does not look inside the key");
    assert.throws(() => readCertificateFields(der), CertificateStructureError);
  });

  describe("hand-made structures", () => {
    const skeleton = (tail: Uint8Array[], { version = true } = {}) => seq(
      seq(
        ...(version ? [tlv(0xa0, tlv(0x02, Uint8Array.of(2)))] : []),
        tlv(0x02, Uint8Array.of(1)), seq(oid("1.2.840.10045.4.3.2")), seq(), seq(), seq(), seq(),
        ...tail,
      ),
      seq(oid("1.2.840.10045.4.3.2")),
      tlv(0x03, Uint8Array.of(0)),
    );
    const ext = (...parts: Uint8Array[]) => seq(...parts);
    const exts = (...e: Uint8Array[]) => tlv(0xa3, seq(...e));
    const octets = (...b: number[]) => tlv(0x04, Uint8Array.from(b));
    const bool = (...b: number[]) => tlv(0x01, Uint8Array.from(b));

    it("reads what DER allows (and an explicit critical FALSE as non-critical)", () => {
      assert.deepEqual(readCertificateExtensions(skeleton([])), []);
      assert.deepEqual(readCertificateExtensions(skeleton([], { version: false })), []);
      assert.deepEqual(readCertificateExtensions(skeleton([exts()])), []);
      const big = "2.999.18446744073709551615.5";
      const r = readCertificateExtensions(skeleton([
        exts(ext(oid("2.5.29.19"), bool(0xff), octets(0x30, 0x00)), ext(oid(big), bool(0x00), octets()), ext(oid("2.4294967296.1"), octets(1))),
      ]));
      assert.deepEqual(r.map((e) => [e.oid, e.critical, e.known?.name, Buffer.from(e.value).toString("hex")]), [
        ["2.5.29.19", true, "basicConstraints", "3000"],
        [big, false, undefined, ""],
        ["2.4294967296.1", false, undefined, "01"],
      ]);
    });

    it("refuses every structural surprise", () => {
      const good = ext(oid(PRIVATE_OID), octets(5, 0));
      const cases: [string, Uint8Array][] = [
        ["BOOLEAN that is not 00/FF", skeleton([exts(ext(oid(PRIVATE_OID), bool(0x01), octets()))])],
        ["BOOLEAN of two bytes", skeleton([exts(ext(oid(PRIVATE_OID), bool(0xff, 0xff), octets()))])],
        ["extnValue missing", skeleton([exts(ext(oid(PRIVATE_OID), bool(0xff)))])],
        ["element after extnValue", skeleton([exts(ext(oid(PRIVATE_OID), octets(), octets()))])],
        ["extnID not an OID", skeleton([exts(ext(tlv(0x02, Uint8Array.of(1)), octets()))])],
        ["OID with a 0x80 padding digit", skeleton([exts(ext(tlv(0x06, Uint8Array.of(0x2b, 0x80, 0x01)), octets()))])],
        ["OID whose last byte continues", skeleton([exts(ext(tlv(0x06, Uint8Array.of(0x2b, 0x86)), octets()))])],
        ["empty OID", skeleton([exts(ext(tlv(0x06, new Uint8Array()), octets()))])],
        ["extension not a SEQUENCE", skeleton([exts(tlv(0x31, oid(PRIVATE_OID), octets()))])],
        ["[3] holding two SEQUENCEs", skeleton([tlv(0xa3, seq(good), seq(good))])],
        ["[3] not wrapping a SEQUENCE", skeleton([tlv(0xa3, good)])],
        ["element after [3]", skeleton([exts(good), tlv(0x05, new Uint8Array())])],
        ["[3] primitive", skeleton([tlv(0x83, seq(good))])],
        ["constructed unique id", skeleton([tlv(0xa1, tlv(0x03, Uint8Array.of(0))), exts(good)])],
        ["unique ids out of order", skeleton([tlv(0x82, Uint8Array.of(0)), tlv(0x81, Uint8Array.of(0)), exts(good)])],
        ["missing subjectPublicKeyInfo", seq(seq(tlv(0xa0, tlv(0x02, Uint8Array.of(2))), tlv(0x02, Uint8Array.of(1)), seq(), seq(), seq(), seq()), seq(), tlv(0x03, Uint8Array.of(0)))],
        ["serial not an INTEGER", seq(seq(tlv(0x04, Uint8Array.of(1)), seq(), seq(), seq(), seq(), seq()), seq(), tlv(0x03, Uint8Array.of(0)))],
        ["no signature", seq(seq(tlv(0x02, Uint8Array.of(1)), seq(), seq(), seq(), seq(), seq()), seq())],
        ["element after the signature", Buffer.concat([seq(seq(tlv(0x02, Uint8Array.of(1)), seq(), seq(), seq(), seq(), seq()), seq(), tlv(0x03, Uint8Array.of(0)), tlv(0x05, new Uint8Array()))])],
        ["trailing byte", Buffer.concat([skeleton([exts(good)]), Uint8Array.of(0)])],
        ["empty input", new Uint8Array()],
      ];
      for (const [what, der] of cases) assert.throws(() => readCertificateExtensions(der), CertificateStructureError, what);
    });

    it("decodes keyUsage and basicConstraints values, undefined when unreadable", () => {
      const ku = (...b: number[]) => decodeKeyUsage(Uint8Array.from(b));
      assert.equal(ku(0x03, 0x02, 0x07, 0x80), 1);
      assert.equal(ku(0x03, 0x02, 0x01, 0x06), 32 | 64);
      assert.equal(ku(0x03, 0x03, 0x07, 0x80, 0x80), 1 | 256);
      assert.equal(ku(0x03, 0x01, 0x00), 0);
      for (const bad of [[0x03, 0x01, 0x01], [0x03, 0x02, 0x08, 0x80], [0x03, 0x00], [0x04, 0x02, 0x07, 0x80], [0x03, 0x02, 0x07, 0x80, 0x00], []]) {
        assert.equal(decodeKeyUsage(Uint8Array.from(bad)), undefined, Buffer.from(bad).toString("hex"));
      }
      const bc = (...b: number[]) => decodeBasicConstraintsCa(Uint8Array.from(b));
      assert.equal(bc(0x30, 0x00), false);
      assert.equal(bc(0x30, 0x03, 0x01, 0x01, 0xff), true);
      assert.equal(bc(0x30, 0x06, 0x01, 0x01, 0xff, 0x02, 0x01, 0x00), true);
      assert.equal(bc(0x30, 0x03, 0x02, 0x01, 0x05), false);
      for (const bad of [[0x30, 0x03, 0x01, 0x01, 0x01], [0x30, 0x02, 0x02, 0x00], [0x30, 0x03, 0x04, 0x01, 0x00], [0x31, 0x00], [0x30, 0x00, 0x00], []]) {
        assert.equal(decodeBasicConstraintsCa(Uint8Array.from(bad)), undefined, Buffer.from(bad).toString("hex"));
      }
    });
  });

  describe("fast-check: mutated certificates", () => {
    let pool: Uint8Array[];
    before(async () => {
      const leaves = await Promise.all([
        issueDeviceLeaf(ca, { now: PINNED }),
        issueDeviceLeaf(ca, { now: PINNED, keyType: "rsa", extensions: [new x509.Extension(PRIVATE_OID, true, Uint8Array.of(5, 0))] }),
        issueDeviceLeaf(ca, { now: PINNED, keyType: "ed25519", keyUsage: ["digitalSignature", "keyEncipherment"] }),
      ]);
      pool = [...leaves.map((l) => l.certDer), ca.intermediate.certDer, ca.root.certDer];
    });

    /** One edit: overwrite, flip, insert, delete or truncate at a position; lengths are favoured (they are few). */
    const arbEdit = fc.oneof(
      fc.record({ kind: fc.constant("set" as const), at: fc.nat(), byte: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x00, 0x01, 0x30, 0x80, 0x81, 0x82, 0x84, 0xa3, 0xff)) }),
      fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
      fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
      fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
    );
    type Edit = typeof arbEdit extends fc.Arbitrary<infer T> ? T : never;

    function mutate(der: Uint8Array, edits: readonly Edit[]): Uint8Array {
      let b = Buffer.from(der);
      for (const e of edits) {
        const at = b.length ? e.at % b.length : 0;
        if (e.kind === "set") b[at] = e.byte;
        else if (e.kind === "flip") b[at]! ^= 1 << e.bit;
        else if (e.kind === "insert") b = Buffer.concat([b.subarray(0, at), Uint8Array.of(e.byte), b.subarray(at)]);
        else if (e.kind === "delete") b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
        else b = b.subarray(0, at);
      }
      return b;
    }

    it("the walker returns or throws CertificateStructureError, never anything else; decoders never throw", () => {
      fc.assert(
        fc.property(fc.nat(), fc.array(arbEdit, { minLength: 1, maxLength: 4 }), (which, edits) => {
          const der = mutate(pool[which % pool.length]!, edits);
          try {
            const { publicKeyAlgorithm } = readCertificateFields(der);
            assert.equal(typeof publicKeyAlgorithm.oid, "string");
          } catch (e) {
            if (!(e instanceof CertificateStructureError)) throw e;
          }
          let exts: ReturnType<typeof readCertificateExtensions>;
          try {
            exts = readCertificateExtensions(der);
          } catch (e) {
            if (e instanceof CertificateStructureError) return;
            throw e;
          }
          for (const e of exts) {
            assert.equal(typeof e.oid, "string");
            assert.ok(e.value.byteOffset + e.value.length <= der.byteOffset + der.length);
            decodeKeyUsage(e.value);
            decodeBasicConstraintsCa(e.value);
          }
        }),
        { numRuns: 20_000 },
      );
      fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          readCertificateExtensions(bytes);
        } catch (e) {
          if (!(e instanceof CertificateStructureError)) throw e;
        }
        decodeKeyUsage(bytes);
        decodeBasicConstraintsCa(bytes);
      }), { numRuns: 5_000 });
    });

    it("a mutated leaf in a blob is a verdict or BLOB_MALFORMED", () => {
      const leaf = pool[0]!;
      fc.assert(
        fc.property(fc.array(arbEdit, { minLength: 1, maxLength: 3 }), (edits) => {
          const der = mutate(leaf, edits);
          if (der.length === 0) return;
          const blob = encodeVendorBlob({ nonce: NONCE, now: PINNED, leaf: { certDer: der, privateKey: ca.intermediate.privateKey } as CertifiedKey, ca });
          try {
            vendorContainerFormat.appraise({ blob, nonce: NONCE, trust, now: PINNED });
          } catch (e) {
            if (!(isAppError(e) && e.entry.code === MALFORMED)) throw e;
          }
        }),
        { numRuns: 300 },
      );
    });
  });
});
