import { test, describe, before } from "node:test";
import assert from "node:assert/strict";
import * as asn1js from "asn1js";
import fc from "fast-check";
import { KNOX_OID, knoxToJson, parseKnoxExtension } from "../../src/attestation/encoding/knox.ts";
import { knoxExtensionDer } from "../../src/attestation/sim/androidExtensions.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { appraiseAt, issue, keyDescriptionExtension, nonceFor, syntheticChain, x509 } from "./fixtures.ts";

/**
 * Samsung's Knox extension as Samsung devices write it. The verdict needs only the warranty bit of [5]
 * integrityStatus: that is read strictly, everything else is recorded as a finding and never fails the chain, and
 * no Knox encoding ever makes the blob BLOB_MALFORMED.
 */

const AT = "2026-01-15T00:00:00Z";
const CHALLENGE = Buffer.alloc(32, 0x42);
const NONCE = nonceFor(CHALLENGE);
const tagged = (tag: number, value: asn1js.AsnType) =>
  new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: tag }, value: [value] });
const seq = (...value: asn1js.AsnType[]) => new Uint8Array(new asn1js.Sequence({ value }).toBER());
const knox = (der: Uint8Array) => new x509.Extension(KNOX_OID, false, der);

describe("Knox extension: reading", () => {
  test("Samsung's encoding (PrintableString [0] challenge): read, reported as a finding", () => {
    const k = parseKnoxExtension(knoxExtensionDer({ challenge: Buffer.from([0x00, 0xff, 0x80, 0x7f]) }));
    assert.equal(k.unreadable, undefined);
    assert.equal(k.challenge?.toString("hex"), "00ff807f");
    assert.deepEqual(k.integrityStatus, { trustBoot: 0, warranty: 0, icd: 0, kernelStatus: 0, systemStatus: 0 });
    assert.equal(k.attestationRecordHash?.toString("hex"), "03".repeat(32));
    assert.equal(k.findings.length, 1);
    assert.match(k.findings[0]!, /challenge \[0\] is a PrintableString, Samsung's schema says OCTET STRING/);
  });

  test("Samsung's schema (OCTET STRING [0]): no findings", () => {
    const k = parseKnoxExtension(knoxExtensionDer({ challengeEncoding: "octetString", integrity: { warranty: 1 } }));
    assert.deepEqual(k.findings, []);
    assert.equal(k.integrityStatus?.warranty, 1);
  });

  test("unknown elements, other string types, repeats and order outside [5] are findings, not failures", () => {
    const k = parseKnoxExtension(seq(
      tagged(6, new asn1js.Integer({ value: 3 })),
      tagged(0, new asn1js.Utf8String({ value: "abc" })),
      tagged(9, new asn1js.Boolean({ value: true })),
      tagged(0, new asn1js.OctetString({ valueHex: new Uint8Array(2) })),
      new asn1js.Null(),
      tagged(5, new asn1js.Sequence({ value: [
        tagged(1, new asn1js.Integer({ value: 0 })),
        tagged(5, new asn1js.Sequence({ value: [tagged(0, new asn1js.Enumerated({ value: 0 }))] })),
        tagged(8, new asn1js.Enumerated({ value: 1 })),
      ] })),
    ));
    assert.equal(k.integrityStatus?.warranty, 0);
    assert.equal(typeof k.integrityStatus?.authResult, "string", "a caller/package SEQUENCE is kept as hex");
    assert.equal(k.challenge?.toString(), "abc");
    assert.deepEqual(k.unknownTags.map((u) => [u.where, u.tag]), [["extension", 9], ["integrityStatus", 8]]);
    const findings = k.findings.join("\n");
    for (const expected of [
      /attestationRecordHash \[6\] is a primitive universal tag 2, not an OCTET STRING/,
      /\[0\] after \[6\]: elements not in ascending order/,
      /challenge \[0\] is a UTF8String/,
      /\[9\] is not in Samsung's schema/,
      /\[0\] repeated; the first is kept/,
      /element 4 is a primitive universal tag 5, not a context-tagged element/,
      /integrityStatus \[8\] is not in Samsung's schema/,
    ]) assert.match(findings, expected);
    JSON.parse(JSON.stringify(knoxToJson(k)));
  });

  test("a BER-only encoding outside [5] is a finding", () => {
    // [6] with a non-minimal long-form length: 0x81 0x22 where 0x22 fits the short form
    const hash = Buffer.concat([Buffer.from([0xa6, 0x81, 0x22, 0x04, 0x20]), Buffer.alloc(32, 9)]);
    const der = Buffer.concat([Buffer.from([0x30, hash.length]), hash]);
    const k = parseKnoxExtension(der);
    assert.match(k.findings.join("\n"), /\[6\] is not DER \(\[6\]: non-minimal length\)/);
    assert.equal(k.attestationRecordHash?.toString("hex"), "09".repeat(32));
  });

  test("[5] is read strictly: every way of making the warranty ambiguous throws (semantic, never der)", () => {
    const status = (...value: asn1js.AsnType[]) => tagged(5, new asn1js.Sequence({ value }));
    const cases: [Uint8Array, RegExp][] = [
      [knoxExtensionDer({ integrity: { warranty: 7 } }), /warranty is 7, expected 0, 1 or 2/],
      [seq(tagged(5, new asn1js.OctetString({ valueHex: new Uint8Array(2) }))), /integrityStatus \[5\] is a OCTET STRING, not a SEQUENCE/],
      [seq(status(tagged(1, new asn1js.Enumerated({ value: 0 })), tagged(0, new asn1js.Enumerated({ value: 0 })))), /not in ascending order/],
      [seq(status(tagged(1, new asn1js.Enumerated({ value: 0 })), tagged(1, new asn1js.Enumerated({ value: 1 })))), /\[1\] repeated/],
      [seq(status(tagged(1, new asn1js.Utf8String({ value: "0" })))), /warranty is a UTF8String, not ENUMERATED/],
      [seq(status(new asn1js.Enumerated({ value: 0 }))), /an element is not context-tagged/],
      [seq(status(), status()), /integrityStatus \[5\] appears twice/],
      // warranty as a non-minimal INTEGER (00 00): BER, not DER
      [seq(tagged(5, new asn1js.Sequence({ value: [tagged(1, new asn1js.Integer({ valueHex: new Uint8Array([0, 0]) }))] }))), /not DER/],
    ];
    for (const [der, why] of cases) {
      assert.throws(() => parseKnoxExtension(der), (e: Error & { kind?: string }) => {
        assert.equal(e.kind, "semantic", e.message);
        assert.match(e.message, why);
        return true;
      });
    }
  });

  test("an INTEGER warranty is read like an ENUMERATED one; [5] left out says nothing about the warranty", () => {
    const k = parseKnoxExtension(seq(tagged(5, new asn1js.Sequence({ value: [tagged(1, new asn1js.Integer({ value: 1 }))] }))));
    assert.equal(k.integrityStatus?.warranty, 1);
    const none = parseKnoxExtension(knoxExtensionDer({ integrity: null }));
    assert.equal(none.integrityStatus, undefined);
    assert.equal(none.unreadable, undefined);
  });

  test("pre-Android-8 broken lengths, or not a SEQUENCE: unreadable, never thrown", () => {
    const broken = parseKnoxExtension(knoxExtensionDer({ brokenLength: true }));
    assert.match(broken.unreadable ?? "", /not readable DER/);
    assert.equal(broken.integrityStatus, undefined);
    assert.match(parseKnoxExtension(new Uint8Array([0x04, 0x01, 0x00])).unreadable ?? "", /OCTET STRING, not a SEQUENCE/);
    assert.match(parseKnoxExtension(new Uint8Array([0x30, 0x09, 0xa0])).unreadable ?? "", /not readable DER/);
  });
});

describe("Knox extension: verdicts on a signed chain", () => {
  const chainWith = (knoxDer: Uint8Array, kd = {}) => syntheticChain([keyDescriptionExtension(kd), knox(knoxDer)]);

  test("as Galaxy S9–S20, Note10, A40/A51 and Tab devices write it, warranty intact: Success, Yes, tamperBit 0", async () => {
    const c = await chainWith(knoxExtensionDer());
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "Success", r.reason);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.equal(r.record.tamperBit, "0");
    const detail = r.detail.knox as { challenge: string; findings: string[]; integrityStatus: { warranty: number } };
    assert.equal(detail.challenge, CHALLENGE.toString("hex"));
    assert.equal(detail.integrityStatus.warranty, 0);
    assert.match(detail.findings[0]!, /PrintableString/);
  });

  test("warranty bit set: Success, No, tamperBit 1", async () => {
    const c = await chainWith(knoxExtensionDer({ integrity: { warranty: 1 } }), { model: "SM-G973F" });
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "Success");
    assert.equal(r.record.verdict, "No");
    assert.equal(r.record.tamperBit, "1");
    assert.match(r.reason, /Samsung Knox warranty bit set/);
  });

  test("unknown elements on top of Samsung's encoding: still Yes, each one a finding", async () => {
    const c = await chainWith(knoxExtensionDer({
      extraElements: [{ tag: 7, value: new asn1js.Integer({ value: 1 }) }, { tag: 12, value: new asn1js.Null() }],
    }));
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.equal((r.detail.knox as { findings: string[] }).findings.length, 3);
  });

  test("pre-Android-8 broken lengths: not BLOB_MALFORMED; Success, No (the warranty bit cannot be read)", async () => {
    const c = await chainWith(knoxExtensionDer({ brokenLength: true }));
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "Success");
    assert.equal(r.record.verdict, "No");
    assert.equal(r.record.tamperBit, "0", "the bootloader is attested locked; the fuse is unknown, not set");
    assert.match(r.reason, /Samsung Knox extension unreadable \(not readable DER.*\): its warranty bit cannot be read/);
    assert.match(String((r.detail.knox as { unreadable: string }).unreadable), /not readable DER/);
  });

  test("a malformed [5]: CertificateInvalid, with the rule named", async () => {
    const c = await chainWith(knoxExtensionDer({ integrity: { warranty: 3 } }));
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.record.verdict, "No");
    assert.match(r.reason, /warranty is 3/);
  });

  describe("no Knox encoding makes the chain BLOB_MALFORMED", () => {
    let c: Awaited<ReturnType<typeof syntheticChain>>;
    before(async () => {
      c = await syntheticChain([]);
    });
    const chainWithKnox = async (ext: Uint8Array) => {
      const leaf = await issue(c.intermediate, {
        subject: "CN=Android Keystore Key",
        serialNumber: "01",
        extensions: [keyDescriptionExtension(), knox(ext)],
      });
      return Buffer.concat([leaf.der, c.intermediate.der, c.root.der]);
    };

    test("random and mutated extension values give a verdict (fast-check, 300 signed chains)", async () => {
      const seed = knoxExtensionDer();
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.uint8Array({ minLength: 0, maxLength: 120 }),
            fc.array(fc.record({ at: fc.nat(seed.length - 1), xor: fc.integer({ min: 1, max: 255 }) }), { minLength: 1, maxLength: 3 })
              .map((flips) => {
                const b = Buffer.from(seed);
                for (const f of flips) b[f.at] = b[f.at]! ^ f.xor;
                return new Uint8Array(b);
              }),
          ),
          async (ext) => {
            const blob = await chainWithKnox(ext);
            try {
              const r = appraiseAt(blob, NONCE, c.trust, AT);
              assert.ok(["Success", "CertificateInvalid"].includes(r.record.status), r.reason);
            } catch (e) {
              assert.fail(`threw ${isAppError(e) ? e.reason : String(e)}`);
            }
          },
        ),
        { numRuns: 300, seed: 23 },
      );
    });
  });
});
