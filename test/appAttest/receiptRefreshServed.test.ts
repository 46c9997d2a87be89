import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { DEMO_APP_ID, makeAppAttestAssertion, makeAppAttestAttestation, makeAppAttestCa, type AppAttestCa, type SimAppAttestKey } from "../../src/attestation/sim/appAttest.ts";
import { createReceiptSigningCa, encodeReceiptContent, signAppAttestReceipt, type ReceiptSigningCa } from "../../src/attestation/sim/appAttestReceipt.ts";
import { AppAttestReceiptRefreshes, REFRESH_LEASE_MS } from "../../src/services/appAttestReceiptRefreshes.ts";
import type { ReceiptRefresh, ReceiptRefreshRequest } from "../../src/services/appAttestReceiptRefresher.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import type { StoredAppAttestKey } from "../../src/domain/iosApps.ts";
import { startAppleReceiptStandIn, type AppleReceiptStandIn } from "../helpers/appleReceiptStandIn.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

const DAY = 86_400_000;
const TEAM = DEMO_APP_ID.split(".")[0]!;
const NO_KEY_APP = `${TEAM}.com.example.nokey`;

/** A served runtime trusting the demo App Attest root, its receipt refresher pointed at the stand-in of Apple's service. */
async function servedRuntime(ca: AppAttestCa, clock: ManualClock, apple: { base: string; root: Uint8Array } | undefined): Promise<TestRuntime> {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-refresh-root-"));
  const rootFile = path.join(dir, "root.pem");
  writeFileSync(rootFile, toPem(ca.rootDer, "CERTIFICATE"));
  return startTestRuntime(
    {
      appAttestRoots: rootFile,
      appAttestReceiptRetries: 0,
      ...(apple ? { appAttestReceiptUrl: `${apple.base}/production`, appAttestReceiptDevelopmentUrl: `${apple.base}/development` } : {}),
    },
    { clock, ...(apple ? { fetch: globalThis.fetch, receiptRoots: [apple.root] } : {}) },
  );
}

