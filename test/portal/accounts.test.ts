import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock, cryptoRng } from "../../src/clock.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { catalog, type CatalogEntry } from "../../src/errors/catalog.ts";
import { PortalAccounts } from "../../src/portal/accounts.ts";
import { HASHING_CONCURRENCY, hashingGate, PASSWORD_COST, PasswordHasher, passwordProblem } from "../../src/portal/passwords.ts";
import { PortalSessions } from "../../src/portal/sessions.ts";
import { RateLimiter } from "../../src/services/rateLimiter.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { MemoryRateLimitStore } from "../../src/store/memory/memoryRateLimitStore.ts";
import { T0 } from "../helpers/clock.ts";
import { testActor } from "../helpers/audit.ts";

const GOOD = "a long and unusual passphrase";
// the defaults of --portal-idle-timeout and --portal-session-lifetime
const IDLE_MS = 30 * 60_000;
const ABSOLUTE_MS = 12 * 3600_000;
/** cheap parameters for tests of other things than the hash's cost (one test below holds the production ones) */
const FAST = new PasswordHasher({ N: 2 ** 10, r: 8, p: 1 });

async function refused(p: Promise<unknown>, entry: CatalogEntry): Promise<Error> {
  const err = await p.then(
    () => assert.fail(`expected ${entry.message}`),
    (e: unknown) => e as Error,
  );
  assert.ok(isAppError(err), String(err));
  assert.equal(err.entry, entry, err.message);
  return err;
}

async function setUp(passwords: PasswordHasher = FAST) {
  const store = new MemoryDurableStore();
  const clock = new ManualClock(T0);
  await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1", kind: "customer", createdAt: new Date(T0).toISOString() });
  await store.createTenant({ tenantId: "t_other", name: "other", customerId: "2", kind: "customer", createdAt: new Date(T0).toISOString() });
  const limiter = new RateLimiter(new MemoryRateLimitStore(), clock, { rps: 1, burst: 1 });
  return {
    store,
    clock,
    accounts: new PortalAccounts(store, clock, cryptoRng, limiter, "https://attest.example", passwords),
    sessions: new PortalSessions(store, clock, cryptoRng, { idleMs: IDLE_MS, absoluteMs: ABSOLUTE_MS }),
  };
}

