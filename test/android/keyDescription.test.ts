import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import * as asn1js from "asn1js";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import { AttestationApplicationId, AttestationPackageInfo, AuthorizationList, IntegerSet, RootOfTrust, SecurityLevel, VerifiedBootState } from "@peculiar/asn1-android";
import { ExtensionError } from "../../src/attestation/encoding/derChain.ts";
import {
  AUTHORIZATION_TAGS,
  KEY_DESCRIPTION_OID,
  keyDescriptionToJson,
  parseKeyDescription,
  type AuthorizationListInfo,
  type KeyDescriptionInfo,
} from "../../src/attestation/encoding/keyDescription.ts";
import { findExtension, readCertificate, splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { keyDescriptionDer, pemBlob, vec } from "./fixtures.ts";

function leafKeyDescription(blob: Buffer): Uint8Array {
  const leaf = readCertificate(splitDerCertificates(blob)![0]!);
  return findExtension(leaf, KEY_DESCRIPTION_OID)!.value;
}

const LEVELS: Record<string, string> = { SOFTWARE: "Software", TRUSTED_ENVIRONMENT: "TrustedEnvironment", STRONG_BOX: "StrongBox" };
const BOOT: Record<string, string> = { VERIFIED: "Verified", SELF_SIGNED: "SelfSigned", UNVERIFIED: "Unverified", FAILED: "Failed" };
const ORIGINS: Record<string, number> = { GENERATED: 0, DERIVED: 1, IMPORTED: 2, UNKNOWN: 3, SECURELY_IMPORTED: 4 };
const b64hex = (s: string) => Buffer.from(s, "base64").toString("hex");

/** Google's expected JSON (android/keyattestation testdata) against our parse, field by field. */
function compareList(ours: AuthorizationListInfo, theirs: Record<string, any>, where: string): void {
  const num = (v: unknown) => (v === undefined ? undefined : String(v));
  const list = (v: unknown[] | undefined) => v?.map(String);
  for (const [key, value] of Object.entries(theirs)) {
    const at = `${where}.${key}`;
    switch (key) {
      case "areTagsOrdered": break;
      case "mlDsaVariant": // KeyMint 500 tag the library does not know: kept as an unknown tag
        assert.ok(ours.unknownTags.some((t) => t.tag === 11), at);
        break;
      case "purposes": assert.deepEqual(list(ours.purpose), value, at); break;
      case "digests": assert.deepEqual(list(ours.digest), value, at); break;
      case "paddings": assert.deepEqual(list(ours.padding), value, at); break;
      case "algorithms": assert.equal(num(ours.algorithm), value, at); break;
      case "origin": assert.equal(ours.origin, ORIGINS[value], at); break;
      case "rootOfTrust": {
        const r = ours.rootOfTrust!;
        assert.equal(r.verifiedBootKey.toString("hex"), b64hex(value.verifiedBootKey), at);
        assert.equal(r.deviceLocked, value.deviceLocked, at);
        assert.equal(r.verifiedBootState, BOOT[value.verifiedBootState], at);
        assert.equal(r.verifiedBootHash?.toString("hex"), value.verifiedBootHash && b64hex(value.verifiedBootHash), at);
        break;
      }
      case "attestationApplicationId": {
        const app = ours.attestationApplicationId!;
        assert.deepEqual(app.packages.map((p) => ({ name: p.name, version: String(p.version) })), value.packages, at);
        assert.deepEqual(app.signatureDigests, value.signatures.map(b64hex), at);
        break;
      }
      case "moduleHash": assert.equal(ours.moduleHash?.toString("hex"), b64hex(value), at); break;
      default: {
        const v = (ours as unknown as Record<string, unknown>)[key];
        if (value === true) assert.equal(v, true, at);
        else assert.equal(typeof v === "number" ? String(v) : v, value, at);
      }
    }
  }
}

describe("KeyDescription: real devices against Google's expected parse", () => {
  const root = vec("android_keyattestation/testdata");
  const pairs: string[] = [];
  for (const device of readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== "invalid")) {
    for (const sdk of readdirSync(`${root}/${device.name}`)) {
      for (const f of readdirSync(`${root}/${device.name}/${sdk}`).filter((f) => f.endsWith(".pem"))) {
        pairs.push(`${device.name}/${sdk}/${f.slice(0, -4)}`);
      }
    }
  }

  for (const name of pairs) {
    test(name, () => {
      // one upstream file opens with a `// ...` comment line; comments are not JSON, so they are dropped
      const text = readFileSync(`${root}/${name}.json`, "utf8").replace(/^\s*\/\/.*$/gm, "");
      const expected: Record<string, any> = JSON.parse(text);
      const kd = parseKeyDescription(leafKeyDescription(pemBlob(`android_keyattestation/testdata/${name}.pem`)));
      assert.equal(String(kd.attestationVersion), expected.attestationVersion);
      assert.equal(String(kd.keyMintVersion), expected.keyMintVersion);
      assert.equal(kd.attestationSecurityLevel, LEVELS[expected.attestationSecurityLevel]);
      assert.equal(kd.keyMintSecurityLevel, LEVELS[expected.keyMintSecurityLevel]);
      assert.equal(kd.attestationChallenge.toString("hex"), b64hex(expected.attestationChallenge));
      assert.equal(kd.uniqueId.toString("hex"), b64hex(expected.uniqueId));
      compareList(kd.softwareEnforced, expected.softwareEnforced, "softwareEnforced");
      compareList(kd.hardwareEnforced, expected.hardwareEnforced, "hardwareEnforced");
      JSON.stringify(keyDescriptionToJson(kd));
    });
  }

  test("allow_while_on_body.pem (single certificate, attestation version 3)", () => {
    const kd = parseKeyDescription(leafKeyDescription(pemBlob("android_keyattestation/testdata/allow_while_on_body.pem")));
    assert.equal(kd.attestationVersion, 3);
    assert.equal(kd.hardwareEnforced.allowWhileOnBody ?? kd.softwareEnforced.allowWhileOnBody, true);
  });
});