function client(t: TestRuntime) {
  const nonce = async (): Promise<string> => {
    const res = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } });
    return (res.json() as { nonce: string }).nonce;
  };
  /** posts the body against a fresh nonce; answers the stored verdict (detail included) */
  const verdict = async (body: (n: string) => Promise<Uint8Array> | Uint8Array) => {
    const n = await nonce();
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${n}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream" },
      payload: Buffer.from(await body(n)),
    });
    assert.equal(res.statusCode, 200, res.body);
    const full = await t.runtime.app.inject({ url: `${String(res.headers.location)}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    const a = (full.json() as { attestation: { detail: Record<string, unknown> } }).attestation;
    return { verdict: (res.json() as { verdict: string }).verdict, detail: a.detail, fraudRisk: a.detail.fraudRisk as Record<string, unknown> };
  };
  return { nonce, verdict };
}

/**
 * Receipt refresh while serving (issue 25): attest → the key's receipt refreshed in the background against the
 * stand-in of Apple's service → the fraud-risk metric stored with the key and shown by the admin API, the page and
 * the next verdict's detail; again when the refreshed receipt's not-before passes, not before; never for an app
 * without a developer key; a failure (or no network at all) is said in detail and no verdict changes.
 */
describe("App Attest receipt refresh, served", () => {
  let ca: AppAttestCa;
  let receiptCa: ReceiptSigningCa;
  let apple: AppleReceiptStandIn;
  let clock: ManualClock;
  let t: TestRuntime;
  let portal: ReturnType<typeof portalPeople>;
  let key: SimAppAttestKey;

  /** an attestation whose receipt the stand-in's CA signed, as Apple signs a real one */
  const attestation = (n: string, appId = DEMO_APP_ID) =>
    makeAppAttestAttestation(ca, {
      nonce: n,
      appId,
      now: new Date(clock.nowMs()),
      receipt: (cert) => signAppAttestReceipt(receiptCa, encodeReceiptContent({ type: "ATTEST", appId, attestedCertificate: cert, createdAt: new Date(clock.nowMs() - 60_000) })),
    });
  const keyOf = async (keyId: string) => {
    const res = await portal.as("ada@acme.example", { url: `/portal/api/app-attest-keys/${Buffer.from(keyId, "base64").toString("base64url")}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as StoredAppAttestKey & { receiptBytes: number };
  };
  /** after the clock moved days on (the portal session has ended): the stored key, as `ios-key show` reads it */
  const storedKey = async (keyId: string) => (await t.runtime.stores.durable.getAppAttestKey(t.tenant.tenantId, keyId))!;

  before(async () => {
    ca = await makeAppAttestCa(new Date(T0));
    receiptCa = await createReceiptSigningCa({ now: new Date(T0 - DAY) });
    clock = new ManualClock(T0);
    apple = await startAppleReceiptStandIn(receiptCa, () => clock.nowMs());
    t = await servedRuntime(ca, clock, { base: apple.base, root: receiptCa.root.certDer });
    portal = portalPeople(t);
    await portal.add("ada@acme.example", "admin", "acme");
    const dev = apple.addDeveloperKey(TEAM);
    const app = await portal.as("ada@acme.example", {
      method: "POST",
      url: "/portal/api/ios-apps",
      payload: { appId: DEMO_APP_ID, environment: "both", developerKey: { keyId: dev.keyId, privateKey: dev.privateKeyPem } },
    });
    assert.equal(app.statusCode, 200, app.body);
    assert.deepEqual(app.json().developerKey, { keyId: dev.keyId });
    const other = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: NO_KEY_APP, environment: "both" } });
    assert.equal(other.statusCode, 200, other.body);
  });
  after(async () => {
    await t?.close();
    await apple?.close();
  });

  it("attest → Yes at once (detail: not read yet) → the receipt refreshed in the background → the metric stored and shown", async () => {
    apple.riskMetric = 7;
    const c = client(t);
    let made: SimAppAttestKey | undefined;
    const att = await c.verdict(async (n) => {
      const a = await attestation(n);
      made = a.key;
      return a.blob;
    });
    key = made!;
    assert.equal(att.verdict, "Yes");
    assert.equal(att.fraudRisk.known, false);
    assert.match(String(att.fraudRisk.note), /^not read yet: .*background.*the verdict does not depend on it$/);

    await t.runtime.receiptRefreshes.idle();
    assert.equal(apple.seen.length, 1, "one request to Apple's service");
    assert.equal(apple.seen[0]!.prefix, "/production");
    assert.equal(apple.seen[0]!.claims?.iss, TEAM, "the JWT's issuer is the app id's team");
    const stored = await keyOf(key.keyId);
    assert.deepEqual(
      [stored.riskMetric, stored.riskMetricAt, stored.lastRefreshResult, stored.lastRefreshReason, stored.refreshDueAt],
      [7, new Date(T0).toISOString(), "refreshed", null, new Date(T0 + DAY).toISOString()],
      "the metric, when it was read, and the next refresh at the new receipt's not-before",
    );
    // the refreshed receipt replaced the attestation's
    const raw = await t.runtime.stores.durable.getAppAttestKey(t.tenant.tenantId, key.keyId);
    assert.notEqual(raw?.receipt, undefined);
    assert.equal(stored.receiptBytes, Buffer.from(raw!.receipt, "base64").length);

    // the page's keys list shows it
    const page = await portal.as("ada@acme.example", { url: "/portal/ios-apps" });
    const row = page.body.split("<tr>").find((r) => r.includes(key.keyId)) ?? "";
    assert.match(row, /<td data-label="Fraud-risk metric"><span[^>]*>7<\/span>/);

    // the next verdict's detail says the metric and when it was read; its verdict is the assertion's own
    clock.advance(60_000);
    const as = await c.verdict((n) => {
      const a = makeAppAttestAssertion(key, { nonce: n });
      key = a.key;
      return a.body;
    });
    assert.equal(as.verdict, "Yes");
    assert.deepEqual([as.fraudRisk.known, as.fraudRisk.riskMetric, as.fraudRisk.readAt], [true, 7, new Date(T0).toISOString()]);
    assert.match(String(as.fraudRisk.note), /informational: the verdict does not depend on it$/);
  });

  it("refreshed again once the receipt's not-before passed, not before; a failure keeps the metric and is said in detail", async () => {
    apple.riskMetric = 9;
    const c = client(t);
    const sweep = async () => {
      t.runtime.receiptRefreshes.nudge();
      await t.runtime.receiptRefreshes.idle();
    };
    clock.set(T0 + DAY - 1000);
    await sweep();
    assert.equal(apple.seen.length, 1, "not due yet: Apple is not asked");
    clock.set(T0 + DAY + 1000);
    await sweep();
    assert.equal(apple.seen.length, 2);
    assert.deepEqual([(await storedKey(key.keyId)).riskMetric, (await storedKey(key.keyId)).riskMetricAt], [9, new Date(T0 + DAY + 1000).toISOString()]);

    // a day on, Apple fails: the metric read before stays, the failure and the retry an hour on are stored
    clock.set(T0 + 2 * DAY + 2000);
    apple.faults.push({ status: 503, body: "down" });
    await sweep();
    const k = await storedKey(key.keyId);
    assert.deepEqual([k.riskMetric, k.lastRefreshResult, k.refreshDueAt], [9, "apple-error", new Date(T0 + 2 * DAY + 2000 + 3_600_000).toISOString()]);
    assert.match(k.lastRefreshReason!, /^not refreshed: Apple's App Attest receipt service failed \(503\)/);
    const as = await c.verdict((n) => {
      const a = makeAppAttestAssertion(key, { nonce: n });
      key = a.key;
      return a.body;
    });
    assert.equal(as.verdict, "Yes");
    assert.equal(as.fraudRisk.known, true);
    assert.deepEqual(as.fraudRisk.lastRefresh, { result: "apple-error", at: new Date(T0 + 2 * DAY + 2000).toISOString(), reason: k.lastRefreshReason });
  });

  it("a key of an app without a developer key is never sent to Apple; its verdicts say the metric is not read", async () => {
    const c = client(t);
    const before = apple.seen.length;
    let made: SimAppAttestKey | undefined;
    const att = await c.verdict(async (n) => {
      const a = await attestation(n, NO_KEY_APP);
      made = a.key;
      return a.blob;
    });
    assert.equal(att.verdict, "Yes");
    await t.runtime.receiptRefreshes.idle();
    clock.advance(10 * DAY);
    t.runtime.receiptRefreshes.nudge();
    await t.runtime.receiptRefreshes.idle();
    assert.equal(apple.seen.length - before, 1, "only the first key, due again, was sent");
    assert.ok(apple.seen.slice(before).every((s) => s.claims?.iss === TEAM));
    const k = await storedKey(made!.keyId);
    assert.deepEqual([k.riskMetric, k.lastRefreshResult], [null, null]);
    const as = await c.verdict((n) => makeAppAttestAssertion(made!, { nonce: n }).body);
    assert.equal(as.verdict, "Yes");
    assert.equal(as.fraudRisk.known, false);
    assert.match(String(as.fraudRisk.note), /^not read yet/);
  });
});

