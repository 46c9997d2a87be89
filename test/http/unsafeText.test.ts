import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { cryptoRng } from "../../src/clock.ts";
import { accessTokenRequest, apiToken, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { imeiFrom14 } from "../../src/enrollment/deviceIds.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { SESSION_COOKIE } from "../../src/portal/sessions.ts";
import { ApiKeyAdmin } from "../../src/services/apiKeyAdmin.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { PORTAL_PASSWORD, portalPeople } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * Identifiers, labels and names refuse control characters (C0 such as NUL, C1 such as U+0085) and bidi formatting
 * characters (U+202E RIGHT-TO-LEFT OVERRIDE and the rest of src/domain/text.ts), which can cut a name short or make
 * it read as another in every list that shows it: every such field of the admin API, Part B, the services the CLI
 * shares, and the CLI itself, each with its API's catalog code, and nothing is stored.
 */
const BAD = { NUL: "\u0000", NEL: "\u0085", RLO: "\u202E" } as const;
/** each bad character in the middle of an otherwise good value, so only the character is wrong */
const spoiled = (good: string) => Object.entries(BAD).map(([name, c]) => ({ name, value: good.slice(0, 3) + c + good.slice(3) }));

describe("control and bidi characters in identifiers, labels and names", () => {
  let t: TestRuntime;
  let admin: { cookie: string; csrf: string };
  let operator: { cookie: string; csrf: string };
  let keys: ClientKeys;
  let accessToken: string;
  let profileId: string;

  before(async () => {
    t = await startTestRuntime({}, { enrollment: { startWorker: false, tenantKeyBits: 2048 } });
    const people = portalPeople(t);
    admin = await people.add("ada@acme.example", "admin", "acme");
    operator = await people.add("root@example.org", "operator");
    ({ keys } = await t.runtime.enrollment.clients.createClient(t.tenant, { email: "ops@acme.example", readOnly: false, rps: 1000, burst: 1000 }, testActor()));
    const res = await t.runtime.app.inject({ method: "POST", url: "/svc/v1/auth/accesstoken", payload: await accessTokenRequest(keys, { nowMs: t.clock.nowMs(), validityMinutes: 30 }) });
    accessToken = res.json().accessToken;
    const profile = await partB("POST", "/svc/v1/enroll/profiles", { name: "Field tablets" });
    assert.equal(profile.statusCode, 200, profile.body);
    profileId = profile.json().profileId;
  });
  after(() => t.close());

  function portal(who: { cookie: string; csrf: string }, method: InjectOptions["method"], url: string, payload?: object): Promise<LightMyRequestResponse> {
    return t.runtime.app.inject({ method, url, cookies: { [SESSION_COOKIE]: who.cookie }, headers: { "x-csrf-token": who.csrf }, ...(payload ? { payload } : {}) });
  }
  async function partB(method: InjectOptions["method"], url: string, payload?: object): Promise<LightMyRequestResponse> {
    const header = await apiToken(keys, accessToken, { nowMs: t.clock.nowMs() });
    return t.runtime.app.inject({ method, url, headers: { "x-vendor-apitoken": header }, ...(payload ? { payload } : {}) });
  }
  const refused = (res: LightMyRequestResponse, status: number, code: string, what: string) => {
    assert.equal(res.statusCode, status, `${what}: ${res.body}`);
    assert.equal(res.json().code, code, `${what}: ${res.body}`);
  };

  it("the admin API: emails, key labels, client emails, tenant names, passkey names, reference value names, ?tenant=", async () => {
    const keyId = (await portal(admin, "POST", "/portal/api/keys", { label: "ci" })).json().keyId as string;
    const keysBefore = (await t.runtime.stores.durable.listApiKeys("t_acme")).length;
    const cases: [string, () => Promise<LightMyRequestResponse>, string][] = [];
    for (const { name, value } of spoiled("new@acme.example")) {
      cases.push([`invite email ${name}`, () => portal(operator, "POST", "/portal/api/users", { email: value, tenant: "acme", role: "viewer" }), value]);
      cases.push([`client email ${name}`, () => portal(admin, "POST", "/portal/api/clients", { email: value }), value]);
      cases.push([
        `sign-in email ${name}`,
        () => t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: { origin: "http://localhost:80" }, payload: { email: value, password: PORTAL_PASSWORD } }),
        value,
      ]);
    }
    for (const { name, value } of spoiled("deploy key")) {
      cases.push([`key label ${name}`, () => portal(admin, "POST", "/portal/api/keys", { label: value }), value]);
      cases.push([`key label edit ${name}`, () => portal(admin, "PATCH", `/portal/api/keys/${keyId}`, { label: value }), value]);
      cases.push([`passkey name ${name}`, () => portal(admin, "PATCH", "/portal/api/passkeys/someid", { name: value }), value]);
      cases.push([`tenant name ${name}`, () => portal(operator, "POST", "/portal/api/tenants", { name: value }), value]);
      cases.push([`invite tenant ${name}`, () => portal(operator, "POST", "/portal/api/users", { email: "x@acme.example", tenant: value, role: "viewer" }), value]);
      cases.push([`?tenant= ${name}`, () => portal(operator, "GET", `/portal/api/keys?tenant=${encodeURIComponent(value)}`), value]);
      cases.push([`reference value model ${name}`, () => portal(admin, "DELETE", `/portal/api/reference-values?model=${encodeURIComponent(value)}&firmwareVersion=1.0`), value]);
    }
    for (const [what, send] of cases) refused(await send(), 400, "4008000", what);
    assert.equal((await t.runtime.stores.durable.listApiKeys("t_acme")).length, keysBefore, "no key was made");
    const labels = (await t.runtime.stores.durable.listApiKeys("t_acme")).map((k) => k.label);
    assert.deepEqual(labels.filter((l) => l !== null && l !== "ci"), [], "no label was changed");
    const emails = (await t.runtime.portal.accounts.list({})).map((p) => p.email);
    assert.deepEqual(emails.filter((e) => !/^[a-z.]+@[a-z.]+$/.test(e)), [], "no person was invited");
  });

  it("Part B: profile names, reseller ids and device users, with Part B's codes", async () => {
    for (const { name, value } of spoiled("Field phones")) {
      refused(await partB("POST", "/svc/v1/enroll/profiles", { name: value }), 400, "4001700", `profile name ${name}`);
      refused(await partB("PUT", `/svc/v1/enroll/profiles/${profileId}`, { name: value }), 400, "4001700", `profile rename ${name}`);
      refused(await partB("POST", "/svc/v1/resellers/associate", { resellerId: value }), 400, "4000000", `resellerId ${name}`);
    }
    for (const { name, value } of spoiled("ops@acme.example")) {
      const res = await partB("POST", "/svc/v1/enroll/devices", { profileId, devices: [{ deviceId: imeiFrom14("35000000000001"), userId: value }] });
      refused(res, 400, "4001701", `device userId ${name}`);
    }
    const listed = await partB("GET", "/svc/v1/enroll/profiles");
    assert.deepEqual(listed.json().profiles.map((p: { name: string }) => p.name), ["Field tablets"], "nothing stored, nothing renamed");
  });

  it("Part A: a batch item's requestedId, echoed and listed with its verdict, is 400 INVALID_REQUEST", async () => {
    for (const { name, value } of spoiled("order-4711")) {
      const res = await t.runtime.app.inject({
        method: "POST",
        url: "/api/v1/transaction",
        headers: { [KEY_HEADER]: t.key },
        payload: { items: [{ requestedId: value, nonce: "x", blob: "AAAA" }] },
      });
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.deepEqual([res.json().result, res.json().error.code], ["FAIL", "4000000"], name);
    }
  });

  it("the services the CLI shares refuse them too, with the reason naming the character", async () => {
    const keyAdmin = new ApiKeyAdmin(t.runtime.stores.durable, t.clock, cryptoRng);
    for (const { name, value } of spoiled("deploy key")) {
      await assert.rejects(keyAdmin.create(t.tenant, { label: value }, testActor()), (e) => isAppError(e) && e.entry.code === "4008000" && /U\+(0000|0085|202E)/.test(e.reason), `label ${name}`);
    }
    for (const { name, value } of spoiled("new@acme.example")) {
      await assert.rejects(t.runtime.portal.accounts.invite({ email: value, tenant: "acme", role: "viewer" }, testActor()), (e) => isAppError(e) && e.entry.code === "4008000", `invite ${name}`);
      await assert.rejects(t.runtime.enrollment.clients.createClient(t.tenant, { email: value, readOnly: false }, testActor()), /control or bidirectional/, `client ${name}`);
    }
  });

  it("the CLI: a key label or an invited email with U+0085 or U+202E is refused, exit 1, nothing made", () => {
    // (an argument cannot hold NUL: execve ends it there)
    const dir = ["--data-dir", t.dir, "--log-level", "silent"];
    assert.equal(attestdCli(["tenant", "create", "globex", ...dir]).status, 0);
    for (const c of [BAD.NEL, BAD.RLO]) {
      const key = attestdCli(["key", "create", "--tenant", "globex", "--label", `ci${c}gnp.exe`, ...dir]);
      assert.equal(key.status, 1, key.stderr);
      assert.match(key.stderr, /control or bidirectional formatting/);
      assert.equal(key.stdout, "", "no key printed");
      const invite = attestdCli(["user", "invite", "--email", `eve${c}@globex.example`, "--tenant", "globex", ...dir]);
      assert.equal(invite.status, 1, invite.stderr);
      assert.match(invite.stderr, /control or bidirectional formatting/);
    }
    const list = attestdCli(["key", "list", "--tenant", "globex", ...dir]);
    assert.equal(list.status, 0, list.stderr);
    assert.deepEqual(JSON.parse(list.stdout), [], "no key was made");
  });
});
