import assert from "node:assert/strict";
import { createHash, createPublicKey } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ANDROID_DEV_CA_FILES, createAndroidDevCa, readAndroidDevCa, writeAndroidDevCa, type AndroidDevCa } from "../../src/attestation/sim/androidCa.ts";
import {
  attestAndroidKey,
  createAndroidDevice,
  encodeAndroidChain,
  type AndroidDevice,
  type AndroidKeyOptions,
} from "../../src/attestation/sim/androidDeviceSim.ts";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob, type VendorBlobOptions } from "../../src/attestation/sim/deviceSim.ts";
import { DeviceService } from "../../src/services/deviceService.ts";
import { T0 } from "../helpers/clock.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * Per-device memory (trust on first use) over HTTP, on the default SQLite runtime, with the demo Android PKI and
 * the demo vendor CA: a named device's first Yes pins it; each pinned fact that changes, and each level that goes
 * down, turns a later appraisal into No with what changed; a higher level raises the mark; a non-Yes never moves
 * the pin; reset, tenants, the batch, and the request checks. The race of two instances is test/scale/.
 */

const OCTET = { "content-type": "application/octet-stream" };
const NOW = new Date(T0);
let seq = 0;
const newDeviceId = (p = "dev") => `${p}-${++seq}.test:1`;