describe("App Attest receipt refresh without a network", () => {
  it("the refresh fails closed in the background; the verdicts stay Yes and detail says why the metric is missing", async () => {
    const ca = await makeAppAttestCa(new Date(T0));
    const clock = new ManualClock(T0);
    // no stand-in: Apple's real URLs, and the test runtime's fetch fails as without a network
    const t = await servedRuntime(ca, clock, undefined);
    try {
      const portal = portalPeople(t);
      await portal.add("ada@acme.example", "admin", "acme");
      const { generateKeyPairSync } = await import("node:crypto");
      const pem = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
      const app = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: DEMO_APP_ID, environment: "both", developerKey: { keyId: "KEY1234567", privateKey: pem } } });
      assert.equal(app.statusCode, 200, app.body);
      const c = client(t);
      let key: SimAppAttestKey | undefined;
      const att = await c.verdict(async (n) => {
        const a = await makeAppAttestAttestation(ca, { nonce: n, now: new Date(clock.nowMs()) });
        key = a.key;
        return a.blob;
      });
      assert.equal(att.verdict, "Yes");
      await t.runtime.receiptRefreshes.idle();
      const stored = await t.runtime.stores.durable.getAppAttestKey(t.tenant.tenantId, key!.keyId);
      assert.equal(stored?.lastRefreshResult, "unreachable");
      assert.equal(stored?.riskMetric, null);
      const as = await c.verdict((n) => makeAppAttestAssertion(key!, { nonce: n }).body);
      assert.equal(as.verdict, "Yes");
      assert.equal(as.fraudRisk.known, false);
      assert.match(String(as.fraudRisk.note), /^not refreshed: Apple's App Attest receipt service could not be reached .*; informational: the verdict does not depend on it$/);
      const metrics = await t.runtime.app.inject({ url: "/metrics" });
      assert.match(metrics.body, /^attestd_app_attest_receipt_refreshes_total\{result="unreachable"\} 1$/m);
    } finally {
      await t.close();
    }
  });
});

