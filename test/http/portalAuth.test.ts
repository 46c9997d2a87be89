import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { SESSION_COOKIE, sha256 } from "../../src/portal/sessions.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { SoftAuthenticator } from "../helpers/softAuthenticator.ts";
import { testActor } from "../helpers/audit.ts";

const PASSWORD = "a long and unusual passphrase";
// The configured public URL. Under inject the request's protocol is http, so the sign-in Origin check and the
// passkeys' origin are both http://portal.test:8443 here; a real server is https (test/browser/).
const ORIGIN = "http://portal.test:8443";
const SITE = { host: "portal.test:8443", origin: ORIGIN };

interface Who {
  email: string;
  cookie: string;
  csrf: string;
}

let addressSeq = 0;
/** every sign-in from its own address, so the per-address limit is only met where a test means to meet it */
const freshAddress = () => `10.1.${Math.floor(++addressSeq / 250)}.${addressSeq % 250}`;

function portalHelpers(get: () => TestRuntime) {
  const inject = (o: { method?: string; url: string; payload?: object; who?: Who; csrf?: string | false; headers?: Record<string, string>; remoteAddress?: string }) => {
    const csrf = o.csrf === undefined ? o.who?.csrf : o.csrf;
    return get().runtime.app.inject({
      method: (o.method ?? "GET") as "GET",
      url: o.url,
      headers: { ...SITE, ...(csrf ? { "x-csrf-token": csrf } : {}), ...o.headers },
      ...(o.who ? { cookies: { [SESSION_COOKIE]: o.who.cookie } } : {}),
      ...(o.payload ? { payload: o.payload } : {}),
      ...(o.remoteAddress ? { remoteAddress: o.remoteAddress } : {}),
    });
  };

  /** the session's cookie and the CSRF token its pages carry */
  async function sessionOf(res: LightMyRequestResponse, email: string): Promise<Who> {
    assert.equal(res.statusCode, 200, res.body);
    const cookie = res.cookies.find((c) => c.name === SESSION_COOKIE)!.value;
    const page = await inject({ url: "/portal/account", who: { email, cookie, csrf: "" } });
    assert.equal(page.statusCode, 200, page.body);
    return { email, cookie, csrf: /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)![1]! };
  }

  async function signIn(email: string): Promise<Who> {
    const res = await inject({ method: "POST", url: "/portal/api/session", payload: { email, password: PASSWORD }, remoteAddress: freshAddress() });
    return sessionOf(res, email);
  }

  /** an active person with a password, signed in */
  async function person(email: string, role: "admin" | "viewer" | "operator", tenant?: string): Promise<Who> {
    const { accounts } = get().runtime.portal;
    const inv = await accounts.invite({ email, role, ...(tenant ? { tenant } : {}) }, testActor());
    await accounts.acceptInvite(inv.token, PASSWORD, (a) => testActor(undefined, a));
    return signIn(email);
  }

  async function registerPasskey(who: Who, authenticator: SoftAuthenticator, name?: string) {
    const options = await inject({ method: "POST", url: "/portal/api/passkeys/options", who });
    assert.equal(options.statusCode, 200, options.body);
    const credential = authenticator.register(options.json(), ORIGIN);
    return inject({ method: "POST", url: "/portal/api/passkeys", who, payload: { credential, ...(name ? { name } : {}) } });
  }

  async function passkeySignIn(authenticator: SoftAuthenticator, credentialId?: string) {
    const options = await inject({ method: "POST", url: "/portal/api/session/passkey/options", remoteAddress: freshAddress() });
    assert.equal(options.statusCode, 200, options.body);
    const answer = authenticator.authenticate(options.json(), ORIGIN, credentialId);
    return { answer, res: await inject({ method: "POST", url: "/portal/api/session/passkey", payload: answer }) };
  }

  return { inject, sessionOf, signIn, person, registerPasskey, passkeySignIn };
}

