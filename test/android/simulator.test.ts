import assert from "node:assert/strict";
import { X509Certificate, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { appraise } from "../../src/attestation/appraise.ts";
import { parseStatusList } from "../../src/attestation/chain/statusList.ts";
import { readCertificate, type CertificateFacts } from "../../src/attestation/encoding/derChain.ts";
import { parseAllowedBootKeys } from "../../src/attestation/policy/bootKeys.ts";
import {
  ANDROID_DEV_CA_FILES as F,
  DEMO_CUSTOM_OS_BOOT_KEY,
  createAndroidDevCa,
  readAndroidDevCa,
  writeAndroidDevCa,
  type AndroidDevCa,
} from "../../src/attestation/sim/androidCa.ts";
import {
  DEMO_OEM_BOOT_KEY,
  attestAndroidKey,
  buildAndroidChain,
  createAndroidDevice,
  encodeAndroidChain,
  type BuildAndroidChainOptions,
} from "../../src/attestation/sim/androidDeviceSim.ts";
import { KNOX_OID, PROVISIONING_INFO_OID } from "../../src/attestation/sim/androidExtensions.ts";
import type { ChainEncoding } from "../../src/attestation/encoding/chainInput.ts";
import type { AndroidPolicy, AndroidTrust, AppraisalResult } from "../../src/attestation/types.ts";
import { parseAndroidRoots } from "../../src/trust/androidTrustSource.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { demoAndroidTrust, trustConfig } from "./fixtures.ts";

/**
 * The Android device simulator (src/attestation/sim/androidDeviceSim.ts, `attestd device-sim --format
 * android-key`) against the appraisal: every flag gives the verdict the appraisal should give, with trust built
 * exactly as an operator would from the files `attestd dev-ca --android` writes.
 */

const SERIAL_NUMBER = "2.5.4.5";
const TITLE = "2.5.4.12";
const newNonce = () => randomBytes(32).toString("base64url");

let dir: string;
let ca: AndroidDevCa;
let trust: AndroidTrust;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "attestd-android-ca-"));
  await writeAndroidDevCa(await createAndroidDevCa(), dir);
  ca = await readAndroidDevCa(dir);
  trust = demoAndroidTrust(dir);
});

after(() => rmSync(dir, { recursive: true, force: true }));

interface Appraised {
  result: AppraisalResult;
  certs: Uint8Array[];
  facts: CertificateFacts[];
}

/** A new simulated phone's chain for a fresh nonce, appraised now. */
async function simulate(
  opts: Partial<BuildAndroidChainOptions> = {},
  o: { policy?: AndroidPolicy; allowBootKeys?: boolean; encoding?: ChainEncoding } = {},
): Promise<Appraised> {
  const nonce = newNonce();
  const certs = await buildAndroidChain({ ca, nonce, ...opts });
  const android: AndroidTrust = {
    ...trust,
    policy: o.policy ?? {},
    allowedBootKeys: o.allowBootKeys
      ? parseAllowedBootKeys(readFileSync(path.join(dir, F.allowedBootKeys), "utf8"), F.allowedBootKeys)
      : [],
  };
  const blob = encodeAndroidChain(certs, o.encoding ?? "der");
  const result = appraise({ blob, nonce, trust: trustConfig(android), now: new Date() });
  return { result, certs, facts: certs.map((c) => readCertificate(c)) };
}

function expect(r: AppraisalResult, status: string, verdict: string, tamperBit?: string): void {
  assert.equal(r.record.status, status, r.reason);
  assert.equal(r.record.verdict, verdict, r.reason);
  if (tamperBit !== undefined) assert.equal(r.record.tamperBit, tamperBit, r.reason);
}

const roles = (r: AppraisalResult) => (r.detail.chain as { role: string }[]).map((c) => c.role);
const attribute = (f: CertificateFacts, type: string) => f.subjectAttributes.find((a) => a.type === type)?.value;
const hasExtension = (f: CertificateFacts, oid: string) => f.extensions.some((e) => e.oid === oid);
const keyDescription = (r: AppraisalResult) => r.detail.keyDescription as Record<string, any>;

