import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock, cryptoRng } from "../../src/clock.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { catalog, type CatalogEntry } from "../../src/errors/catalog.ts";
import { PortalAccounts } from "../../src/portal/accounts.ts";
import { hashPassword, passwordProblem, verifyPassword } from "../../src/portal/passwords.ts";
import { PortalSessions } from "../../src/portal/sessions.ts";
import { RateLimiter } from "../../src/services/rateLimiter.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { MemoryRateLimitStore } from "../../src/store/memory/memoryRateLimitStore.ts";
import { T0 } from "../helpers/clock.ts";

const GOOD = "a long and unusual passphrase";
// the defaults of --portal-idle-timeout and --portal-session-lifetime
const IDLE_MS = 30 * 60_000;
const ABSOLUTE_MS = 12 * 3600_000;

async function refused(p: Promise<unknown>, entry: CatalogEntry): Promise<Error> {
  const err = await p.then(
    () => assert.fail(`expected ${entry.message}`),
    (e: unknown) => e as Error,
  );
  assert.ok(isAppError(err), String(err));
  assert.equal(err.entry, entry, err.message);
  return err;
}

async function setUp() {
  const store = new MemoryDurableStore();
  const clock = new ManualClock(T0);
  await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1", kind: "customer", createdAt: new Date(T0).toISOString() });
  await store.createTenant({ tenantId: "t_other", name: "other", customerId: "2", kind: "customer", createdAt: new Date(T0).toISOString() });
  const limiter = new RateLimiter(new MemoryRateLimitStore(), clock, { rps: 1, burst: 1 });
  return {
    store,
    clock,
    accounts: new PortalAccounts(store, clock, cryptoRng, limiter, "https://attest.example"),
    sessions: new PortalSessions(store, clock, cryptoRng, { idleMs: IDLE_MS, absoluteMs: ABSOLUTE_MS }),
  };
}

