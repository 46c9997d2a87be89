import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { compactDecrypt, compactVerify } from "jose";
import { createPrivateKey, createPublicKey, createSecretKey } from "node:crypto";
import { createPlayDevCa, makePlayIntegrityToken, playConsoleKeys, type PlayDevCa, type PlayTokenOptions } from "../../src/attestation/sim/playIntegrity.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { startGooglePlayStandIn, type GoogleStandIn } from "../helpers/googlePlayStandIn.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * Play Integrity through the service, as a relying party posts it (issue 23): POST /v2/nonces, the token as the
 * body of POST /v2/blobs, the verdict. The tenant's apps are registered through the admin API; a token is opened
 * with the app's response keys, or by Google (a stand-in on 127.0.0.1) for an app registered with a service
 * account. The rules themselves are test/playIntegrity/rules.test.ts's; this holds the wiring: which app's keys,
 * which tenant, Google's part, and the device's pin.
 */
describe("Play Integrity tokens posted to /v2/blobs", () => {
  let t: TestRuntime;
  let google: GoogleStandIn;
  let portal: ReturnType<typeof portalPeople>;
  let globexKey: string;
  const shop = createPlayDevCa({ packageName: "com.acme.shop" });
  const bank = createPlayDevCa({ packageName: "com.acme.bank" });

  const nonce = async (key = t.key): Promise<string> => {
    const res = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { nonce: string }).nonce;
  };
  const post = async (token: string, n: string, o: { key?: string; deviceId?: string } = {}) => {
    const query = new URLSearchParams({ nonce: n, ...(o.deviceId ? { deviceId: o.deviceId } : {}) });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?${query}`,
      headers: { [KEY_HEADER]: o.key ?? t.key, "content-type": "application/octet-stream" },
      payload: Buffer.from(token),
    });
    assert.equal(res.statusCode, 200, res.body);
    // the verdict record, and where it is stored (its Location) for `full`
    const record: Record<string, string> = res.json();
    record.location = String(res.headers.location);
    return record;
  };
  /** the stored verdict with its format, reason and detail (`?detail=full` of its Location) */
  const full = async (location: string) => {
    const res = await t.runtime.app.inject({ url: `${location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json() as { attestation: { format: string; reason: string; detail: Record<string, unknown> } }).attestation;
  };
  const tokenFor = (ca: PlayDevCa, n: string, o: Omit<PlayTokenOptions, "nonce"> = {}) => makePlayIntegrityToken(ca, { nonce: n, now: new Date(t.clock.nowMs()), ...o });

  before(async () => {
    google = await startGooglePlayStandIn(() => t.clock.nowMs());
    t = await startTestRuntime({ playOauthUrl: google.oauthUrl, playApiUrl: google.apiUrl, playDecodeRetries: 0 }, { fetch: globalThis.fetch });
    google.now = () => t.clock.nowMs();
    // Google holds the keys of the apps whose response encryption it manages: here, the bank's
    google.openToken = async (token, packageName) => {
      if (packageName !== bank.packageName) return undefined;
      try {
        const { plaintext } = await compactDecrypt(token, createSecretKey(Buffer.from(bank.decryptionKey)));
        const pub = createPublicKey(createPrivateKey(bank.signingKey.export({ format: "pem", type: "pkcs8" })));
        const { payload } = await compactVerify(Buffer.from(plaintext).toString(), pub);
        return JSON.parse(Buffer.from(payload).toString()) as unknown;
      } catch {
        return undefined;
      }
    };
    portal = portalPeople(t);
    await portal.add("ada@acme.example", "admin", "acme");
    globexKey = (await t.addTenant("globex")).key;
    const register = async (payload: Record<string, unknown>) => {
      const res = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/play-apps", payload });
      assert.equal(res.statusCode, 200, res.body);
    };
    await register({ packageName: shop.packageName, certDigests: [Buffer.from(shop.certDigest).toString("hex")], responseKeys: playConsoleKeys(shop) });
    const account = google.addAccount();
    const keyFile = JSON.stringify({
      type: "service_account",
      project_id: account.projectId,
      private_key_id: account.privateKeyId,
      private_key: account.privateKeyPem,
      client_email: account.clientEmail,
    });
    await register({ packageName: bank.packageName, serviceAccount: keyFile });
  });
  after(async () => {
    await t?.close();
    await google?.close();
  });

  it("a token of a registered app, opened with its response keys, is Yes and says so in detail", async () => {
    const n = await nonce();
    const v = await post(await tokenFor(shop, n), n);
    assert.deepEqual([v.status, v.verdict, v.nonce], ["Success", "Yes", n]);
    const stored = await full(v.location!);
    assert.equal(stored.format, "play-integrity", JSON.stringify(stored));
    assert.match(JSON.stringify(stored.detail), /"decodedBy":"local"/);
    assert.equal(google.counts.decodes, 0, "Google is not asked when the app's keys open the token");
  });

  it("a classic request (the nonce in requestDetails.nonce) is Yes too", async () => {
    const n = await nonce();
    const v = await post(await tokenFor(shop, n, { classic: true }), n);
    assert.deepEqual([v.status, v.verdict], ["Success", "Yes"]);
  });

  it("a token carrying another nonce is NonceMismatch, and spends the nonce it was posted with", async () => {
    const n = await nonce();
    const v = await post(await tokenFor(shop, n, { wrongNonce: true }), n);
    assert.deepEqual([v.status, v.verdict], ["NonceMismatch", "No"]);
    const again = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${n}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" },
      payload: Buffer.from(await tokenFor(shop, n)),
    });
    assert.equal(again.statusCode, 400);
    assert.equal((again.json() as { error: { code: string } }).error.code, "4000004");
  });

  it("a token sealed with keys no registered app has is SignatureInvalid, No", async () => {
    const n = await nonce();
    const v = await post(await tokenFor(shop, n, { otherAppKeys: true }), n);
    assert.deepEqual([v.status, v.verdict], ["SignatureInvalid", "No"]);
  });

  it("a tenant that registered no Play app gets No for any token (rule no-app), never another tenant's app", async () => {
    const n = await nonce(globexKey);
    const v = await post(await tokenFor(shop, n), n, { key: globexKey });
    assert.deepEqual([v.status, v.verdict], ["CertificateInvalid", "No"]);
  });

  it("an app registered with a service account: Google decodes its token and the verdict is Yes", async () => {
    const before = google.counts.decodes;
    const n = await nonce();
    const v = await post(await tokenFor(bank, n), n);
    assert.deepEqual([v.status, v.verdict], ["Success", "Yes"]);
    assert.equal(google.counts.decodes, before + 1);
    const stored = await full(v.location!);
    assert.match(JSON.stringify(stored.detail), /"decodedBy":"google"/);
  });

  it("Google unreachable for a service-account app: Unknown, with a reason that names no URL", async () => {
    google.faults.decode.push({ status: 503 });
    const n = await nonce();
    const v = await post(await tokenFor(bank, n), n);
    assert.deepEqual([v.status, v.verdict], ["CertificateInvalid", "Unknown"]);
    const stored = await full(v.location!);
    assert.match(stored.reason, /Google/);
    assert.doesNotMatch(stored.reason, /https?:\/\/|127\.0\.0\.1/);
  });

  it("with a deviceId, the app's facts are pinned on first use and held on the next appraisal", async () => {
    const first = await nonce();
    const v1 = await post(await tokenFor(shop, first), first, { deviceId: "phone-1" });
    assert.equal(v1.verdict, "Yes");
    const second = await nonce();
    const v2 = await post(await tokenFor(shop, second), second, { deviceId: "phone-1" });
    assert.equal(v2.verdict, "Yes");
    const device = await t.runtime.app.inject({ url: "/api/v1/devices/phone-1", headers: { [KEY_HEADER]: t.key } });
    assert.equal(device.statusCode, 200, device.body);
    const record = device.json() as { count: number; latestFacts: { format: string; identity: Record<string, string> } };
    assert.equal(record.count, 2);
    assert.equal(record.latestFacts.format, "play-integrity");
    assert.equal(record.latestFacts.identity.appPackages, shop.packageName);
    // the same device name answering as another app is a changed identity: the pin refuses it
    const third = await nonce();
    const v3 = await post(await tokenFor(bank, third), third, { deviceId: "phone-1" });
    assert.equal(v3.verdict, "No", JSON.stringify(v3));
  });
});
