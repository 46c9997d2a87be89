import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, createSecretKey } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { compactDecrypt, compactVerify } from "jose";
import { createPlayDevCa, makePlayIntegrityToken } from "../../src/attestation/sim/playIntegrity.ts";
import { startGooglePlayStandIn, type GoogleStandIn } from "../helpers/googlePlayStandIn.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { KEY_HEADER, offlineFetch, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { startOtlpReceiver, type ReceivedSpan } from "./otlpReceiver.ts";

/**
 * The outbound side of a trace (docs/traces.md): a Play Integrity token of an app registered with a service
 * account is opened by Google (a stand-in on 127.0.0.1), and each call to Google is a client span inside the
 * request's trace, under the token's opening, that names the host and the status and carries nothing of the token,
 * the grant or the access token; and no trace header reaches Google.
 */
describe("traces of the calls to Google while a Play Integrity token is opened", () => {
  const CLIENT = 3;
  const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
  const bank = createPlayDevCa({ packageName: "com.acme.bank" });
  let google: GoogleStandIn;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let t: TestRuntime;
  let spans: ReceivedSpan[];
  let token: string;
  let verdict: Record<string, string>;
  const sent: { url: string; headers: Headers }[] = [];

  before(async () => {
    receiver = await startOtlpReceiver();
    google = await startGooglePlayStandIn(() => t.clock.nowMs());
    // the network, which keeps what attestd sent: headers as they left, after tracing had its chance to add any
    const fetch: typeof globalThis.fetch = (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      // Google's status list at start-up: an offline machine's answer, so that no test reaches Google
      if (new URL(url).hostname !== "127.0.0.1") return offlineFetch(input, init);
      sent.push({ url, headers: new Headers(init?.headers) });
      return globalThis.fetch(input, init);
    };
    t = await startTestRuntime({ playOauthUrl: google.oauthUrl, playApiUrl: google.apiUrl, playDecodeRetries: 0, otlpEndpoint: receiver.url }, { fetch });
    google.openToken = async (tok, packageName) => {
      if (packageName !== bank.packageName) return undefined;
      const { plaintext } = await compactDecrypt(tok, createSecretKey(Buffer.from(bank.decryptionKey)));
      const pub = createPublicKey(createPrivateKey(bank.signingKey.export({ format: "pem", type: "pkcs8" })));
      const { payload } = await compactVerify(Buffer.from(plaintext).toString(), pub);
      return JSON.parse(Buffer.from(payload).toString()) as unknown;
    };
    const portal = portalPeople(t);
    await portal.add("ada@acme.example", "admin", "acme");
    const account = google.addAccount();
    const keyFile = JSON.stringify({
      type: "service_account",
      project_id: account.projectId,
      private_key_id: account.privateKeyId,
      private_key: account.privateKeyPem,
      client_email: account.clientEmail,
    });
    const reg = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/play-apps", payload: { packageName: bank.packageName, serviceAccount: keyFile } });
    assert.equal(reg.statusCode, 200, reg.body);

    const n = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
    token = await makePlayIntegrityToken(bank, { nonce: n, now: new Date(t.clock.nowMs()) });
    sent.length = 0;
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${n}`,
      headers: { [KEY_HEADER]: t.key, "content-type": "application/octet-stream", traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` },
      payload: Buffer.from(token),
    });
    assert.equal(res.statusCode, 200, res.body);
    verdict = res.json();
    await t.runtime.tracing!.flush();
    spans = receiver.spans;
  });
  after(async () => {
    await t?.close();
    await google?.close();
    await receiver?.close();
  });

  it("Google opened the token (the verdict is Yes)", () => {
    assert.equal(verdict.verdict, "Yes", JSON.stringify(verdict));
    assert.equal(google.counts.decodes, 1);
  });

  it("each call to Google is a client span under the token's opening, in the caller's trace", () => {
    const open = spans.find((s) => s.name === "play_integrity open");
    assert.ok(open, `spans: ${spans.map((s) => s.name).join(", ")}`);
    assert.equal(open.traceId, TRACE_ID);
    const calls = spans.filter((s) => s.kind === CLIENT && s.traceId === TRACE_ID);
    assert.equal(calls.length, 2, `the grant and the decode: ${JSON.stringify(calls.map((c) => c.attributes))}`);
    for (const c of calls) {
      assert.equal(c.parentSpanId, open.spanId);
      assert.equal(c.name, "POST");
      assert.equal(c.attributes["server.address"], "127.0.0.1");
      assert.equal(c.attributes["http.response.status_code"], 200);
    }
    const appraise = spans.find((s) => s.name === "appraise" && s.traceId === TRACE_ID);
    assert.equal(appraise?.attributes["attestd.appraisal.format"], "play-integrity");
  });

  it("no trace header went to Google", () => {
    assert.equal(sent.length, 2);
    for (const s of sent) {
      assert.equal(s.headers.get("traceparent"), null, s.url);
      assert.equal(s.headers.get("tracestate"), null, s.url);
    }
  });

  it("no span holds the token, the package, an access token or a path", () => {
    const secrets = [token.slice(0, 40), bank.packageName, ...google.issued, "decodeIntegrityToken", "/token"];
    for (const s of spans) {
      for (const [name, value] of Object.entries(s.attributes)) {
        for (const secret of secrets) assert.ok(!String(value).includes(secret), `${s.name} ${name} holds ${secret}`);
      }
    }
  });
});
