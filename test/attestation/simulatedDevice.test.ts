import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { appraise } from "../../src/attestation/appraise.ts";
import { createAndroidDevCa, readAndroidDevCa, writeAndroidDevCa, type AndroidDevCa } from "../../src/attestation/sim/androidCa.ts";
import { attestAndroidKey, encodeAndroidChain, type AndroidDevice } from "../../src/attestation/sim/androidDeviceSim.ts";
import { createDevCa, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { androidDeviceFromFile, vendorDeviceFromFile, type AndroidDeviceFileOptions } from "../../src/attestation/sim/simulatedDevice.ts";
import type { DeviceFacts, TrustConfig } from "../../src/attestation/types.ts";
import { demoAndroidTrust } from "../android/fixtures.ts";
import { T0 } from "../helpers/clock.ts";
import { attestdCli } from "../helpers/serverProcess.ts";

/**
 * `device-sim --device-key FILE` (src/attestation/sim/simulatedDevice.ts): the file is made on first use and the
 * same device comes back from it, so the facts a relying party pins (deviceFacts.ts) are the same run after run;
 * a factory phone keeps its CA, an RKP phone's CA is renewed near expiry; contradicting flags and foreign files
 * are refused with a line saying why.
 */
const NOW = new Date(T0);
const nonce = () => randomBytes(32).toString("base64url");

let dir: string;
let androidDir: string;
let android: AndroidDevCa;
let vendor: DevCa;
let trust: TrustConfig;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "attestd-simdev-"));
  androidDir = path.join(dir, "android-ca");
  await writeAndroidDevCa(await createAndroidDevCa({ now: NOW }), androidDir);
  android = await readAndroidDevCa(androidDir);
  vendor = await createDevCa({ now: NOW });
  trust = {
    vendor: { rootsDer: [vendor.root.certDer], revocations: new Map(), referenceValues: demoReferenceValues() },
    android: demoAndroidTrust(androidDir),
  };
});
after(() => rmSync(dir, { recursive: true, force: true }));

const phoneOpts = (o: Partial<AndroidDeviceFileOptions> = {}): AndroidDeviceFileOptions => ({
  securityLevel: "tee",
  securityLevelGiven: false,
  provisioning: "factory",
  provisioningGiven: false,
  revokedIntermediate: false,
  now: NOW,
  ...o,
});

function phoneFacts(device: AndroidDevice, now = NOW): Promise<DeviceFacts> {
  const n = nonce();
  return attestAndroidKey(device, { nonce: n, now }).then((certs) => {
    const r = appraise({ blob: encodeAndroidChain(certs), nonce: n, trust, now });
    assert.equal(r.record.verdict, "Yes", r.reason);
    return r.facts!;
  });
}

