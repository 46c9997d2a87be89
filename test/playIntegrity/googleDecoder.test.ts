import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import type { PlayIntegrityEvidence } from "../../src/attestation/types.ts";
import type { GoogleServiceAccount, RegisteredPlayApp } from "../../src/domain/playApps.ts";
import { GooglePlayIntegrityDecoder, type PlayDecodeResult, type PlayIntegrityDecoderOptions } from "../../src/services/playIntegrityDecoder.ts";
import { T0 } from "../helpers/clock.ts";
import { startGooglePlayStandIn, type GoogleStandIn } from "../helpers/googlePlayStandIn.ts";
import { offlineFetch, startTestRuntime } from "../helpers/runtime.ts";

const PACKAGE = "com.example.game";

function appWith(account: GoogleServiceAccount | undefined, packageName = PACKAGE): RegisteredPlayApp {
  return {
    id: "pa_1",
    tenantId: "t_acme",
    policy: {
      packageName,
      certDigests: [],
      deviceFloor: "MEETS_DEVICE_INTEGRITY",
      maxAgeSeconds: 300,
      require: { licensed: false, playProtect: false, appAccessRisk: false },
    },
    ...(account ? { serviceAccount: account } : {}),
    createdAt: new Date(T0).toISOString(),
  };
}

const tokenFor = (pkg: string, n = "n1") => `token-for:${pkg}:${n}`;

/** what the decoder logged, as the JSON lines pino would write */
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
  warnings() {
    return this.lines.filter((l) => l.level === "warn");
  }
}

/** The reason of a token not opened: `decode-failed` (Google not asked, or failing), or `not-opened` when `why` says so. */
function failed(e: PlayIntegrityEvidence, why: "decode-failed" | "not-opened" = "decode-failed"): string {
  assert.equal(e.opened, false, `expected ${why}, got ${JSON.stringify(e)}`);
  assert.ok(!e.opened);
  assert.equal(e.why, why);
  return e.reason;
}

/** A tenant reads the reason: no URL, host or port, no key material. */
function assertTenantReadable(reason: string, account?: GoogleServiceAccount) {
  assert.doesNotMatch(reason, /https?:|127\.0\.0\.1|localhost|googleapis|:\d{2,5}\b|\/token|decodeIntegrityToken/, `reason names a place: ${reason}`);
  assert.doesNotMatch(reason, /PRIVATE KEY|ya29\./, `reason holds key material: ${reason}`);
  if (account) assert.ok(!reason.includes(account.privateKeyPem.split("\n")[5]!), "reason holds the private key");
}

