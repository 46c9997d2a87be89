import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import { createReceiptSigningCa, encodeReceiptContent, signAppAttestReceipt, type ReceiptSigningCa } from "../../src/attestation/sim/appAttestReceipt.ts";
import {
  AppleReceiptRefresher,
  describeRefresh,
  refreshDue,
  type AppleDeveloperKey,
  type ReceiptRefresh,
  type ReceiptRefresherOptions,
  type ReceiptRefreshRequest,
  type ReceiptRefreshResult,
} from "../../src/services/appAttestReceiptRefresher.ts";
import { startAppleReceiptStandIn, type AppleReceiptStandIn } from "../helpers/appleReceiptStandIn.ts";
import { T0 } from "../helpers/clock.ts";
import { offlineFetch, startTestRuntime } from "../helpers/runtime.ts";
import { loadConfig } from "../../src/config.ts";

const APP = "ABCDE12345.com.example.wallet";

class CapturedLog {
  lines: { level: string; obj: object; msg: string }[] = [];
  warn(obj: object, msg: string) {
    this.lines.push({ level: "warn", obj, msg });
  }
  debug(obj: object, msg: string) {
    this.lines.push({ level: "debug", obj, msg });
  }
  get text(): string {
    return this.lines.map((l) => JSON.stringify({ ...l.obj, msg: l.msg })).join("\n");
  }
}

function notRefreshed(r: ReceiptRefresh, result: ReceiptRefreshResult): string {
  assert.equal(r.refreshed, false, `expected ${result}, got ${JSON.stringify(r)}`);
  assert.ok(!r.refreshed);
  assert.equal(r.result, result);
  assert.match(r.reason, /^not refreshed: /);
  // a tenant reads it: no place, no key material
  assert.doesNotMatch(r.reason, /https?:|127\.0\.0\.1|:\d{2,5}\b|attestationData|PRIVATE KEY|eyJ/, r.reason);
  return r.reason;
}