describe("device-sim --device-key", () => {
  it("android-key, factory: created 0600 on first use; the next run is the same phone (same pinned facts, same batch key)", async () => {
    const file = path.join(dir, "factory.json");
    const first = await androidDeviceFromFile(file, android, phoneOpts());
    assert.equal(first.created, true);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const again = await androidDeviceFromFile(file, android, phoneOpts());
    assert.equal(again.created, false);
    assert.equal(again.renewed, false);
    const [a, b] = [await phoneFacts(first.device), await phoneFacts(again.device)];
    assert.ok(a.identity.batchKey);
    assert.deepEqual(b, a);
    // and another file is another phone
    const other = await androidDeviceFromFile(path.join(dir, "factory-2.json"), android, phoneOpts());
    assert.notEqual((await phoneFacts(other.device)).identity.batchKey, a.identity.batchKey);
  });

  it("android-key, RKP: the attestation CA is kept while valid and renewed within a day of its end, the file rewritten", async () => {
    const file = path.join(dir, "rkp.json");
    const made = await androidDeviceFromFile(file, android, phoneOpts({ provisioning: "rkp" }));
    const kept = await androidDeviceFromFile(file, android, phoneOpts({ now: new Date(T0 + 28 * 86_400_000) }));
    assert.deepEqual(kept.device.deviceCa.certDer, made.device.deviceCa.certDer);
    const late = new Date(T0 + 29.5 * 86_400_000);
    const renewed = await androidDeviceFromFile(file, android, phoneOpts({ now: late }));
    assert.equal(renewed.renewed, true);
    assert.notDeepEqual(renewed.device.deviceCa.certDer, made.device.deviceCa.certDer);
    assert.equal(JSON.parse(readFileSync(file, "utf8")).deviceCa.certPem, renewed.device.deviceCa.certPem);
    assert.equal((await phoneFacts(renewed.device, late)).identity.batchKey, undefined, "RKP keys are not pinned");
  });

  it("an explicit --security-level changes this run's key only; contradicting provisioning, a revoked issuer or the format is refused", async () => {
    const file = path.join(dir, "strict.json");
    await androidDeviceFromFile(file, android, phoneOpts());
    const strongbox = await androidDeviceFromFile(file, android, phoneOpts({ securityLevel: "strongbox", securityLevelGiven: true }));
    assert.equal(strongbox.device.securityLevel, "strongbox");
    assert.equal(JSON.parse(readFileSync(file, "utf8")).securityLevel, "tee", "the file keeps the phone as it was made");
    await assert.rejects(
      androidDeviceFromFile(file, android, phoneOpts({ provisioning: "rkp", provisioningGiven: true })),
      /holds a factory-provisioned phone; --provisioning rkp would be another phone/,
    );
    await assert.rejects(androidDeviceFromFile(file, android, phoneOpts({ revokedIntermediate: true })), /--revoked-intermediate applies when a phone is created/);
    await assert.rejects(vendorDeviceFromFile(file, vendor, { keyType: "ec", keyTypeGiven: false }), /holds an android-key device; --format vendor/);
  });

  it("vendor: the device key is kept; the same device's facts each run; another --key-type or another CA is refused", async () => {
    const file = path.join(dir, "vendor.json");
    const first = await vendorDeviceFromFile(file, vendor, { keyType: "ec", keyTypeGiven: false, now: NOW });
    assert.equal(first.created, true);
    const again = await vendorDeviceFromFile(file, vendor, { keyType: "ec", keyTypeGiven: true });
    assert.equal(again.created, false);
    const facts = (leaf: typeof first.leaf) => {
      const n = nonce();
      const r = appraise({ blob: encodeVendorBlob({ ca: vendor, leaf, nonce: n, now: NOW }), nonce: n, trust, now: NOW });
      assert.equal(r.record.verdict, "Yes", r.reason);
      return r.facts!;
    };
    assert.deepEqual(facts(again.leaf), facts(first.leaf));
    await assert.rejects(vendorDeviceFromFile(file, vendor, { keyType: "rsa", keyTypeGiven: true }), /holds a device with an ec key; --key-type rsa/);
    await assert.rejects(vendorDeviceFromFile(file, await createDevCa({ now: NOW }), { keyType: "ec", keyTypeGiven: false }), /certified by another demo CA/);
    await assert.rejects(androidDeviceFromFile(file, android, phoneOpts()), /holds a vendor device; --format android-key/);
  });

  it("a file that is not a device file is refused, and left as it was", async () => {
    const file = path.join(dir, "notes.json");
    writeFileSync(file, '{"hello": "world"}');
    await assert.rejects(androidDeviceFromFile(file, android, phoneOpts()), /is not a device file written by device-sim --device-key/);
    assert.equal(readFileSync(file, "utf8"), '{"hello": "world"}');
  });

  it("through the CLI, both formats: the second run names the kept device", () => {
    const vendorDir = path.join(dir, "vendor-ca");
    assert.equal(attestdCli(["dev-ca", "--out", vendorDir]).status, 0);
    for (const [format, ca, first, second] of [
      ["vendor", vendorDir, /a new device, kept in/, /the device kept in/],
      ["android-key", androidDir, /a new rkp phone, kept in/, /the rkp phone kept in/],
    ] as const) {
      const keyFile = path.join(dir, `cli-${format}.json`);
      const run = () =>
        attestdCli(["device-sim", "--format", format, "--ca", ca, "--nonce", nonce(), "--device-key", keyFile, "--out", path.join(dir, `${format}.bin`)]);
      const a = run();
      assert.equal(a.status, 0, a.stderr);
      assert.match(a.stderr, first);
      const b = run();
      assert.equal(b.status, 0, b.stderr);
      assert.match(b.stderr, second);
    }
  });
});
