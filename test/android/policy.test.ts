import { test, describe } from "node:test";
import assert from "node:assert/strict";
import * as asn1js from "asn1js";
import { SecurityLevel, VerifiedBootState } from "@peculiar/asn1-android";
import { findAllowedBootKey, parseAllowedBootKeys } from "../../src/attestation/policy/bootKeys.ts";
import { evaluateAndroidPolicy, patchLevelAsDate } from "../../src/attestation/policy/androidPolicy.ts";
import { parseKeyDescription } from "../../src/attestation/encoding/keyDescription.ts";
import { androidTrust, appraiseAt, keyDescriptionDer, pemBlob } from "./fixtures.ts";

const KEY = "9e6a8f3e0d761a780179f93acd5721ba1ab7c8c537c7761073c0a754b0e932de";

describe("boot-key allow-list", () => {
  test("parses the documented shape, normalising the key to lowercase", () => {
    const list = parseAllowedBootKeys(JSON.stringify([
      { key: KEY.toUpperCase(), label: "GrapheneOS Pixel 9", models: ["Pixel 9"] },
      { key: "ab".repeat(32), label: "CalyxOS" },
    ]));
    assert.deepEqual(list, [
      { key: KEY, label: "GrapheneOS Pixel 9", models: ["Pixel 9"] },
      { key: "ab".repeat(32), label: "CalyxOS" },
    ]);
  });

  for (const [what, doc] of [
    ["not JSON", "[{"],
    ["not an array", `{"key": "${KEY}"}`],
    ["an unknown field", JSON.stringify([{ key: KEY, label: "x", model: "typo" }])],
    ["a key that is not hex", JSON.stringify([{ key: "zz".repeat(32), label: "x" }])],
    ["an odd-length key", JSON.stringify([{ key: KEY.slice(1), label: "x" }])],
    ["a repeated key", JSON.stringify([{ key: KEY, label: "a" }, { key: KEY.toUpperCase(), label: "b" }])],
    ["an empty label", JSON.stringify([{ key: KEY, label: " " }])],
    ["empty models", JSON.stringify([{ key: KEY, label: "x", models: [] }])],
  ] as const) {
    test(`rejects ${what} with a message naming the file`, () => {
      assert.throws(() => parseAllowedBootKeys(doc, "boot-keys.json"), /^Error: boot-keys\.json/);
    });
  }

  test("a models restriction needs the attested model", () => {
    const list = parseAllowedBootKeys(JSON.stringify([{ key: KEY, label: "x", models: ["Pixel 9"] }]));
    assert.ok(findAllowedBootKey(list, KEY, "Pixel 9"));
    assert.equal(findAllowedBootKey(list, KEY, "Pixel 8"), undefined);
    assert.equal(findAllowedBootKey(list, KEY, undefined), undefined);
  });
});

describe("policy", () => {
  const decide = (kd: Parameters<typeof keyDescriptionDer>[0], policy = {}, allowedBootKeys = [] as { key: string; label: string }[]) =>
    evaluateAndroidPolicy({ keyDescription: parseKeyDescription(keyDescriptionDer(kd)), allowedBootKeys, policy });

  test("Verified + locked TEE or StrongBox: Yes", () => {
    assert.equal(decide({}).verdict, "Yes");
    assert.equal(decide({ securityLevel: SecurityLevel.strongBox }).verdict, "Yes");
  });

  test("each failing rule is named", () => {
    assert.match(decide({ securityLevel: SecurityLevel.software }).failures.join(), /Software/);
    assert.match(decide({ locked: false }).failures.join(), /unlocked/);
    assert.match(decide({ bootState: VerifiedBootState.failed }).failures.join(), /Failed/);
    assert.match(decide({ bootState: VerifiedBootState.unverified }).failures.join(), /Unverified/);
    assert.match(decide({ bootState: VerifiedBootState.selfSigned }).failures.join(), /not on the allow-list/);
    const two = decide({ locked: false, bootState: VerifiedBootState.unverified });
    assert.equal(two.failures.length, 2);
  });

  test("attestation and KeyMint security levels must agree", () => {
    const tree = asn1js.fromBER(keyDescriptionDer()).result as asn1js.Sequence;
    tree.valueBlock.value[3] = new asn1js.Enumerated({ value: 2 });
    const kd = parseKeyDescription(new Uint8Array(tree.toBER()));
    const d = evaluateAndroidPolicy({ keyDescription: kd, allowedBootKeys: [], policy: {} });
    assert.equal(d.verdict, "No");
    assert.match(d.failures[0]!, /differs/);
  });

  test("SelfSigned with an allow-listed key: Yes, naming the entry", () => {
    const key = Buffer.alloc(32, 0x11).toString("hex");
    const d = decide({ bootState: VerifiedBootState.selfSigned }, {}, [{ key, label: "Test OS" }]);
    assert.equal(d.verdict, "Yes");
    assert.equal(d.bootKey?.label, "Test OS");
  });

  test("minimum OS patch level, YYYYMM or YYYYMMDD", () => {
    assert.equal(decide({ osPatchLevel: 202501 }, { minOsPatchLevel: 202501 }).verdict, "Yes");
    assert.equal(decide({ osPatchLevel: 202412 }, { minOsPatchLevel: 202501 }).verdict, "No");
    assert.equal(decide({ osPatchLevel: 202502 }, { minOsPatchLevel: 20250105 }).verdict, "Yes");
    assert.equal(decide({ osPatchLevel: 202501 }, { minOsPatchLevel: 20250105 }).verdict, "No");
    assert.equal(patchLevelAsDate(202501), 20250100);
    assert.equal(patchLevelAsDate(20250105), 20250105);
    assert.equal(patchLevelAsDate(2025), undefined);
  });

  test("app allow-list: package name, and signing digest when listed", () => {
    const digest = Buffer.alloc(32, 0x5a).toString("hex");
    assert.equal(decide({}, { allowedApps: [{ packageName: "com.example.wallet" }] }).verdict, "Yes");
    assert.equal(decide({}, { allowedApps: [{ packageName: "com.example.wallet", signatureDigests: [digest.toUpperCase()] }] }).verdict, "Yes");
    assert.equal(decide({}, { allowedApps: [{ packageName: "com.example.wallet", signatureDigests: ["00".repeat(32)] }] }).verdict, "No");
    assert.match(decide({}, { allowedApps: [{ packageName: "com.other" }] }).failures.join(), /not on the app allow-list/);
  });

  test("on a real device: caiman with its app and a patch level it meets, then one it does not", () => {
    const blob = pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
    const at = "2025-10-01T00:00:00Z";
    const nonce = "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4";
    const app = { packageName: "com.google.android.attestation", signatureDigests: ["103938ee4537e59e8ee792f654504fb8346fc6b346d0bbc4415fc339fcfc8ec1"] };
    assert.equal(appraiseAt(blob, nonce, androidTrust({ policy: { minOsPatchLevel: 202511, allowedApps: [app] } }), at).record.verdict, "Yes");
    const r = appraiseAt(blob, nonce, androidTrust({ policy: { minOsPatchLevel: 202512 } }), at);
    assert.equal(r.record.status, "Success");
    assert.equal(r.record.verdict, "No");
    assert.match(r.reason, /older than the minimum 202512/);
  });
});