describe("App Attest receipt refresh against a stand-in of Apple's service", () => {
  let ca: ReceiptSigningCa;
  let apple: AppleReceiptStandIn;
  let clock: ManualClock;
  let log: CapturedLog;
  let outcomes: ReceiptRefreshResult[];
  let developerKey: AppleDeveloperKey;
  let credential: Uint8Array;
  let attestReceipt: Uint8Array;

  before(async () => {
    ca = await createReceiptSigningCa({ now: new Date(T0) });
    credential = (await createReceiptSigningCa({ now: new Date(T0) })).leaf.certDer;
    attestReceipt = signAppAttestReceipt(
      ca,
      encodeReceiptContent({ type: "ATTEST", appId: APP, attestedCertificate: credential, environment: "sandbox", createdAt: new Date(T0 - 60_000) }),
    );
    clock = new ManualClock(T0);
    apple = await startAppleReceiptStandIn(ca, () => clock.nowMs());
    developerKey = apple.addDeveloperKey("ABCDE12345");
  });
  after(() => apple.close());
  beforeEach(() => {
    clock.set(T0);
    log = new CapturedLog();
    outcomes = [];
    apple.faults.length = 0;
    apple.seen.length = 0;
    apple.riskMetric = 1;
    delete apple.signWith;
    delete apple.answerForCertificate;
  });

  const refresher = (o: Partial<ReceiptRefresherOptions> = {}) =>
    new AppleReceiptRefresher({
      productionUrl: `${apple.base}/production`,
      developmentUrl: `${apple.base}/development/`,
      fetch: globalThis.fetch,
      clock,
      log,
      timeoutMs: 2000,
      retries: 2,
      backoffMs: 10,
      roots: [ca.root.certDer],
      onOutcome: (r) => outcomes.push(r),
      ...o,
    });
  const request = (o: Partial<ReceiptRefreshRequest> = {}): ReceiptRefreshRequest =>
    ({ receipt: attestReceipt, appId: APP, credentialCertificate: credential, environment: "development", developerKey, ...o }) as ReceiptRefreshRequest;

  it("refreshes: the new receipt verifies as a RECEIPT for the key, and its risk metric is read", async () => {
    apple.riskMetric = 4;
    const r = await refresher().refresh(request());
    assert.ok(r.refreshed, JSON.stringify(r));
    assert.equal(r.riskMetric, 4);
    assert.equal(r.record.type, "RECEIPT");
    assert.equal(r.record.appId, APP);
    assert.equal(r.record.notBefore?.getTime(), T0 + 86_400_000);
    assert.deepEqual(outcomes, ["refreshed"]);
    // the request as Apple takes it: the JWT alone in Authorization, ES256, kid, iss = team, iat = now
    const seen = apple.seen[0]!;
    assert.equal(seen.prefix, "/development");
    assert.doesNotMatch(seen.authorization, /^Bearer /);
    assert.deepEqual(seen.header, { alg: "ES256", kid: developerKey.keyId });
    assert.equal(seen.claims?.iss, "ABCDE12345");
    assert.equal(seen.claims?.iat, T0 / 1000);
    assert.deepEqual(describeRefresh(r), {
      refreshed: true,
      result: "refreshed",
      riskMetric: 4,
      note: "Apple's fraud-risk metric: 4 (keys attested for this app on the device in the last 30 days); informational, the verdict does not depend on it",
    });
  });

  it("refreshDue: not before the kept receipt's not-before, not after its expiry", async () => {
    const r = await refresher().refresh(request());
    assert.ok(r.refreshed);
    assert.equal(refreshDue(r.record, T0), false);
    assert.equal(refreshDue(r.record, T0 + 86_400_000), true);
    assert.equal(refreshDue(r.record, T0 + 90 * 86_400_000), false);
    assert.equal(refreshDue({ expiresAt: new Date(T0 + 1) }, T0), true, "an attestation's receipt has no not-before");
  });

  it("a stored key gives its public key instead of its certificate", async () => {
    const jwk = new X509Certificate(credential).publicKey.export({ format: "jwk" });
    const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
    const r = await refresher().refresh({ receipt: attestReceipt, appId: APP, credentialPublicKey: point, environment: "development", developerKey });
    assert.ok(r.refreshed, JSON.stringify(r));
  });

  it("production keys go to the production service", async () => {
    const r = await refresher().refresh(request({ environment: "production" }));
    assert.ok(r.refreshed);
    assert.equal(apple.seen[0]!.prefix, "/production");
  });

  it("before the kept receipt's not-before, Apple answers 304: not-modified, no warning", async () => {
    const first = await refresher().refresh(request());
    assert.ok(first.refreshed);
    const again = await refresher().refresh(request({ receipt: first.receipt }));
    notRefreshed(again, "not-modified");
    assert.equal(log.lines.filter((l) => l.level === "warn").length, 0);
    clock.advance(86_400_000 + 1000);
    apple.riskMetric = 9;
    const later = await refresher().refresh(request({ receipt: first.receipt }));
    assert.ok(later.refreshed);
    assert.equal(later.riskMetric, 9);
  });

  it("no network: not refreshed, and detail says the verdict does not depend on it", async () => {
    const r = await refresher({ fetch: offlineFetch }).refresh(request());
    const reason = notRefreshed(r, "unreachable");
    assert.match(reason, /could not be reached \(no network, or the name did not resolve\) on 3 attempts/);
    assert.deepEqual(outcomes, ["unreachable"]);
    assert.equal(describeRefresh(r).note, `${reason}; the verdict does not depend on it`);
    assert.match(log.text, /ENOTFOUND/);
  });

  it("the service down (connection refused): retried, then unreachable", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const r = await refresher({ productionUrl: `http://127.0.0.1:${port}`, developmentUrl: `http://127.0.0.1:${port}`, retries: 1 }).refresh(request());
    assert.match(notRefreshed(r, "unreachable"), /connection refused\) on 2 attempts/);
  });

  it("a slow service: each attempt times out, bounded by the retries", async () => {
    apple.faults.push({ hang: true }, { hang: true });
    const started = Date.now();
    const r = await refresher({ timeoutMs: 150, retries: 1 }).refresh(request());
    assert.match(notRefreshed(r, "unreachable"), /\(timeout\) on 2 attempts/);
    assert.equal(apple.seen.length, 2);
    assert.ok(Date.now() - started < 5000);
  });

  it("503 then an answer: refreshed on the second attempt; 429 with a long Retry-After ends at once", async () => {
    apple.faults.push({ status: 503 });
    const r = await refresher().refresh(request());
    assert.ok(r.refreshed);
    assert.equal(apple.seen.length, 2);

    apple.seen.length = 0;
    apple.faults.push({ status: 429, headers: { "retry-after": "60" } });
    notRefreshed(await refresher().refresh(request()), "apple-error");
    assert.equal(apple.seen.length, 1);

    apple.seen.length = 0;
    apple.faults.push({ status: 500 }, { status: 502 }, { status: 503 });
    assert.match(notRefreshed(await refresher().refresh(request()), "apple-error"), /failed \(503\) on 3 attempts/);
    assert.equal(apple.seen.length, 3);
  });

  it("a key Apple does not know: credentials-refused, not retried; a key that is not P-256 PKCS#8 is not sent", async () => {
    const stranger = { ...developerKey, keyId: "UNKNOWN123" };
    notRefreshed(await refresher().refresh(request({ developerKey: stranger })), "credentials-refused");
    assert.equal(apple.seen.length, 1);
    apple.seen.length = 0;
    notRefreshed(await refresher().refresh(request({ developerKey: { ...developerKey, privateKeyPem: "not a key" } })), "credentials-refused");
    assert.equal(apple.seen.length, 0);
  });

  it("a receipt Apple refuses (400): receipt-refused, not retried", async () => {
    const garbage = new Uint8Array(Buffer.from("not a receipt"));
    notRefreshed(await refresher().refresh(request({ receipt: garbage })), "receipt-refused");
    assert.equal(apple.seen.length, 1);
  });

  it("no developer key: nothing is sent", async () => {
    const r = await refresher().refresh(request({ developerKey: undefined }));
    notRefreshed(r, "no-credentials");
    assert.equal(apple.seen.length, 0);
  });

  it("answers that are not a receipt for this key are refused: another CA, another certificate, not base64, a redirect", async () => {
    apple.signWith = await createReceiptSigningCa({ now: new Date(T0) });
    const forged = await refresher().refresh(request());
    assert.match(notRefreshed(forged, "bad-answer"), /does not verify \(untrusted-signer\)/);
    assert.ok(!forged.refreshed && forged.receiptFailure === "untrusted-signer");
    delete apple.signWith;

    apple.answerForCertificate = ca.intermediate.certDer;
    const other = await refresher().refresh(request());
    assert.ok(!other.refreshed && other.receiptFailure === "certificate-mismatch");
    delete apple.answerForCertificate;

    apple.faults.push({ body: "<html>maintenance</html>" });
    assert.match(notRefreshed(await refresher().refresh(request()), "bad-answer"), /not a base64 receipt/);
    apple.faults.push({ redirect: "http://127.0.0.1:1/elsewhere" });
    assert.match(notRefreshed(await refresher().refresh(request()), "bad-answer"), /redirect/);
    assert.equal(apple.seen.length, 4);
  });

  it("never logs the JWT or the key", async () => {
    apple.faults.push({ status: 500 }, { status: 500 }, { status: 500 });
    await refresher().refresh(request());
    const jwt = apple.seen[0]!.authorization;
    assert.ok(jwt.length > 20);
    assert.ok(!log.text.includes(jwt));
    assert.ok(!log.text.includes(developerKey.privateKeyPem.split("\n")[1]!));
    assert.match(log.text, /answered HTTP 500/);
  });

  it("stop(): a refresh waiting on Apple ends as shutdown", async () => {
    apple.faults.push({ hang: true });
    const r = refresher({ timeoutMs: 10_000 });
    const pending = r.refresh(request());
    await new Promise((resolve) => setTimeout(resolve, 100));
    r.stop();
    notRefreshed(await pending, "shutdown");
  });

  it("the composition root builds the refresher from the flags; offline it counts unreachable in /metrics", async () => {
    const t = await startTestRuntime(
      { appAttestReceiptUrl: `${apple.base}/flag-production`, appAttestReceiptDevelopmentUrl: `${apple.base}/flag-development`, appAttestReceiptRetries: 0 },
      { fetch: globalThis.fetch },
    );
    try {
      // the stand-in's answer is signed by the test CA, which the runtime (trusting Apple's root alone) refuses
      const r = await t.runtime.receiptRefresher.refresh(request());
      assert.ok(!r.refreshed && r.receiptFailure === "untrusted-signer");
      assert.equal(apple.seen[0]!.prefix, "/flag-development");
      const metrics = await t.runtime.app.inject({ method: "GET", url: "/metrics" });
      assert.match(metrics.body, /^attestd_app_attest_receipt_refreshes_total\{result="bad-answer"\} 1$/m);
    } finally {
      await t.close();
    }
    const offline = await startTestRuntime({ appAttestReceiptRetries: 0 });
    try {
      notRefreshed(await offline.runtime.receiptRefresher.refresh(request()), "unreachable");
      const metrics = await offline.runtime.app.inject({ method: "GET", url: "/metrics" });
      assert.match(metrics.body, /^attestd_app_attest_receipt_refreshes_total\{result="unreachable"\} 1$/m);
    } finally {
      await offline.close();
    }
  });
});

describe("--app-attest-receipt-url and its siblings", () => {
  it("default to Apple's services; a stand-in must be on a loopback address", () => {
    const c = loadConfig({}, {});
    assert.equal(c.appAttestReceiptUrl, "https://data.appattest.apple.com");
    assert.equal(c.appAttestReceiptDevelopmentUrl, "https://data-development.appattest.apple.com");
    assert.equal(c.appAttestReceiptTimeoutMs, 5000);
    assert.equal(c.appAttestReceiptRetries, 2);
    assert.equal(loadConfig({ appAttestReceiptUrl: "http://127.0.0.1:9999" }, {}).appAttestReceiptUrl, "http://127.0.0.1:9999");
    assert.throws(() => loadConfig({ appAttestReceiptUrl: "http://data.example" }, {}), /--app-attest-receipt-url http:\/\/data.example must be an https URL/);
    assert.throws(() => loadConfig({ appAttestReceiptDevelopmentUrl: "ftp://x" }, {}), /--app-attest-receipt-development-url/);
    assert.throws(() => loadConfig({ appAttestReceiptRetries: 9 }, {}), /app-attest-receipt-retries/);
  });
});