describe("AppAttestReceiptRefreshes: bounded, leased, stopped", () => {
  it("at most `concurrency` refreshes at once; every due key once; stop() waits for those under way and starts no more", async () => {
    const store = new MemoryDurableStore();
    const tenant = await store.createTenant({ tenantId: "t_a", name: "a", customerId: "1", kind: "customer", createdAt: new Date(T0).toISOString() });
    await store.addIosApp({ id: "ia_1", tenantId: tenant.tenantId, appId: DEMO_APP_ID, environment: "both", createdAt: new Date(T0).toISOString(), developerKeyId: "KEY1234567", sealedDeveloperKey: "sealed:v1:x" });
    const iso = new Date(T0).toISOString();
    for (let i = 0; i < 7; i++) {
      const keyId = Buffer.alloc(32, i + 1).toString("base64");
      await store.applyAppAttestEffect({
        kind: "attested",
        key: { tenantId: tenant.tenantId, keyId, appId: DEMO_APP_ID, publicKey: "", counter: 0, environment: "production", receipt: "", attestedAt: iso, lastAssertedAt: null, revokedAt: null, riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null, refreshDueAt: iso },
      });
    }
    let inFlight = 0;
    let most = 0;
    const asked: ReceiptRefreshRequest[] = [];
    const refresher = {
      refresh: async (req: ReceiptRefreshRequest): Promise<ReceiptRefresh> => {
        asked.push(req);
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 15));
        inFlight--;
        return { refreshed: false, result: "unreachable", reason: "not refreshed: no network" };
      },
    };
    const clock = new ManualClock(T0);
    const r = new AppAttestReceiptRefreshes({
      store,
      developerKeys: { developerKeyFor: async () => ({ teamId: TEAM, keyId: "KEY1234567", privateKeyPem: "" }) },
      refresher,
      clock,
      log: { warn: () => {} },
      concurrency: 2,
      batch: 3,
    });
    assert.equal(await r.sweep(), 7);
    assert.equal(most, 2, "never more than two at once");
    assert.equal(new Set(asked.map((a) => Buffer.from(a.credentialPublicKey!).toString("hex") + a.appId)).size >= 1, true);
    assert.equal(asked.length, 7, "each due key once");
    assert.equal(await r.sweep(), 0, "their next try is an hour on");
    const after = await store.listAppAttestKeys(tenant.tenantId, { limit: 10 });
    assert.ok(after.every((k) => k.lastRefreshResult === "unreachable" && k.refreshDueAt === new Date(T0 + 3_600_000).toISOString()));

    // stop() during a sweep: the refreshes under way finish, no further one starts; leases stand for the rest
    clock.set(T0 + 3_600_000);
    asked.length = 0;
    r.nudge();
    await new Promise((res) => setTimeout(res, 5));
    await r.stop();
    assert.equal(asked.length, 2, "the two under way, no more");
    const left = (await store.listAppAttestKeys(tenant.tenantId, { limit: 10 })).filter((k) => k.lastRefreshAt !== new Date(T0 + 3_600_000).toISOString());
    assert.equal(left.length, 5);
    assert.ok(left.some((k) => k.refreshDueAt === new Date(T0 + 3_600_000 + REFRESH_LEASE_MS).toISOString()), "the claimed batch's rest stays leased");
    r.nudge();
    await r.idle();
    assert.equal(asked.length, 2, "a stopped scheduler starts nothing");
  });
});