describe("KeyDescription: every schema version", () => {
  // Keymaster 2 (1), 3 (2), 4 (3), 4.1 (4), KeyMint 1 (100), 2 (200), 3 (300), 4 (400)
  for (const version of [1, 2, 3, 4, 100, 200, 300, 400]) {
    test(`attestation version ${version}`, () => {
      const kd = parseKeyDescription(keyDescriptionDer({ version, securityLevel: SecurityLevel.strongBox, osPatchLevel: 202412 }));
      assert.equal(kd.attestationVersion, version);
      assert.equal(kd.keyMintVersion, version);
      assert.equal(kd.attestationSecurityLevel, "StrongBox");
      assert.equal(kd.hardwareEnforced.osPatchLevel, 202412);
      assert.equal(kd.hardwareEnforced.rootOfTrust?.verifiedBootState, "Verified");
      assert.equal(kd.hardwareEnforced.rootOfTrust?.verifiedBootHash === undefined, version < 3);
      assert.equal(keyDescriptionToJson(kd).schema, version >= 100 ? "KeyMint" : "Keymaster");
    });
  }

  test("the tag table matches the library: a list with every known tag round-trips", () => {
    const all = new AuthorizationList({
      purpose: new IntegerSet([1, 7]), algorithm: 3, keySize: 256, digest: new IntegerSet([4]), padding: new IntegerSet([1]),
      ecCurve: 1, rsaPublicExponent: 65537, mgfDigest: new IntegerSet([4]), rollbackResistance: null, earlyBootOnly: null,
      activeDateTime: 1, originationExpireDateTime: 2, usageExpireDateTime: 3, usageCountLimit: 4, noAuthRequired: null,
      userAuthType: 2, authTimeout: 30, allowWhileOnBody: null, trustedUserPresenceRequired: null,
      trustedConfirmationRequired: null, unlockedDeviceRequired: null, allApplications: null,
      applicationId: new OctetString(Buffer.from("app")), creationDateTime: 1700000000000, origin: 0, rollbackResistant: null,
      rootOfTrust: new RootOfTrust({ verifiedBootKey: new OctetString(Buffer.alloc(32)), deviceLocked: true, verifiedBootState: VerifiedBootState.verified, verifiedBootHash: new OctetString(Buffer.alloc(32)) }),
      osVersion: 150000, osPatchLevel: 202501,
      attestationApplicationId: new OctetString(AsnConvert.serialize(new AttestationApplicationId({
        packageInfos: [new AttestationPackageInfo({ packageName: new OctetString(Buffer.from("a.b")), version: 1 })],
        signatureDigests: [new OctetString(Buffer.alloc(32, 1))],
      }))),
      attestationIdBrand: new OctetString(Buffer.from("b")),
      attestationIdDevice: new OctetString(Buffer.from("d")), attestationIdProduct: new OctetString(Buffer.from("p")),
      attestationIdSerial: new OctetString(Buffer.from("s")), attestationIdImei: new OctetString(Buffer.from("490154203237518")),
      attestationIdMeid: new OctetString(Buffer.from("m")), attestationIdManufacturer: new OctetString(Buffer.from("mf")),
      attestationIdModel: new OctetString(Buffer.from("mo")), vendorPatchLevel: 20250105, bootPatchLevel: 20250105,
      deviceUniqueAttestation: null, attestationIdSecondImei: new OctetString(Buffer.from("490154203237526")),
      moduleHash: new OctetString(Buffer.alloc(32, 9)),
    });
    const der = AsnConvert.serialize(all);
    const tags = (asn1js.fromBER(der).result as asn1js.Sequence).valueBlock.value.map((b) => b.idBlock.tagNumber);
    assert.deepEqual(tags, [...AUTHORIZATION_TAGS.keys()]);
    const info: Record<string, unknown> = {};
    const kd = parseKeyDescription(keyDescriptionDer()); // shape only; now the full list
    const tree = asn1js.fromBER(keyDescriptionDer()).result as asn1js.Sequence;
    tree.valueBlock.value[7] = asn1js.fromBER(der).result;
    const full = parseKeyDescription(new Uint8Array(tree.toBER()));
    for (const [, [name]] of AUTHORIZATION_TAGS) info[name] = (full.hardwareEnforced as unknown as Record<string, unknown>)[name];
    assert.ok(Object.values(info).every((v) => v !== undefined));
    assert.equal(full.hardwareEnforced.attestationIdImei, "490154203237518");
    assert.equal(full.hardwareEnforced.vendorPatchLevel, 20250105);
    assert.ok(kd);
  });
});

