import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { DEMO_APP_ID, makeAppAttestAssertion, makeAppAttestAttestation, makeAppAttestCa, type AppAttestCa, type SimAppAttestKey } from "../../src/attestation/sim/appAttest.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { T0 } from "../helpers/clock.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * App Attest through the service, as a relying party posts it (issue 25): the app registered through the admin
 * API, the demo root trusted with --app-attest-roots, an attestation and then assertions to POST /v2/blobs, each
 * against a fresh nonce. The rules are rules.test.ts's; this holds the wiring: the key remembered for the tenant,
 * its counter stored with each verdict, a replay refused, another tenant refused, revocation, a named device.
 */
describe("App Attest posted to /v2/blobs", () => {
  let t: TestRuntime;
  let ca: AppAttestCa;
  let portal: ReturnType<typeof portalPeople>;
  let globexKey: string;

  const nonce = async (key = t.key): Promise<string> => {
    const res = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { nonce: string }).nonce;
  };
  const post = async (body: Uint8Array, n: string, o: { key?: string; deviceId?: string } = {}) => {
    const query = new URLSearchParams({ nonce: n, ...(o.deviceId ? { deviceId: o.deviceId } : {}) });
    return t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?${query}`,
      headers: { [KEY_HEADER]: o.key ?? t.key, "content-type": "application/octet-stream" },
      payload: Buffer.from(body),
    });
  };
  const verdict = async (body: Uint8Array, n: string, o: { key?: string; deviceId?: string } = {}) => {
    const res = await post(body, n, o);
    assert.equal(res.statusCode, 200, res.body);
    const record = res.json() as Record<string, string>;
    const full = await t.runtime.app.inject({ url: `${String(res.headers.location)}?detail=full`, headers: { [KEY_HEADER]: o.key ?? t.key } });
    const stored = (full.json() as { attestation: { format: string; detail: Record<string, unknown> } }).attestation;
    return { verdict: record.verdict, status: record.status, rule: stored.detail.rule, format: stored.format, chipId: record.chipId };
  };
  const keyOf = async (keyId: string) => {
    const res = await portal.as("ada@acme.example", { url: `/portal/api/app-attest-keys/${Buffer.from(keyId, "base64").toString("base64url")}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { counter: number; revokedAt: string | null; appId: string; receiptBytes: number };
  };
  const attest = async (): Promise<SimAppAttestKey> => {
    const n = await nonce();
    const { blob, key } = await makeAppAttestAttestation(ca, { nonce: n, now: new Date(t.clock.nowMs()) });
    assert.deepEqual(await verdict(blob, n), { verdict: "Yes", status: "Success", rule: "pass", format: "app-attest", chipId: key.keyId });
    return key;
  };

  before(async () => {
    ca = await makeAppAttestCa(new Date(T0));
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-appattest-root-"));
    const rootFile = path.join(dir, "root.pem");
    writeFileSync(rootFile, toPem(ca.rootDer, "CERTIFICATE"));
    t = await startTestRuntime({ appAttestRoots: rootFile });
    portal = portalPeople(t);
    await portal.add("ada@acme.example", "admin", "acme");
    globexKey = (await t.addTenant("globex")).key;
    const res = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: DEMO_APP_ID, environment: "both" } });
    assert.equal(res.statusCode, 200, res.body);
  });
  after(async () => {
    await t?.close();
  });

  it("registers apps through the admin API: listed, one per app id, removable", async () => {
    const list = await portal.as("ada@acme.example", { url: "/portal/api/ios-apps" });
    assert.deepEqual((list.json() as { appId: string; environment: string }[]).map((a) => [a.appId, a.environment]), [[DEMO_APP_ID, "both"]]);
    const again = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: DEMO_APP_ID } });
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /PORTAL_IOS_APP_EXISTS/);
    const bad = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "com.example.nope" } });
    assert.equal(bad.statusCode, 400);
    const other = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "ABCDE12345.com.example.gone" } });
    const removed = await portal.as("ada@acme.example", { method: "DELETE", url: `/portal/api/ios-apps/${(other.json() as { id: string }).id}` });
    assert.equal(removed.statusCode, 204);
  });

  it("attestation, then assertions with rising counters are Yes; a replayed counter is refused; the counter is stored", async () => {
    let key = await attest();
    const shown = await keyOf(key.keyId);
    assert.deepEqual([shown.counter, shown.appId, shown.revokedAt], [0, DEMO_APP_ID, null]);
    assert.ok(shown.receiptBytes > 0);
    for (const expected of [1, 2]) {
      const n = await nonce();
      const a = makeAppAttestAssertion(key, { nonce: n });
      key = a.key;
      assert.deepEqual(await verdict(a.body, n), { verdict: "Yes", status: "Success", rule: "pass", format: "app-attest", chipId: key.keyId });
      assert.equal((await keyOf(key.keyId)).counter, expected);
    }
    // a clone of the key (or a replayed assertion re-signed) with a counter already used: refused
    const n = await nonce();
    const replay = makeAppAttestAssertion(key, { nonce: n, counter: 2 });
    assert.deepEqual(await verdict(replay.body, n), { verdict: "No", status: "NonceMismatch", rule: "counter", format: "app-attest", chipId: key.keyId });
    // the very same post again: its nonce is spent
    const again = await post(replay.body, n);
    assert.equal(again.statusCode, 400, again.body);
    assert.equal((again.json() as { error: { message: string } }).error.message, "NONCE_ALREADY_USED");
    // an assertion posted with another nonce than the one it signed: refused
    const n2 = await nonce();
    const n3 = await nonce();
    const wrong = makeAppAttestAssertion(key, { nonce: n2 });
    assert.equal((await verdict(wrong.body, n3)).rule, "signature");
    assert.equal((await keyOf(key.keyId)).counter, 2);
  });

  it("a refused nonce touches no key: a valid next assertion posted with a spent nonce is refused and its counter is not stored", async () => {
    let key = await attest();
    const n = await nonce();
    const first = makeAppAttestAssertion(key, { nonce: n });
    key = first.key;
    assert.equal((await verdict(first.body, n)).verdict, "Yes");
    // the app signs its next assertion over the spent nonce: the nonce is refused first, the counter stays at 1
    const next = makeAppAttestAssertion(key, { nonce: n });
    const res = await post(next.body, n);
    assert.equal(res.statusCode, 400, res.body);
    assert.equal((res.json() as { error: { message: string } }).error.message, "NONCE_ALREADY_USED");
    assert.equal((await keyOf(key.keyId)).counter, 1);
    // so the same assertion counter is still Yes with a fresh nonce
    const n2 = await nonce();
    assert.equal((await verdict(makeAppAttestAssertion(first.key, { nonce: n2 }).body, n2)).verdict, "Yes");
    assert.equal((await keyOf(key.keyId)).counter, 2);
  });

  it("two assertions with one counter posted at once: exactly one is Yes", async () => {
    const key = await attest();
    for (let round = 1; round <= 5; round++) {
      const [n1, n2] = [await nonce(), await nonce()];
      const outcomes = await Promise.all([
        verdict(makeAppAttestAssertion(key, { nonce: n1, counter: round }).body, n1),
        verdict(makeAppAttestAssertion(key, { nonce: n2, counter: round }).body, n2),
      ]);
      assert.deepEqual(outcomes.map((o) => o.verdict).sort(), ["No", "Yes"], `round ${round}`);
      assert.equal(outcomes.find((o) => o.verdict === "No")?.rule, "counter");
    }
  });

  it("an assertion for another tenant's key, or a key never attested, is refused; so is one attested twice", async () => {
    const key = await attest();
    const n = await nonce(globexKey);
    assert.deepEqual(await verdict(makeAppAttestAssertion(key, { nonce: n }).body, n, { key: globexKey }), {
      verdict: "No",
      status: "CertificateInvalid",
      rule: "unknown-key",
      format: "app-attest",
      chipId: "",
    });
    const n2 = await nonce();
    assert.equal((await verdict(makeAppAttestAssertion(key, { nonce: n2, unknownKeyId: true }).body, n2)).rule, "unknown-key");
    // globex registered no app: its attestations are refused before anything else
    const n3 = await nonce(globexKey);
    const { blob } = await makeAppAttestAttestation(ca, { nonce: n3, now: new Date(t.clock.nowMs()) });
    assert.equal((await verdict(blob, n3, { key: globexKey })).rule, "no-app");
  });

  it("a revoked key's assertions are refused (ios-key revoke through the admin API)", async () => {
    const key = await attest();
    const res = await portal.as("ada@acme.example", { method: "POST", url: `/portal/api/app-attest-keys/${Buffer.from(key.keyId, "base64").toString("base64url")}/revoke` });
    assert.equal(res.statusCode, 200, res.body);
    const n = await nonce();
    assert.deepEqual(await verdict(makeAppAttestAssertion(key, { nonce: n }).body, n), { verdict: "No", status: "Revoked", rule: "revoked-key", format: "app-attest", chipId: "" });
    const list = await portal.as("ada@acme.example", { url: "/portal/api/app-attest-keys" });
    assert.ok((list.json() as { items: { keyId: string; revokedAt: string | null }[] }).items.some((k) => k.keyId === key.keyId && k.revokedAt !== null));
  });

  it("a relying party's deviceId names the key: the device is pinned to it, and its counter still moves with each Yes", async () => {
    let key = await attest();
    for (let i = 0; i < 2; i++) {
      const n = await nonce();
      const a = makeAppAttestAssertion(key, { nonce: n });
      key = a.key;
      assert.equal((await verdict(a.body, n, { deviceId: "phone-7" })).verdict, "Yes");
    }
    assert.equal((await keyOf(key.keyId)).counter, 2);
    // another key under the same device name is a changed device
    const other = await attest();
    const n = await nonce();
    const r = await verdict(makeAppAttestAssertion(other, { nonce: n }).body, n, { deviceId: "phone-7" });
    assert.equal(r.verdict, "No");
    const replay = await nonce();
    assert.equal((await verdict(makeAppAttestAssertion(key, { nonce: replay, counter: 2 }).body, replay, { deviceId: "phone-7" })).rule, "counter");
  });
});