describe("per-device memory over HTTP", () => {
  let t: TestRuntime;
  let dir: string;
  let android: AndroidDevCa;
  let vendor: DevCa;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-pins-"));
    const androidDir = path.join(dir, "android-ca");
    await writeAndroidDevCa(await createAndroidDevCa({ now: NOW }), androidDir);
    android = await readAndroidDevCa(androidDir);
    vendor = await createDevCa({ now: NOW });
    const roots = path.join(dir, "vendor-root.pem");
    const refs = path.join(dir, "refs.json");
    writeFileSync(roots, vendor.root.certPem);
    writeFileSync(refs, JSON.stringify(demoReferenceValues()));
    const file = (name: string) => path.join(androidDir, name);
    t = await startTestRuntime({
      vendorRoots: roots,
      referenceValues: refs,
      androidRoots: file(ANDROID_DEV_CA_FILES.root),
      androidStatus: file(ANDROID_DEV_CA_FILES.status),
      allowedBootKeys: file(ANDROID_DEV_CA_FILES.allowedBootKeys),
    });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const nonce = async (key = t.key) =>
    (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } })).json().nonce as string;
  const postBlob = (n: string, blob: Uint8Array, deviceId: string | undefined, key = t.key) =>
    t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${n}${deviceId === undefined ? "" : `&deviceId=${encodeURIComponent(deviceId)}`}`,
      headers: { [KEY_HEADER]: key, ...OCTET },
      payload: Buffer.from(blob),
    });
  /** the stored verdict's detail.device and reason, as `?detail=full` shows them */
  const stored = async (location: string, key = t.key) => {
    const full = (await t.runtime.app.inject({ method: "GET", url: `${location}?detail=full`, headers: { [KEY_HEADER]: key } })).json();
    return { device: full.attestation.detail.device, reason: full.attestation.reason as string, verdict: full.verdict as string };
  };
  const history = async (deviceId: string, key = t.key) =>
    t.runtime.app.inject({ method: "GET", url: `/api/v1/devices/${encodeURIComponent(deviceId)}`, headers: { [KEY_HEADER]: key } });

  /** One attestation of `device` for a fresh nonce, posted for `deviceId`: the answer and what was stored. */
  async function attestPhone(device: AndroidDevice, deviceId: string, o: Partial<AndroidKeyOptions> = {}, key = t.key) {
    const n = await nonce(key);
    const chain = encodeAndroidChain(await attestAndroidKey(device, { nonce: n, now: NOW, ...o }));
    const res = await postBlob(n, chain, deviceId, key);
    assert.equal(res.statusCode, 200, res.body);
    return { record: res.json(), ...(await stored(String(res.headers.location), key)) };
  }

  const factoryPhone = () => createAndroidDevice(android, { provisioning: "factory", now: NOW });

  it("the first Yes pins the device; the same phone again matches; the history says so", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("phone");
    const first = await attestPhone(phone, id);
    assert.equal(first.record.verdict, "Yes");
    assert.deepEqual(first.device, { deviceId: id, pin: "first" });
    const again = await attestPhone(phone, id);
    assert.equal(again.record.verdict, "Yes");
    assert.deepEqual(again.device, { deviceId: id, pin: "matched" });

    const res = await history(id);
    assert.equal(res.statusCode, 200, res.body);
    const h = res.json();
    assert.equal(h.deviceId, id);
    assert.equal(h.tenantId, undefined, "the tenant's internal id is not part of the answer");
    assert.equal(h.count, 2);
    assert.equal(h.firstSeen, NOW.toISOString());
    assert.deepEqual(h.last, { objectId: h.last.objectId, at: NOW.toISOString(), verdict: "Yes", status: "Success", pin: "matched" });
    assert.equal(h.pin.format, "android-key");
    assert.deepEqual(Object.keys(h.pin.identity).sort(), ["appPackages", "appSignatureDigests", "batchKey", "securityLevel", "verifiedBootKey"]);
    assert.equal(h.pin.identity.securityLevel, "TrustedEnvironment");
    assert.equal(h.pin.identity.appPackages, "com.example.wallet");
    assert.deepEqual(h.pin.levels, { osVersion: 150000, osPatchLevel: 202611, vendorPatchLevel: 20261101, bootPatchLevel: 20261101 });
    assert.deepEqual(h.latestFacts.identity, h.pin.identity);
    assert.equal(h.resets, 0);
  });

  it("an RKP phone's device CA is renewed by design: a new one does not change the pin (and is not pinned)", async () => {
    const id = newDeviceId("rkp");
    const before = await createAndroidDevice(android, { provisioning: "rkp", now: NOW });
    assert.equal((await attestPhone(before, id)).device.pin, "first");
    const renewed = await createAndroidDevice(android, { provisioning: "rkp", now: NOW });
    const after = await attestPhone(renewed, id);
    assert.equal(after.record.verdict, "Yes");
    assert.equal(after.device.pin, "matched");
    assert.equal((await history(id)).json().pin.identity.batchKey, undefined);
  });

  // Each pinned identity fact, changed on a device that otherwise appraises Yes.
  const identityChanges: [fact: string, change: (phone: AndroidDevice) => Promise<[AndroidDevice, Partial<AndroidKeyOptions>]>][] = [
    ["verifiedBootKey", async (p) => [p, { bootState: "self-signed" }]], // the allow-listed custom OS: Yes on its own
    ["securityLevel", async (p) => [{ ...p, securityLevel: "strongbox" }, {}]],
    ["batchKey", async () => [await factoryPhone(), {}]], // another phone of the same model
    ["appPackages", async (p) => [p, { packageName: "com.example.other" }]],
    ["appSignatureDigests", async (p) => [p, { signatureDigest: Buffer.alloc(32, 0x77) }]],
  ];
  for (const [fact, change] of identityChanges) {
    it(`a pinned device whose ${fact} changes: No, with what changed from what to what; the pin stays`, async () => {
      const phone = await factoryPhone();
      const id = newDeviceId(fact);
      await attestPhone(phone, id);
      const pinned = (await history(id)).json().pin;
      const [other, opts] = await change(phone);
      const changed = await attestPhone(other, id, opts);
      assert.equal(changed.record.verdict, "No");
      assert.equal(changed.record.status, "Success");
      assert.equal(changed.device.pin, "changed");
      assert.equal(changed.device.changes.length, 1, JSON.stringify(changed.device.changes));
      const [c] = changed.device.changes;
      assert.equal(c.fact, fact);
      assert.equal(c.from, pinned.identity[fact]);
      assert.notEqual(c.to, c.from);
      assert.match(changed.reason, new RegExp(`^device pin changed: ${fact} from \\S+ to \\S+; appraisal: `));
      const h = (await history(id)).json();
      assert.deepEqual(h.pin, pinned, "a refused appraisal does not move the pin");
      assert.equal(h.last.pin, "changed");
      assert.equal(h.last.verdict, "No");
      assert.deepEqual(h.last.changes, changed.device.changes, "the history says what changed too");
      // the original phone still matches
      assert.equal((await attestPhone(phone, id)).device.pin, "matched");
    });
  }

  // Each level one step below the pinned mark (the simulator's defaults: osVersion 150000, patch 202611, 20261101).
  const downgrades: [fact: string, opts: Partial<AndroidKeyOptions>, from: string, to: string][] = [
    ["osVersion", { osVersion: 140000 }, "150000", "140000"],
    ["osPatchLevel", { patchLevel: 202610, vendorPatchLevel: 20261101, bootPatchLevel: 20261101 }, "202611", "202610"],
    ["vendorPatchLevel", { vendorPatchLevel: 20261001 }, "20261101", "20261001"],
    ["bootPatchLevel", { bootPatchLevel: 20261001 }, "20261101", "20261001"],
  ];
  for (const [fact, opts, from, to] of downgrades) {
    it(`a downgrade of ${fact}: No, "downgrade", from the mark to the lower level`, async () => {
      const phone = await factoryPhone();
      const id = newDeviceId(fact);
      await attestPhone(phone, id);
      const down = await attestPhone(phone, id, opts);
      assert.equal(down.record.verdict, "No");
      assert.deepEqual(down.device, { deviceId: id, pin: "downgrade", changes: [{ fact, from, to }] });
      assert.equal(down.reason.split("; appraisal: ")[0], `device pin downgrade: ${fact} from ${from} to ${to}`);
    });
  }

  it("an upgrade raises the mark (Yes, matched); going back to the old level is then a downgrade", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("upgrade");
    await attestPhone(phone, id);
    const up = await attestPhone(phone, id, { patchLevel: 202612, osVersion: 160000 });
    assert.equal(up.record.verdict, "Yes");
    assert.equal(up.device.pin, "matched");
    const h = (await history(id)).json();
    assert.deepEqual(h.pin.levels, { osVersion: 160000, osPatchLevel: 202612, vendorPatchLevel: 20261201, bootPatchLevel: 20261201 });
    const back = await attestPhone(phone, id);
    assert.equal(back.record.verdict, "No");
    assert.deepEqual(back.device.changes, [
      { fact: "osVersion", from: "160000", to: "150000" },
      { fact: "osPatchLevel", from: "202612", to: "202611" },
      { fact: "vendorPatchLevel", from: "20261201", to: "20261101" },
      { fact: "bootPatchLevel", from: "20261201", to: "20261101" },
    ]);
  });

  it("a No never moves the pin: not a first pin, not a higher mark; it is recorded in the history", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("no");
    const unlocked = await attestPhone(phone, id, { unlocked: true });
    assert.equal(unlocked.record.verdict, "No");
    assert.deepEqual(unlocked.device, { deviceId: id, pin: "none" });
    let h = (await history(id)).json();
    assert.equal(h.pin, null);
    assert.equal(h.count, 1);
    assert.equal(h.latestFacts.levels.osPatchLevel, 202611);

    assert.equal((await attestPhone(phone, id)).device.pin, "first");
    const higherButUnlocked = await attestPhone(phone, id, { unlocked: true, patchLevel: 202612 });
    assert.equal(higherButUnlocked.record.verdict, "No");
    assert.equal(higherButUnlocked.device.pin, "matched");
    h = (await history(id)).json();
    assert.equal(h.pin.levels.osPatchLevel, 202611, "a No does not raise the mark");
    assert.equal(h.latestFacts.levels.osPatchLevel, 202612, "but its facts are the latest seen");
    assert.equal(h.count, 3);
    assert.deepEqual({ verdict: h.last.verdict, pin: h.last.pin }, { verdict: "No", pin: "matched" });
  });

  it("an appraisal that authenticates nothing (wrong nonce) is counted but compares nothing: pin none, facts kept", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("mismatch");
    await attestPhone(phone, id);
    const before = (await history(id)).json();
    const wrong = await attestPhone(phone, id, { wrongNonce: true });
    assert.equal(wrong.record.status, "NonceMismatch");
    assert.deepEqual(wrong.device, { deviceId: id, pin: "none" });
    const h = (await history(id)).json();
    assert.equal(h.count, 2);
    assert.deepEqual(h.latestFacts, before.latestFacts);
    assert.deepEqual(h.pin, before.pin);
  });

  describe("vendor container", () => {
    let leaf: CertifiedKey;
    before(async () => {
      leaf = await issueDeviceLeaf(vendor, { keyType: "ec", now: NOW });
    });
    const attestVendor = async (id: string, o: Partial<VendorBlobOptions> & { leaf?: CertifiedKey } = {}) => {
      const n = await nonce();
      const res = await postBlob(n, encodeVendorBlob({ ca: vendor, leaf, now: NOW, nonce: n, ...o }), id);
      assert.equal(res.statusCode, 200, res.body);
      return { record: res.json(), ...(await stored(String(res.headers.location))) };
    };

    it("pins the leaf key, chipId and IMEI; the same device matches", async () => {
      const id = newDeviceId("vendor");
      assert.equal((await attestVendor(id)).device.pin, "first");
      assert.equal((await attestVendor(id)).device.pin, "matched");
      const h = (await history(id)).json();
      assert.deepEqual(Object.keys(h.pin.identity), ["leafKey", "chipId", "IMEI"]);
      const spki = createPublicKey(leaf.privateKey).export({ type: "spki", format: "der" });
      assert.equal(h.pin.identity.leafKey, createHash("sha256").update(spki).digest("hex"), "the SHA-256 of the leaf's SubjectPublicKeyInfo");
      assert.deepEqual(h.pin.identity.chipId, "c0ffee0123456789");
      assert.deepEqual(h.pin.levels, {});
    });

    for (const [fact, change] of [
      ["leafKey", async () => ({ leaf: await issueDeviceLeaf(vendor, { keyType: "ec", now: NOW }) })],
      ["chipId", async () => ({ chipId: Buffer.from("0badc0de", "hex") })],
      ["IMEI", async () => ({ imei: "490154203237518" })],
    ] as const) {
      it(`a pinned device whose ${fact} changes: No, changed`, async () => {
        const id = newDeviceId(`vendor-${fact}`);
        await attestVendor(id);
        const changed = await attestVendor(id, await change());
        assert.equal(changed.record.verdict, "No");
        assert.equal(changed.device.pin, "changed");
        assert.deepEqual(changed.device.changes.map((c: { fact: string }) => c.fact), [fact]);
      });
    }

    it("a device pinned as a vendor container that answers with an android-key chain: format changed", async () => {
      const id = newDeviceId("format");
      await attestVendor(id);
      const other = await attestPhone(await factoryPhone(), id);
      assert.equal(other.record.verdict, "No");
      assert.deepEqual(other.device.changes, [{ fact: "format", from: "vendor", to: "android-key" }]);
    });
  });

  it("reset (the service method the CLI and the portal call): the pin is cleared and the next Yes pins afresh", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("reset");
    await attestPhone(phone, id);
    const changedPhone = await factoryPhone();
    assert.equal((await attestPhone(changedPhone, id)).device.pin, "changed");
    const devices = new DeviceService(t.runtime.stores.durable, t.clock);
    const reset = await devices.resetPin(t.tenant.tenantId, id, testActor(t.runtime.stores.durable));
    assert.equal(reset.by, "test");
    assert.ok(reset.previousPin);
    const h = (await history(id)).json();
    assert.equal(h.pin, null);
    assert.equal(h.resets, 1);
    assert.equal((await attestPhone(changedPhone, id)).device.pin, "first");
    assert.equal((await attestPhone(phone, id)).device.pin, "changed", "the old phone is now the stranger");
    await assert.rejects(devices.resetPin(t.tenant.tenantId, newDeviceId("never-seen"), testActor()), (e: { entry?: { code: string } }) => e.entry?.code === "4040000");
  });

  it("`attestd device show` and `attestd device reset` work on the running server's store; the reset is in the audit trail", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("cli");
    await attestPhone(phone, id);
    const common = ["--tenant", "acme", id, "--data-dir", t.dir];
    const shown = attestdCli(["device", "show", ...common]);
    assert.equal(shown.status, 0, shown.stderr);
    const before = JSON.parse(shown.stdout);
    assert.equal(before.device.deviceId, id);
    assert.equal(before.device.pin.format, "android-key");
    assert.deepEqual(before.resets, []);

    const reset = attestdCli(["device", "reset", ...common]);
    assert.equal(reset.status, 0, reset.stderr);
    assert.match(reset.stderr, new RegExp(`pin of device ${id.replaceAll(".", "\\.")} \\(tenant acme\\) reset`));
    const after = JSON.parse(attestdCli(["device", "show", ...common]).stdout);
    assert.equal(after.device.pin, null);
    assert.equal(after.resets.length, 1);
    assert.equal(after.resets[0].by, userInfo().username, "the operator: the OS user that ran attestd");
    assert.deepEqual(after.resets[0].previousPin, before.device.pin);
    assert.equal((await history(id)).json().pin, null, "the server reads the reset at once");

    const unknown = attestdCli(["device", "reset", "--tenant", "acme", "nobody", "--data-dir", t.dir]);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /no appraisal of a device "nobody" for tenant acme/i);
    const badTenant = attestdCli(["device", "show", "--tenant", "nope", id, "--data-dir", t.dir]);
    assert.equal(badTenant.status, 1);
    const badId = attestdCli(["device", "show", "--tenant", "acme", "bad/id", "--data-dir", t.dir]);
    assert.equal(badId.status, 1);
    assert.match(badId.stderr, /deviceId must be/);
  });

  it("devices are per tenant: another tenant's device is 404, and its own appraisal of that name pins its own", async () => {
    const phone = await factoryPhone();
    const id = newDeviceId("shared");
    await attestPhone(phone, id);
    const other = await t.addTenant("other-tenant");
    const res = await history(id, other.key);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.code, "4040000");
    const theirs = await attestPhone(await factoryPhone(), id, {}, other.key);
    assert.deepEqual(theirs.device, { deviceId: id, pin: "first" });
    assert.equal((await history(id)).json().count, 1, "the first tenant's device is untouched");
  });

  it("the batch takes deviceId per item: each item is held to the pin as the items before it left it", async () => {
    const phone = await factoryPhone();
    const stranger = await factoryPhone();
    const id = newDeviceId("batch");
    const items = [];
    for (const [i, device] of [phone, phone, stranger].entries()) {
      const n = await nonce();
      const chain = encodeAndroidChain(await attestAndroidKey(device, { nonce: n, now: NOW }));
      items.push({ requestedId: `r${i}`, nonce: n, blob: chain.toString("base64"), deviceId: id });
    }
    const n = await nonce();
    items.push({ requestedId: "unnamed", nonce: n, blob: encodeAndroidChain(await attestAndroidKey(stranger, { nonce: n, now: NOW })).toString("base64") });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: "/api/v1/transaction",
      headers: { [KEY_HEADER]: t.key, "content-type": "application/json" },
      payload: { items },
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.success, 4);
    const outcomes = [];
    for (const r of body.resultList) {
      const s = await stored(`/api/v1/verdicts/${r.objectId}`);
      outcomes.push([s.verdict, s.device?.pin]);
    }
    assert.deepEqual(outcomes, [["Yes", "first"], ["Yes", "matched"], ["No", "changed"], ["Yes", undefined]]);
    assert.equal((await history(id)).json().count, 3);
  });

  describe("the deviceId parameter", () => {
    for (const [what, bad] of [
      ["empty", ""],
      ["129 characters", "a".repeat(129)],
      ["a slash", "a/b"],
      ["a space", "a b"],
      ["non-ASCII", "gerät"],
    ] as const) {
      it(`${what}: 400 4000000 on /v2/blobs, before the nonce is looked at (it stays usable)`, async () => {
        const n = await nonce();
        const blob = encodeAndroidChain(await attestAndroidKey(await factoryPhone(), { nonce: n, now: NOW }));
        const res = await postBlob(n, blob, bad);
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error.code, "4000000");
        assert.match(res.json().error.reason, /deviceId/);
        const ok = await postBlob(n, blob, undefined);
        assert.equal(ok.statusCode, 200, "the nonce was not spent");
      });
    }

    it("128 characters of every allowed kind are a name", async () => {
      const id = ("Az09._:-".repeat(16)).slice(0, 128);
      assert.equal((await attestPhone(await factoryPhone(), id)).device.pin, "first");
      assert.equal((await history(id)).statusCode, 200);
    });

    it("a malformed deviceId in a batch item: the whole batch is 400 4000000 and no nonce is spent", async () => {
      const n = await nonce();
      const blob = encodeAndroidChain(await attestAndroidKey(await factoryPhone(), { nonce: n, now: NOW })).toString("base64");
      const res = await t.runtime.app.inject({
        method: "POST",
        url: "/api/v1/transaction",
        headers: { [KEY_HEADER]: t.key, "content-type": "application/json" },
        payload: { items: [{ requestedId: "a", nonce: n, blob, deviceId: "no spaces" }] },
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error.code, "4000000");
      assert.equal((await postBlob(n, Buffer.from(blob, "base64"), undefined)).statusCode, 200);
    });

    it("GET /api/v1/devices/{deviceId}: a malformed name is 400 4000000, an unknown one 404 4040000, no key 401", async () => {
      const bad = await history("a b");
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().error.code, "4000000");
      const unknown = await history(newDeviceId("unknown"));
      assert.equal(unknown.statusCode, 404);
      assert.equal(unknown.json().error.code, "4040000");
      const anonymous = await t.runtime.app.inject({ method: "GET", url: "/api/v1/devices/x" });
      assert.equal(anonymous.json().error.code, "4010000");
      const post = await t.runtime.app.inject({ method: "POST", url: "/api/v1/devices/x", headers: { [KEY_HEADER]: t.key } });
      assert.equal(post.statusCode, 405);
    });

    it("a nonce refused with a deviceId leaves the device untouched", async () => {
      const phone = await factoryPhone();
      const id = newDeviceId("replay");
      const n = await nonce();
      const blob = encodeAndroidChain(await attestAndroidKey(phone, { nonce: n, now: NOW }));
      assert.equal((await postBlob(n, blob, id)).statusCode, 200);
      const replay = await postBlob(n, blob, id);
      assert.equal(replay.json().error.code, "4000004");
      assert.equal((await history(id)).json().count, 1);
      const neverIssued = await postBlob(Buffer.alloc(32, 9).toString("base64url"), blob, newDeviceId("ghost"));
      assert.equal(neverIssued.json().error.code, "4000002");
    });

    it("the device history answers in XML too", async () => {
      const id = newDeviceId("xml");
      await attestPhone(await factoryPhone(), id);
      const res = await t.runtime.app.inject({
        method: "GET",
        url: `/api/v1/devices/${id}`,
        headers: { [KEY_HEADER]: t.key, accept: "application/xml" },
      });
      assert.equal(res.statusCode, 200);
      assert.match(res.body, new RegExp(`^<\\?xml[^>]*\\?><device><deviceId>${id.replaceAll(".", "\\.")}</deviceId>`));
      assert.match(res.body, /<osPatchLevel>202611<\/osPatchLevel>/);
    });
  });

  it("/openapi.json documents deviceId (pattern) on /v2/blobs and the batch, and the device route with its errors", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const blobs = doc.paths["/v2/blobs"].post.parameters.find((p: { name: string }) => p.name === "deviceId");
    assert.equal(blobs.in, "query");
    assert.equal(blobs.schema.pattern, "^[A-Za-z0-9._:-]{1,128}$");
    const batchItem = doc.paths["/api/v1/transaction"].post.requestBody.content["application/json"].schema.properties.items.items;
    assert.equal(batchItem.properties.deviceId.pattern, "^[A-Za-z0-9._:-]{1,128}$");
    const route = doc.paths["/api/v1/devices/{deviceId}"].get;
    assert.deepEqual(Object.keys(route.responses).sort(), ["200", "400", "401", "403", "404", "405", "406", "429", "500", "503"]);
    assert.ok(route.responses["200"].content["application/json"].schema.properties.pin);
  });
});