describe("portal passkeys over HTTP", () => {
  let t: TestRuntime;
  const h = portalHelpers(() => t);

  before(async () => {
    t = await startTestRuntime({ publicUrl: ORIGIN });
    await t.addTenant("globex");
  });
  after(() => t.close());

  it("a signed-in user registers a passkey, signs out, and signs in with the passkey alone", async () => {
    const ada = await h.person("ada@acme.example", "admin", "acme");
    const device = new SoftAuthenticator();
    const options = await h.inject({ method: "POST", url: "/portal/api/passkeys/options", who: ada });
    const o = options.json() as { rp: { id: string }; authenticatorSelection: { residentKey: string; userVerification: string }; timeout: number };
    assert.equal(o.rp.id, "portal.test");
    assert.deepEqual([o.authenticatorSelection.residentKey, o.authenticatorSelection.userVerification], ["required", "required"]);
    const made = await h.inject({ method: "POST", url: "/portal/api/passkeys", who: ada, payload: { name: "laptop", credential: device.register(options.json(), ORIGIN) } });
    assert.equal(made.statusCode, 200, made.body);
    const credentialId = made.json().credentialId as string;
    const listed = (await h.inject({ url: "/portal/api/passkeys", who: ada })).json() as { credentialId: string; name: string; lastUsedAt: string | null }[];
    assert.deepEqual(listed.map((p) => [p.credentialId, p.name, p.lastUsedAt]), [[credentialId, "laptop", null]]);
    const page = await h.inject({ url: "/portal/account", who: ada });
    assert.ok(page.body.includes("laptop") && page.body.includes("never"));

    assert.equal((await h.inject({ method: "DELETE", url: "/portal/api/session", who: ada })).statusCode, 204);
    const { res } = await h.passkeySignIn(device);
    const back = await h.sessionOf(res, "ada@acme.example");
    const me = await h.inject({ url: "/portal/api/me", who: back });
    assert.deepEqual(me.json(), { email: "ada@acme.example", role: "admin", tenantId: "t_acme" });
    const sessions = await Promise.all([back.cookie].map((c) => t.runtime.stores.durable.getSession(sha256(c))));
    assert.equal(sessions[0]?.method, "passkey");
    const stored = (await t.runtime.stores.durable.getPasskey(credentialId))!;
    assert.equal(stored.counter, 1);
    assert.equal(stored.lastUsedAt, new Date(t.clock.nowMs()).toISOString());
    // a passkey session is a session like any other: a write with its CSRF token works
    assert.equal((await h.inject({ method: "POST", url: "/portal/api/keys", who: back, payload: { label: "by passkey" } })).statusCode, 200);
  });

  it("the WebAuthn browser library is served from node_modules by this service, under the same CSP", async () => {
    const res = await h.inject({ url: "/portal/assets/vendor/simplewebauthn-browser.js" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /javascript/);
    assert.match(res.body, /SimpleWebAuthnBrowser/);
    assert.match(String(res.headers["content-security-policy"]), /script-src 'self'/);
    const signin = await h.inject({ url: "/portal/signin" });
    assert.match(signin.body, /data-passkey-signin/);
    assert.doesNotMatch(signin.body, /<script(?![^>]*\bsrc=)[^>]*>/, "no inline script");
  });

  it("a challenge is single use, bound to its user and ceremony, and void after two minutes", async () => {
    const bo = await h.person("bo@acme.example", "admin", "acme");
    const cy = await h.person("cy@acme.example", "admin", "acme");
    const device = new SoftAuthenticator();
    const options = (await h.inject({ method: "POST", url: "/portal/api/passkeys/options", who: bo })).json();
    const credential = device.register(options, ORIGIN);
    // Cy cannot finish Bo's ceremony, and trying spends it
    const stolen = await h.inject({ method: "POST", url: "/portal/api/passkeys", who: cy, payload: { credential } });
    assert.equal(stolen.statusCode, 400);
    assert.equal(stolen.json().code, "4008003");
    const late = await h.inject({ method: "POST", url: "/portal/api/passkeys", who: bo, payload: { credential } });
    assert.equal(late.json().code, "4008003", "spent by the failed attempt");

    const fresh = device.register((await h.inject({ method: "POST", url: "/portal/api/passkeys/options", who: bo })).json(), ORIGIN);
    assert.equal((await h.inject({ method: "POST", url: "/portal/api/passkeys", who: bo, payload: { credential: fresh } })).statusCode, 200);
    const use = (options: { challenge: string }) => device.authenticate(options, ORIGIN, fresh.id);
    const replay = await h.inject({ method: "POST", url: "/portal/api/passkeys", who: bo, payload: { credential: fresh } });
    assert.equal(replay.statusCode, 400);
    assert.equal(replay.json().code, "4008003");

    // a sign-in answer replayed, and one given after the challenge expired
    const { answer, res } = await h.passkeySignIn(device, fresh.id);
    assert.equal(res.statusCode, 200);
    const again = await h.inject({ method: "POST", url: "/portal/api/session/passkey", payload: answer });
    assert.equal(again.statusCode, 401);
    assert.equal(again.json().code, "4018002");
    const opts = await h.inject({ method: "POST", url: "/portal/api/session/passkey/options", remoteAddress: freshAddress() });
    t.clock.advance(120_000);
    const expired = await h.inject({ method: "POST", url: "/portal/api/session/passkey", payload: use(opts.json()) });
    assert.equal(expired.statusCode, 401);
    assert.equal(expired.json().code, "4018002");
    // a registration challenge does not open a session
    const regOptions = (await h.inject({ method: "POST", url: "/portal/api/passkeys/options", who: await h.signIn("bo@acme.example") })).json();
    const crossed = await h.inject({ method: "POST", url: "/portal/api/session/passkey", payload: use(regOptions) });
    assert.equal(crossed.json().code, "4018002");
  });

  it("a ceremony begun on one instance finishes on another (the challenge is in the shared store)", async () => {
    const other = await startTestRuntime({ publicUrl: ORIGIN }, { dir: t.dir, clock: t.clock });
    try {
      const dee = await h.person("dee@acme.example", "admin", "acme");
      const device = new SoftAuthenticator();
      const options = (await h.inject({ method: "POST", url: "/portal/api/passkeys/options", who: dee })).json();
      const credential = device.register(options, ORIGIN);
      const finished = await other.runtime.app.inject({
        method: "POST",
        url: "/portal/api/passkeys",
        headers: { ...SITE, "x-csrf-token": dee.csrf },
        cookies: { [SESSION_COOKIE]: dee.cookie },
        payload: { credential },
      });
      assert.equal(finished.statusCode, 200, finished.body);
      const signInOptions = await other.runtime.app.inject({ method: "POST", url: "/portal/api/session/passkey/options", headers: SITE });
      const res = await h.inject({ method: "POST", url: "/portal/api/session/passkey", payload: device.authenticate(signInOptions.json(), ORIGIN) });
      assert.equal(res.statusCode, 200, res.body);
    } finally {
      await other.runtime.close();
    }
  });

  it("a copy of a passkey whose counter lags behind is refused; the counter stays where it was", async () => {
    const eve = await h.person("eve@acme.example", "admin", "acme");
    const device = new SoftAuthenticator();
    const credentialId = (await h.registerPasskey(eve, device)).json().credentialId as string;
    const copy = device.clone(credentialId);
    assert.equal((await h.passkeySignIn(device)).res.statusCode, 200); // counter 1
    assert.equal((await h.passkeySignIn(device)).res.statusCode, 200); // counter 2
    const { res } = await h.passkeySignIn(copy); // the copy says 1
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, "4018003");
    assert.equal(res.cookies.length, 0);
    assert.equal((await t.runtime.stores.durable.getPasskey(credentialId))!.counter, 2);
    // an authenticator that keeps no counter (always 0) is not a copy
    const synced = new SoftAuthenticator({ countsSignatures: false });
    await h.registerPasskey(eve, synced);
    assert.equal((await h.passkeySignIn(synced)).res.statusCode, 200);
    assert.equal((await h.passkeySignIn(synced)).res.statusCode, 200);
  });

  it("user verification is required, to register and to sign in", async () => {
    const fay = await h.person("fay@acme.example", "admin", "acme");
    const presenceOnly = new SoftAuthenticator({ verifyUser: false });
    const refused = await h.registerPasskey(fay, presenceOnly);
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, "4008003");
    assert.match(refused.json().data ?? refused.json().message, /verif/i);

    // a passkey registered with verification, later used without it
    const device = new SoftAuthenticator();
    const credentialId = (await h.registerPasskey(fay, device)).json().credentialId as string;
    const lazy = device.clone(credentialId);
    (lazy as unknown as { opts: { verifyUser: boolean } }).opts.verifyUser = false;
    const { res } = await h.passkeySignIn(lazy);
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, "4018002");
  });

  it("a disabled user cannot sign in with a passkey; enabled again, they can", async () => {
    const gil = await h.person("gil@acme.example", "viewer", "acme");
    const device = new SoftAuthenticator();
    assert.equal((await h.registerPasskey(gil, device)).statusCode, 200);
    await t.runtime.portal.accounts.disable({ email: "gil@acme.example" }, testActor());
    const { res } = await h.passkeySignIn(device);
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, "4018002");
    assert.equal(res.cookies.length, 0);
    await t.runtime.portal.accounts.enable({ email: "gil@acme.example" }, testActor());
    assert.equal((await h.passkeySignIn(device)).res.statusCode, 200);
  });

  it("passkeys are their owner's: renamed and deleted by them alone; deleting one ends nothing else", async () => {
    const hal = await h.person("hal@acme.example", "viewer", "acme");
    const gus = await h.person("gus@globex.example", "admin", "globex");
    const phone = new SoftAuthenticator();
    const key = new SoftAuthenticator();
    const phoneId = (await h.registerPasskey(hal, phone, "phone")).json().credentialId as string;
    await h.registerPasskey(hal, key, "security key");
    const url = `/portal/api/passkeys/${phoneId}`;

    assert.equal((await h.inject({ method: "PATCH", url, who: gus, payload: { name: "mine" } })).statusCode, 404);
    assert.equal((await h.inject({ method: "DELETE", url, who: gus })).statusCode, 404);
    assert.equal((await h.inject({ method: "DELETE", url, who: hal, csrf: gus.csrf })).json().code, "4038001", "another session's CSRF token");
    assert.equal((await h.inject({ method: "PATCH", url, who: hal, payload: { name: "" } })).statusCode, 400);
    assert.equal((await h.inject({ method: "PATCH", url, who: hal, payload: { name: "old phone" } })).statusCode, 204);
    assert.equal((await t.runtime.stores.durable.getPasskey(phoneId))!.name, "old phone");

    assert.equal((await h.inject({ method: "DELETE", url, who: hal })).statusCode, 204);
    assert.equal((await h.inject({ url: "/portal/api/me", who: hal })).statusCode, 200, "the session that deleted it lives on");
    assert.deepEqual(((await h.inject({ url: "/portal/api/passkeys", who: hal })).json() as { name: string }[]).map((p) => p.name), ["security key"]);
    assert.equal((await h.passkeySignIn(phone)).res.json().code, "4018002", "the deleted passkey");
    assert.equal((await h.passkeySignIn(key)).res.statusCode, 200, "the other passkey");
    assert.equal((await h.signIn("hal@acme.example")).email, "hal@acme.example", "and the password");
  });

  it("a ceremony at another address than the public URL is refused with PORTAL_WRONG_HOST, before any challenge", async () => {
    const ivy = await h.person("ivy@acme.example", "admin", "acme");
    const elsewhere = { host: "127.0.0.1:8443", origin: "http://127.0.0.1:8443" };
    for (const [url, who] of [["/portal/api/passkeys/options", ivy], ["/portal/api/session/passkey/options", undefined]] as const) {
      const res = await h.inject({ method: "POST", url, ...(who ? { who } : {}), headers: elsewhere });
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.json().code, "4008002");
      assert.match(res.json().data ?? "", /http:\/\/portal\.test:8443/);
    }
  });

  it("passkey sign-in starts are rate-limited per address: 429 with Retry-After", async () => {
    const address = "10.9.9.9";
    let res: LightMyRequestResponse | undefined;
    for (let i = 0; i < 31; i++) res = await h.inject({ method: "POST", url: "/portal/api/session/passkey/options", remoteAddress: address });
    assert.equal(res!.statusCode, 429);
    assert.equal(res!.json().code, "4290000");
    assert.ok(Number(res!.headers["retry-after"]) >= 1);
  });
});

