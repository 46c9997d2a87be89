import { test, describe, before } from "node:test";
import assert from "node:assert/strict";
import * as asn1js from "asn1js";
import { VerifiedBootState } from "@peculiar/asn1-android";
import {
  appraiseAt,
  issue,
  keyDescriptionDer,
  keyDescriptionExtension,
  nonceFor,
  syntheticChain,
  testRoot,
  trustWithRoots,
  x509,
  type TestCa,
} from "./fixtures.ts";
import { KEY_DESCRIPTION_OID } from "../../src/attestation/encoding/keyDescription.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { androidKeyFormat } from "../../src/attestation/formats/androidKey.ts";

const AT = "2026-01-15T00:00:00Z";
const CHALLENGE = Buffer.alloc(32, 0x42);
const NONCE = nonceFor(CHALLENGE);
const KU = x509.KeyUsageFlags;

describe("synthetic chains: the positive controls", () => {
  test("root → CA → leaf with an honest, Verified KeyDescription: Yes", async () => {
    const c = await syntheticChain([keyDescriptionExtension()]);
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.verdict, "Yes", r.reason);
  });

  test("the root may be left out: the last certificate is issued by a pinned root", async () => {
    const c = await syntheticChain([keyDescriptionExtension()]);
    const r = appraiseAt(Buffer.concat([c.leaf.der, c.intermediate.der]), NONCE, c.trust, AT);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.equal((r.detail.anchor as { carried: boolean }).carried, false);
  });

  test("a factory batch certificate (not a CA, no KeyDescription) at position 1 is allowed", async () => {
    const c = await syntheticChain([]);
    const batch = await issue(c.intermediate, { subject: "CN=batch 0001", serialNumber: "b001", ca: false, keyUsage: KU.digitalSignature });
    const leaf = await issue(batch, { subject: "CN=Android Keystore Key", serialNumber: "01", extensions: [keyDescriptionExtension()] });
    const r = appraiseAt(Buffer.concat([leaf.der, batch.der, c.intermediate.der, c.root.der]), NONCE, c.trust, AT);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.deepEqual((r.detail.chain as { role: string }[]).map((x) => x.role), ["leaf", "batch", "intermediate", "root"]);
  });

  test("an ATTEST_KEY key at position 1 whose root of trust agrees is allowed", async () => {
    const c = await syntheticChain([]);
    const attestKey = await issue(c.intermediate, {
      subject: "CN=Android Keystore Key",
      serialNumber: "01",
      extensions: [keyDescriptionExtension({ purposes: [7] })],
    });
    const leaf = await issue(attestKey, { subject: "CN=Android Keystore Key", serialNumber: "01", extensions: [keyDescriptionExtension()] });
    const r = appraiseAt(Buffer.concat([leaf.der, attestKey.der, c.intermediate.der, c.root.der]), NONCE, c.trust, AT);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.ok(r.detail.attestKeyDescription);
  });
});

describe("chain-extension forgery", () => {
  let c: Awaited<ReturnType<typeof syntheticChain>>;
  before(async () => {
    c = await syntheticChain([]);
  });

  /** An honest device leaf (unlocked), and below it a certificate signed with the leaf's key that claims Verified. */
  async function forge(honest: { purposes: number[]; locked: boolean; bootState: VerifiedBootState }): Promise<Buffer> {
    const honestLeaf = await issue(c.intermediate, {
      subject: "CN=Android Keystore Key",
      serialNumber: "01",
      keyUsage: KU.digitalSignature,
      extensions: [keyDescriptionExtension({ ...honest, challenge: Buffer.alloc(32, 0x99) })],
    });
    const forged = await issue(honestLeaf, {
      subject: "CN=Android Keystore Key",
      serialNumber: "01",
      extensions: [keyDescriptionExtension({ challenge: CHALLENGE, locked: true, bootState: VerifiedBootState.verified })],
    });
    return Buffer.concat([forged.der, honestLeaf.der, c.intermediate.der, c.root.der]);
  }

  test("below an ordinary attestation key (no ATTEST_KEY purpose): CertificateInvalid", async () => {
    const blob = await forge({ purposes: [2], locked: false, bootState: VerifiedBootState.unverified });
    const r = appraiseAt(blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.record.verdict, "No");
    assert.match(r.reason, /not an ATTEST_KEY/);
  });

  test("below an ATTEST_KEY key whose root of trust says unlocked: CertificateInvalid", async () => {
    const blob = await forge({ purposes: [7], locked: false, bootState: VerifiedBootState.unverified });
    const r = appraiseAt(blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /root of trust differs/);
  });

  test("a KeyDescription on any certificate above position 1: CertificateInvalid", async () => {
    const kdCa = await issue(c.root, {
      subject: "CN=CA with a KeyDescription",
      ca: true,
      keyUsage: KU.keyCertSign,
      extensions: [keyDescriptionExtension()],
    });
    const inter = await issue(kdCa, { subject: "CN=inner CA", ca: true, keyUsage: KU.keyCertSign });
    const leaf = await issue(inter, { subject: "CN=Android Keystore Key", extensions: [keyDescriptionExtension()] });
    const r = appraiseAt(Buffer.concat([leaf.der, inter.der, kdCa.der, c.root.der]), NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /certificate 2 carries a KeyDescription/);
  });
});

