import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { SESSION_COOKIE } from "../../src/portal/sessions.ts";
import { PORTAL_PASSWORD as PASSWORD, portalPeople } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

const ORIGIN = { origin: "http://localhost:80" };
const NEW_PASSWORD = "an entirely different passphrase";

/**
 * Passwords and links over HTTP (issue 22): a password change or a reset link ends every session of the person,
 * a person has one live link at most, a disabled person gets none, and a password of only spaces is refused.
 */
describe("portal passwords, reset links and sessions over HTTP", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  const userId = async (email: string) => (await t.runtime.portal.accounts.find({ email })).userId;
  const code = (res: LightMyRequestResponse) => (res.json() as { code?: string }).code;
  const withCookie = (cookie: string, url = "/portal/api/me") => t.runtime.app.inject({ url, cookies: { [SESSION_COOKIE]: cookie } });
  const signIn = (email: string, password: string) =>
    t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: ORIGIN, payload: { email, password }, remoteAddress: `10.7.0.${Math.floor(Math.random() * 250)}` });
  const setThroughLink = (token: string, password: string) => t.runtime.app.inject({ method: "POST", url: "/portal/api/invite", headers: ORIGIN, payload: { token, password } });

  before(async () => {
    t = await startTestRuntime();
    await t.addTenant("globex");
    people = portalPeople(t);
    await people.add("root@example.org", "operator");
    await people.add("adm@acme.example", "admin", "acme");
    await people.add("gus@globex.example", "admin", "globex");
  });
  after(() => t.close());

  it("change password: the current one is required; every session ends, this browser goes on in a new one", async () => {
    const ann = await people.add("ann@acme.example", "viewer", "acme");
    const phone = (await signIn("ann@acme.example", PASSWORD)).cookies.find((c) => c.name === SESSION_COOKIE)!.value;
    const change = (currentPassword: string, newPassword: string, csrf?: false) =>
      people.as("ann@acme.example", { method: "POST", url: "/portal/api/account/password", payload: { currentPassword, newPassword }, ...(csrf === false ? { csrf } : {}) });

    const wrong = await change("not the password at all", NEW_PASSWORD);
    assert.deepEqual([wrong.statusCode, code(wrong)], [401, "4018000"], "PORTAL_SIGNIN_FAILED");
    const blank = await change(PASSWORD, " ".repeat(16));
    assert.deepEqual([blank.statusCode, code(blank)], [400, "4008001"], "PORTAL_WEAK_PASSWORD");
    const forged = await change(PASSWORD, NEW_PASSWORD, false);
    assert.deepEqual([forged.statusCode, code(forged)], [403, "4038001"], "PORTAL_CSRF");
    assert.equal((await withCookie(phone)).statusCode, 200, "refusals end nothing");

    const done = await change(PASSWORD, NEW_PASSWORD);
    assert.equal(done.statusCode, 200, done.body);
    assert.deepEqual(done.json(), { email: "ann@acme.example", sessionsEnded: 2 });
    const fresh = done.cookies.find((c) => c.name === SESSION_COOKIE)!;
    assert.notEqual(fresh.value, ann.cookie);
    for (const ended of [ann.cookie, phone]) {
      const res = await withCookie(ended);
      assert.deepEqual([res.statusCode, code(res)], [401, "4018001"], "PORTAL_SIGNED_OUT");
    }
    assert.equal((await withCookie(fresh.value)).json().email, "ann@acme.example");
    assert.equal((await signIn("ann@acme.example", PASSWORD)).statusCode, 401);
    assert.equal((await signIn("ann@acme.example", NEW_PASSWORD)).statusCode, 200);
  });

  it("reset link: operators for anyone, a tenant admin for their own tenant only; using it ends every session", async () => {
    const vic = await people.add("vic@acme.example", "viewer", "acme");
    const resetLink = (who: string, of: string) => people.as(who, { method: "POST", url: `/portal/api/users/${of}/reset-link` });

    const byViewer = await resetLink("vic@acme.example", await userId("adm@acme.example"));
    assert.deepEqual([byViewer.statusCode, code(byViewer)], [403, "4038000"], "PORTAL_FORBIDDEN");
    const otherTenant = await resetLink("adm@acme.example", await userId("gus@globex.example"));
    assert.deepEqual([otherTenant.statusCode, code(otherTenant)], [404, "4048000"], "PORTAL_NOT_FOUND");
    const operator = await resetLink("adm@acme.example", await userId("root@example.org"));
    assert.deepEqual([operator.statusCode, code(operator)], [404, "4048000"]);

    const issued = await resetLink("adm@acme.example", await userId("vic@acme.example"));
    assert.equal(issued.statusCode, 200, issued.body);
    const { email, link, expiresAt } = issued.json() as { email: string; link: string; expiresAt: string };
    assert.equal(email, "vic@acme.example");
    assert.match(link, /^https:\/\/localhost:8443\/portal\/reset#[A-Za-z0-9_-]{43}$/);
    assert.equal(Date.parse(expiresAt), t.clock.nowMs() + 24 * 3600_000);
    assert.equal((await withCookie(vic.cookie)).statusCode, 200, "issuing ends nothing yet");
    const page = await t.runtime.app.inject({ url: "/portal/reset" });
    assert.match(page.body, /<h1>Choose a new password<\/h1>/);

    const token = link.split("#")[1]!;
    assert.equal((await setThroughLink(token, NEW_PASSWORD)).statusCode, 200);
    const after = await withCookie(vic.cookie);
    assert.deepEqual([after.statusCode, code(after)], [401, "4018001"], "the person's session ended");
    const again = await setThroughLink(token, "a third long passphrase");
    assert.deepEqual([again.statusCode, code(again)], [410, "4108000"], "PORTAL_INVITE_INVALID: once");
    assert.equal((await signIn("vic@acme.example", NEW_PASSWORD)).statusCode, 200);

    assert.equal((await resetLink("root@example.org", await userId("gus@globex.example"))).statusCode, 200);
    const disabled = await people.as("root@example.org", { method: "POST", url: `/portal/api/users/${await userId("gus@globex.example")}/disable` });
    assert.equal(disabled.statusCode, 200);
    const none = await resetLink("root@example.org", await userId("gus@globex.example"));
    assert.deepEqual([none.statusCode, code(none)], [400, "4008000"], "PORTAL_INVALID_REQUEST: a disabled person gets no link");
  });

  it("a tenant admin's Users page: their tenant's people, each with a reset link, whatever ?tenant says", async () => {
    const page = await people.as("adm@acme.example", { url: "/portal/users?tenant=globex" });
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /adm@acme\.example/);
    assert.match(page.body, /vic@acme\.example/);
    assert.doesNotMatch(page.body, /globex\.example|root@example\.org/);
    assert.match(page.body, new RegExp(`data-api="/portal/api/users/${await userId("vic@acme.example")}/reset-link"`));
    assert.doesNotMatch(page.body, /\/disable"|data-method="PATCH"|Invite someone/, "an admin changes nothing else of a person");
    await people.add("val@acme.example", "viewer", "acme");
    const viewer = await people.as("val@acme.example", { url: "/portal/users" });
    assert.equal(viewer.statusCode, 403, "a viewer has no Users page");
  });

  it("one live link: an older invitation dies with a newer one, and a link from before a disable stays dead after enable", async () => {
    const invite = async () => {
      const res = await people.as("root@example.org", { method: "POST", url: "/portal/api/users", payload: { email: "new@globex.example", tenant: "globex", role: "viewer" } });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { link: string }).link.split("#")[1]!;
    };
    const older = await invite();
    const newer = await invite();
    const stale = await setThroughLink(older, PASSWORD);
    assert.deepEqual([stale.statusCode, code(stale)], [410, "4108000"]);
    const id = await userId("new@globex.example");
    const beforeDisable = await invite();
    assert.equal(newer === beforeDisable, false);
    for (const step of ["disable", "enable"]) {
      const res = await people.as("root@example.org", { method: "POST", url: `/portal/api/users/${id}/${step}` });
      assert.ok(res.statusCode < 300, res.body);
    }
    const revived = await setThroughLink(beforeDisable, PASSWORD);
    assert.deepEqual([revived.statusCode, code(revived)], [410, "4108000"]);
    const blank = await setThroughLink(await invite(), "\u00a0".repeat(14));
    assert.deepEqual([blank.statusCode, code(blank)], [400, "4008001"], "a password of only spaces: PORTAL_WEAK_PASSWORD");
  });
});