describe("portal sign-in over HTTP: rate limits, one answer for every failure, session lifetimes", () => {
  let t: TestRuntime;
  const h = portalHelpers(() => t);

  before(async () => {
    t = await startTestRuntime({ publicUrl: ORIGIN, portalIdleTimeout: 600, portalSessionLifetime: 3600 });
  });
  after(() => t.close());

  const attempt = (email: string, password: string, remoteAddress = freshAddress()) =>
    h.inject({ method: "POST", url: "/portal/api/session", payload: { email, password }, remoteAddress });

  it("per account: 10 attempts, then even the right password gets 429 with Retry-After, from any address", async () => {
    await h.person("kim@acme.example", "admin", "acme"); // signing in is the first attempt
    for (let i = 0; i < 9; i++) assert.equal((await attempt("kim@acme.example", "wrong password, again")).statusCode, 401);
    const limited = await attempt("kim@acme.example", PASSWORD);
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().code, "4290000");
    assert.equal(limited.cookies.length, 0);
    assert.ok(Number(limited.headers["retry-after"]) >= 1);
    t.clock.advance(Number(limited.headers["retry-after"]) * 1000);
    assert.equal((await attempt("kim@acme.example", PASSWORD)).statusCode, 200, "after Retry-After seconds");
  });

  it("per address: 30 attempts on any accounts, then 429", async () => {
    const address = "10.8.8.8";
    for (let i = 0; i < 30; i++) assert.equal((await attempt(`nobody${i}@acme.example`, "wrong password, again", address)).statusCode, 401);
    const limited = await attempt("someone@acme.example", "wrong password, again", address);
    assert.equal(limited.statusCode, 429);
    assert.ok(Number(limited.headers["retry-after"]) >= 1);
  });

  it("an unknown email, a wrong password, an invited and a disabled account get byte-identical answers but for errorId", async () => {
    await h.person("lou@acme.example", "admin", "acme");
    await t.runtime.portal.accounts.invite({ email: "max@acme.example", tenant: "acme", role: "viewer" }, testActor());
    await h.person("ned@acme.example", "admin", "acme");
    await t.runtime.portal.accounts.disable({ email: "ned@acme.example" }, testActor());
    const answers = [
      await attempt("nobody@acme.example", PASSWORD),
      await attempt("lou@acme.example", "not the right one at all"),
      await attempt("max@acme.example", PASSWORD),
      await attempt("ned@acme.example", PASSWORD),
    ];
    const shape = (r: LightMyRequestResponse) => {
      const { errorId, ...rest } = r.json() as { errorId: string; code: string };
      assert.match(errorId, /^[0-9a-f]{24}$/);
      const { date: _date, "x-error-id": headerId, ...headers } = r.headers;
      assert.equal(headerId, errorId, "the header names the body's errorId");
      return { status: r.statusCode, headers, body: r.body.replace(errorId, "ERRORID"), rest };
    };
    const [first, ...others] = answers.map(shape);
    assert.equal(first!.status, 401);
    assert.equal(first!.rest.code, "4018000");
    for (const o of others) assert.deepEqual(o, first);
  });

  it("idle expiry (--portal-idle-timeout) and absolute expiry (--portal-session-lifetime), the cookie's Max-Age with it", async () => {
    await h.person("ola@acme.example", "admin", "acme");
    const res = await attempt("ola@acme.example", PASSWORD);
    assert.equal(res.cookies.find((c) => c.name === SESSION_COOKIE)!.maxAge, 3600);
    const ola = await h.sessionOf(res, "ola@acme.example");
    // used every 9 minutes it lives, until an hour after it began
    for (let at = 9; at < 60; at += 9) {
      t.clock.advance(9 * 60_000);
      assert.equal((await h.inject({ url: "/portal/api/me", who: ola })).statusCode, 200, `at ${at} min`);
    }
    t.clock.advance(6 * 60_000); // 60 min
    const ended = await h.inject({ url: "/portal/api/me", who: ola });
    assert.equal(ended.statusCode, 401);
    assert.equal(ended.json().code, "4018001");

    const idle = await h.signIn("ola@acme.example");
    t.clock.advance(599_999);
    assert.equal((await h.inject({ url: "/portal/api/me", who: idle })).statusCode, 200, "a request just before the idle limit");
    t.clock.advance(600_000);
    assert.equal((await h.inject({ url: "/portal/api/me", who: idle })).statusCode, 401, "10 minutes without one");
    const page = await h.inject({ url: "/portal/keys", who: idle });
    assert.equal(page.statusCode, 302);
    assert.equal(page.headers.location, "/portal/signin?next=%2Fportal%2Fkeys&ended=1", "the sign-in page will say the session ended");
    const signInPage = await h.inject({ url: String(page.headers.location) });
    assert.match(signInPage.body, /Your session has ended/);
    assert.doesNotMatch((await h.inject({ url: "/portal/signin?next=%2Fportal%2Fkeys" })).body, /Your session has ended/);
  });

  it("sign-out ends the session in the store; the cookie is cleared and worth nothing if kept", async () => {
    await h.person("pia@acme.example", "admin", "acme");
    const pia = await h.signIn("pia@acme.example");
    assert.ok(await t.runtime.stores.durable.getSession(sha256(pia.cookie)));
    const out = await h.inject({ method: "DELETE", url: "/portal/api/session", who: pia });
    assert.equal(out.statusCode, 204);
    assert.equal(out.cookies.find((c) => c.name === SESSION_COOKIE)?.value, "");
    assert.equal(await t.runtime.stores.durable.getSession(sha256(pia.cookie)), undefined);
    assert.equal((await h.inject({ url: "/portal/api/me", who: pia })).statusCode, 401);
    // signing out again with the dead cookie is a 401, not a crash
    assert.equal((await h.inject({ method: "DELETE", url: "/portal/api/session", who: pia })).statusCode, 401);
  });

  it("the lifetimes are settings: bounded, and an idle timeout longer than the lifetime is refused", () => {
    const c = loadConfig({}, {});
    assert.deepEqual([c.portalIdleTimeout, c.portalSessionLifetime], [1800, 43_200]);
    assert.equal(loadConfig({}, { ATTESTD_PORTAL_IDLE_TIMEOUT: "5" }).portalIdleTimeout, 5);
    assert.throws(() => loadConfig({ portalIdleTimeout: 0 }, {}), ConfigError);
    assert.throws(() => loadConfig({ portalIdleTimeout: 7200, portalSessionLifetime: 3600 }, {}), /cannot be longer/);
  });
});