describe("portal passwords", () => {
  it("scrypt round trip; another password, a tampered or foreign hash never match", async () => {
    const h = await hashPassword(GOOD);
    assert.match(h, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.equal(await verifyPassword(GOOD, h), true);
    assert.equal(await verifyPassword(GOOD + " ", h), false);
    assert.equal(await verifyPassword(GOOD, h.slice(0, -2) + (h.endsWith("AA") ? "AB" : "AA")), false);
    assert.equal(await verifyPassword(GOOD, "bcrypt$whatever"), false);
    assert.notEqual(await hashPassword(GOOD), h, "a fresh salt each time");
  });

  it("policy: 12 characters (code points), not a common password, not the email", () => {
    assert.match(passwordProblem("short", "a@b.c")!, /at least 12/);
    assert.match(passwordProblem("ñññññññññññ", "a@b.c")!, /at least 12/, "11 code points are too few whatever their bytes");
    assert.equal(passwordProblem("ññññññññññññ", "a@b.c"), undefined);
    assert.match(passwordProblem("Password1234", "a@b.c")!, /most common/);
    assert.match(passwordProblem("alice.example.person", "Alice.Example.Person@acme.example")!, /email/);
    assert.match(passwordProblem("x".repeat(1025), "a@b.c")!, /at most/);
    assert.equal(passwordProblem(GOOD, "a@b.c"), undefined);
  });
});

describe("portal accounts and sessions", () => {
  it("invite → set a password through the link → sign in; the link works once", async () => {
    const { accounts, store } = await setUp();
    const inv = await accounts.invite({ email: "Ana@Acme.Example", tenant: "acme", role: "admin" });
    assert.equal(inv.user.email, "ana@acme.example");
    assert.equal(inv.user.state, "invited");
    assert.equal(inv.expiresAt, new Date(T0 + 24 * 3600_000).toISOString());
    await refused(accounts.signIn("ana@acme.example", GOOD, "10.0.0.1"), catalog.PORTAL_SIGNIN_FAILED);
    await refused(accounts.acceptInvite(inv.token, "Password1234"), catalog.PORTAL_WEAK_PASSWORD);
    // a refused password leaves the link usable
    const user = await accounts.acceptInvite(inv.token, GOOD);
    assert.equal(user.state, "active");
    assert.ok((await store.getPortalUser(user.userId))!.passwordHash!.startsWith("scrypt$"));
    await refused(accounts.acceptInvite(inv.token, GOOD), catalog.PORTAL_INVITE_INVALID);
    assert.equal((await accounts.signIn(" ANA@acme.example ", GOOD, "10.0.0.1")).userId, user.userId);
  });

  it("a link expires after 24 h; an unknown link says the same", async () => {
    const { accounts, clock } = await setUp();
    const inv = await accounts.invite({ email: "bo@acme.example", tenant: "acme", role: "viewer" });
    clock.advance(24 * 3600_000);
    await refused(accounts.acceptInvite(inv.token, GOOD), catalog.PORTAL_INVITE_INVALID);
    await refused(accounts.acceptInvite("nope", GOOD), catalog.PORTAL_INVITE_INVALID);
  });

  it("an unknown email and a wrong password get the same error; attempts are rate-limited per account", async () => {
    const { accounts } = await setUp();
    const inv = await accounts.invite({ email: "cy@acme.example", tenant: "acme", role: "admin" });
    await accounts.acceptInvite(inv.token, GOOD);
    const a = await refused(accounts.signIn("nobody@acme.example", GOOD, "10.0.0.2"), catalog.PORTAL_SIGNIN_FAILED);
    const b = await refused(accounts.signIn("cy@acme.example", "wrong password!", "10.0.0.3"), catalog.PORTAL_SIGNIN_FAILED);
    assert.equal(a.message, b.message);
    for (let i = 0; i < 9; i++) await refused(accounts.signIn("cy@acme.example", "wrong password!", `10.0.1.${i}`), catalog.PORTAL_SIGNIN_FAILED);
    const limited = await refused(accounts.signIn("cy@acme.example", GOOD, "10.0.2.1"), catalog.TOO_MANY_REQUESTS);
    assert.ok(Number((limited as unknown as { headers: Record<string, string> }).headers["Retry-After"]) >= 1);
  });

  it("emails are one person: another tenant cannot invite the same address; operators have no tenant", async () => {
    const { accounts } = await setUp();
    await accounts.invite({ email: "dee@acme.example", tenant: "acme", role: "admin" });
    await refused(accounts.invite({ email: "DEE@acme.example", tenant: "other", role: "viewer" }), catalog.PORTAL_EMAIL_TAKEN);
    await refused(accounts.invite({ email: "ops@example.org", tenant: "acme", role: "operator" }), catalog.PORTAL_INVALID_REQUEST);
    await refused(accounts.invite({ email: "ops@example.org", role: "admin" }), catalog.PORTAL_INVALID_REQUEST);
    await refused(accounts.invite({ email: "not an email", tenant: "acme", role: "admin" }), catalog.PORTAL_INVALID_REQUEST);
    await refused(accounts.invite({ email: "x@acme.example", tenant: "nope", role: "admin" }), catalog.PORTAL_NOT_FOUND);
    const op = await accounts.invite({ email: "ops@example.org", role: "operator" });
    assert.equal(op.user.tenantId, null);
  });

  it("sessions: idle 30 min and absolute 12 h expiry; disabling a user ends every session at once", async () => {
    const { accounts, sessions, clock } = await setUp();
    const inv = await accounts.invite({ email: "eve@acme.example", tenant: "acme", role: "admin" });
    const user = await accounts.acceptInvite(inv.token, GOOD);
    const { sessionId, session } = await sessions.open(user, "password");
    assert.equal((await sessions.resolve(sessionId))?.actor.tenantId, "t_acme");
    assert.equal(sessions.csrfValid(session, session.csrfToken), true);
    assert.equal(sessions.csrfValid(session, session.csrfToken.slice(1)), false);
    assert.equal(sessions.csrfValid(session, undefined), false);
    // kept alive by use every 29 minutes, until the absolute end
    for (let t = 0; t + 29 * 60_000 < ABSOLUTE_MS; t += 29 * 60_000) {
      clock.advance(29 * 60_000);
      assert.ok(await sessions.resolve(sessionId), `alive at ${t}`);
    }
    clock.set(T0 + ABSOLUTE_MS);
    assert.equal(await sessions.resolve(sessionId), undefined, "12 h after it began");

    const idle = await sessions.open(user, "password");
    clock.advance(IDLE_MS);
    assert.equal(await sessions.resolve(idle.sessionId), undefined, "30 min without a request");

    const a = await sessions.open(user, "password");
    const b = await sessions.open(user, "password");
    assert.equal(await accounts.disable({ email: "eve@acme.example" }), 2);
    assert.equal(await sessions.resolve(a.sessionId), undefined);
    assert.equal(await sessions.resolve(b.sessionId), undefined);
    await refused(accounts.signIn("eve@acme.example", GOOD, "10.9.9.9"), catalog.PORTAL_SIGNIN_FAILED);
    assert.equal(await sessions.resolve("made-up"), undefined);
  });

  it("a page view writes the session's last-seen time only when it is a minute old; idle expiry ends no later for it", async () => {
    const { accounts, sessions, clock, store } = await setUp();
    const inv = await accounts.invite({ email: "tom@acme.example", tenant: "acme", role: "admin" });
    const user = await accounts.acceptInvite(inv.token, GOOD);
    const { sessionId, session } = await sessions.open(user, "password");
    const lastSeen = async () => (await store.getSession(session.sessionHash))?.lastSeenAtMs;
    assert.equal(sessions.touchIntervalMs, 60_000);
    clock.advance(59_999);
    assert.ok(await sessions.resolve(sessionId));
    assert.equal(await lastSeen(), T0, "a request within the minute writes nothing");
    clock.advance(1);
    assert.ok(await sessions.resolve(sessionId));
    assert.equal(await lastSeen(), T0 + 60_000, "a minute on, it is recorded");
    // the untouched request 59.999 s after the recorded one does not extend the session past IDLE_MS from the record
    clock.advance(59_999);
    assert.ok(await sessions.resolve(sessionId));
    clock.set(T0 + 60_000 + IDLE_MS);
    assert.equal(await sessions.resolve(sessionId), undefined);
    // a short idle timeout keeps its precision: a thirtieth of it
    const short = new PortalSessions(store, clock, cryptoRng, { idleMs: 90_000, absoluteMs: ABSOLUTE_MS });
    assert.equal(short.touchIntervalMs, 3_000);
  });
});