describe("Google-side decoding of Play Integrity tokens", () => {
  let google: GoogleStandIn;
  let clock: ManualClock;
  let account: GoogleServiceAccount;
  let log: CapturedLog;
  let outcomes: PlayDecodeResult[];

  const decoder = (o: Partial<PlayIntegrityDecoderOptions> = {}) =>
    new GooglePlayIntegrityDecoder({
      oauthUrl: google.oauthUrl,
      apiUrl: google.apiUrl,
      fetch: globalThis.fetch,
      clock,
      log,
      timeoutMs: 2000,
      retries: 2,
      backoffMs: 5,
      onOutcome: (r) => outcomes.push(r),
      ...o,
    });

  before(async () => {
    clock = new ManualClock(T0);
    google = await startGooglePlayStandIn(() => clock.nowMs());
    account = google.addAccount("decoder@acme-play.iam.gserviceaccount.com", { keyId: "0123456789abcdef0123456789abcdef01234567" });
  });
  after(() => google.close());
  beforeEach(() => {
    clock.set(T0);
    google.counts = { grants: 0, decodes: 0, other: 0 };
    google.grantsSeen.length = 0;
    google.faults = { token: [], decode: [] };
    google.expiresIn = 3600;
    google.revokeAccessTokens();
    log = new CapturedLog();
    outcomes = [];
  });

  it("decodes: a JWT bearer grant as Google checks it, then decodeIntegrityToken for the package; the payload is Google's", async () => {
    const d = decoder();
    const e = await d.decode(tokenFor(PACKAGE), appWith(account));
    assert.equal(e.opened, true, JSON.stringify(e));
    assert.ok(e.opened);
    assert.equal(e.decodedBy, "google");
    assert.equal(e.app.packageName, PACKAGE);
    assert.deepEqual((e.payload as { requestDetails: unknown }).requestDetails, { requestPackageName: PACKAGE, nonce: "n1", timestampMillis: String(T0) });
    // the stand-in verified the signature with the account's public key; these are the claims it saw
    const [grant] = google.grantsSeen;
    assert.ok(grant);
    assert.deepEqual(grant.header, { alg: "RS256", typ: "JWT", kid: account.privateKeyId });
    assert.equal(grant.claims.iss, account.clientEmail);
    assert.equal(grant.claims.aud, google.oauthUrl);
    assert.equal(grant.claims.scope, "https://www.googleapis.com/auth/playintegrity");
    assert.equal(grant.claims.iat, T0 / 1000);
    assert.equal(grant.claims.exp, T0 / 1000 + 3600);
    assert.deepEqual(outcomes, ["decoded"]);
    assert.equal(log.warnings().length, 0);
  });

  it("a package name is escaped into the path", async () => {
    const e = await decoder().decode(tokenFor("com.example.a_b"), appWith(account, "com.example.a_b"));
    assert.equal(e.opened, true);
  });

  it("caches the access token: one grant for many decodes, a new one only as it nears its expiry", async () => {
    const d = decoder();
    for (let i = 0; i < 5; i++) assert.equal((await d.decode(tokenFor(PACKAGE, `n${i}`), appWith(account))).opened, true);
    assert.equal(google.counts.grants, 1);
    assert.equal(google.counts.decodes, 5);
    clock.advance(3000 * 1000); // 50 min of the hour: still in hand
    assert.equal((await d.decode(tokenFor(PACKAGE), appWith(account))).opened, true);
    assert.equal(google.counts.grants, 1);
    clock.advance(570 * 1000); // 30 s before Google's expiry: replaced, never sent as it expires in flight
    assert.equal((await d.decode(tokenFor(PACKAGE), appWith(account))).opened, true);
    assert.equal(google.counts.grants, 2);
    assert.equal(google.grantsSeen[1]?.claims.iat, (T0 + 3570 * 1000) / 1000, "the new assertion is dated by the clock");
  });

  it("a short-lived access token is renewed halfway, not kept past its end", async () => {
    google.expiresIn = 60;
    const d = decoder();
    await d.decode(tokenFor(PACKAGE), appWith(account));
    clock.advance(29_000);
    await d.decode(tokenFor(PACKAGE), appWith(account));
    assert.equal(google.counts.grants, 1);
    clock.advance(2_000);
    await d.decode(tokenFor(PACKAGE), appWith(account));
    assert.equal(google.counts.grants, 2);
  });

  it("concurrent decodes share one grant; each account has its own token", async () => {
    const d = decoder();
    const other = google.addAccount();
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => d.decode(tokenFor(PACKAGE, `c${i}`), appWith(account))),
      ...Array.from({ length: 4 }, (_, i) => d.decode(tokenFor("com.example.other", `o${i}`), appWith(other, "com.example.other"))),
    ]);
    assert.ok(results.every((r) => r.opened));
    assert.equal(google.counts.grants, 2, "one grant per account");
    assert.deepEqual(new Set(google.grantsSeen.map((g) => g.claims.iss)), new Set([account.clientEmail, other.clientEmail]));
  });

  it("a failed grant is not cached: the next decode asks again", async () => {
    const d = decoder({ retries: 0 });
    google.faults.token.push({ status: 503 });
    failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal((await d.decode(tokenFor(PACKAGE), appWith(account))).opened, true);
    assert.equal(google.counts.grants, 2);
  });

  it("a 401 for the access token: one fresh grant and one more try", async () => {
    const d = decoder();
    await d.decode(tokenFor(PACKAGE), appWith(account));
    google.revokeAccessTokens();
    const e = await d.decode(tokenFor(PACKAGE), appWith(account));
    assert.equal(e.opened, true);
    assert.equal(google.counts.grants, 2);
    assert.equal(google.counts.decodes, 3);
  });

  it("a 401 again with the fresh token: the account is refused, and no more is tried", async () => {
    const d = decoder();
    const refused = { status: 401, body: JSON.stringify({ error: { code: 401, status: "UNAUTHENTICATED" } }) };
    google.faults.decode.push(refused, refused, refused);
    const reason = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google refused the service account (401)");
    assert.equal(google.counts.grants, 2);
    assert.equal(google.counts.decodes, 2);
    assert.deepEqual(outcomes, ["account-refused"]);
  });

  it("5xx and 429 are tried again up to the bound, then decode-failed", async () => {
    const d = decoder({ retries: 2 });
    google.faults.decode.push({ status: 503 }, { status: 500 }, { status: 503 }, { status: 503 });
    const reason = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google's Play Integrity service failed (503) on 3 attempts");
    assert.equal(google.counts.decodes, 3, "the first attempt and two retries");
    assertTenantReadable(reason, account);

    google.counts.decodes = 0;
    google.faults.decode = [{ status: 429 }, { status: 429 }, { status: 429 }];
    const limited = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.match(limited, /^Google's Play Integrity service is limiting requests \(429\) on 3 attempts/);
    assert.equal(google.counts.decodes, 3);
    assert.deepEqual(outcomes, ["google-error", "google-error"]);
  });

  it("Retry-After: a short one is waited for, a long one ends the retries at once", async () => {
    const d = decoder({ retries: 2 });
    google.faults.decode.push({ status: 503, headers: { "retry-after": "1" } });
    const started = Date.now(); // wall time: the pause is a real timer
    assert.equal((await d.decode(tokenFor(PACKAGE), appWith(account))).opened, true);
    assert.ok(Date.now() - started >= 950, "waited the second Google asked for");
    assert.equal(google.counts.decodes, 2);

    google.counts.decodes = 0;
    google.faults.decode.push({ status: 429, headers: { "retry-after": "60" } });
    const reason = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.match(reason, /^Google's Play Integrity service is limiting requests \(429\):/);
    assert.equal(google.counts.decodes, 1, "a minute is longer than a request can wait: not tried again");
  });

  it("a 503 then an answer: the retry decodes", async () => {
    google.faults.decode.push({ status: 503 });
    google.faults.token.push({ status: 502 });
    const e = await decoder().decode(tokenFor(PACKAGE), appWith(account));
    assert.equal(e.opened, true);
    assert.equal(google.counts.grants, 2);
    assert.equal(google.counts.decodes, 2);
  });

  it("a 400 is not tried again: the token is not for this package or is malformed", async () => {
    const d = decoder();
    // Google read the token and refused it: the token is at fault (not-opened, a verdict No), not the decoding
    const reason = failed(await d.decode(tokenFor("com.example.another"), appWith(account)), "not-opened");
    assert.equal(reason, "Google answered 400: the token is not for this package or is malformed");
    assert.equal(google.counts.decodes, 1);
    assert.deepEqual(outcomes, ["token-refused"]);
    // the operator's warning has the URL, the status and the start of Google's answer
    const [w] = log.warnings();
    assert.ok(w);
    assert.match(w.msg, /Play Integrity decoding for com\.example\.game failed: http:\/\/127\.0\.0\.1:\d+\/v1\/com\.example\.game:decodeIntegrityToken answered HTTP 400/);
    assert.match(JSON.stringify(w.obj), /"status":400/);
    assert.match(JSON.stringify(w.obj), /developer error/);
  });

  it("403 says what to check in Google Cloud and the Play Console", async () => {
    google.faults.decode.push({ status: 403 });
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(account)));
    assert.match(reason, /^Google refused the service account \(403\): the Play Integrity API may not be enabled/);
    assert.equal(google.counts.decodes, 1);
  });

  it("a grant Google refuses (an account it does not know) says so, with the OAuth error code only", async () => {
    const stranger = { ...google.addAccount(), clientEmail: "unknown@elsewhere.iam.gserviceaccount.com" };
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(stranger)));
    assert.match(reason, /^Google refused the service account \(400 invalid_grant\)/);
    assert.equal(google.counts.grants, 1, "a refused grant is not retried");
    assert.equal(google.counts.decodes, 0);
    assertTenantReadable(reason, stranger);
  });

  it("a key that is not an RSA PKCS#8 key fails closed without a request", async () => {
    const broken = { ...account, privateKeyPem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" };
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(broken)));
    assert.match(reason, /private key could not be used/);
    assert.equal(google.counts.grants, 0);
  });

  it("an app without a service account is not sent to Google", async () => {
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(undefined)));
    assert.match(reason, /no Google service account/);
    assert.equal(google.counts.grants + google.counts.decodes, 0);
    assert.deepEqual(outcomes, ["no-account"]);
  });

  it("a server that never answers: each attempt times out, decode-failed quickly", async () => {
    google.faults.decode.push({ hang: true }, { hang: true });
    const d = decoder({ timeoutMs: 150, retries: 1 });
    const started = Date.now(); // wall time: the timeout is a real timer
    const reason = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    const took = Date.now() - started;
    assert.equal(reason, "Google's Play Integrity service could not be reached (timeout) on 2 attempts");
    assert.ok(took >= 300 && took < 2000, `took ${took} ms`);
    assert.equal(google.counts.decodes, 2);
    assert.deepEqual(outcomes, ["unreachable"]);
  });

  it("a redirect is refused, not followed (the bearer token stays home)", async () => {
    google.faults.decode.push({ redirect: `${google.apiUrl}/elsewhere` });
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google's Play Integrity service answered with a redirect, which attestd refuses");
    assert.equal(google.counts.other, 0, "nothing fetched where it pointed");
    assert.equal(google.counts.decodes, 1, "not retried");
    assert.match(log.warnings()[0]?.msg ?? "", /redirect refused: HTTP 302 to http:\/\/127\.0\.0\.1:\d+\/elsewhere/);
  });

  it("an oversized answer is refused", async () => {
    google.faults.decode.push({ body: JSON.stringify({ tokenPayloadExternal: { pad: "x".repeat(70 * 1024) } }) });
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google's Play Integrity service gave an answer larger than 64 KiB, which attestd refuses");
    assert.deepEqual(outcomes, ["bad-answer"]);
  });

  it("a malformed answer is refused: not JSON, no tokenPayloadExternal, a payload that is not an object", async () => {
    for (const body of ["<html>", JSON.stringify({ other: 1 }), JSON.stringify({ tokenPayloadExternal: [1] }), "null"]) {
      google.faults.decode.push({ body });
      const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(account)));
      assert.equal(reason, "Google's Play Integrity service gave an answer that is not a decoded token", body);
    }
  });

  it("a token answer that is not an access token is refused, and the body is not logged", async () => {
    google.faults.token.push({ body: JSON.stringify({ access_token: "ya29.secret-looking", expires_in: "soon" }) });
    const reason = failed(await decoder().decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google's sign-in service gave an answer that is not an access token");
    assert.doesNotMatch(log.text, /ya29\.secret-looking/);
  });

  it("nothing listening: could not be reached (connection refused)", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const d = decoder({ oauthUrl: `http://127.0.0.1:${port}/token`, apiUrl: `http://127.0.0.1:${port}`, retries: 1 });
    const reason = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google's sign-in service could not be reached (connection refused) on 2 attempts");
    assertTenantReadable(reason, account);
    assert.match(log.warnings()[0]?.msg ?? "", new RegExp(`http://127\\.0\\.0\\.1:${port}/token could not be reached: ECONNREFUSED`));
  });

  it("no network at all (the default URLs, offline): fails closed saying so", async () => {
    const d = new GooglePlayIntegrityDecoder({
      oauthUrl: "https://oauth2.googleapis.com/token",
      apiUrl: "https://playintegrity.googleapis.com",
      fetch: offlineFetch,
      clock,
      log,
      timeoutMs: 1000,
      retries: 1,
      backoffMs: 1,
    });
    const reason = failed(await d.decode(tokenFor(PACKAGE), appWith(account)));
    assert.equal(reason, "Google's sign-in service could not be reached (no network, or the name did not resolve) on 2 attempts");
    assertTenantReadable(reason, account);
  });

  it("stop(): a decode waiting on Google ends at once, closed", async () => {
    google.faults.decode.push({ hang: true });
    const d = decoder({ timeoutMs: 10_000 });
    const pending = d.decode(tokenFor(PACKAGE), appWith(account));
    while (google.counts.decodes === 0) await new Promise((r) => setTimeout(r, 5));
    d.stop();
    const reason = failed(await pending);
    assert.match(reason, /shutting down/);
    assert.deepEqual(outcomes, ["shutdown"]);
  });

  it("no reason names a URL or key material, and the private key and access tokens never reach the log", async () => {
    const d = decoder({ retries: 0 });
    const reasons: string[] = [];
    for (const f of [{ status: 400 }, { status: 403 }, { status: 404 }, { status: 500 }, { status: 429 }, { redirect: `${google.apiUrl}/x` }]) {
      google.faults.decode.push(f);
      const tokenRefused = "status" in f && (f.status === 400 || f.status === 404);
      reasons.push(failed(await d.decode(tokenFor(PACKAGE), appWith(account)), tokenRefused ? "not-opened" : "decode-failed"));
    }
    google.faults.token.push({ status: 401, body: JSON.stringify({ error: "invalid_client", error_description: `no ${google.oauthUrl}` }) });
    google.revokeAccessTokens();
    // the token endpoint's free text (which could say anything) is not repeated, its error code is
    const refused = failed(await d.decode(tokenFor(PACKAGE), appWith(google.addAccount())));
    assert.match(refused, /^Google refused the service account \(401 invalid_client\)/);
    reasons.push(refused);
    for (const r of reasons) assertTenantReadable(r, account);
    const keyBody = account.privateKeyPem.split("\n").slice(1, -2).join("");
    for (const line of account.privateKeyPem.split("\n").slice(1, -2)) assert.ok(!log.text.includes(line), "a line of the private key is in the log");
    assert.ok(!log.text.includes(keyBody.slice(0, 40)));
    for (const token of google.issued) assert.ok(!log.text.includes(token), "an access token is in the log");
    assert.ok(log.warnings().length >= 7);
  });

  it("the composition root builds the decoder from the flags, on the runtime's network", async () => {
    const t = await startTestRuntime({ playOauthUrl: google.oauthUrl, playApiUrl: google.apiUrl, playDecodeRetries: 0 }, { fetch: globalThis.fetch });
    try {
      const e = await t.runtime.playDecoder.decode(tokenFor(PACKAGE), appWith(account));
      assert.equal(e.opened, true);
      const metrics = await t.runtime.app.inject({ method: "GET", url: "/metrics" });
      assert.match(metrics.body, /^attestd_play_decodes_total\{result="decoded"\} 1$/m);
    } finally {
      await t.close();
    }
    const offline = await startTestRuntime();
    try {
      const reason = failed(await offline.runtime.playDecoder.decode(tokenFor(PACKAGE), appWith(account)));
      assert.match(reason, /could not be reached \(no network/);
    } finally {
      await offline.close();
    }
  });
});
