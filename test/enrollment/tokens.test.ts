import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { SignJWT } from "jose";
import { accessTokenRequest, apiToken, signClientJwt } from "../../src/enrollment/clientJwt.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { pluck } from "../../src/store/sqlite/database.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { assertPartBError, Harness } from "./harness.ts";
import { testActor } from "../helpers/audit.ts";

const BAD = catalog.ACCESS_TOKEN_BAD_REQUEST;

describe("Part B token flow", () => {
  let h: Harness;
  before(async () => {
    h = await Harness.start();
  });
  after(() => h.close());

  const get = (header: string) => h.app.inject({ method: "GET", url: "/svc/v1/resellers", headers: { "x-vendor-apitoken": header } });

  it("issues an access token that works with a fresh x-vendor-apitoken per call", async () => {
    const s = await h.session();
    const res = await s.call("GET", "/svc/v1/resellers");
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { resellers: [] });
    assert.ok(res.headers["ratelimit"], "rate-limit headers on Part B responses");
  });

  it("stores neither the access token nor the client identifier, only hashes of their secrets", async () => {
    const s = await h.session();
    const tokenSecret = s.token.split(".")[1]!;
    const identifierSecret = s.keys.Identifier.split(".")[1]!;
    const dump = JSON.stringify([
      h.sqlite.db.prepare("SELECT * FROM enroll_access_tokens").all(),
      h.sqlite.db.prepare("SELECT * FROM enroll_clients").all(),
    ]);
    assert.ok(!dump.includes(tokenSecret), "token secret not stored");
    assert.ok(!dump.includes(identifierSecret), "identifier secret not stored");
    assert.ok(!dump.includes(s.keys.Private), "private key not stored");
  });

  it("refuses a replayed x-vendor-apitoken (same jti)", async () => {
    const s = await h.session();
    const header = await apiToken(s.keys, s.token, { nowMs: h.clock.nowMs() });
    assert.equal((await get(header)).statusCode, 200);
    const replay = assertPartBError(await get(header), BAD);
    assert.match(replay.data!, /jti was already used/);
  });

  it("refuses a replayed access-token request", async () => {
    const { keys } = await h.client(await h.tenant());
    const body = await accessTokenRequest(keys, { nowMs: h.clock.nowMs() });
    assert.equal((await h.requestToken(body)).statusCode, 200);
    assertPartBError(await h.requestToken(body), BAD);
  });

  it("keeps jti namespaces per client", async () => {
    const a = await h.session();
    const b = await h.session();
    const jti = "shared-jti-1";
    assert.equal((await get(await apiToken(a.keys, a.token, { nowMs: h.clock.nowMs(), jti }))).statusCode, 200);
    assert.equal((await get(await apiToken(b.keys, b.token, { nowMs: h.clock.nowMs(), jti }))).statusCode, 200);
  });

  it("expires access tokens after their validity", async () => {
    const tenant = await h.tenant();
    const { keys } = await h.client(tenant);
    const token = await h.accessToken(keys, 1);
    assert.equal((await h.callWith(keys, token, "GET", "/svc/v1/resellers")).statusCode, 200);
    h.clock.advance(59_999);
    assert.equal((await h.callWith(keys, token, "GET", "/svc/v1/resellers")).statusCode, 200);
    h.clock.advance(1);
    const body = assertPartBError(await h.callWith(keys, token, "GET", "/svc/v1/resellers"), BAD);
    assert.match(body.data!, /unknown or expired/);
    // a new token is fine
    const fresh = await h.accessToken(keys, 1);
    assert.equal((await h.callWith(keys, fresh, "GET", "/svc/v1/resellers")).statusCode, 200);
  });

  it("accepts validity 1..30 minutes only; another is a body error (400), not an authentication failure", async () => {
    const { keys } = await h.client(await h.tenant());
    for (const v of [0, 31, 1.5, -1, 1e9]) {
      const body = { ...(await accessTokenRequest(keys, { nowMs: h.clock.nowMs() })), validityForAccessTokenInMinutes: v };
      assertPartBError(await h.requestToken(body), catalog.RESOURCE_INVALID_PARAM, `validity ${v}`);
    }
    const wrongType = { ...(await accessTokenRequest(keys, { nowMs: h.clock.nowMs() })), validityForAccessTokenInMinutes: "30" };
    assertPartBError(await h.requestToken(wrongType), catalog.RESOURCE_INVALID_PARAM, "validity as a string");
    const { validityForAccessTokenInMinutes: _omit, ...noValidity } = await accessTokenRequest(keys, { nowMs: h.clock.nowMs() });
    const res = await h.requestToken(noValidity);
    assert.equal(res.statusCode, 200, "validity defaults to 30");
    const token = res.json().accessToken as string;
    const row = h.sqlite.db.prepare("SELECT expires_at_ms FROM enroll_access_tokens WHERE token_id = ?").get(token.split(".")[0]!) as {
      expires_at_ms: number;
    };
    assert.equal(row.expires_at_ms, h.clock.nowMs() + 30 * 60_000);
  });

  it("refuses an x-vendor-apitoken older than 5 minutes or issued in the future", async () => {
    const s = await h.session();
    const now = h.clock.nowMs();
    assertPartBError(await get(await apiToken(s.keys, s.token, { nowMs: now - 301_000 - 60_000 })), BAD, "too old");
    assertPartBError(await get(await apiToken(s.keys, s.token, { nowMs: now + 120_000 })), BAD, "future");
    assert.equal((await get(await apiToken(s.keys, s.token, { nowMs: now - 200_000 }))).statusCode, 200, "within age");
  });

  it("refuses wrong audience, wrong key, wrong algorithm and a mismatched publicKey claim", async () => {
    const s = await h.session();
    const other = await h.session();
    const nowMs = h.clock.nowMs();
    const claims = { accessToken: s.token, publicKey: s.keys.Public };
    const aud = assertPartBError(await get(await signClientJwt(s.keys.Private, claims, { nowMs, audience: "Other" })), BAD);
    assert.match(aud.data!, /audience/);
    assertPartBError(await get(await signClientJwt(other.keys.Private, claims, { nowMs })), BAD, "signed by another client's key");
    assertPartBError(
      await get(await signClientJwt(s.keys.Private, { accessToken: s.token, publicKey: other.keys.Public }, { nowMs })),
      BAD,
      "publicKey claim of another client",
    );
    const rs256 = await new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256" })
      .setAudience("VendorWSM")
      .setJti("rs256")
      .setIssuedAt(Math.floor(nowMs / 1000))
      .sign(createPrivateKey({ key: Buffer.from(s.keys.Private, "base64"), format: "der", type: "pkcs8" }));
    assertPartBError(await get(rs256), BAD, "RS256");
    assertPartBError(await get(await signClientJwt(s.keys.Private, { accessToken: "at_x.y", publicKey: s.keys.Public }, { nowMs })), BAD);
  });

  it("refuses an access-token request with a wrong identifier secret, another key, or a far exp", async () => {
    const { keys } = await h.client(await h.tenant());
    const other = await h.client(await h.tenant());
    const nowMs = h.clock.nowMs();
    const forged = keys.Identifier.slice(0, -4) + (keys.Identifier.endsWith("AAAA") ? "BBBB" : "AAAA");
    const jwt = await signClientJwt(keys.Private, { clientIdentifier: forged, publicKey: keys.Public }, { nowMs, expiresInSec: 60 });
    assertPartBError(await h.requestToken({ clientIdentifierJwt: jwt, base64EncodedStringPublicKey: keys.Public }), BAD, "forged identifier");

    const good = await accessTokenRequest(keys, { nowMs });
    assertPartBError(await h.requestToken({ ...good, base64EncodedStringPublicKey: other.keys.Public }), BAD, "other key in body");

    const stolen = await signClientJwt(other.keys.Private, { clientIdentifier: keys.Identifier, publicKey: keys.Public }, { nowMs, expiresInSec: 60 });
    assertPartBError(await h.requestToken({ clientIdentifierJwt: stolen, base64EncodedStringPublicKey: keys.Public }), BAD, "identifier without the key");

    const far = await signClientJwt(keys.Private, { clientIdentifier: keys.Identifier, publicKey: keys.Public }, { nowMs, expiresInSec: 7200 });
    assertPartBError(await h.requestToken({ clientIdentifierJwt: far, base64EncodedStringPublicKey: keys.Public }), BAD, "exp 2 h ahead");

    const expired = await signClientJwt(keys.Private, { clientIdentifier: keys.Identifier, publicKey: keys.Public }, { nowMs: nowMs - 600_000, expiresInSec: 300 });
    assertPartBError(await h.requestToken({ clientIdentifierJwt: expired, base64EncodedStringPublicKey: keys.Public }), BAD, "expired");

    assertPartBError(await h.requestToken({ clientIdentifierJwt: "x" }), BAD, "malformed body");
    assertPartBError(
      await h.app.inject({ method: "POST", url: "/svc/v1/auth/accesstoken", payload: "a=b", headers: { "content-type": "application/x-www-form-urlencoded" } }),
      BAD,
      "not JSON",
    );
  });

  /** what a caller learns of a refusal: everything but the errorId */
  const answer = (res: Awaited<ReturnType<typeof get>>) => {
    const { errorId: _id, ...rest } = assertPartBError(res, BAD);
    return { status: res.statusCode, ...rest };
  };
  const loggedReason = async (res: Awaited<ReturnType<typeof get>>) => (await h.activityFor(res.json().errorId))?.reason;
  /** the same id shape with another secret (the last characters changed) */
  const otherSecret = (token: string) => token.slice(0, -4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA");

  it("answers a JWT signed by a foreign key alike for a real and a wrong client identifier; the real reason is logged", async () => {
    const { keys } = await h.client(await h.tenant());
    const thief = await h.client(await h.tenant()); // a key of the thief's own, not the client's
    const nowMs = h.clock.nowMs();
    const forged = (clientIdentifier: string) =>
      signClientJwt(thief.keys.Private, { clientIdentifier, publicKey: keys.Public }, { nowMs, expiresInSec: 60 });
    const identifiers = [keys.Identifier, otherSecret(keys.Identifier), `cl_${"a".repeat(16)}.${"A".repeat(43)}`, "cl_not-an-identifier"];
    const responses = [];
    for (const id of identifiers) {
      responses.push(await h.requestToken({ clientIdentifierJwt: await forged(id), base64EncodedStringPublicKey: keys.Public }));
    }
    const answers = responses.map(answer);
    for (const [i, a] of answers.entries()) assert.deepEqual(a, answers[0], `identifier ${i} answers as the real one`);

    const reasons = await Promise.all(responses.map(loggedReason));
    assert.match(reasons[0]!, /signature does not verify/, "the operator sees why");
    const cli = attestdCli(["activity", `--error-id=${responses[0]!.json().errorId}`, "--data-dir", h.dataDir]);
    assert.equal(cli.status, 0, cli.stderr);
    assert.equal(JSON.parse(cli.stdout).reason, reasons[0], "attestd activity --error-id shows it");
    assert.equal(new Set(reasons).size, reasons.length, `each refusal logs its own reason: ${reasons.join(" | ")}`);
    assert.ok(!reasons.includes(answers[0]!.data!), "the log has more than the client got");
  });

  it("answers a JWT signed by a foreign key alike for a real, a wrong and an expired access token; the real reason is logged", async () => {
    const s = await h.session();
    const expiring = await h.accessToken(s.keys, 1);
    const thief = await h.client(await h.tenant());
    const nowMs = h.clock.nowMs();
    const forged = (accessToken: string, now = nowMs) => signClientJwt(thief.keys.Private, { accessToken, publicKey: s.keys.Public }, { nowMs: now });
    h.clock.advance(61_000); // `expiring` is past its minute now
    const tokens = [s.token, otherSecret(s.token), `at_${"b".repeat(16)}.${"A".repeat(43)}`, expiring];
    const responses = [];
    for (const t of tokens) responses.push(await get(await forged(t, h.clock.nowMs())));
    const answers = responses.map(answer);
    for (const [i, a] of answers.entries()) assert.deepEqual(a, answers[0], `token ${i} answers as the real one`);
    // and the holder of the key with an expired token gets the same answer too
    assert.deepEqual(answer(await get(await apiToken(s.keys, expiring, { nowMs: h.clock.nowMs() }))), answers[0]);

    const reasons = await Promise.all(responses.map(loggedReason));
    assert.match(reasons[0]!, /signature does not verify/);
    assert.equal(new Set(reasons).size, reasons.length, `each refusal logs its own reason: ${reasons.join(" | ")}`);
  });

  it("kills a client's tokens with the client", async () => {
    const s = await h.session();
    assert.equal((await s.call("GET", "/svc/v1/resellers")).statusCode, 200);
    assert.equal(await h.store.deleteClient(s.client.clientId), true);
    assertPartBError(await s.call("GET", "/svc/v1/resellers"), BAD);
    const left = pluck(h.sqlite.db.prepare("SELECT COUNT(*) FROM enroll_access_tokens WHERE client_id = ?")).get(s.client.clientId);
    assert.equal(left, 0);
  });

  it("lets a read-only client read but not write", async () => {
    const s = await h.session({ readOnly: true });
    assert.equal((await s.call("GET", "/svc/v1/enroll/profiles")).statusCode, 200);
    assertPartBError(await s.call("POST", "/svc/v1/enroll/profiles", { name: "x" }), catalog.B_FORBIDDEN);
    assertPartBError(await s.call("DELETE", "/svc/v1/enroll/profiles/pr_aaaaaaaaaaaaaaaa"), catalog.B_FORBIDDEN);
  });

  it("admits a reseller once the operator enables enrollment, and a user registered again", async () => {
    const reseller = await h.tenant({ kind: "reseller" });
    const { keys } = await h.client(reseller, { email: "r@example.com" });
    assertPartBError(await h.requestToken(await accessTokenRequest(keys, { nowMs: h.clock.nowMs() })), catalog.RESELLER_BLOCKED);
    await h.sqlite.setEnrollmentEnabled(reseller.name, true);
    const token = await h.accessToken(keys);
    await h.enrollment.clients.deregisterUser(reseller, "r@example.com", testActor());
    assertPartBError(await h.callWith(keys, token, "GET", "/svc/v1/resellers"), catalog.USER_AUTHENTICATION_FAIL);
    await h.enrollment.clients.registerUser(reseller, "r@example.com", testActor());
    assert.equal((await h.callWith(keys, token, "GET", "/svc/v1/resellers")).statusCode, 200);
  });
});