describe("issuer rules", () => {
  let root: TestCa;
  before(async () => {
    root = await testRoot();
  });
  const leafUnder = (issuer: TestCa) =>
    issue(issuer, { subject: "CN=Android Keystore Key", serialNumber: "01", extensions: [keyDescriptionExtension()] });

  test("a non-CA issuer above position 1: CertificateInvalid", async () => {
    const notCa = await issue(root, { subject: "CN=not a CA", ca: false });
    const batch = await issue(notCa, { subject: "CN=batch", ca: false });
    const leaf = await leafUnder(batch);
    const r = appraiseAt(Buffer.concat([leaf.der, batch.der, notCa.der, root.der]), NONCE, trustWithRoots([root.der]), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /certificate 2 issues certificate 1 but is not a CA/);
  });

  test("a CA without keyCertSign: CertificateInvalid", async () => {
    const ca = await issue(root, { subject: "CN=CA", ca: true, keyUsage: KU.digitalSignature });
    const inter = await issue(ca, { subject: "CN=inner", ca: true, keyUsage: KU.keyCertSign });
    const leaf = await leafUnder(inter);
    const r = appraiseAt(Buffer.concat([leaf.der, inter.der, ca.der]), NONCE, trustWithRoots([root.der]), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /keyCertSign/);
  });

  test("a path length constraint is enforced", async () => {
    const ca = await issue(root, { subject: "CN=CA pathlen 0", ca: true, pathLength: 0, keyUsage: KU.keyCertSign });
    const inter = await issue(ca, { subject: "CN=inner", ca: true, keyUsage: KU.keyCertSign });
    const leaf = await leafUnder(inter);
    const r = appraiseAt(Buffer.concat([leaf.der, inter.der, ca.der]), NONCE, trustWithRoots([root.der]), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /allows 0 CA certificates below it/);
  });

  test("an intermediate outside its validity: CertificateInvalid, even when it was cached valid before", async () => {
    const inter = await issue(root, {
      subject: "CN=short-lived RKP-like CA",
      ca: true,
      keyUsage: KU.keyCertSign,
      notBefore: new Date("2026-01-01T00:00:00Z"),
      notAfter: new Date("2026-02-01T00:00:00Z"),
    });
    const leaf = await leafUnder(inter);
    const blob = Buffer.concat([leaf.der, inter.der, root.der]);
    const trust = trustWithRoots([root.der]);
    assert.equal(appraiseAt(blob, NONCE, trust, AT).record.verdict, "Yes");
    const late = appraiseAt(blob, NONCE, trust, "2026-02-02T00:00:00Z");
    assert.equal(late.record.status, "CertificateInvalid");
    assert.match(late.reason, /not valid at 2026-02-02/);
  });

  test("a cached intermediate does not vouch for a leaf it did not sign", async () => {
    const inter = await issue(root, { subject: "CN=cached CA", ca: true, keyUsage: KU.keyCertSign });
    const trust = trustWithRoots([root.der]);
    const good = await leafUnder(inter);
    assert.equal(appraiseAt(Buffer.concat([good.der, inter.der, root.der]), NONCE, trust, AT).record.verdict, "Yes");
    const impostorCa: TestCa = { ...inter, keys: await (await testRoot()).keys }; // same name, other key
    const forged = await leafUnder(impostorCa);
    const r = appraiseAt(Buffer.concat([forged.der, inter.der, root.der]), NONCE, trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /signature does not verify/);
  });

  test("issuer and subject names must link", async () => {
    const inter = await issue(root, { subject: "CN=named CA", ca: true, keyUsage: KU.keyCertSign });
    const other: TestCa = { ...inter, cert: (await issue(root, { subject: "CN=another name", ca: true, keys: inter.keys })).cert };
    const leaf = await leafUnder(other); // signed by inter's key, but names "CN=another name" as issuer
    const r = appraiseAt(Buffer.concat([leaf.der, inter.der, root.der]), NONCE, trustWithRoots([root.der]), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /names issuer/);
  });

  test("an unknown critical extension: CertificateInvalid", async () => {
    const inter = await issue(root, {
      subject: "CN=CA",
      ca: true,
      keyUsage: KU.keyCertSign,
      extensions: [new x509.Extension("1.2.3.4.5", true, new Uint8Array([0x05, 0x00]))],
    });
    const leaf = await leafUnder(inter);
    const r = appraiseAt(Buffer.concat([leaf.der, inter.der, root.der]), NONCE, trustWithRoots([root.der]), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /unknown critical extension 1\.2\.3\.4\.5/);
  });

  test("a certificate repeating an extension (two KeyDescriptions): CertificateInvalid", async () => {
    const c = await syntheticChain([keyDescriptionExtension({ locked: false }), keyDescriptionExtension()]);
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /carries extension 1\.3\.6\.1\.4\.1\.11129\.2\.1\.17 twice/);
  });

  test("a leaf without a KeyDescription: CertificateInvalid", async () => {
    const c = await syntheticChain([]);
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /no KeyDescription/);
  });
});