describe("android device simulator: what dev-ca --android writes", () => {
  it("keys are 0600, the status list revokes the revoked intermediate, the allow-list holds the custom OS key", () => {
    for (const key of [F.rootKey, F.rkpIntermediateKey, F.factoryTeeKey, F.factoryStrongBoxKey, F.revokedIntermediateKey]) {
      assert.equal(statSync(path.join(dir, key)).mode & 0o777, 0o600, key);
    }
    assert.deepEqual([...trust.status.keys()], [ca.revokedIntermediate.serial]);
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, F.status), "utf8")), {
      entries: { [ca.revokedIntermediate.serial]: { status: "REVOKED", reason: "KEY_COMPROMISE" } },
    });
    const allowed = parseAllowedBootKeys(readFileSync(path.join(dir, F.allowedBootKeys), "utf8"));
    assert.deepEqual(allowed.map((e) => e.key), [DEMO_CUSTOM_OS_BOOT_KEY.toString("hex")]);
  });

  it("names its CAs as Google does: a self-signed root, Droid CA2, factory intermediates by serialNumber and title", () => {
    const root = new X509Certificate(ca.root.certDer);
    assert.ok(root.ca && root.checkIssued(root));
    assert.equal(root.subject, "CN=attestd Demo Android Attestation Root\nO=attestd Demo");
    assert.equal(new X509Certificate(ca.rkpIntermediate.certDer).subject, "CN=Droid CA2\nO=attestd Demo");
    for (const title of ["TEE", "StrongBox"] as const) {
      const f = readCertificate(ca.factory[title].certDer);
      assert.match(attribute(f, SERIAL_NUMBER) ?? "", /^[0-9a-f]{16}$/);
      assert.equal(attribute(f, TITLE), title);
      assert.ok(new X509Certificate(ca.factory[title].certDer).checkIssued(root));
    }
    assert.ok(new X509Certificate(ca.revokedIntermediate.certDer).ca);
  });

  it("refuses to replace an existing CA, and leaves it as it was", async () => {
    const before = readFileSync(path.join(dir, F.root));
    await assert.rejects(writeAndroidDevCa(await createAndroidDevCa(), dir), /root\.pem exists; refusing to replace a CA/);
    assert.deepEqual(readFileSync(path.join(dir, F.root)), before);
  });

  it("a vendor dev CA is not an Android one: the reader says which command makes one", async () => {
    const other = mkdtempSync(path.join(tmpdir(), "attestd-not-android-"));
    try {
      await assert.rejects(readAndroidDevCa(other), /not a directory written by `attestd dev-ca --android`/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

describe("android device simulator → appraisal, flag by flag", () => {
  it("default (TEE, RKP): Success, Yes, tamperBit 0; the chain is RKP-shaped", async () => {
    const { result, facts } = await simulate();
    expect(result, "Success", "Yes", "0");
    assert.deepEqual(roles(result), ["leaf", "intermediate", "intermediate", "root"]);
    assert.equal(result.detail.provisioning, "rkp");
    const [leaf, deviceCa, droidCa2] = facts;
    assert.equal(leaf!.subject, "CN=Android Keystore Key");
    assert.equal(leaf!.notBefore.toISOString(), "1970-01-01T00:00:00.000Z");
    assert.equal(leaf!.notAfter.toISOString(), "2048-01-01T00:00:00.000Z");
    assert.equal(leaf!.serialHex, "01");
    assert.equal(attribute(deviceCa!, "2.5.4.10"), "TEE");
    assert.match(attribute(deviceCa!, "2.5.4.3") ?? "", /^[0-9a-f]{32}$/);
    assert.equal(deviceCa!.ca, true);
    assert.ok(hasExtension(deviceCa!, PROVISIONING_INFO_OID), "the device CA carries ProvisioningInfo");
    assert.ok(deviceCa!.notAfter.getTime() - deviceCa!.notBefore.getTime() < 40 * 86_400_000, "RKP CAs live for weeks");
    assert.equal(attribute(droidCa2!, "2.5.4.3"), "Droid CA2");
    assert.ok(result.record.measurements.startsWith(DEMO_OEM_BOOT_KEY.toString("hex")));
    assert.equal(keyDescription(result).attestationSecurityLevel, "TrustedEnvironment");
  });

  it("--security-level strongbox: Yes, under a StrongBox device CA", async () => {
    const { result, facts } = await simulate({ securityLevel: "strongbox" });
    expect(result, "Success", "Yes", "0");
    assert.equal(keyDescription(result).attestationSecurityLevel, "StrongBox");
    assert.equal(attribute(facts[1]!, "2.5.4.10"), "StrongBox");
  });

  it("--security-level software: Success, No", async () => {
    const { result } = await simulate({ securityLevel: "software" });
    expect(result, "Success", "No");
    assert.match(result.reason, /security level Software/);
  });

  it("--unlocked: Success, No, tamperBit 1", async () => {
    const { result } = await simulate({ unlocked: true });
    expect(result, "Success", "No", "1");
    assert.match(result.reason, /unlocked/);
  });

  for (const bootState of ["unverified", "failed"] as const) {
    it(`--boot-state ${bootState}: Success, No`, async () => {
      const { result } = await simulate({ bootState });
      expect(result, "Success", "No");
      assert.match(result.reason, /verifiedBootState (Unverified|Failed)/);
    });
  }

  it("--boot-state self-signed: No without the allow-list, Yes with dev-ca's allowed-boot-keys.json", async () => {
    const without = await simulate({ bootState: "self-signed" });
    expect(without.result, "Success", "No");
    assert.match(without.result.reason, /SelfSigned boot with key [0-9a-f]{64}, not on the allow-list/);
    const withList = await simulate({ bootState: "self-signed" }, { allowBootKeys: true });
    expect(withList.result, "Success", "Yes", "0");
    assert.match(withList.result.reason, /SelfSigned boot key allowed \(attestd Demo custom OS\)/);
    assert.ok(withList.result.record.measurements.startsWith(DEMO_CUSTOM_OS_BOOT_KEY.toString("hex")));
  });

  for (const securityLevel of ["tee", "strongbox"] as const) {
    it(`--provisioning factory (${securityLevel}): Yes; factory-shaped, no ProvisioningInfo anywhere`, async () => {
      const { result, facts } = await simulate({ provisioning: "factory", securityLevel });
      expect(result, "Success", "Yes", "0");
      assert.equal(result.detail.provisioning, "factory");
      assert.ok(facts.every((f) => !hasExtension(f, PROVISIONING_INFO_OID)));
      const title = securityLevel === "tee" ? "TEE" : "StrongBox";
      // leaf ← per-device factory intermediate ← factory intermediate ← root
      for (const f of [facts[1]!, facts[2]!]) {
        assert.match(attribute(f, SERIAL_NUMBER) ?? "", /^[0-9a-f]{16}$/);
        assert.equal(attribute(f, TITLE), title);
      }
      assert.equal(facts[3]!.sha256, readCertificate(ca.root.certDer).sha256);
    });
  }

  for (const provisioning of ["rkp", "factory"] as const) {
    it(`--attest-key (${provisioning}): Yes, the attest key at position 1 signs the leaf`, async () => {
      const { result } = await simulate({ attestKey: true, provisioning });
      expect(result, "Success", "Yes", "0");
      assert.deepEqual(roles(result).slice(0, 2), ["leaf", "attestKey"]);
      assert.deepEqual((result.detail.attestKeyDescription as Record<string, any>).hardwareEnforced.purpose, [7]);
    });
  }

  it("--knox: Yes, the Knox extension is read; --knox-warranty: No, tamperBit 1", async () => {
    const knox = await simulate({ knox: true });
    expect(knox.result, "Success", "Yes", "0");
    assert.ok(hasExtension(knox.facts[0]!, KNOX_OID));
    assert.ok(knox.result.detail.knox, "Knox parsed into the detail");
    const warranty = await simulate({ knoxWarranty: true });
    expect(warranty.result, "Success", "No", "1");
    assert.match(warranty.result.reason, /warranty/);
  });

  for (const provisioning of ["rkp", "factory"] as const) {
    it(`--revoked-intermediate (${provisioning}): Revoked`, async () => {
      const { result } = await simulate({ revokedIntermediate: true, provisioning });
      expect(result, "Revoked", "No");
      assert.match(result.reason, new RegExp(`serial ${ca.revokedIntermediate.serial}\\) is REVOKED \\(KEY_COMPROMISE\\)`));
    });
  }

  it("--chain-extension: CertificateInvalid (a certificate signed by an unlocked device's key claims a locked one)", async () => {
    const { result, facts } = await simulate({ chainExtension: true });
    expect(result, "CertificateInvalid", "No");
    assert.match(result.reason, /chain extension/);
    assert.equal(facts.length, 5);
    // the forgery would say Yes if its issuer were believed
    assert.equal(keyDescription(result).hardwareEnforced.rootOfTrust.deviceLocked, true);
    assert.equal((result.detail.attestKeyDescription as Record<string, any>).hardwareEnforced.rootOfTrust.deviceLocked, false);
  });

  it("--patch-level 201801 under minOsPatchLevel 202401: No; the default (this month) passes it", async () => {
    const policy = { minOsPatchLevel: 202401 };
    const old = await simulate({ patchLevel: 201801 }, { policy });
    expect(old.result, "Success", "No");
    assert.match(old.result.reason, /osPatchLevel 201801 is older than the minimum 202401/);
    expect((await simulate({}, { policy })).result, "Success", "Yes");
  });

  it("--package com.other.app under allowedApps [com.example.wallet]: No; the default package passes", async () => {
    const policy = { allowedApps: [{ packageName: "com.example.wallet" }] };
    const other = await simulate({ packageName: "com.other.app" }, { policy });
    expect(other.result, "Success", "No");
    assert.match(other.result.reason, /app com\.other\.app .* is not on the app allow-list/);
    expect((await simulate({}, { policy })).result, "Success", "Yes");
  });

  it("--model: attested as attestationIdModel", async () => {
    const { result } = await simulate({ model: "Demo Phone 1" });
    expect(result, "Success", "Yes");
    assert.equal(keyDescription(result).hardwareEnforced.attestationIdModel, "Demo Phone 1");
  });

  it("--wrong-nonce: NonceMismatch; --ascii-nonce (the nonce string as the challenge): Yes", async () => {
    expect((await simulate({ wrongNonce: true })).result, "NonceMismatch", "No");
    expect((await simulate({ asciiNonce: true })).result, "Success", "Yes");
  });

  it("--omit-root: Yes, anchored by the operator's copy of the root", async () => {
    const { result, facts } = await simulate({ omitRoot: true });
    expect(result, "Success", "Yes", "0");
    assert.equal(facts.length, 3);
    assert.equal((result.detail.anchor as { carried: boolean }).carried, false);
  });

  for (const keyType of ["ec", "rsa"] as const) {
    it(`--key-type ${keyType}: Yes, the leaf holds that key`, async () => {
      const { result, certs } = await simulate({ keyType });
      expect(result, "Success", "Yes", "0");
      assert.equal(new X509Certificate(certs[0]!).publicKey.asymmetricKeyType, keyType);
      assert.equal(keyDescription(result).hardwareEnforced.algorithm, keyType === "ec" ? 3 : 1);
    });
  }

  // PEM and x5c bodies are android-key blobs too (an app may send either).
  for (const encoding of ["pem", "x5c"] as const) {
    it(`--encoding ${encoding}: Yes`, async () => {
      const { result } = await simulate({}, { encoding });
      expect(result, "Success", "Yes", "0");
    });
  }

  it("one device, a new key per nonce (as the benchmark uses it): the same device CA, each chain Yes", async () => {
    const device = await createAndroidDevice(ca);
    const android = trustConfig(trust);
    const chains = [];
    for (let i = 0; i < 3; i++) {
      const nonce = newNonce();
      const certs = await attestAndroidKey(device, { nonce });
      expect(appraise({ blob: encodeAndroidChain(certs), nonce, trust: android, now: new Date() }), "Success", "Yes");
      chains.push(certs);
    }
    assert.ok(chains.every((c) => Buffer.from(c[1]!).equals(device.deviceCa.certDer)));
    assert.notDeepEqual(chains[0]![0], chains[1]![0]);
  });

  it("refuses bad input with one line", async () => {
    await assert.rejects(buildAndroidChain({ ca, nonce: "short" }), /nonce must be 43 base64url characters/);
    await assert.rejects(buildAndroidChain({ ca, nonce: newNonce(), patchLevel: 201813 }), /not YYYYMM/);
    await assert.rejects(buildAndroidChain({ ca, nonce: newNonce(), packageName: "wallet" }), /not an Android package name/);
    await assert.rejects(buildAndroidChain({ ca, nonce: newNonce(), model: "" }), /model must be 1 to 64/);
  });
});

describe("attestd dev-ca --android, device-sim --format android-key", () => {
  let cliDir: string;
  let caDir: string;
  let cliTrust: AndroidTrust;

  before(() => {
    cliDir = mkdtempSync(path.join(tmpdir(), "attestd-android-cli-"));
    caDir = path.join(cliDir, "android-ca");
  });
  after(() => rmSync(cliDir, { recursive: true, force: true }));

  const sim = (args: string[]) => attestdCli(["device-sim", "--ca", caDir, ...args]);
  const appraiseFile = (file: string, nonce: string) =>
    appraise({ blob: readFileSync(file), nonce, trust: trustConfig(cliTrust), now: new Date() });

  it("dev-ca --android writes the PKI, lists it on stdout and names the serve flags on stderr", () => {
    const r = attestdCli(["dev-ca", "--android", "--out", caDir]);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n").map((f) => path.basename(f)).sort(), Object.values(F).sort());
    assert.ok(
      r.stderr.includes(`--android-roots ${path.join(caDir, F.root)} --android-status ${path.join(caDir, F.status)}`),
      r.stderr,
    );
    assert.ok(r.stderr.includes(`--allowed-boot-keys ${path.join(caDir, F.allowedBootKeys)}`), r.stderr);
    cliTrust = {
      ...parseAndroidRoots(readFileSync(path.join(caDir, F.root))),
      status: parseStatusList(readFileSync(path.join(caDir, F.status), "utf8")),
      fresh: true,
      allowedBootKeys: [],
      policy: {},
    };
    const again = attestdCli(["dev-ca", "--android", "--out", caDir]);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /^attestd: --out DIR: .*: already holds a demo CA \(root\.pem\); give each CA its own directory, or --force to replace this one\n$/);
  });

  it("device-sim --format android-key writes a DER chain that appraises Yes; --unlocked --encoding pem one that says No", () => {
    const nonce = newNonce();
    const out = path.join(cliDir, "chain.der");
    const r = sim(["--format", "android-key", "--nonce", nonce, "--out", out]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /bytes written to .*chain\.der \(4 certificates, leaf first\)/);
    expect(appraiseFile(out, nonce), "Success", "Yes", "0");

    const nonce2 = newNonce();
    const pem = path.join(cliDir, "unlocked.pem");
    assert.equal(sim(["--format", "android-key", "--nonce", nonce2, "--unlocked", "--encoding", "pem", "--out", pem]).status, 0);
    assert.match(readFileSync(pem, "utf8"), /^-----BEGIN CERTIFICATE-----\n/);
    expect(appraiseFile(pem, nonce2), "Success", "No", "1");
  });

  it("a flag of the other format: exit 1 with one line", () => {
    const nonce = newNonce();
    const out = path.join(cliDir, "never.bin");
    const vendorFlag = sim(["--format", "android-key", "--nonce", nonce, "--tamper", "--out", out]);
    assert.equal(vendorFlag.status, 1);
    assert.equal(vendorFlag.stderr, "attestd: --tamper applies to --format vendor\n");
    const androidFlag = sim(["--nonce", nonce, "--knox", "--out", out]);
    assert.equal(androidFlag.status, 1);
    assert.equal(androidFlag.stderr, "attestd: --knox applies to --format android-key\n");
    const keyType = sim(["--format", "android-key", "--nonce", nonce, "--key-type", "ed25519", "--out", out]);
    assert.equal(keyType.status, 1);
    assert.equal(keyType.stderr.split("\n").length, 2, keyType.stderr);
  });
});
