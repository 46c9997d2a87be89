import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { isPortalPageRoute, type ActivityEntry } from "../../src/domain/activity.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { ActivityFilter, DurableStore, EnrollmentStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * What the portal needs of a durable backend, asserted the same on memory, SQLite and PostgreSQL: people and
 * their one-time links and sessions, verdict history and activity filtered and paged by key, API key labels and
 * last use. Every test works under its own random ids, so the suite runs on a long-lived database too.
 */
export interface PortalBackend {
  durable: DurableStore;
  /** the SQL backends keep Part B users in the same rows as portal users */
  enrollment?: EnrollmentStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const uid = (p = "") => p + randomBytes(9).toString("base64url");

/** `withPartB`: the backend keeps Part B users (the SQL ones); the suite then also checks they are the same people. */
export function portalConformance(name: string, withPartB: boolean, factory: () => Promise<PortalBackend>): void {
  describe(`portal store conformance: ${name}`, () => {
    let b: PortalBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b.close();
    });

    async function tenant(): Promise<Tenant> {
      const n = uid();
      return b.durable.createTenant({ tenantId: `t_${n}`, name: n, customerId: uid("c"), kind: "customer", createdAt: iso(T0) });
    }

    async function person(t: Tenant | null, role: "admin" | "viewer" | "operator" = "admin") {
      const r = await b.durable.createPortalUser({ userId: uid("u_"), email: `${uid()}@Example.COM`, tenantId: t?.tenantId ?? null, role, at: iso(T0) });
      assert.equal(r.outcome, "ok");
      return (r as { user: import("../../src/domain/portal.ts").PortalUser }).user;
    }

    it("people: invited on creation, email unique among portal users whatever its case, looked up by email", async () => {
      const t = await tenant();
      const email = `${uid()}@Acme.Example`;
      const r = await b.durable.createPortalUser({ userId: uid("u_"), email, tenantId: t.tenantId, role: "viewer", at: iso(T0) });
      assert.equal(r.outcome, "ok");
      const user = (r as { outcome: "ok"; user: { userId: string } }).user;
      assert.deepEqual(
        { ...(await b.durable.getPortalUserByEmail(email.toUpperCase()))! },
        { ...(await b.durable.getPortalUser(user.userId))! },
      );
      const got = (await b.durable.getPortalUser(user.userId))!;
      assert.equal(got.email, email.toLowerCase());
      assert.equal(got.state, "invited");
      assert.equal(got.role, "viewer");
      assert.equal(got.passwordHash, null);
      assert.equal(got.tenantId, t.tenantId);
      const again = await b.durable.createPortalUser({ userId: uid("u_"), email: email.toLowerCase(), tenantId: (await tenant()).tenantId, role: "admin", at: iso(T0) });
      assert.deepEqual(again, { outcome: "email_taken" });
      assert.equal(await b.durable.getPortalUserByEmail(`${uid()}@nowhere.example`), undefined);
    });

    it("people: operators belong to no tenant; lists by tenant, operators, everyone", async () => {
      const t = await tenant();
      const admin = await person(t, "admin");
      const viewer = await person(t, "viewer");
      const op = await person(null, "operator");
      assert.equal(op.tenantId, null);
      assert.deepEqual((await b.durable.listPortalUsers(t.tenantId)).map((u) => u.userId).sort(), [admin.userId, viewer.userId].sort());
      assert.ok((await b.durable.listPortalUsers(null)).some((u) => u.userId === op.userId));
      assert.ok(!(await b.durable.listPortalUsers(null)).some((u) => u.userId === admin.userId));
      const all = (await b.durable.listPortalUsers()).map((u) => u.userId);
      for (const id of [admin.userId, viewer.userId, op.userId]) assert.ok(all.includes(id));
    });

    it("people: update sets only what it names; an unknown user changes nothing", async () => {
      const u = await person(await tenant());
      assert.equal(await b.durable.updatePortalUser(u.userId, { passwordHash: "scrypt$x", state: "active" }, iso(T0 + 1000)), true);
      let got = (await b.durable.getPortalUser(u.userId))!;
      assert.deepEqual([got.passwordHash, got.state, got.role, got.updatedAt], ["scrypt$x", "active", "admin", iso(T0 + 1000)]);
      assert.equal(await b.durable.updatePortalUser(u.userId, { role: "viewer" }, iso(T0 + 2000)), true);
      got = (await b.durable.getPortalUser(u.userId))!;
      assert.deepEqual([got.passwordHash, got.state, got.role], ["scrypt$x", "active", "viewer"]);
      assert.equal(await b.durable.updatePortalUser(u.userId, { passwordHash: null }, iso(T0 + 3000)), true);
      assert.equal((await b.durable.getPortalUser(u.userId))!.passwordHash, null);
      assert.equal(await b.durable.updatePortalUser(uid("u_"), { state: "disabled" }, iso(T0)), false);
    });

    if (withPartB) it("one email, one record: the Part B user of the tenant becomes the portal user", async () => {
      assert.ok(b.enrollment, "a backend with Part B users provides its enrollment store");
      const ten = await tenant();
      const email = `${uid()}@partb.example`;
      const partB = await b.enrollment.registerUser({ userId: uid("u_"), tenantId: ten.tenantId, email, at: iso(T0) });
      const r = await b.durable.createPortalUser({ userId: uid("u_"), email, tenantId: ten.tenantId, role: "admin", at: iso(T0) });
      assert.equal(r.outcome, "ok");
      assert.equal((r as { user: { userId: string } }).user.userId, partB.userId);
      // Part B still sees its user, registered, and the tenant's user list does not grow
      assert.equal((await b.enrollment.getUser(partB.userId))?.state, "registered");
      assert.equal((await b.enrollment.listUsers(ten.tenantId)).length, 1);
    });

    it("invites: used once, also under concurrent use; expired and unknown tokens say so", async () => {
      const u = await person(await tenant());
      const tokenHash = uid("h");
      await b.durable.createInvite({ tokenHash, userId: u.userId, createdAtMs: T0, expiresAtMs: T0 + 60_000, usedAtMs: null });
      assert.equal(await b.durable.peekInvite(tokenHash, T0 + 1), u.userId, "a look does not use it");
      assert.equal(await b.durable.peekInvite(tokenHash, T0 + 60_000), undefined, "expired");
      const [x, y] = await Promise.all([b.durable.useInvite(tokenHash, T0 + 1), b.durable.useInvite(tokenHash, T0 + 1)]);
      const outcomes = [x, y].map((o) => (typeof o === "string" ? o : "invite"));
      assert.deepEqual(outcomes.sort(), ["invite", "used"]);
      const got = [x, y].find((o) => typeof o !== "string") as { userId: string; usedAtMs: number };
      assert.deepEqual([got.userId, got.usedAtMs], [u.userId, T0 + 1]);
      const late = uid("h");
      await b.durable.createInvite({ tokenHash: late, userId: u.userId, createdAtMs: T0, expiresAtMs: T0 + 60_000, usedAtMs: null });
      assert.equal(await b.durable.peekInvite(tokenHash, T0 + 2), undefined, "used");
      assert.equal(await b.durable.useInvite(late, T0 + 60_000), "expired");
      assert.equal(await b.durable.useInvite(uid("h"), T0), "unknown");
    });

    it("invites: a user has one live link at most: a new one, a use, voiding or a password set void the others; none while disabled", async () => {
      const u = await person(await tenant());
      const other = await person(await tenant());
      const link = async (userId: string, at = T0) => {
        const tokenHash = uid("h");
        return { tokenHash, made: await b.durable.createInvite({ tokenHash, userId, createdAtMs: at, expiresAtMs: at + 60_000, usedAtMs: null }) };
      };
      const first = await link(u.userId);
      const second = await link(u.userId, T0 + 1);
      const theirs = await link(other.userId);
      assert.deepEqual([first.made, second.made], [true, true]);
      assert.equal(await b.durable.peekInvite(first.tokenHash, T0 + 2), undefined, "a newer link voids the older one");
      assert.equal(await b.durable.useInvite(first.tokenHash, T0 + 2), "used");
      assert.equal(await b.durable.peekInvite(second.tokenHash, T0 + 2), u.userId);

      assert.equal(await b.durable.voidInvites(u.userId, T0 + 3), 1);
      assert.equal(await b.durable.useInvite(second.tokenHash, T0 + 4), "used", "voided");
      assert.equal(await b.durable.peekInvite(theirs.tokenHash, T0 + 4), other.userId, "another user's link is untouched");

      const beforePassword = await link(u.userId, T0 + 5);
      const mk = (h: string, userId: string) =>
        b.durable.createSession({ sessionHash: h, userId, csrfToken: uid(), createdAtMs: T0, lastSeenAtMs: T0, expiresAtMs: T0 + 3600_000, method: "password" });
      const [s1, s2, s3] = [uid("s"), uid("s"), uid("s")];
      await mk(s1, u.userId);
      await mk(s2, u.userId);
      await mk(s3, other.userId);
      assert.equal(await b.durable.setPassword(u.userId, "scrypt$1$8$1$a$b", iso(T0 + 6), T0 + 6), 2, "both of the user's sessions end");
      const after = (await b.durable.getPortalUser(u.userId))!;
      assert.deepEqual([after.passwordHash, after.state, after.updatedAt], ["scrypt$1$8$1$a$b", "active", iso(T0 + 6)]);
      assert.equal(await b.durable.peekInvite(beforePassword.tokenHash, T0 + 7), undefined, "setting a password voids the link out");
      assert.deepEqual([await b.durable.getSession(s1), await b.durable.getSession(s2)], [undefined, undefined]);
      assert.equal((await b.durable.getSession(s3))?.userId, other.userId, "another user's session stays");

      // the upgrade of a hash at sign-in replaces only the hash it verified, never a password set meanwhile
      assert.equal(await b.durable.replacePasswordHash(u.userId, "scrypt$0$8$1$x$y", "scrypt$2$8$1$c$d", iso(T0 + 8)), false);
      assert.equal((await b.durable.getPortalUser(u.userId))!.passwordHash, "scrypt$1$8$1$a$b");
      assert.equal(await b.durable.replacePasswordHash(u.userId, "scrypt$1$8$1$a$b", "scrypt$2$8$1$c$d", iso(T0 + 8)), true);
      assert.equal((await b.durable.getPortalUser(u.userId))!.passwordHash, "scrypt$2$8$1$c$d");

      const beforeDisable = await link(u.userId, T0 + 9);
      await b.durable.updatePortalUser(u.userId, { state: "disabled" }, iso(T0 + 10));
      assert.equal(await b.durable.voidInvites(u.userId, T0 + 10), 1);
      const whileDisabled = await link(u.userId, T0 + 11);
      assert.equal(whileDisabled.made, false, "no link for a disabled user");
      assert.equal(await b.durable.setPassword(u.userId, "scrypt$3$8$1$e$f", iso(T0 + 11), T0 + 11), undefined, "nor a password");
      await b.durable.updatePortalUser(u.userId, { state: "active" }, iso(T0 + 12));
      assert.equal(await b.durable.peekInvite(beforeDisable.tokenHash, T0 + 12), undefined, "enabling brings no old link back");
      assert.equal(await b.durable.peekInvite(whileDisabled.tokenHash, T0 + 12), undefined);
      assert.equal((await b.durable.getPortalUser(u.userId))!.passwordHash, "scrypt$2$8$1$c$d");
    });

    it("sessions: touched forward only, ended one by one or all of a user's, purged when idle or past their end", async () => {
      const u = await person(await tenant());
      const other = await person(await tenant());
      const mk = (h: string, userId: string, lastSeen: number, expires: number) =>
        b.durable.createSession({ sessionHash: h, userId, csrfToken: uid(), createdAtMs: T0, lastSeenAtMs: lastSeen, expiresAtMs: expires, method: "password" });
      const [s1, s2, s3, s4] = [uid("s"), uid("s"), uid("s"), uid("s")];
      await mk(s1, u.userId, T0, T0 + 12 * 3600_000);
      await mk(s2, u.userId, T0, T0 + 12 * 3600_000);
      await mk(s3, other.userId, T0, T0 + 60_000);
      await mk(s4, other.userId, T0 + 3_000_000, T0 + 12 * 3600_000);
      const byPasskey = uid("s");
      await b.durable.createSession({ sessionHash: byPasskey, userId: other.userId, csrfToken: "c", createdAtMs: T0, lastSeenAtMs: T0, expiresAtMs: T0 + 60_000, method: "passkey" });
      assert.equal((await b.durable.getSession(byPasskey))?.method, "passkey");
      await b.durable.deleteSession(byPasskey);
      await b.durable.touchSession(s1, T0 + 5000);
      await b.durable.touchSession(s1, T0 + 1000);
      assert.equal((await b.durable.getSession(s1))!.lastSeenAtMs, T0 + 5000);
      assert.equal(await b.durable.deleteUserSessions(u.userId), 2);
      assert.equal(await b.durable.getSession(s1), undefined);
      assert.equal(await b.durable.getSession(s2), undefined);
      // at T0 + 31 min with a 30 min idle limit: s3 is past its absolute end, s4 was seen 19 min ago
      const purged = await b.durable.purgeSessions(T0 + 31 * 60_000, 30 * 60_000);
      assert.ok(purged >= 1);
      assert.equal(await b.durable.getSession(s3), undefined);
      assert.equal((await b.durable.getSession(s4))?.userId, other.userId);
      await b.durable.deleteSession(s4);
      assert.equal(await b.durable.getSession(s4), undefined);
    });

    it("passkeys: one credential id across users, a user's listed oldest first, renamed and deleted by their owner only", async () => {
      const u = await person(await tenant());
      const other = await person(await tenant());
      const mk = (userId: string, name: string, at: number) => ({
        credentialId: uid("cred"),
        userId,
        publicKey: uid("pk"),
        counter: 0,
        transports: ["internal", "hybrid"],
        backedUp: true,
        name,
        createdAt: iso(at),
        lastUsedAt: null,
      });
      const late = mk(u.userId, "phone", T0 + 2000);
      const early = mk(u.userId, "laptop", T0 + 1000);
      assert.equal(await b.durable.createPasskey(late), "ok");
      assert.equal(await b.durable.createPasskey(early), "ok");
      assert.equal(await b.durable.createPasskey({ ...early, userId: other.userId }), "exists", "a credential id names one passkey");
      assert.deepEqual(await b.durable.listPasskeys(u.userId), [early, late]);
      assert.deepEqual(await b.durable.getPasskey(late.credentialId), late);
      assert.deepEqual(await b.durable.listPasskeys(other.userId), []);
      assert.equal(await b.durable.getPasskey(uid("cred")), undefined);

      assert.equal(await b.durable.renamePasskey(other.userId, late.credentialId, "mine now"), false, "not the owner");
      assert.equal(await b.durable.renamePasskey(u.userId, late.credentialId, "work phone"), true);
      assert.equal((await b.durable.getPasskey(late.credentialId))!.name, "work phone");
      assert.equal(await b.durable.deletePasskey(other.userId, late.credentialId), false, "not the owner");
      assert.equal(await b.durable.deletePasskey(u.userId, late.credentialId), true);
      assert.equal(await b.durable.deletePasskey(u.userId, late.credentialId), false);
      assert.deepEqual((await b.durable.listPasskeys(u.userId)).map((p) => p.credentialId), [early.credentialId]);
    });

    it("passkeys: the signature counter only moves forward (or stays 0 where the authenticator keeps none)", async () => {
      const u = await person(await tenant());
      const none = { credentialId: uid("cred"), userId: u.userId, publicKey: "pk", counter: 0, transports: [], backedUp: false, name: "key", createdAt: iso(T0), lastUsedAt: null };
      const counting = { ...none, credentialId: uid("cred"), counter: 5 };
      await b.durable.createPasskey(none);
      await b.durable.createPasskey(counting);
      assert.equal(await b.durable.recordPasskeyUse(none.credentialId, 0, iso(T0 + 1)), true, "0 → 0: no counter kept");
      assert.equal((await b.durable.getPasskey(none.credentialId))!.lastUsedAt, iso(T0 + 1));
      assert.equal(await b.durable.recordPasskeyUse(counting.credentialId, 5, iso(T0 + 2)), false, "the same value again: a copy");
      assert.equal(await b.durable.recordPasskeyUse(counting.credentialId, 4, iso(T0 + 2)), false, "backwards: a copy");
      assert.equal(await b.durable.recordPasskeyUse(counting.credentialId, 0, iso(T0 + 2)), false, "back to 0");
      assert.equal((await b.durable.getPasskey(counting.credentialId))!.lastUsedAt, null, "a refused use records nothing");
      const both = await Promise.all([
        b.durable.recordPasskeyUse(counting.credentialId, 6, iso(T0 + 3)),
        b.durable.recordPasskeyUse(counting.credentialId, 6, iso(T0 + 3)),
      ]);
      assert.deepEqual(both.sort(), [false, true], "two uses of one counter value: one passes");
      const after = (await b.durable.getPasskey(counting.credentialId))!;
      assert.deepEqual([after.counter, after.lastUsedAt], [6, iso(T0 + 3)]);
      assert.equal(await b.durable.recordPasskeyUse(uid("cred"), 1, iso(T0)), false, "unknown credential");
    });

    it("passkey challenges: taken once (also concurrently), not after they expire, purged when expired", async () => {
      const u = await person(await tenant());
      const reg = { challengeHash: uid("ch"), purpose: "register" as const, userId: u.userId, expiresAtMs: T0 + 60_000 };
      const signin = { challengeHash: uid("ch"), purpose: "signin" as const, userId: null, expiresAtMs: T0 + 60_000 };
      const stale = { challengeHash: uid("ch"), purpose: "signin" as const, userId: null, expiresAtMs: T0 + 1000 };
      for (const c of [reg, signin, stale]) await b.durable.createPasskeyChallenge(c);
      const taken = await Promise.all([b.durable.takePasskeyChallenge(reg.challengeHash, T0), b.durable.takePasskeyChallenge(reg.challengeHash, T0)]);
      assert.deepEqual(taken.filter(Boolean), [reg], "one of two concurrent takes gets it");
      assert.equal(await b.durable.takePasskeyChallenge(reg.challengeHash, T0), undefined, "used");
      assert.equal(await b.durable.takePasskeyChallenge(stale.challengeHash, T0 + 1000), undefined, "expired");
      assert.equal(await b.durable.takePasskeyChallenge(stale.challengeHash, T0), undefined, "an expired take still removes it");
      const another = { challengeHash: uid("ch"), purpose: "signin" as const, userId: null, expiresAtMs: T0 + 500 };
      await b.durable.createPasskeyChallenge(another);
      assert.ok((await b.durable.purgePasskeyChallenges(T0 + 2000)) >= 1);
      assert.equal(await b.durable.takePasskeyChallenge(another.challengeHash, T0), undefined, "purged");
      assert.deepEqual(await b.durable.takePasskeyChallenge(signin.challengeHash, T0 + 59_999), signin);
    });

    function verdictOf(t: Tenant, i: number, o: Partial<StoredVerdict["record"]> & { format?: string; at?: number } = {}): StoredVerdict {
      return {
        objectId: `v_${String(i).padStart(4, "0")}_${uid()}`,
        tenantId: t.tenantId,
        format: o.format ?? "vendor",
        record: {
          measurements: "",
          tamperBit: "0",
          IMEI: o.IMEI ?? "",
          status: o.status ?? "Success",
          nonce: uid(),
          chipId: o.chipId ?? "",
          verdict: o.verdict ?? "Yes",
          MAC: "",
          version: "2",
          createdDate: iso(T0),
          updateDate: iso(T0),
        },
        reason: "r",
        detail: {},
        createdAt: iso(o.at ?? T0 + i * 1000),
      };
    }

    it("verdict history: newest first, one tenant only, every filter, paged by key with no row lost or repeated", async () => {
      const t = await tenant();
      const stranger = await tenant();
      const saved: StoredVerdict[] = [];
      for (let i = 0; i < 12; i++) {
        const v = verdictOf(t, i, {
          verdict: i % 3 === 0 ? "No" : "Yes",
          status: i % 3 === 0 ? "SignatureInvalid" : "Success",
          format: i % 2 ? "android-key" : "vendor",
          chipId: i === 5 ? "chip-5" : "",
          IMEI: i === 7 ? "490154203237518" : "",
          // two pairs share a millisecond: the object id breaks the tie
          at: T0 + Math.floor(i / 2) * 1000,
        });
        saved.push(v);
        await b.durable.saveVerdict(v);
      }
      await b.durable.saveVerdict(verdictOf(stranger, 99));
      const newestFirst = [...saved].sort((x, y) => (x.createdAt === y.createdAt ? (x.objectId < y.objectId ? 1 : -1) : x.createdAt < y.createdAt ? 1 : -1));
      const ids = (vs: StoredVerdict[]) => vs.map((v) => v.objectId);

      assert.deepEqual(ids(await b.durable.listVerdicts({ tenantId: t.tenantId, limit: 50 })), ids(newestFirst));
      assert.deepEqual(ids(await b.durable.listVerdicts({ tenantId: t.tenantId, verdict: "No", limit: 50 })), ids(newestFirst.filter((v) => v.record.verdict === "No")));
      assert.deepEqual(
        ids(await b.durable.listVerdicts({ tenantId: t.tenantId, status: "SignatureInvalid", limit: 50 })),
        ids(newestFirst.filter((v) => v.record.status === "SignatureInvalid")),
      );
      assert.deepEqual(ids(await b.durable.listVerdicts({ tenantId: t.tenantId, format: "android-key", limit: 50 })), ids(newestFirst.filter((v) => v.format === "android-key")));
      assert.deepEqual(ids(await b.durable.listVerdicts({ tenantId: t.tenantId, device: "chip-5", limit: 50 })), [saved[5]!.objectId]);
      assert.deepEqual(ids(await b.durable.listVerdicts({ tenantId: t.tenantId, device: "490154203237518", limit: 50 })), [saved[7]!.objectId]);
      assert.deepEqual(
        ids(await b.durable.listVerdicts({ tenantId: t.tenantId, from: iso(T0 + 2000), to: iso(T0 + 4000), limit: 50 })),
        ids(newestFirst.filter((v) => v.createdAt >= iso(T0 + 2000) && v.createdAt < iso(T0 + 4000))),
      );
      assert.deepEqual(await b.durable.listVerdicts({ tenantId: stranger.tenantId, device: "chip-5", limit: 50 }), []);

      const pages: string[] = [];
      let before: { createdAt: string; objectId: string } | undefined;
      for (;;) {
        const page = await b.durable.listVerdicts({ tenantId: t.tenantId, limit: 5, ...(before ? { before } : {}) });
        pages.push(...ids(page));
        if (page.length < 5) break;
        const last = page[page.length - 1]!;
        before = { createdAt: last.createdAt, objectId: last.objectId };
      }
      assert.deepEqual(pages, ids(newestFirst));

      // a device named by chipId on some verdicts, by IMEI on others, and by both on some: each once, in order,
      // also across pages smaller than the device's history
      const dev = await tenant();
      const mine: StoredVerdict[] = [];
      for (let i = 0; i < 9; i++) {
        const both = i % 3 === 0;
        const v = verdictOf(dev, 100 + i, { chipId: both || i % 3 === 1 ? "351234567890124" : "other-chip", IMEI: both || i % 3 === 2 ? "351234567890124" : "", at: T0 + i * 1000 });
        mine.push(v);
        await b.durable.saveVerdict(v);
      }
      await b.durable.saveVerdict(verdictOf(dev, 200, { chipId: "someone-else", IMEI: "490154203237518" }));
      const deviceNewestFirst = ids([...mine].reverse());
      assert.deepEqual(ids(await b.durable.listVerdicts({ tenantId: dev.tenantId, device: "351234567890124", limit: 50 })), deviceNewestFirst);
      const devicePages: string[] = [];
      let cursor: { createdAt: string; objectId: string } | undefined;
      for (;;) {
        const page = await b.durable.listVerdicts({ tenantId: dev.tenantId, device: "351234567890124", limit: 2, ...(cursor ? { before: cursor } : {}) });
        devicePages.push(...ids(page));
        if (page.length < 2) break;
        cursor = { createdAt: page[page.length - 1]!.createdAt, objectId: page[page.length - 1]!.objectId };
      }
      assert.deepEqual(devicePages, deviceNewestFirst);
      // and the other way: `after` reads the verdicts just newer than the cursor, oldest first, by device too
      const third = newestFirst[3]!;
      assert.deepEqual(
        ids(await b.durable.listVerdicts({ tenantId: t.tenantId, limit: 2, after: { createdAt: third.createdAt, objectId: third.objectId } })),
        ids([newestFirst[2]!, newestFirst[1]!]),
      );
      const devOldest = [...mine][1]!;
      assert.deepEqual(
        ids(await b.durable.listVerdicts({ tenantId: dev.tenantId, device: "351234567890124", limit: 3, after: { createdAt: devOldest.createdAt, objectId: devOldest.objectId } })),
        ids(mine.slice(2, 5)),
      );
      // the stored record comes back whole
      assert.deepEqual((await b.durable.listVerdicts({ tenantId: t.tenantId, limit: 1 }))[0], newestFirst[0]);
    });

    it("activity: filters by status, code, route and time, paged by (time, seq)", async () => {
      const t = await tenant();
      const entry = (i: number, o: Partial<ActivityEntry> = {}): ActivityEntry => ({
        time: iso(T0 + Math.floor(i / 2) * 1000),
        errorId: null,
        tenantId: t.tenantId,
        clientId: null,
        method: "POST",
        route: i % 2 ? "/v2/blobs" : "/v2/nonces",
        status: i % 4 === 3 ? 401 : 200,
        code: i % 4 === 3 ? "AUTHORIZATION_FAIL" : null,
        latencyMs: 1,
        remoteAddress: "127.0.0.1",
        reason: null,
        ...o,
      });
      await b.durable.appendActivity(Array.from({ length: 10 }, (_, i) => entry(i)));
      const all = await b.durable.queryActivity({ tenantId: t.tenantId, limit: 100 });
      assert.equal(all.length, 10);
      for (let i = 1; i < all.length; i++) {
        const [p, c] = [all[i - 1]!, all[i]!];
        assert.ok(p.time > c.time || (p.time === c.time && p.seq > c.seq), "newest first, later seq first on equal times");
      }
      assert.deepEqual(
        (await b.durable.queryActivity({ tenantId: t.tenantId, status: 401 })).map((e) => e.code),
        ["AUTHORIZATION_FAIL", "AUTHORIZATION_FAIL"],
      );
      assert.equal((await b.durable.queryActivity({ tenantId: t.tenantId, code: "AUTHORIZATION_FAIL" })).length, 2);
      assert.equal((await b.durable.queryActivity({ tenantId: t.tenantId, route: "/v2/blobs" })).length, 5);
      assert.equal((await b.durable.queryActivity({ tenantId: t.tenantId, since: iso(T0 + 1000), until: iso(T0 + 3000) })).length, 4);
      const paged: number[] = [];
      let before: { time: string; seq: number } | undefined;
      for (;;) {
        const page = await b.durable.queryActivity({ tenantId: t.tenantId, limit: 3, ...(before ? { before } : {}) });
        paged.push(...page.map((e) => e.seq));
        if (page.length < 3) break;
        before = { time: page[2]!.time, seq: page[2]!.seq };
      }
      assert.deepEqual(paged, all.map((e) => e.seq));
    });

    it("activity: API or portal requests (isPortalPageRoute), by key, and paged newer as well as older", async () => {
      const t = await tenant();
        const routes = ["/v2/blobs", "/portal/verdicts", "/portal/api/keys", "/svc/v1/enroll/devices", "/", "/portal", "/portal/assets/*", "unmatched", "/portal/apiary"];
      const entries: ActivityEntry[] = routes.map((route, i) => ({
        time: iso(T0 + i * 1000),
        errorId: null,
        tenantId: t.tenantId,
        clientId: i % 3 === 0 ? "k_one" : null,
        method: "GET",
        route,
        status: 200,
        code: null,
        latencyMs: 1,
        remoteAddress: "127.0.0.1",
        reason: null,
      }));
      await b.durable.appendActivity(entries);
      const routesOf = async (f: Partial<ActivityFilter>) => (await b.durable.queryActivity({ tenantId: t.tenantId, limit: 100, ...f })).map((e) => e.route);
      const portalPages = routes.filter(isPortalPageRoute);
      assert.deepEqual(portalPages, ["/portal/verdicts", "/", "/portal", "/portal/assets/*", "/portal/apiary"]);
      assert.deepEqual(await routesOf({ kind: "portal" }), [...portalPages].reverse());
      assert.deepEqual(await routesOf({ kind: "api" }), routes.filter((r) => !isPortalPageRoute(r)).reverse());
      assert.deepEqual(await routesOf({ clientId: "k_one" }), ["/portal/assets/*", "/svc/v1/enroll/devices", "/v2/blobs"]);

      const all = await b.durable.queryActivity({ tenantId: t.tenantId, limit: 100 });
      const mid = all[4]!;
      const newer = await b.durable.queryActivity({ tenantId: t.tenantId, limit: 3, after: { time: mid.time, seq: mid.seq } });
      assert.deepEqual(newer.map((e) => e.seq), [all[3]!.seq, all[2]!.seq, all[1]!.seq], "the rows just newer than the cursor, oldest first");
      assert.deepEqual((await b.durable.queryActivity({ tenantId: t.tenantId, limit: 3, after: { time: all[0]!.time, seq: all[0]!.seq } })), []);
    });

    it("API keys: a label on creation; last use only moves forward", async () => {
      const t = await tenant();
      const keyId = uid("k");
      await b.durable.createApiKey({ keyId, tenantId: t.tenantId, secretHash: "00".repeat(32), rps: 1, burst: 1, createdAt: iso(T0), label: "web shop" });
      let k = (await b.durable.getApiKey(keyId))!;
      assert.deepEqual([k.label, k.lastUsedAt], ["web shop", null]);
      await b.durable.touchApiKeys([{ keyId, at: iso(T0 + 5000) }]);
      await b.durable.touchApiKeys([{ keyId, at: iso(T0 + 1000) }, { keyId: uid("k"), at: iso(T0) }]);
      k = (await b.durable.getApiKey(keyId))!;
      assert.equal(k.lastUsedAt, iso(T0 + 5000));
      const plain = uid("k");
      await b.durable.createApiKey({ keyId: plain, tenantId: t.tenantId, secretHash: "00".repeat(32), rps: 1, burst: 1, createdAt: iso(T0) });
      assert.equal((await b.durable.getApiKey(plain))!.label, null);
    });

    it("sso: an operator's mappings replaced by kind and value, listed in order; an identity links once, one per user per issuer", async () => {
      const t = await tenant();
      const t2 = await tenant();
      const sub = uid("sub-");
      const email = `${uid()}@idp.example`.toLowerCase();
      await b.durable.putSsoMapping({ kind: "subject", value: sub, tenantId: t.tenantId, role: "viewer", createdAt: iso(T0) });
      await b.durable.putSsoMapping({ kind: "email", value: email, tenantId: t.tenantId, role: "admin", createdAt: iso(T0) });
      assert.deepEqual(await b.durable.getSsoMapping("subject", sub), { kind: "subject", value: sub, tenantId: t.tenantId, role: "viewer", createdAt: iso(T0) });
      // the same value of the other kind is another mapping
      assert.equal(await b.durable.getSsoMapping("email", sub), undefined);
      await b.durable.putSsoMapping({ kind: "subject", value: sub, tenantId: t2.tenantId, role: "admin", createdAt: iso(T0 + 1000) });
      assert.deepEqual(await b.durable.getSsoMapping("subject", sub), { kind: "subject", value: sub, tenantId: t2.tenantId, role: "admin", createdAt: iso(T0 + 1000) });
      const mine = (await b.durable.listSsoMappings()).filter((m) => m.value === sub || m.value === email);
      assert.deepEqual(mine.map((m) => [m.kind, m.value]), [["email", email], ["subject", sub]]);
      assert.equal(await b.durable.deleteSsoMapping("subject", sub), true);
      assert.equal(await b.durable.deleteSsoMapping("subject", sub), false);
      assert.equal(await b.durable.getSsoMapping("subject", sub), undefined);
      await assert.rejects(b.durable.putSsoMapping({ kind: "subject", value: uid(), tenantId: "t_none", role: "viewer", createdAt: iso(T0) }));

      const issuer = `https://${uid()}.idp.example`;
      const u1 = await person(t, "viewer");
      const u2 = await person(t, "viewer");
      assert.equal(await b.durable.getSsoIdentity(issuer, sub), undefined);
      assert.equal(await b.durable.linkSsoIdentity(issuer, sub, u1.userId, iso(T0)), "ok");
      assert.equal(await b.durable.getSsoIdentity(issuer, sub), u1.userId);
      // the identity is taken; and u1 has an identity of this issuer already
      assert.equal(await b.durable.linkSsoIdentity(issuer, sub, u2.userId, iso(T0)), "taken");
      assert.equal(await b.durable.linkSsoIdentity(issuer, uid("other-"), u1.userId, iso(T0)), "taken");
      assert.equal(await b.durable.getSsoIdentity(issuer, sub), u1.userId);
      // another issuer's subject of the same text is another identity
      assert.equal(await b.durable.linkSsoIdentity(`${issuer}/other`, sub, u2.userId, iso(T0)), "ok");
      const raced = await Promise.all([b.durable.linkSsoIdentity(issuer, uid("race-"), u2.userId, iso(T0)), b.durable.linkSsoIdentity(issuer, uid("race-"), u2.userId, iso(T0))]);
      assert.deepEqual(raced.sort(), ["ok", "taken"]);
    });
  });
}