describe("malformed extensions", () => {
  const expectMalformed = (blob: Buffer, trust: Parameters<typeof appraiseAt>[2]) =>
    assert.throws(() => appraiseAt(blob, NONCE, trust, AT), (e: unknown) => {
      assert.ok(isAppError(e));
      assert.equal(e.entry.code, "4000006");
      return true;
    });

  test("a KeyDescription whose DER is broken: BLOB_MALFORMED", async () => {
    const broken = keyDescriptionDer().subarray(0, 40);
    const c = await syntheticChain([new x509.Extension(KEY_DESCRIPTION_OID, false, broken)]);
    expectMalformed(c.blob, c.trust);
  });

  test("a KeyDescription that is DER but out of order: CertificateInvalid", async () => {
    const tree = asn1js.fromBER(keyDescriptionDer()).result as asn1js.Sequence;
    const hw = tree.valueBlock.value[7] as asn1js.Sequence;
    hw.valueBlock.value.reverse();
    const c = await syntheticChain([new x509.Extension(KEY_DESCRIPTION_OID, false, tree.toBER())]);
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /ascending order/);
  });

  test("a KeyDescription with a security level out of range: CertificateInvalid", async () => {
    const tree = asn1js.fromBER(keyDescriptionDer()).result as asn1js.Sequence;
    tree.valueBlock.value[1] = new asn1js.Enumerated({ value: 7 });
    const c = await syntheticChain([new x509.Extension(KEY_DESCRIPTION_OID, false, tree.toBER())]);
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /out of range/);
  });

});

describe("record mapping", () => {
  test("IMEI from attestationIdImei, measurements = boot key then boot hash, version decimal", async () => {
    const c = await syntheticChain([keyDescriptionExtension({ imei: "490154203237518", version: 4 })]);
    const r = appraiseAt(c.blob, NONCE, c.trust, AT);
    assert.equal(r.record.verdict, "Yes", r.reason);
    assert.equal(r.record.IMEI, "490154203237518");
    assert.equal(r.record.measurements, "11".repeat(32) + "22".repeat(32));
    assert.equal(r.record.version, "4");
    assert.equal(r.record.chipId, "01");
    assert.deepEqual(Object.keys(r.record), ["measurements", "tamperBit", "IMEI", "status", "nonce", "chipId", "verdict", "MAC", "version", "createdDate", "updateDate"]);
  });

  test("an unauthenticated chain carries no device claims", async () => {
    const c = await syntheticChain([keyDescriptionExtension({ imei: "490154203237518" })]);
    const other = await testRoot("CN=unrelated root");
    const r = appraiseAt(c.blob, NONCE, trustWithRoots([other.der]), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.record.IMEI, "");
    assert.equal(r.record.measurements, "");
    assert.equal(r.record.tamperBit, "");
    assert.equal(r.record.chipId, "01");
  });

  test("matches() is false for a vendor container, a truncated chain and trailing bytes", async () => {
    const c = await syntheticChain([keyDescriptionExtension()]);
    assert.equal(androidKeyFormat.matches(c.blob), true);
    assert.equal(androidKeyFormat.matches(c.blob.subarray(0, c.blob.length - 1)), false);
    assert.equal(androidKeyFormat.matches(Buffer.concat([c.blob, Buffer.from([0])])), false);
    assert.equal(androidKeyFormat.matches(Buffer.from([0, 7, ...Buffer.from("Success"), 2, 0, 0])), false);
    assert.equal(androidKeyFormat.matches(Buffer.alloc(0)), false);
  });
});