describe("portal passwords", () => {
  it("scrypt round trip at OWASP's parameters (N=2^17, r=8, p=1); another password, a tampered or foreign hash never match", async () => {
    const production = new PasswordHasher();
    assert.deepEqual(production.cost, { N: 2 ** 17, r: 8, p: 1 });
    assert.deepEqual(PASSWORD_COST, { N: 131072, r: 8, p: 1 });
    const h = await production.hash(GOOD);
    assert.match(h, /^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.equal(await production.verify(GOOD, h), true);
    assert.equal(production.needsRehash(h), false);
    assert.equal(await FAST.verify(GOOD + " ", h), false, "any hasher verifies by the parameters the hash names");
    assert.equal(await FAST.verify(GOOD, h.slice(0, -2) + (h.endsWith("AA") ? "AB" : "AA")), false);
    assert.equal(await FAST.verify(GOOD, "bcrypt$whatever"), false);
    assert.equal(await FAST.verify(GOOD, `scrypt$${2 ** 24}$8$1$AAAA$AAAA`), false, "a cost beyond the bound is refused, not computed");
    assert.notEqual(await FAST.hash(GOOD), await FAST.hash(GOOD), "a fresh salt each time");
  });

  it("at most HASHING_CONCURRENCY hashes run at once in the process; the rest wait their turn and all finish", async () => {
    assert.equal(HASHING_CONCURRENCY, 2);
    hashingGate.peak = 0;
    const hashes = await Promise.all(Array.from({ length: 8 }, (_, i) => FAST.hash(`${GOOD} ${i}`)));
    assert.ok(hashingGate.peak <= HASHING_CONCURRENCY, `peak ${hashingGate.peak}`);
    assert.equal(hashingGate.peak, HASHING_CONCURRENCY, "the burst did fill the bound");
    const checks = await Promise.all(hashes.map((h, i) => FAST.verify(`${GOOD} ${i}`, h)));
    assert.deepEqual(checks, Array(8).fill(true));
    assert.ok(hashingGate.peak <= HASHING_CONCURRENCY);
  });

  it("policy: a password of only spaces (any Unicode whitespace) is refused, however long", () => {
    for (const blank of [" ".repeat(12), "\t".repeat(6) + " ".repeat(6), "\u00a0".repeat(20), "\u3000".repeat(12)]) {
      assert.match(passwordProblem(blank, "a@b.c") ?? "accepted", /only spaces/, JSON.stringify(blank));
    }
    assert.equal(passwordProblem("  a long and unusual passphrase  ", "a@b.c"), undefined, "spaces around a password are part of it");
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
    const inv = await accounts.invite({ email: "Ana@Acme.Example", tenant: "acme", role: "admin" }, testActor());
    assert.equal(inv.user.email, "ana@acme.example");
    assert.equal(inv.user.state, "invited");
    assert.equal(inv.expiresAt, new Date(T0 + 24 * 3600_000).toISOString());
    await refused(accounts.signIn("ana@acme.example", GOOD, "10.0.0.1"), catalog.PORTAL_SIGNIN_FAILED);
    await refused(accounts.acceptInvite(inv.token, "Password1234", (a) => testActor(undefined, a)), catalog.PORTAL_WEAK_PASSWORD);
    // a refused password leaves the link usable
    const user = await accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a));
    assert.equal(user.state, "active");
    assert.ok((await store.getPortalUser(user.userId))!.passwordHash!.startsWith("scrypt$"));
    await refused(accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    assert.equal((await accounts.signIn(" ANA@acme.example ", GOOD, "10.0.0.1")).userId, user.userId);
  });

  it("a link expires after 24 h; an unknown link says the same", async () => {
    const { accounts, clock } = await setUp();
    const inv = await accounts.invite({ email: "bo@acme.example", tenant: "acme", role: "viewer" }, testActor());
    clock.advance(24 * 3600_000);
    await refused(accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    await refused(accounts.acceptInvite("nope", GOOD, (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
  });

  it("an unknown email and a wrong password get the same error; attempts are rate-limited per account", async () => {
    const { accounts } = await setUp();
    const inv = await accounts.invite({ email: "cy@acme.example", tenant: "acme", role: "admin" }, testActor());
    await accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a));
    const a = await refused(accounts.signIn("nobody@acme.example", GOOD, "10.0.0.2"), catalog.PORTAL_SIGNIN_FAILED);
    const b = await refused(accounts.signIn("cy@acme.example", "wrong password!", "10.0.0.3"), catalog.PORTAL_SIGNIN_FAILED);
    assert.equal(a.message, b.message);
    for (let i = 0; i < 9; i++) await refused(accounts.signIn("cy@acme.example", "wrong password!", `10.0.1.${i}`), catalog.PORTAL_SIGNIN_FAILED);
    const limited = await refused(accounts.signIn("cy@acme.example", GOOD, "10.0.2.1"), catalog.TOO_MANY_REQUESTS);
    assert.ok(Number((limited as unknown as { headers: Record<string, string> }).headers["Retry-After"]) >= 1);
  });

  it("emails are one person: another tenant cannot invite the same address; operators have no tenant", async () => {
    const { accounts } = await setUp();
    await accounts.invite({ email: "dee@acme.example", tenant: "acme", role: "admin" }, testActor());
    await refused(accounts.invite({ email: "DEE@acme.example", tenant: "other", role: "viewer" }, testActor()), catalog.PORTAL_EMAIL_TAKEN);
    await refused(accounts.invite({ email: "ops@example.org", tenant: "acme", role: "operator" }, testActor()), catalog.PORTAL_INVALID_REQUEST);
    await refused(accounts.invite({ email: "ops@example.org", role: "admin" }, testActor()), catalog.PORTAL_INVALID_REQUEST);
    await refused(accounts.invite({ email: "not an email", tenant: "acme", role: "admin" }, testActor()), catalog.PORTAL_INVALID_REQUEST);
    await refused(accounts.invite({ email: "x@acme.example", tenant: "nope", role: "admin" }, testActor()), catalog.PORTAL_NOT_FOUND);
    const op = await accounts.invite({ email: "ops@example.org", role: "operator" }, testActor());
    assert.equal(op.user.tenantId, null);
  });

  it("sessions: idle 30 min and absolute 12 h expiry; disabling a user ends every session at once", async () => {
    const { accounts, sessions, clock } = await setUp();
    const inv = await accounts.invite({ email: "eve@acme.example", tenant: "acme", role: "admin" }, testActor());
    const user = await accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a));
    const { sessionId, session } = await sessions.open(user, "password", (a) => testActor(undefined, a));
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

    const idle = await sessions.open(user, "password", (a) => testActor(undefined, a));
    clock.advance(IDLE_MS);
    assert.equal(await sessions.resolve(idle.sessionId), undefined, "30 min without a request");

    const a = await sessions.open(user, "password", (a) => testActor(undefined, a));
    const b = await sessions.open(user, "password", (a) => testActor(undefined, a));
    assert.equal(await accounts.disable({ email: "eve@acme.example" }, testActor()), 2);
    assert.equal(await sessions.resolve(a.sessionId), undefined);
    assert.equal(await sessions.resolve(b.sessionId), undefined);
    await refused(accounts.signIn("eve@acme.example", GOOD, "10.9.9.9"), catalog.PORTAL_SIGNIN_FAILED);
    assert.equal(await sessions.resolve("made-up"), undefined);
  });

  it("a page view writes the session's last-seen time only when it is a minute old; idle expiry ends no later for it", async () => {
    const { accounts, sessions, clock, store } = await setUp();
    const inv = await accounts.invite({ email: "tom@acme.example", tenant: "acme", role: "admin" }, testActor());
    const user = await accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a));
    const { sessionId, session } = await sessions.open(user, "password", (a) => testActor(undefined, a));
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

  it("a person has one live link: a newer link, a password set or a disable voids the older ones (enable brings none back)", async () => {
    const { accounts, store } = await setUp();
    const first = await accounts.invite({ email: "lin@acme.example", tenant: "acme", role: "admin" }, testActor());
    const second = await accounts.invite({ email: "lin@acme.example", tenant: "acme", role: "admin" }, testActor());
    await refused(accounts.acceptInvite(first.token, GOOD, (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    const user = await accounts.acceptInvite(second.token, GOOD, (a) => testActor(undefined, a));

    // a link out when the password is set by another (here: a newer link) is dead afterwards
    const older = await accounts.invite({ email: "lin@acme.example", tenant: "acme", role: "admin" }, testActor());
    const newer = await accounts.invite({ email: "lin@acme.example", tenant: "acme", role: "admin" }, testActor());
    await accounts.acceptInvite(newer.token, "another long passphrase", (a) => testActor(undefined, a));
    await refused(accounts.acceptInvite(older.token, "an attacker's passphrase", (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    const afterChange = await accounts.invite({ email: "lin@acme.example", tenant: "acme", role: "admin" }, testActor());
    await accounts.changePassword({ userId: user.userId, email: user.email, role: "admin", tenantId: "t_acme" }, "another long passphrase", GOOD, "10.3.0.1", testActor());
    await refused(accounts.acceptInvite(afterChange.token, "an attacker's passphrase", (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);

    // issued before a disable: dead after the enable too
    const beforeDisable = await accounts.invite({ email: "lin@acme.example", tenant: "acme", role: "admin" }, testActor());
    await accounts.disable({ email: "lin@acme.example" }, testActor());
    await accounts.enable({ email: "lin@acme.example" }, testActor());
    await refused(accounts.acceptInvite(beforeDisable.token, "an attacker's passphrase", (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    assert.equal((await accounts.signIn("lin@acme.example", GOOD, "10.3.0.2")).userId, user.userId, "the password set last stands");

    // one who never set a password: enabled back to invited, needing a new link
    const pending = await accounts.invite({ email: "pat@acme.example", tenant: "acme", role: "viewer" }, testActor());
    await accounts.disable({ email: "pat@acme.example" }, testActor());
    await refused(accounts.resetLink({ email: "pat@acme.example" }, testActor()), catalog.PORTAL_INVALID_REQUEST);
    assert.equal((await accounts.enable({ email: "pat@acme.example" }, testActor())).state, "invited");
    await refused(accounts.acceptInvite(pending.token, GOOD, (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    const fresh = await accounts.resetLink({ email: "pat@acme.example" }, testActor());
    assert.match(fresh.link, /^https:\/\/attest\.example\/portal\/reset#[A-Za-z0-9_-]{43}$/);
    assert.equal((await accounts.acceptInvite(fresh.token, GOOD, (a) => testActor(undefined, a))).state, "active");
    assert.equal((await store.getPortalUserByEmail("pat@acme.example"))!.state, "active");
  });

  it("a password change ends every session of the person; it needs the current password, under the sign-in limits", async () => {
    const { accounts, sessions } = await setUp();
    const inv = await accounts.invite({ email: "kim@acme.example", tenant: "acme", role: "viewer" }, testActor());
    const user = await accounts.acceptInvite(inv.token, GOOD, (a) => testActor(undefined, a));
    const a = await sessions.open(user, "password", (a) => testActor(undefined, a));
    const b = await sessions.open(user, "passkey", (a) => testActor(undefined, a));
    const actor = (await sessions.resolve(a.sessionId))!.actor;
    await refused(accounts.changePassword(actor, "not my password", "a brand new passphrase", "10.4.0.1", testActor()), catalog.PORTAL_SIGNIN_FAILED);
    await refused(accounts.changePassword(actor, GOOD, " ".repeat(16), "10.4.0.2", testActor()), catalog.PORTAL_WEAK_PASSWORD);
    assert.ok(await sessions.resolve(b.sessionId), "refusals end nothing");
    assert.equal(await accounts.changePassword(actor, GOOD, "a brand new passphrase", "10.4.0.3", testActor()), 2);
    assert.equal(await sessions.resolve(a.sessionId), undefined);
    assert.equal(await sessions.resolve(b.sessionId), undefined);
    await refused(accounts.signIn("kim@acme.example", GOOD, "10.4.0.4"), catalog.PORTAL_SIGNIN_FAILED);
    assert.equal((await accounts.signIn("kim@acme.example", "a brand new passphrase", "10.4.0.5")).userId, user.userId);
    for (let i = 0; i < 10; i++) await accounts.changePassword(actor, "wrong guess " + i, "a brand new passphrase", `10.4.1.${i}`, testActor()).catch(() => undefined);
    await refused(accounts.changePassword(actor, "a brand new passphrase", "yet another passphrase", "10.4.2.1", testActor()), catalog.TOO_MANY_REQUESTS);
  });

  it("a reset link: operators for anyone, an admin for their own tenant only, nobody for a disabled person; using it ends every session", async () => {
    const { accounts, sessions } = await setUp();
    const admin = await accounts.acceptInvite((await accounts.invite({ email: "adm@acme.example", tenant: "acme", role: "admin" }, testActor())).token, GOOD, (a) => testActor(undefined, a));
    const viewer = await accounts.acceptInvite((await accounts.invite({ email: "vi@acme.example", tenant: "acme", role: "viewer" }, testActor())).token, GOOD, (a) => testActor(undefined, a));
    const outsider = await accounts.acceptInvite((await accounts.invite({ email: "out@other.example", tenant: "other", role: "viewer" }, testActor())).token, GOOD, (a) => testActor(undefined, a));
    const op = await accounts.acceptInvite((await accounts.invite({ email: "op@example.org", role: "operator" }, testActor())).token, GOOD, (a) => testActor(undefined, a));
    const as = (u: typeof admin) => ({ userId: u.userId, email: u.email, role: u.role, tenantId: u.tenantId });

    await refused(accounts.resetLink({ userId: outsider.userId }, testActor(), as(admin)), catalog.PORTAL_NOT_FOUND);
    await refused(accounts.resetLink({ userId: op.userId }, testActor(), as(admin)), catalog.PORTAL_NOT_FOUND);
    const s1 = await sessions.open(viewer, "password", (a) => testActor(undefined, a));
    const s2 = await sessions.open(viewer, "passkey", (a) => testActor(undefined, a));
    const link = await accounts.resetLink({ userId: viewer.userId }, testActor(), as(admin));
    assert.equal(link.expiresAt, new Date(T0 + 24 * 3600_000).toISOString());
    assert.ok(await sessions.resolve(s1.sessionId), "issuing a link ends nothing yet");
    await accounts.acceptInvite(link.token, "the viewer's new passphrase", (a) => testActor(undefined, a));
    assert.deepEqual([await sessions.resolve(s1.sessionId), await sessions.resolve(s2.sessionId)], [undefined, undefined]);
    await refused(accounts.acceptInvite(link.token, "a second use of it", (a) => testActor(undefined, a)), catalog.PORTAL_INVITE_INVALID);
    assert.equal((await accounts.signIn("vi@acme.example", "the viewer's new passphrase", "10.5.0.1")).userId, viewer.userId);

    assert.match((await accounts.resetLink({ userId: outsider.userId }, testActor(), as(op))).link, /\/portal\/reset#/);
    await accounts.disable({ userId: outsider.userId }, testActor());
    await refused(accounts.resetLink({ userId: outsider.userId }, testActor(), as(op)), catalog.PORTAL_INVALID_REQUEST);
  });

  it("an old N=2^15 hash is replaced by an N=2^17 one at the next sign-in, and the password still works", async () => {
    const { accounts, store } = await setUp(new PasswordHasher());
    const made = await store.createPortalUser({ userId: "u_old", email: "old@acme.example", tenantId: "t_acme", role: "admin", at: new Date(T0).toISOString() });
    assert.equal(made.outcome, "ok");
    const legacy = await new PasswordHasher({ N: 2 ** 15, r: 8, p: 1 }).hash(GOOD);
    await store.updatePortalUser("u_old", { passwordHash: legacy, state: "active" }, new Date(T0).toISOString());
    await refused(accounts.signIn("old@acme.example", "not the password", "10.6.0.1"), catalog.PORTAL_SIGNIN_FAILED);
    assert.equal((await store.getPortalUser("u_old"))!.passwordHash, legacy, "a failed sign-in upgrades nothing");
    await accounts.signIn("old@acme.example", GOOD, "10.6.0.2");
    const upgraded = (await store.getPortalUser("u_old"))!.passwordHash!;
    assert.match(upgraded, /^scrypt\$131072\$8\$1\$/);
    assert.equal((await accounts.signIn("old@acme.example", GOOD, "10.6.0.3")).userId, "u_old");
    assert.equal((await store.getPortalUser("u_old"))!.passwordHash, upgraded, "a current hash is left alone");
  });

  it("a wrong password for a person with an old, cheaper hash costs a current-cost hash too, as an unknown email does", async () => {
    const { accounts, store } = await setUp();
    await store.createPortalUser({ userId: "u_cheap", email: "cheap@acme.example", tenantId: "t_acme", role: "admin", at: new Date(T0).toISOString() });
    await store.updatePortalUser("u_cheap", { passwordHash: await new PasswordHasher({ N: 2 ** 8, r: 8, p: 1 }).hash(GOOD), state: "active" }, new Date(T0).toISOString());
    const work = async (email: string, address: string) => {
      const before = hashingGate.started;
      await refused(accounts.signIn(email, "not the password", address), catalog.PORTAL_SIGNIN_FAILED);
      return hashingGate.started - before;
    };
    await work("warm-up@acme.example", "10.8.0.1"); // the first unknown email also makes the hash of nothing
    assert.equal(await work("nobody@acme.example", "10.8.0.2"), 1, "an unknown email: one hash at the current cost");
    assert.equal(await work("cheap@acme.example", "10.8.0.3"), 2, "an old hash: its own, then one at the current cost");
  });
});
