import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { SESSION_COOKIE } from "../../src/portal/sessions.ts";
import { SSO_COOKIE } from "../../src/portal/ssoSettings.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { startOidcProvider, throughProvider, type TestAccount, type TestOidcProvider } from "../helpers/oidcProvider.ts";
import { PORTAL_PASSWORD, portalPeople } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { testActor } from "../helpers/audit.ts";

// The configured public URL; the redirect URL registered at the provider is derived from it.
const PUBLIC = "http://portal.test:8443";
const REDIRECT = `${PUBLIC}/portal/sso/callback`;
const SITE = { host: "portal.test:8443", origin: PUBLIC };

describe("portal single sign-on against a real OpenID Connect provider (oidc-provider on 127.0.0.1)", () => {
  let idp: TestOidcProvider;
  let t: TestRuntime;
  const secretFile = `${process.env.TMPDIR ?? "/tmp"}/attestd-sso-secret-${process.pid}`;

  before(async () => {
    idp = await startOidcProvider({ redirectUri: REDIRECT });
    writeFileSync(secretFile, `${idp.clientSecret}\n`, { mode: 0o600 });
    t = await startTestRuntime({ publicUrl: PUBLIC, ...ssoSettings() });
    await t.addTenant("globex");
  });
  after(async () => {
    await t.close();
    await idp.close();
    rmSync(secretFile, { force: true });
  });

  const ssoSettings = () => ({
    ssoIssuer: idp.issuer,
    ssoClientId: idp.clientId,
    ssoClientSecretFile: secretFile,
    ssoAllowHttpLoopback: true,
    ssoName: "Test IdP",
    ssoScopes: ["openid", "email", "attestd"],
    ssoTenantClaim: "tenant",
    ssoRoleClaim: "groups",
    ssoAdminValues: ["attestd-admins"],
    ssoViewerValues: ["attestd-viewers"],
  });

  const inject = (url: string, cookies: Record<string, string> = {}) => t.runtime.app.inject({ method: "GET", url, headers: SITE, cookies });

  /** /portal/sso/start → the provider (the account signs in there) → the redirect back, not yet handed to attestd */
  async function startAt(account: TestAccount, next = "/portal/verdicts"): Promise<{ callback: URL; flowCookie: string }> {
    idp.signInAs(account);
    const start = await inject(`/portal/sso/start?next=${encodeURIComponent(next)}`);
    assert.equal(start.statusCode, 302, start.body);
    const location = String(start.headers.location);
    const auth = new URL(location);
    assert.equal(auth.origin, idp.issuer);
    assert.equal(auth.searchParams.get("code_challenge_method"), "S256");
    assert.ok(auth.searchParams.get("state") && auth.searchParams.get("nonce") && auth.searchParams.get("code_challenge"));
    const flow = start.cookies.find((c) => c.name === SSO_COOKIE)!;
    assert.deepEqual([flow.httpOnly, flow.secure, flow.sameSite, flow.path], [true, true, "Lax", "/"], "the flow cookie's flags");
    assert.ok(flow.maxAge! <= 600);
    const callback = await throughProvider(location, REDIRECT);
    return { callback, flowCookie: flow.value };
  }

  const back = (callback: URL, flowCookie: string | undefined) => inject(`/portal/sso/callback${callback.search}`, flowCookie ? { [SSO_COOKIE]: flowCookie } : {});

  async function signIn(account: TestAccount, next?: string): Promise<LightMyRequestResponse> {
    const { callback, flowCookie } = await startAt(account, next);
    return back(callback, flowCookie);
  }

  const sessionOf = (res: LightMyRequestResponse) => res.cookies.find((c) => c.name === SESSION_COOKIE)?.value;
  async function me(res: LightMyRequestResponse) {
    assert.equal(res.statusCode, 200, res.body);
    const cookie = sessionOf(res)!;
    const who = await inject("/portal/api/me", { [SESSION_COOKIE]: cookie });
    assert.equal(who.statusCode, 200, who.body);
    return who.json() as { email: string; role: string; tenantId: string | null };
  }

  function refusedWith(res: LightMyRequestResponse, status: number, key: "PORTAL_SSO_FAILED" | "PORTAL_SSO_REFUSED"): void {
    const code = catalog[key].code;
    assert.equal(res.statusCode, status, res.body);
    // a page for a person, with the catalog code, and no session
    assert.match(String(res.headers["content-type"]), /text\/html/);
    assert.match(res.body, new RegExp(`<code>${code}</code>`));
    assert.match(res.body, /href="\/portal\/signin"/);
    assert.equal(sessionOf(res), undefined);
  }

  /** the admin API's PUT of a mapping, as this signed-in person */
  const putMapping = (who: { cookie: string; csrf: string }, payload: Record<string, string>) =>
    t.runtime.app.inject({ method: "PUT", url: "/portal/api/sso/mappings", cookies: { [SESSION_COOKIE]: who.cookie }, headers: { "x-csrf-token": who.csrf }, payload });

  it("the sign-in page offers the provider by its name, beside the password form", async () => {
    const page = await inject("/portal/signin?next=%2Fportal%2Fverdicts");
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /href="\/portal\/sso\/start\?next=%2Fportal%2Fverdicts"[^>]*>Sign in with Test IdP</);
    assert.match(page.body, /data-api="\/portal\/api\/session"/);
  });

  it("a full sign-in: an operator's email mapping makes a viewer of the tenant, with the same session a password opens, and the next sign-in finds the same person", async () => {
    await t.runtime.app.inject({ method: "GET", url: "/" });
    const email = "ada@acme.example";
    const { SsoMappings } = await import("../../src/portal/ssoMappings.ts");
    await new SsoMappings(t.runtime.stores.durable, t.clock).map({ email: "Ada@Acme.example" }, "acme", "viewer", testActor(t.runtime.stores.durable));
    const res = await signIn({ sub: "idp-ada", email, email_verified: true });
    // a page whose link goes on (same-site), not a redirect that a Strict session cookie would not follow
    assert.match(res.body, /<a href="\/portal\/verdicts" data-sso-continue>/);
    const session = res.cookies.find((c) => c.name === SESSION_COOKIE)!;
    assert.deepEqual([session.httpOnly, session.secure, session.sameSite, session.path], [true, true, "Strict", "/"]);
    // the flow cookie is spent
    assert.equal(res.cookies.find((c) => c.name === SSO_COOKIE)?.value, "");
    assert.deepEqual(await me(res), { email, role: "viewer", tenantId: t.tenant.tenantId });
    const stored = (await t.runtime.stores.durable.getPortalUserByEmail(email))!;
    assert.deepEqual([stored.state, stored.role, stored.tenantId, stored.passwordHash], ["active", "viewer", t.tenant.tenantId, null]);
    assert.equal(await t.runtime.stores.durable.getSsoIdentity(idp.issuer, "idp-ada"), stored.userId);
    const { session: s } = (await t.runtime.portal.sessions.resolve(sessionOf(res)))!;
    assert.equal(s.method, "sso");
    // the pages work as after a password sign-in
    const page = await inject("/portal/verdicts", { [SESSION_COOKIE]: sessionOf(res)! });
    assert.equal(page.statusCode, 200);
    // with no password to change, the Account page says how to get one instead of asking for the current one
    const account = await inject("/portal/account", { [SESSION_COOKIE]: sessionOf(res)! });
    assert.match(account.body, /data-no-password/);
    assert.doesNotMatch(account.body, /name="currentPassword"/);

    // the audit trail: the operator's mapping, then the person made (invited), linked, made active and signed in
    const trail = await t.runtime.stores.durable.queryAudit({ actorId: stored.userId, limit: 10 });
    assert.deepEqual(trail.map((r) => r.action).sort(), ["portal.session.signed-in", "portal.sso.identity-linked", "portal.user.aligned-by-sso", "portal.user.created-by-sso"]);
    assert.deepEqual(trail.find((r) => r.action === "portal.user.aligned-by-sso")?.after, { role: "viewer", state: "active" });
    assert.deepEqual(trail.find((r) => r.action === "portal.session.signed-in")?.after, { method: "sso", expiresAt: new Date(s.expiresAtMs).toISOString() });
    const mapped = await t.runtime.stores.durable.queryAudit({ action: "sso.mapping-set", limit: 10 });
    assert.deepEqual(mapped.map((r) => [r.actor.kind, r.target.id, r.tenantId]), [["operator", "email:ada@acme.example", t.tenant.tenantId]]);

    const again = await signIn({ sub: "idp-ada", email, email_verified: true });
    assert.deepEqual(await me(again), { email, role: "viewer", tenantId: t.tenant.tenantId });
    assert.equal((await t.runtime.stores.durable.listPortalUsers(t.tenant.tenantId)).filter((u) => u.email === email).length, 1);
  });

  it("a wrong state is refused before the code is spent; no flow cookie, or one that was altered, is refused too", async () => {
    const { SsoMappings } = await import("../../src/portal/ssoMappings.ts");
    await new SsoMappings(t.runtime.stores.durable, t.clock).map({ subject: "idp-state" }, "acme", "viewer", testActor(t.runtime.stores.durable));
    const account = { sub: "idp-state", email: "state@acme.example", email_verified: true };
    const { callback, flowCookie } = await startAt(account);
    const wrong = new URL(callback);
    wrong.searchParams.set("state", "not-the-state-this-browser-was-given");
    refusedWith(await back(wrong, flowCookie), 401, "PORTAL_SSO_FAILED");
    refusedWith(await back(callback, undefined), 401, "PORTAL_SSO_FAILED");
    const [body, mac] = flowCookie.split(".");
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, "base64url").toString()), next: "/portal/users" })).toString("base64url");
    refusedWith(await back(callback, `${forged}.${mac}`), 401, "PORTAL_SSO_FAILED");
    // the code was never exchanged: the real browser still signs in with it
    assert.equal((await me(await back(callback, flowCookie))).email, "state@acme.example");
  });

  it("a sign-in begun on one instance finishes on another of the deployment (the flow cookie's key comes from the shared client secret)", async () => {
    const other = await startTestRuntime({ ...ssoSettings(), publicUrl: PUBLIC });
    try {
      const { SsoMappings } = await import("../../src/portal/ssoMappings.ts");
      await new SsoMappings(other.runtime.stores.durable, other.clock).map({ subject: "idp-roam" }, "acme", "viewer", testActor(t.runtime.stores.durable));
      const { callback, flowCookie } = await startAt({ sub: "idp-roam", email: "roam@acme.example", email_verified: true });
      const res = await other.runtime.app.inject({ method: "GET", url: `/portal/sso/callback${callback.search}`, headers: SITE, cookies: { [SSO_COOKIE]: flowCookie } });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await other.runtime.stores.durable.getPortalUserByEmail("roam@acme.example"))!.state, "active");
    } finally {
      await other.close();
    }
  });

  it("a code is used once: the same answer replayed (cookie and all) is refused by the provider, and attestd says so", async () => {
    const { SsoMappings } = await import("../../src/portal/ssoMappings.ts");
    await new SsoMappings(t.runtime.stores.durable, t.clock).map({ subject: "idp-replay" }, "acme", "viewer", testActor(t.runtime.stores.durable));
    const { callback, flowCookie } = await startAt({ sub: "idp-replay", email: "replay@acme.example", email_verified: true });
    assert.equal((await back(callback, flowCookie)).statusCode, 200);
    const replay = await back(callback, flowCookie);
    refusedWith(replay, 401, "PORTAL_SSO_FAILED");
    assert.match(replay.body, /invalid_grant/);
  });

  it("an ID token for another audience, expired, of another issuer or another sign-in's nonce is refused though signed by the provider's key; one signed by another key is refused", async () => {
    const { SsoMappings } = await import("../../src/portal/ssoMappings.ts");
    await new SsoMappings(t.runtime.stores.durable, t.clock).map({ subject: "idp-tamper" }, "acme", "viewer", testActor(t.runtime.stores.durable));
    const account = { sub: "idp-tamper", email: "tamper@acme.example", email_verified: true };
    const now = Math.floor(Date.now() / 1000);
    try {
      idp.tamper({ aud: "some-other-client" });
      const aud = await signIn(account);
      refusedWith(aud, 401, "PORTAL_SSO_FAILED");
      assert.match(aud.body, /aud/);
      idp.tamper({ exp: now - 3600 });
      const expired = await signIn(account);
      refusedWith(expired, 401, "PORTAL_SSO_FAILED");
      assert.match(expired.body, /exp/);
      idp.tamper({ iss: "https://another-issuer.example" });
      refusedWith(await signIn(account), 401, "PORTAL_SSO_FAILED");
      idp.tamper({ nonce: "a-nonce-of-another-sign-in" });
      const nonce = await signIn(account);
      refusedWith(nonce, 401, "PORTAL_SSO_FAILED");
      assert.match(nonce.body, /nonce/);
      // the same claims, signed by a key that is not in the provider's JWKS
      idp.tamper({ signedByAnotherKey: true });
      const forged = await signIn(account);
      refusedWith(forged, 401, "PORTAL_SSO_FAILED");
      assert.match(forged.body, /signature/i);
    } finally {
      idp.tamper(undefined);
    }
    assert.equal(await t.runtime.stores.durable.getPortalUserByEmail("tamper@acme.example"), undefined, "nobody was made");
    assert.equal((await me(await signIn(account))).email, "tamper@acme.example");
  });

  it("an unmapped person is refused with a page and PORTAL_SSO_REFUSED, and no portal user is made", async () => {
    const res = await signIn({ sub: "idp-stranger", email: "stranger@elsewhere.example", email_verified: true });
    refusedWith(res, 403, "PORTAL_SSO_REFUSED");
    assert.match(res.body, /maps to no tenant/);
    assert.equal(await t.runtime.stores.durable.getPortalUserByEmail("stranger@elsewhere.example"), undefined);
    // claims naming an unknown tenant, or no role value attestd knows, map nobody either
    refusedWith(await signIn({ sub: "idp-c1", email: "c1@x.example", email_verified: true, tenant: "nosuch", groups: ["attestd-admins"] }), 403, "PORTAL_SSO_REFUSED");
    refusedWith(await signIn({ sub: "idp-c2", email: "c2@x.example", email_verified: true, tenant: "acme", groups: ["staff"] }), 403, "PORTAL_SSO_REFUSED");
  });

  it("mapping by claims: the tenant claim names the tenant, the groups claim the role (admin wins over viewer)", async () => {
    const admin = await signIn({ sub: "idp-grace", email: "grace@globex.example", email_verified: true, tenant: "globex", groups: ["attestd-viewers", "attestd-admins"] });
    const globex = (await t.runtime.stores.durable.getTenantByName("globex"))!;
    assert.deepEqual(await me(admin), { email: "grace@globex.example", role: "admin", tenantId: globex.tenantId });
    const viewer = await signIn({ sub: "idp-linus", email: "linus@globex.example", email_verified: true, tenant: "globex", groups: ["attestd-viewers"] });
    assert.deepEqual(await me(viewer), { email: "linus@globex.example", role: "viewer", tenantId: globex.tenantId });
    // the provider moves grace to viewers: her role follows at her next sign-in
    const demoted = await signIn({ sub: "idp-grace", email: "grace@globex.example", email_verified: true, tenant: "globex", groups: ["attestd-viewers"] });
    assert.equal((await me(demoted)).role, "viewer");
  });

  it("an operator's subject mapping (CLI or admin API) wins over the claims; removing it refuses the person at the next sign-in", async () => {
    const ops = portalPeople(t);
    const op = await ops.add("root@ops.example", "operator");
    const put = await putMapping(op, { kind: "subject", value: "idp-hopper", tenant: "acme", role: "admin" });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual({ ...(put.json() as object), createdAt: undefined }, { kind: "subject", value: "idp-hopper", tenant: "acme", role: "admin", createdAt: undefined });
    const list = await t.runtime.app.inject({ method: "GET", url: "/portal/api/sso/mappings", cookies: { [SESSION_COOKIE]: op.cookie } });
    assert.ok((list.json() as { value: string }[]).some((m) => m.value === "idp-hopper"));
    // the claims say globex viewer; the operator's mapping says acme admin
    const account = { sub: "idp-hopper", email: "hopper@acme.example", email_verified: true, tenant: "globex", groups: ["attestd-viewers"] };
    assert.deepEqual(await me(await signIn(account)), { email: "hopper@acme.example", role: "admin", tenantId: t.tenant.tenantId });

    const del = await t.runtime.app.inject({ method: "DELETE", url: "/portal/api/sso/mappings/subject/idp-hopper", cookies: { [SESSION_COOKIE]: op.cookie }, headers: { "x-csrf-token": op.csrf } });
    assert.equal(del.statusCode, 204);
    // now only the claims map hopper, to globex: the linked portal user is acme's, so the sign-in is refused
    refusedWith(await signIn(account), 403, "PORTAL_SSO_REFUSED");
    // a tenant admin may not touch the mappings; a mapping never makes an operator
    const bad = await putMapping(op, { kind: "subject", value: "x", tenant: "acme", role: "operator" });
    assert.equal(bad.statusCode, 400);
  });

  it("the operators' Single sign-on page: the provider, the mappings with Remove, the form; no one else may open it", async () => {
    const ops = portalPeople(t);
    const op = await ops.add("page-op@ops.example", "operator");
    const admin = await ops.add("page-admin@acme.example", "admin", "acme");
    const put = await putMapping(op, { kind: "email", value: "Grace@Acme.example", tenant: "globex", role: "viewer" });
    assert.equal(put.statusCode, 200, put.body);
    const page = await t.runtime.app.inject({ method: "GET", url: "/portal/sso", cookies: { [SESSION_COOKIE]: op.cookie } });
    assert.equal(page.statusCode, 200, page.body);
    assert.ok(page.body.includes(`<strong>Test IdP</strong> (<code>${idp.issuer}</code>)`), "the provider by its name and issuer");
    assert.match(page.body, /then the ID token(&#39;|&#x27;|')s tenant and role claims/, "claims are mapped in this deployment");
    // the stored mapping (the email in lower case) in a row, its Remove calling the API's DELETE
    const rows = page.body.slice(page.body.indexOf("<tbody>"), page.body.indexOf("</tbody>")).split("</tr>");
    const row = rows.find((r) => r.includes("<code>grace@acme.example</code>")) ?? "";
    assert.match(row, /<td[^>]*>verified email<\/td>/);
    assert.match(row, />globex<\/a>/);
    assert.match(row, /data-api="\/portal\/api\/sso\/mappings\/email\/grace%40acme\.example" data-method="DELETE"/);
    assert.match(page.body, /<form data-api="\/portal\/api\/sso\/mappings" data-method="PUT"/);
    assert.match(page.body, /<option value="globex" >globex<\/option>/);
    // the tenant the operator is looking at is the form's first choice
    const globex = await t.runtime.app.inject({ method: "GET", url: "/portal/sso?tenant=globex", cookies: { [SESSION_COOKIE]: op.cookie } });
    assert.match(globex.body, /<option value="globex" selected>globex<\/option>/);
    assert.match(globex.body, /<option value="acme" >acme<\/option>/);
    assert.match(page.body, /href="\/portal\/sso" aria-current="page">Single sign-on</);
    const refused = await t.runtime.app.inject({ method: "GET", url: "/portal/sso", cookies: { [SESSION_COOKIE]: admin.cookie } });
    assert.equal(refused.statusCode, 403);
    assert.doesNotMatch(
      (await t.runtime.app.inject({ method: "GET", url: "/portal/", cookies: { [SESSION_COOKIE]: admin.cookie } })).body,
      /href="\/portal\/sso"/,
      "a tenant admin's navigation has no Single sign-on entry",
    );
  });

  it("a first SSO sign-in links to the existing portal user of a verified email (whose password still works); an unverified email, an operator's email or a disabled user is refused", async () => {
    const people = portalPeople(t);
    await people.add("carol@acme.example", "admin", "acme");
    const { SsoMappings } = await import("../../src/portal/ssoMappings.ts");
    const mappings = new SsoMappings(t.runtime.stores.durable, t.clock);
    await mappings.map({ email: "carol@acme.example" }, "acme", "admin", testActor(t.runtime.stores.durable));
    // the provider does not vouch for the email: no link, no sign-in
    refusedWith(await signIn({ sub: "idp-carol", email: "carol@acme.example", email_verified: false }), 403, "PORTAL_SSO_REFUSED");
    assert.equal(await t.runtime.stores.durable.getSsoIdentity(idp.issuer, "idp-carol"), undefined);
    const carol = (await t.runtime.stores.durable.getPortalUserByEmail("carol@acme.example"))!;
    assert.deepEqual(await me(await signIn({ sub: "idp-carol", email: "carol@acme.example", email_verified: true })), { email: "carol@acme.example", role: "admin", tenantId: t.tenant.tenantId });
    assert.equal(await t.runtime.stores.durable.getSsoIdentity(idp.issuer, "idp-carol"), carol.userId);
    // passwords stay available
    const pw = await t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: SITE, payload: { email: "carol@acme.example", password: PORTAL_PASSWORD } });
    assert.equal(pw.statusCode, 200, pw.body);

    // an operator is never signed in, or made, through SSO, whatever the mapping says
    await people.add("boss@ops.example", "operator");
    await mappings.map({ email: "boss@ops.example" }, "acme", "admin", testActor(t.runtime.stores.durable));
    refusedWith(await signIn({ sub: "idp-boss", email: "boss@ops.example", email_verified: true }), 403, "PORTAL_SSO_REFUSED");
    assert.equal((await t.runtime.stores.durable.getPortalUserByEmail("boss@ops.example"))!.role, "operator");

    // disabled: refused, and the sessions it had are gone
    await t.runtime.portal.accounts.disable({ email: "carol@acme.example" }, testActor());
    const disabled = await signIn({ sub: "idp-carol", email: "carol@acme.example", email_verified: true });
    refusedWith(disabled, 403, "PORTAL_SSO_REFUSED");
    assert.match(disabled.body, /disabled/);
  });
});