describe("KeyDescription: failures", () => {
  const kind = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof ExtensionError, String(e));
      return e.kind;
    }
    return "parsed";
  };

  test("truncated or trailing bytes → der", () => {
    const der = keyDescriptionDer();
    assert.equal(kind(() => parseKeyDescription(der.subarray(0, der.length - 1))), "der");
    assert.equal(kind(() => parseKeyDescription(Buffer.concat([der, Buffer.from([0])]))), "der");
    assert.equal(kind(() => parseKeyDescription(Buffer.from([0x30, 0x80, 0, 0]))), "semantic"); // BER indefinite form
  });

  test("invalid/ vectors → semantic (non-DER BOOLEAN; tags out of order)", () => {
    for (const f of ["malformed_rot_device_locked", "tags_not_in_ascending_order"]) {
      const ext = leafKeyDescription(pemBlob(`android_keyattestation/testdata/invalid/${f}.pem`));
      assert.equal(kind(() => parseKeyDescription(ext)), "semantic", f);
    }
  });

  test("a repeated tag → semantic; an unknown tag is skipped and reported", () => {
    const tree = asn1js.fromBER(keyDescriptionDer()).result as asn1js.Sequence;
    const hw = tree.valueBlock.value[7] as asn1js.Sequence;
    const first = hw.valueBlock.value[0]!;
    hw.valueBlock.value.unshift(first);
    assert.equal(kind(() => parseKeyDescription(new Uint8Array(tree.toBER()))), "semantic");
    hw.valueBlock.value.shift();
    hw.valueBlock.value.splice(3, 0, new asn1js.Constructed({ // after purpose [1], algorithm [2], keySize [3]
      idBlock: { tagClass: 3, tagNumber: 4 }, // blockMode, unknown to the library
      value: [new asn1js.Set({ value: [new asn1js.Integer({ value: 1 })] })],
    }));
    const kd: KeyDescriptionInfo = parseKeyDescription(new Uint8Array(tree.toBER()));
    assert.deepEqual(kd.hardwareEnforced.unknownTags.map((u) => u.tag), [4]);
    assert.equal(kd.hardwareEnforced.keySize, 256);
  });

  test("the wrong number of elements → semantic", () => {
    const tree = asn1js.fromBER(keyDescriptionDer()).result as asn1js.Sequence;
    tree.valueBlock.value.pop();
    assert.equal(kind(() => parseKeyDescription(new Uint8Array(tree.toBER()))), "semantic");
  });
});