describe("operators' Users admin API", () => {
  let t: TestRuntime;
  const h = portalHelpers(() => t);
  let root: Who;
  let ada: Who;

  before(async () => {
    t = await startTestRuntime({ publicUrl: ORIGIN });
    await t.addTenant("globex");
    root = await h.person("root@example.org", "operator");
    ada = await h.person("ada@acme.example", "admin", "acme");
  });
  after(() => t.close());

  it("only operators reach the API and the full page (a tenant admin's page is test/http/portalPasswords.test.ts)", async () => {
    for (const [method, url] of [["GET", "/portal/api/users"], ["POST", "/portal/api/users"], ["PATCH", "/portal/api/users/u_x"], ["POST", "/portal/api/users/u_x/disable"]] as const) {
      const res = await h.inject({ method, url, who: ada, payload: method === "GET" ? undefined! : { role: "viewer", email: "x@acme.example", tenant: "acme" } });
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json().code, "4038000");
    }
    const viv = await h.person("viv@acme.example", "viewer", "acme");
    const page = await h.inject({ url: "/portal/users", who: viv });
    assert.equal(page.statusCode, 403);
    // a page says so as a page, with the code and error id; the API keeps its JSON body
    assert.match(String(page.headers["content-type"]), /^text\/html/);
    assert.match(page.body, /<h1>Not allowed<\/h1>/);
    assert.match(page.body, /<code>4038000<\/code>.*error id <code>[0-9a-f]{24}<\/code>/s);
    assert.match(page.body, /name="csrf-token"/, "with the signed-in layout");
    const missing = await h.inject({ url: "/portal/no-such-page", who: ada });
    assert.deepEqual([missing.statusCode, /<h1>Not found<\/h1>/.test(missing.body)], [404, true]);
    const vivHome = await h.inject({ url: "/portal/account", who: viv });
    assert.ok(!vivHome.body.includes('href="/portal/users"'), "no Users link for a viewer");
    const adaHome = await h.inject({ url: "/portal/account", who: ada });
    assert.ok(adaHome.body.includes('href="/portal/users"'), "a tenant admin's Users page: their own tenant's people");
    const rootHome = await h.inject({ url: "/portal/account", who: root });
    assert.ok(rootHome.body.includes('href="/portal/users"'));
  });

  it("invite: the link is in the answer once, and works; the new person is listed by tenant", async () => {
    const res = await h.inject({ method: "POST", url: "/portal/api/users", who: root, payload: { email: "Bea@Globex.example", tenant: "globex", role: "viewer" } });
    assert.equal(res.statusCode, 200, res.body);
    const { user, link } = res.json() as { user: { email: string; tenant: string; role: string; state: string }; link: string };
    assert.deepEqual([user.email, user.tenant, user.role, user.state], ["bea@globex.example", "globex", "viewer", "invited"]);
    assert.match(link, /^http:\/\/portal\.test:8443\/portal\/invite#[A-Za-z0-9_-]{43}$/);
    const set = await h.inject({ method: "POST", url: "/portal/api/invite", payload: { token: link.split("#")[1], password: PASSWORD } });
    assert.equal(set.statusCode, 200);
    const globex = (await h.inject({ url: "/portal/api/users?tenant=globex", who: root })).json() as { email: string; state: string }[];
    assert.deepEqual(globex.map((p) => [p.email, p.state]), [["bea@globex.example", "active"]]);
    const ops = (await h.inject({ url: "/portal/api/users?operators=true", who: root })).json() as { email: string; tenant: null }[];
    assert.deepEqual(ops.map((p) => [p.email, p.tenant]), [["root@example.org", null]]);
    assert.ok(!JSON.stringify((await h.inject({ url: "/portal/api/users", who: root })).json()).includes("scrypt"), "no password hash in a list");
    const page = await h.inject({ url: "/portal/users?tenant=globex", who: root });
    assert.ok(page.body.includes("bea@globex.example") && !page.body.includes("ada@acme.example"));

    const op = await h.inject({ method: "POST", url: "/portal/api/users", who: root, payload: { email: "ops2@example.org", role: "operator" } });
    assert.equal(op.json().user.tenant, null);
    const mixed = await h.inject({ method: "POST", url: "/portal/api/users", who: root, payload: { email: "x@example.org", role: "operator", tenant: "acme" } });
    assert.equal(mixed.statusCode, 400);
    const taken = await h.inject({ method: "POST", url: "/portal/api/users", who: root, payload: { email: "ada@acme.example", tenant: "globex", role: "admin" } });
    assert.equal(taken.json().code, "4098000");
    const noTenant = await h.inject({ method: "POST", url: "/portal/api/users", who: root, payload: { email: "y@example.org", tenant: "nope", role: "admin" } });
    assert.equal(noTenant.json().code, "4048000");
  });

  it("a role change applies to the person's open session at its next request", async () => {
    const cal = await h.person("cal@acme.example", "admin", "acme");
    assert.equal((await h.inject({ method: "POST", url: "/portal/api/keys", who: cal, payload: {} })).statusCode, 200);
    const userId = (await t.runtime.stores.durable.getPortalUserByEmail("cal@acme.example"))!.userId;
    assert.equal((await h.inject({ method: "PATCH", url: `/portal/api/users/${userId}`, who: root, payload: { role: "viewer" } })).statusCode, 204);
    const write = await h.inject({ method: "POST", url: "/portal/api/keys", who: cal, payload: {} });
    assert.equal(write.statusCode, 403);
    assert.equal(write.json().code, "4038000");
    const rootId = (await t.runtime.stores.durable.getPortalUserByEmail("root@example.org"))!.userId;
    const opRole = await h.inject({ method: "PATCH", url: `/portal/api/users/${rootId}`, who: root, payload: { role: "admin" } });
    assert.equal(opRole.statusCode, 400, "an operator has no tenant role");
    assert.equal((await h.inject({ method: "PATCH", url: "/portal/api/users/u_nobody", who: root, payload: { role: "admin" } })).statusCode, 404);
    assert.equal((await h.inject({ method: "PATCH", url: `/portal/api/users/${userId}`, who: root, payload: { role: "operator" } })).statusCode, 400);
  });

  it("disable ends every session of the person at once; nobody disables themselves; enable lets them back", async () => {
    const dot = await h.person("dot@acme.example", "viewer", "acme");
    const dot2 = await h.signIn("dot@acme.example");
    const userId = (await t.runtime.stores.durable.getPortalUserByEmail("dot@acme.example"))!.userId;
    const res = await h.inject({ method: "POST", url: `/portal/api/users/${userId}/disable`, who: root });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().sessionsEnded, 2);
    for (const who of [dot, dot2]) assert.equal((await h.inject({ url: "/portal/api/me", who })).statusCode, 401);
    assert.equal((await t.runtime.stores.durable.getPortalUser(userId))!.state, "disabled");

    const rootId = (await t.runtime.stores.durable.getPortalUserByEmail("root@example.org"))!.userId;
    const self = await h.inject({ method: "POST", url: `/portal/api/users/${rootId}/disable`, who: root });
    assert.equal(self.statusCode, 400);
    assert.equal((await h.inject({ url: "/portal/api/me", who: root })).statusCode, 200);

    assert.equal((await h.inject({ method: "POST", url: `/portal/api/users/${userId}/enable`, who: root })).statusCode, 204);
    assert.equal((await h.signIn("dot@acme.example")).email, "dot@acme.example");
  });
});
