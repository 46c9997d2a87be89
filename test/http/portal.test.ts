import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseApiKey } from "../../src/auth/apiKeys.ts";
import { SESSION_COOKIE } from "../../src/portal/sessions.ts";
import { PORTAL_PASSWORD as PASSWORD, portalPeople, type PortalRequest } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { testActor } from "../helpers/audit.ts";


/**
 * The portal over HTTP, in process: sessions, CSRF, roles, tenant scoping, security headers and the admin API's
 * documentation. The browser walk-through is test/browser/portal.test.ts.
 */
describe("portal over HTTP", () => {
  let t: TestRuntime;
  let origin: string;
  const people: Record<string, { cookie: string; csrf: string }> = {};

  let portal: ReturnType<typeof portalPeople>;
  const person = async (email: string, role: "admin" | "viewer" | "operator", tenant?: string) => (people[email] = await portal.add(email, role, tenant));
  const as = (email: string, o: PortalRequest) => portal.as(email, o);

  before(async () => {
    t = await startTestRuntime();
    origin = "http://localhost:80";
    portal = portalPeople(t);
    await t.addTenant("globex");
    await person("ada@acme.example", "admin", "acme");
    await person("vic@acme.example", "viewer", "acme");
    await person("gus@globex.example", "admin", "globex");
    await person("root@example.org", "operator");
  });
  after(() => t.close());

  it("GET / leads to the portal; a signed-out page goes to sign-in, the API answers 401", async () => {
    const root = await t.runtime.app.inject({ method: "GET", url: "/" });
    assert.equal(root.statusCode, 302);
    assert.equal(root.headers.location, "/portal/");
    const page = await t.runtime.app.inject({ method: "GET", url: "/portal/verdicts?verdict=No" });
    assert.equal(page.statusCode, 302);
    assert.equal(page.headers.location, "/portal/signin?next=%2Fportal%2Fverdicts%3Fverdict%3DNo");
    const api = await t.runtime.app.inject({ method: "GET", url: "/portal/api/verdicts" });
    assert.equal(api.statusCode, 401);
    assert.equal(api.json().code, "4018001");
    assert.match(api.json().errorId, /^[0-9a-f]{24}$/);
  });

  it("every portal answer carries a strict CSP and the other security headers; assets come from this service", async () => {
    const res = await t.runtime.app.inject({ method: "GET", url: "/portal/signin" });
    assert.equal(res.statusCode, 200);
    const csp = String(res.headers["content-security-policy"]);
    for (const d of ["default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) assert.ok(csp.includes(d), d);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(res.headers["x-content-type-options"], "nosniff");
    assert.equal(res.headers["referrer-policy"], "same-origin");
    assert.doesNotMatch(res.body, /<script>|<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+=|style=/i, "no inline script, handler or style");
    for (const [asset, type] of [["portal.js", /javascript/], ["portal.css", /css/], ["vendor/pico.min.css", /css/]] as const) {
      const a = await t.runtime.app.inject({ method: "GET", url: `/portal/assets/${asset}` });
      assert.equal(a.statusCode, 200, asset);
      assert.match(String(a.headers["content-type"]), type);
    }
    assert.equal((await t.runtime.app.inject({ method: "GET", url: "/portal/assets/../../package.json" })).statusCode, 404);
  });

  it("sign-in: the same answer for an unknown email and a wrong password; a foreign Origin is refused", async () => {
    const wrong = await t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: { origin }, payload: { email: "ada@acme.example", password: "not the password at all" } });
    const unknown = await t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: { origin }, payload: { email: "nobody@acme.example", password: "not the password at all" } });
    assert.equal(wrong.statusCode, 401);
    assert.equal(unknown.statusCode, 401);
    assert.deepEqual([wrong.json().code, wrong.json().data], [unknown.json().code, unknown.json().data]);
    const foreign = await t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: { origin: "https://evil.example" }, payload: { email: "ada@acme.example", password: PASSWORD } });
    assert.equal(foreign.statusCode, 403);
    assert.equal(foreign.json().code, "4038001");
    assert.equal(foreign.cookies.length, 0);
  });

  it("a state change without its CSRF token, or with another session's, is refused and changes nothing", async () => {
    const before = (await t.runtime.stores.durable.listApiKeys("t_acme")).length;
    for (const csrf of [false, people["gus@globex.example"]!.csrf] as const) {
      const res = await as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "x" }, csrf });
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(res.json().code, "4038001");
    }
    assert.equal((await t.runtime.stores.durable.listApiKeys("t_acme")).length, before);
  });

  it("an admin creates a key (shown once), it works on the API, shows its last use, and revoked it is refused", async () => {
    const made = await as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "web shop", rps: 5 } });
    assert.equal(made.statusCode, 200, made.body);
    const { key, keyId } = made.json() as { key: string; keyId: string };
    const stored = await t.runtime.stores.durable.getApiKey(keyId);
    assert.equal(stored?.label, "web shop");
    assert.ok(!JSON.stringify(stored).includes(parseApiKey(key)!.secret), "only the hash is stored");
    const nonce = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } });
    assert.equal(nonce.statusCode, 200);
    await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: "atd_aaaaaaaaaa_" + "A".repeat(43) } });
    const listed = (await as("ada@acme.example", { url: "/portal/api/keys" })).json() as { keyId: string; lastUsedAt: string | null }[];
    assert.ok(listed.some((k) => k.keyId === keyId));
    const revoked = await as("ada@acme.example", { method: "DELETE", url: `/portal/api/keys/${keyId}` });
    assert.equal(revoked.statusCode, 204);
    // at once, the clock unmoved: the portal's revocation drops this instance's cached copy of the key
    const refused = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } });
    assert.equal(refused.statusCode, 401);
  });

  it("a viewer reads but cannot write; another tenant's key or verdict by URL is not found; operators pick a tenant", async () => {
    const viewerWrite = await as("vic@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "v" } });
    assert.equal(viewerWrite.statusCode, 403);
    assert.equal(viewerWrite.json().code, "4038000");
    assert.equal((await as("vic@acme.example", { url: "/portal/api/keys" })).statusCode, 200);

    const acmeKey = (await as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: {} })).json().keyId as string;
    const cross = await as("gus@globex.example", { method: "DELETE", url: `/portal/api/keys/${acmeKey}` });
    assert.equal(cross.statusCode, 404);
    assert.equal((await t.runtime.stores.durable.getApiKey(acmeKey))?.revokedAt, null);
    // ?tenant= means nothing to a tenant user: they always see their own
    const globexKeys = (await as("gus@globex.example", { url: "/portal/api/keys?tenant=acme" })).json() as { tenantId: string }[];
    assert.ok(globexKeys.every((k) => k.tenantId === "t_globex"));

    await t.runtime.stores.durable.saveVerdict({
      objectId: "v_acme_1",
      tenantId: "t_acme",
      format: "vendor",
      record: { measurements: "", tamperBit: "0", IMEI: "", status: "SignatureInvalid", nonce: "n", chipId: "c1", verdict: "No", MAC: "", version: "2", createdDate: "", updateDate: "" },
      reason: "the device signature does not verify",
      detail: { note: "<script>alert(1)</script>" },
      createdAt: new Date(t.clock.nowMs()).toISOString(),
    });
    assert.equal((await as("gus@globex.example", { url: "/portal/api/verdicts/v_acme_1" })).statusCode, 404);
    assert.equal((await as("gus@globex.example", { url: "/portal/verdicts/v_acme_1" })).statusCode, 404);
    const page = await as("vic@acme.example", { url: "/portal/verdicts/v_acme_1" });
    assert.equal(page.statusCode, 200);
    assert.ok(page.body.includes("the device signature does not verify"));
    assert.ok(!page.body.includes("<script>alert(1)</script>") && page.body.includes("&lt;script&gt;alert(1)&lt;/script&gt;"), "detail is text");
    const filtered = (await as("vic@acme.example", { url: "/portal/api/verdicts?verdict=No&device=c1" })).json() as { items: { objectId: string }[] };
    assert.deepEqual(filtered.items.map((v) => v.objectId), ["v_acme_1"]);

    assert.equal((await as("root@example.org", { url: "/portal/api/keys" })).statusCode, 400, "an operator names the tenant");
    const opKeys = (await as("root@example.org", { url: "/portal/api/keys?tenant=acme" })).json() as { tenantId: string }[];
    assert.ok(opKeys.length > 0 && opKeys.every((k) => k.tenantId === "t_acme"));
    assert.equal((await as("root@example.org", { url: "/portal/api/verdicts/v_acme_1" })).statusCode, 200, "operators see every tenant");
  });

  it("a failed request is found by its exact errorId, in the API and at the deep link", async () => {
    const bad = await t.runtime.app.inject({ method: "POST", url: "/portal/api/keys", cookies: { [SESSION_COOKIE]: people["ada@acme.example"]!.cookie }, payload: {} });
    const errorId = bad.json().errorId as string;
    await t.runtime.activity.flush();
    const found = (await as("ada@acme.example", { url: `/portal/api/activity?errorId=${errorId}` })).json() as { items: { errorId: string; status: number; code: string }[] };
    assert.deepEqual(found.items.map((e) => [e.errorId, e.status, e.code]), [[errorId, 403, "4038001"]]);
    const page = await as("ada@acme.example", { url: `/portal/activity?errorId=${errorId}` });
    assert.ok(page.body.includes(errorId));
    // another tenant's user does not find it
    const other = (await as("gus@globex.example", { url: `/portal/api/activity?errorId=${errorId}` })).json() as { items: unknown[] };
    assert.deepEqual(other.items, []);
  });

  it("sign-out ends the session on the server; disabling a user ends theirs at once", async () => {
    const vic = people["vic@acme.example"]!;
    const out = await as("vic@acme.example", { method: "DELETE", url: "/portal/api/session" });
    assert.equal(out.statusCode, 204);
    assert.equal((await t.runtime.app.inject({ method: "GET", url: "/portal/api/me", cookies: { [SESSION_COOKIE]: vic.cookie } })).statusCode, 401);

    assert.equal((await as("gus@globex.example", { url: "/portal/api/me" })).statusCode, 200);
    assert.ok((await t.runtime.portal.accounts.disable({ email: "gus@globex.example" }, testActor())) >= 1);
    assert.equal((await as("gus@globex.example", { url: "/portal/api/me" })).statusCode, 401);
  });

  it("/openapi.json documents every /portal/api route with its error answers", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown>; tags?: string[] }>> };
    const portal = Object.keys(doc.paths).filter((p) => p.startsWith("/portal/api/"));
    assert.deepEqual(portal.sort(), [
      "/portal/api/account/password",
      "/portal/api/activity",
      "/portal/api/app-attest-keys",
      "/portal/api/app-attest-keys/{keyId}",
      "/portal/api/app-attest-keys/{keyId}/revoke",
      "/portal/api/audit",
      "/portal/api/audit/export",
      "/portal/api/clients",
      "/portal/api/clients/{clientId}",
      "/portal/api/devices",
      "/portal/api/devices/{deviceId}",
      "/portal/api/devices/{deviceId}/reset",
      "/portal/api/enrollment/devices",
      "/portal/api/enrollment/profiles",
      "/portal/api/enrollment/profiles/{profileId}",
      "/portal/api/enrollment/transactions",
      "/portal/api/invite",
      "/portal/api/ios-apps",
      "/portal/api/ios-apps/{id}",
      "/portal/api/ios-apps/{id}/developer-key",
      "/portal/api/keys",
      "/portal/api/keys/{keyId}",
      "/portal/api/me",
      "/portal/api/overview",
      "/portal/api/passkeys",
      "/portal/api/passkeys/options",
      "/portal/api/passkeys/{credentialId}",
      "/portal/api/play-apps",
      "/portal/api/play-apps/{id}",
      "/portal/api/policy",
      "/portal/api/policy/rollback",
      "/portal/api/policy/versions",
      "/portal/api/policy/versions/{version}",
      "/portal/api/reference-values",
      "/portal/api/session",
      "/portal/api/session/passkey",
      "/portal/api/session/passkey/options",
      "/portal/api/sso/mappings",
      "/portal/api/sso/mappings/{kind}/{value}",
      "/portal/api/tenants",
      "/portal/api/tenants/{name}",
      "/portal/api/trust",
      "/portal/api/trust/refresh",
      "/portal/api/users",
      "/portal/api/users/{userId}",
      "/portal/api/users/{userId}/disable",
      "/portal/api/users/{userId}/enable",
      "/portal/api/users/{userId}/reset-link",
      "/portal/api/verdicts",
      "/portal/api/verdicts.csv",
      "/portal/api/verdicts/{objectId}",
      "/portal/api/webhook-deliveries",
      "/portal/api/webhook-deliveries/{id}",
      "/portal/api/webhook-deliveries/{id}/resend",
      "/portal/api/webhooks",
      "/portal/api/webhooks/{id}",
      "/portal/api/webhooks/{id}/rotate",
    ]);
    for (const p of portal) {
      for (const [method, op] of Object.entries(doc.paths[p]!)) {
        assert.deepEqual(op.tags, ["portal"], `${method} ${p}`);
        assert.ok(Object.keys(op.responses).some((s) => s.startsWith("4")), `${method} ${p} lists its errors`);
      }
    }
  });
});