describe("single sign-on's settings", () => {
  const base = { dataDir: "/tmp/x", insecureHttp: true };
  it("stop start-up when incomplete or unsafe, naming the flag", () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ ssoClientId: "x" }, /need --sso-issuer/],
      [{ ssoIssuer: "http://idp.example", ssoClientId: "x", ssoClientSecretFile: "/f" }, /must be an https URL/],
      [{ ssoIssuer: "http://127.0.0.1:9", ssoClientId: "x", ssoClientSecretFile: "/f" }, /--sso-allow-http-loopback/],
      [{ ssoIssuer: "https://idp.example", ssoClientSecretFile: "/f" }, /needs --sso-client-id/],
      [{ ssoIssuer: "https://idp.example", ssoClientId: "x" }, /needs --sso-client-secret-file/],
      [{ ssoIssuer: "https://idp.example", ssoClientId: "x", ssoClientSecretFile: "/f", ssoRoleClaim: "groups" }, /go together/],
      [{ ssoIssuer: "https://idp.example", ssoClientId: "x", ssoClientSecretFile: "/f", ssoRoleClaim: "groups", ssoTenantClaim: "t" }, /--sso-admin-values or --sso-viewer-values/],
      [{ ssoIssuer: "https://idp.example", ssoClientId: "x", ssoClientSecretFile: "/f", ssoRoleClaim: "g", ssoTenantClaim: "t", ssoAdminValues: ["a"], ssoViewerValues: ["a"] }, /in both/],
    ];
    for (const [settings, message] of bad) assert.throws(() => loadConfig({ ...base, ...settings }, {}), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(settings));
    assert.doesNotThrow(() => loadConfig({ ...base, ssoIssuer: "http://127.0.0.1:9", ssoClientId: "x", ssoClientSecretFile: "/f", ssoAllowHttpLoopback: true }, {}));
  });

  it("a provider that cannot be reached is PORTAL_SSO_UNAVAILABLE (503) on a page; a missing secret file stops start-up", async () => {
    const { freePort } = await import("../helpers/serverProcess.ts");
    const secretFile = `${process.env.TMPDIR ?? "/tmp"}/attestd-sso-secret-down-${process.pid}`;
    writeFileSync(secretFile, "a secret", { mode: 0o600 });
    const sso = { ssoIssuer: `http://127.0.0.1:${await freePort()}`, ssoClientId: "x", ssoAllowHttpLoopback: true };
    const t = await startTestRuntime({ ...sso, ssoClientSecretFile: secretFile });
    try {
      const start = await t.runtime.app.inject({ method: "GET", url: "/portal/sso/start" });
      assert.equal(start.statusCode, 503, start.body);
      assert.match(start.body, new RegExp(`<code>${catalog.PORTAL_SSO_UNAVAILABLE.code}</code>`));
      assert.match(start.body, /discovery failed/);
    } finally {
      await t.close();
      rmSync(secretFile, { force: true });
    }
    await assert.rejects(startTestRuntime({ ...sso, ssoClientSecretFile: `${secretFile}.missing` }), (e: unknown) => e instanceof ConfigError && /--sso-client-secret-file/.test(e.message));
  });

  it("without --sso-issuer the sign-in page offers no provider and the SSO routes are not found", async () => {
    const t = await startTestRuntime();
    try {
      const page = await t.runtime.app.inject({ method: "GET", url: "/portal/signin" });
      assert.doesNotMatch(page.body, /sso\/start/);
      const start = await t.runtime.app.inject({ method: "GET", url: "/portal/sso/start" });
      assert.equal(start.statusCode, 404);
      assert.match(start.body, new RegExp(`<code>${catalog.PORTAL_NOT_FOUND.code}</code>`));
      // the operators' page says so, and still keeps mappings for when it is configured
      const op = await portalPeople(t).add("root@ops.example", "operator");
      const mappings = await t.runtime.app.inject({ method: "GET", url: "/portal/sso", cookies: { [SESSION_COOKIE]: op.cookie } });
      assert.equal(mappings.statusCode, 200);
      assert.match(mappings.body, /Single sign-on is not configured/);
    } finally {
      await t.close();
    }
  });
});
