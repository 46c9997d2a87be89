import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { NewTransaction, Profile } from "../../src/domain/enrollment.ts";
import type { DurableStore, EnrollmentStore } from "../../src/store/types.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * Store-level conformance for Part B's EnrollmentStore: the same assertions for every backend (SQLite, the
 * reference, and PostgreSQL). Besides each operation's answers it checks what concurrency must not break when
 * several processes share the store: a job item is leased to one worker at a time, and the last items of an upload
 * finishing at once still settle the upload.
 */
export interface EnrollmentBackend {
  durable: DurableStore;
  enrollment: EnrollmentStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const uid = (p = "") => p + randomBytes(8).toString("hex");
const tx = (tenantId: string, at = T0): NewTransaction => ({ transactionId: uid("tx"), tenantId, at: iso(at) });

export function enrollmentConformance(name: string, factory: () => Promise<EnrollmentBackend>): void {
  describe(`enrollment store conformance: ${name}`, () => {
    let b: EnrollmentBackend;
    let s: EnrollmentStore;
    before(async () => {
      b = await factory();
      s = b.enrollment;
    });
    after(async () => b?.close());

    const tenant = async (kind: "customer" | "reseller" = "customer"): Promise<Tenant> => {
      const id = uid("t_");
      return b.durable.createTenant({ tenantId: id, name: "n" + id, customerId: String(Number.parseInt(randomBytes(5).toString("hex"), 16)), kind, createdAt: iso(T0) });
    };
    const profile = (tenantId: string, name = uid("p-")): Profile => ({
      profileId: uid("pr"),
      tenantId,
      name,
      description: "desc",
      mdmUrl: "https://mdm.example/enroll",
      settings: { wifi: true, retries: 3, label: "ünïcode" },
      createdAt: iso(T0),
      updatedAt: iso(T0),
    });

    it("registers, re-registers and lists users", async () => {
      const t = await tenant();
      const u = await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "b@example.com", at: iso(T0) });
      assert.equal(u.state, "registered");
      assert.deepEqual(await s.getUser(u.userId), u);
      assert.deepEqual(await s.getUserByEmail(t.tenantId, "b@example.com"), u);
      assert.equal(await s.setUserState(t.tenantId, "b@example.com", "deregistered", iso(T0 + 1)), true);
      assert.equal(await s.setUserState(t.tenantId, "nobody@example.com", "deregistered", iso(T0 + 1)), false);
      const again = await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "b@example.com", at: iso(T0 + 2) });
      assert.deepEqual(again, { ...u, state: "registered", updatedAt: iso(T0 + 2) }, "the same user, registered again");
      await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "a@example.com", at: iso(T0) });
      assert.deepEqual((await s.listUsers(t.tenantId)).map((x) => x.email), ["a@example.com", "b@example.com"]);
      assert.equal(await s.getUser(uid("u")), undefined);
    });

    it("creates clients with tokens; deleting a client deletes its tokens", async () => {
      const t = await tenant();
      const u = await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "c@example.com", at: iso(T0) });
      const c = {
        clientId: uid("c"),
        tenantId: t.tenantId,
        userId: u.userId,
        publicKey: "MIIB",
        identifierHash: "ab".repeat(32),
        readOnly: true,
        rps: 2.5,
        burst: 20,
        createdAt: iso(T0),
      };
      await s.createClient(c);
      assert.deepEqual(await s.getClient(c.clientId), { ...c, restrictions: null, revokedAt: null });
      const r = { ipAddresses: ["192.0.2.0/24"], referers: [] };
      assert.equal(await s.setClientRestrictions(c.clientId, r), true);
      assert.deepEqual((await s.listClients(t.tenantId)).map((x) => x.restrictions), [r]);
      const tok = { tokenId: uid("k"), clientId: c.clientId, tokenHash: "cd".repeat(32), expiresAtMs: T0 + 3_600_000, createdAt: iso(T0) };
      await s.createAccessToken(tok);
      assert.deepEqual(await s.getAccessToken(tok.tokenId), tok);
      const old = { ...tok, tokenId: uid("k"), expiresAtMs: T0 - 1 };
      await s.createAccessToken(old);
      assert.ok((await s.purgeExpiredAccessTokens(T0)) >= 1);
      assert.equal(await s.getAccessToken(old.tokenId), undefined);
      assert.equal(await s.deleteClient(c.clientId), true);
      assert.equal(await s.getAccessToken(tok.tokenId), undefined, "cascade");
      assert.equal(await s.deleteClient(c.clientId), false);
    });

    it("revokes a client once, deleting its tokens and keeping its record; sets the read-only flag", async () => {
      const t = await tenant();
      const u = await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "r@example.com", at: iso(T0) });
      const c = { clientId: uid("c"), tenantId: t.tenantId, userId: u.userId, publicKey: "MIIB", identifierHash: "ab".repeat(32), readOnly: false, rps: 1, burst: 2, createdAt: iso(T0) };
      const other = { ...c, clientId: uid("c") };
      await s.createClient(c);
      await s.createClient(other);
      const tok = { tokenId: uid("k"), clientId: c.clientId, tokenHash: "cd".repeat(32), expiresAtMs: T0 + 3_600_000, createdAt: iso(T0) };
      const otherTok = { ...tok, tokenId: uid("k"), clientId: other.clientId };
      await s.createAccessToken(tok);
      await s.createAccessToken(otherTok);

      assert.equal(await s.setClientReadOnly(c.clientId, true), true);
      assert.equal((await s.getClient(c.clientId))?.readOnly, true);
      assert.equal(await s.setClientReadOnly(c.clientId, false), true);
      assert.equal((await s.getClient(c.clientId))?.readOnly, false);
      assert.equal(await s.setClientReadOnly(uid("c"), true), false);

      assert.equal(await s.revokeClient(c.clientId, iso(T0 + 5)), true);
      assert.deepEqual(await s.getClient(c.clientId), { ...c, restrictions: null, revokedAt: iso(T0 + 5) }, "kept, marked");
      assert.equal(await s.getAccessToken(tok.tokenId), undefined, "its tokens are gone");
      assert.deepEqual(await s.getAccessToken(otherTok.tokenId), otherTok, "another client's token stays");
      assert.equal(await s.revokeClient(c.clientId, iso(T0 + 6)), false, "once");
      assert.equal((await s.getClient(c.clientId))?.revokedAt, iso(T0 + 5), "the first time stands");
      assert.equal(await s.revokeClient(uid("c"), iso(T0)), false);
      assert.deepEqual((await s.listClients(t.tenantId)).map((x) => [x.clientId, x.revokedAt]).sort(), [[c.clientId, iso(T0 + 5)], [other.clientId, null]].sort());
    });

    it("associates resellers once", async () => {
      const [t, r] = [await tenant(), await tenant("reseller")];
      assert.equal(await s.associateReseller({ tenantId: t.tenantId, resellerId: r.tenantId, createdAt: iso(T0) }), "ok");
      assert.equal(await s.associateReseller({ tenantId: t.tenantId, resellerId: r.tenantId, createdAt: iso(T0 + 1) }), "exists");
      assert.deepEqual(await s.listResellerAssociations(t.tenantId), [{ tenantId: t.tenantId, resellerId: r.tenantId, createdAt: iso(T0) }]);
    });

    it("creates, updates, pages and deletes profiles, each with its transaction record", async () => {
      const t = await tenant();
      const p1 = profile(t.tenantId, "alpha");
      const p2 = { ...profile(t.tenantId, "beta"), createdAt: iso(T0 + 1000), updatedAt: iso(T0 + 1000) };
      const t1 = tx(t.tenantId);
      assert.equal(await s.createProfile(p1, t1), "ok");
      assert.equal(await s.createProfile(p2, tx(t.tenantId)), "ok");
      const dup = tx(t.tenantId);
      assert.equal(await s.createProfile({ ...profile(t.tenantId, "alpha") }, dup), "name_conflict");
      assert.equal(await s.getTransaction(t.tenantId, dup.transactionId), undefined, "nothing recorded for a conflict");
      assert.deepEqual(await s.getProfile(t.tenantId, p1.profileId), p1);
      assert.deepEqual(await s.listProfiles(t.tenantId, 0, 1), { total: 2, items: [p2] });
      assert.deepEqual(await s.listProfiles(t.tenantId, 1, 10), { total: 2, items: [p1] });
      const rec = await s.getTransaction(t.tenantId, t1.transactionId);
      assert.deepEqual(rec, {
        tenantId: t.tenantId,
        transactionId: t1.transactionId,
        type: "Post",
        state: "Complete",
        kind: "profile",
        profileId: p1.profileId,
        profileName: "alpha",
        createdAt: iso(T0),
        updatedAt: iso(T0),
      });
      const fields = { name: "alpha2", description: null, mdmUrl: null, settings: null };
      assert.equal(await s.updateProfile(t.tenantId, p1.profileId, fields, tx(t.tenantId, T0 + 5)), "ok");
      assert.deepEqual(await s.getProfile(t.tenantId, p1.profileId), { ...p1, ...fields, updatedAt: iso(T0 + 5) });
      assert.equal(await s.updateProfile(t.tenantId, p1.profileId, { ...fields, name: "beta" }, tx(t.tenantId)), "name_conflict");
      assert.equal(await s.updateProfile(t.tenantId, uid("pr"), fields, tx(t.tenantId)), "not_found");
      const other = await tenant();
      assert.equal(await s.getProfile(other.tenantId, p1.profileId), undefined, "another tenant's profile");
      assert.equal(await s.deleteProfile(other.tenantId, p1.profileId, tx(other.tenantId)), "not_found");
      assert.equal(await s.deleteProfile(t.tenantId, p1.profileId, tx(t.tenantId)), "ok");
      const page = await s.listTransactions({ tenantId: t.tenantId, offset: 0, limit: 10 });
      assert.equal(page.total, 4);
      assert.deepEqual(page.items.map((x) => x.type), ["Delete", "Put", "Post", "Post"], "newest first");
      const puts = await s.listTransactions({ tenantId: t.tenantId, type: "Put", offset: 0, limit: 10 });
      assert.deepEqual(puts.items.map((x) => x.profileName), ["alpha2"]);
      const byProfile = await s.listTransactions({ tenantId: t.tenantId, profileId: p2.profileId, state: "Complete", offset: 0, limit: 10 });
      assert.equal(byProfile.total, 1);
    });

    it("queues devices, leases each item to one worker, completes them and settles the upload", async () => {
      const t = await tenant();
      const p = profile(t.tenantId);
      await s.createProfile(p, tx(t.tenantId));
      const u = await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "d@example.com", at: iso(T0) });
      const up = { ...tx(t.tenantId), profileId: p.profileId };
      const devices = ["dev-3", "dev-1", "dev-2"];
      assert.equal(await s.enqueueDevices(up, devices.map((deviceId) => ({ deviceId, userId: u.userId, userPassword: "cipher" }))), "ok");
      assert.equal(await s.enqueueDevices({ ...tx(t.tenantId), profileId: uid("pr") }, [{ deviceId: "x", userId: null, userPassword: null }]), "profile_not_found");
      assert.equal((await s.getTransaction(t.tenantId, up.transactionId))!.state, "Processing");
      const listed = await s.listDevices(t.tenantId, undefined, 0, 10);
      assert.deepEqual(listed.items.map((d) => [d.deviceId, d.state]), [["dev-1", "Processing"], ["dev-2", "Processing"], ["dev-3", "Processing"]]);
      assert.equal(listed.processing, 3);

      // other tests' items may be queued too: only ours matter here
      const mine = <T extends { transactionId: string }>(items: T[]) => items.filter((i) => i.transactionId === up.transactionId);
      const [w1, w2] = await Promise.all([s.claimJobs("w1", 1000, T0, 30_000), s.claimJobs("w2", 1000, T0, 30_000)]);
      const all = [...mine(w1), ...mine(w2)];
      assert.equal(all.length, 3, "every item leased once");
      assert.equal(new Set(all.map((i) => i.seq)).size, 3, "no item leased twice");
      assert.deepEqual(all.sort((x, y) => x.seq - y.seq).map((i) => i.deviceId), devices, "queue order is request order");
      const ownerOf = (seq: number) => (mine(w1).some((i) => i.seq === seq) ? "w1" : "w2");

      const first = all[0]!;
      assert.equal(await s.completeJob(first.seq, ownerOf(first.seq) === "w1" ? "w2" : "w1", iso(T0 + 1)), undefined, "not the owner");
      assert.deepEqual(await s.completeJob(first.seq, ownerOf(first.seq), iso(T0 + 1)), { state: "Enrolled", error: null, applied: true });
      assert.equal(await s.completeJob(first.seq, ownerOf(first.seq), iso(T0 + 2)), undefined, "finished items take effect once");
      const page = await s.listTransactionDevices(t.tenantId, up.transactionId, 0, 10);
      assert.equal(page.total, 3);
      assert.equal(page.processing, 2);
      assert.deepEqual(page.items.map((d) => d.state), ["Enrolled", "Processing", "Processing"]);

      // the last two finish at the same time (two processes): the upload must still settle
      const rest = all.slice(1);
      await Promise.all(rest.map((i) => s.completeJob(i.seq, ownerOf(i.seq), iso(T0 + 3))));
      const settled = await s.getTransaction(t.tenantId, up.transactionId);
      assert.equal(settled!.state, "Complete");
      const done = await s.listDevices(t.tenantId, p.profileId, 0, 10);
      assert.deepEqual(done.items.map((d) => [d.deviceId, d.state, d.profileId]), [
        ["dev-1", "Enrolled", p.profileId],
        ["dev-2", "Enrolled", p.profileId],
        ["dev-3", "Enrolled", p.profileId],
      ]);
      assert.equal(done.processing, 0);
    });

    it("settles every upload whose last items finish concurrently", async () => {
      const t = await tenant();
      const p = profile(t.tenantId);
      await s.createProfile(p, tx(t.tenantId));
      const uploads = Array.from({ length: 8 }, () => ({ ...tx(t.tenantId), profileId: p.profileId }));
      for (const [n, up] of uploads.entries()) {
        await s.enqueueDevices(up, [0, 1, 2].map((i) => ({ deviceId: `s-${n}-${i}`, userId: null, userPassword: null })));
      }
      const ids = new Set(uploads.map((u) => u.transactionId));
      const items = (await s.claimJobs("w", 10_000, T0 + 5_000_000, 30_000)).filter((i) => ids.has(i.transactionId));
      assert.equal(items.length, 24);
      const results = await Promise.all(items.map((i) => s.completeJob(i.seq, "w", iso(T0 + 1))));
      assert.ok(results.every((r) => r?.state === "Enrolled"));
      for (const up of uploads) assert.equal((await s.getTransaction(t.tenantId, up.transactionId))!.state, "Complete", up.transactionId);
    });

    it("fails items whose profile or user went away, never un-enrolling a device", async () => {
      const t = await tenant();
      const p = profile(t.tenantId);
      await s.createProfile(p, tx(t.tenantId));
      const u = await s.registerUser({ userId: uid("u"), tenantId: t.tenantId, email: "e@example.com", at: iso(T0) });
      const up = { ...tx(t.tenantId), profileId: p.profileId };
      await s.enqueueDevices(up, [{ deviceId: "f-1", userId: u.userId, userPassword: null }]);
      await s.setUserState(t.tenantId, "e@example.com", "deregistered", iso(T0));
      const items = (await s.claimJobs("w", 1000, T0 + 10_000_000, 30_000)).filter((i) => i.transactionId === up.transactionId);
      assert.equal(items.length, 1);
      const r = await s.completeJob(items[0]!.seq, "w", iso(T0 + 1));
      assert.equal(r?.state, "Failed");
      assert.equal(r?.error?.message, "USER_NOT_FOUND");
      assert.equal((await s.getTransaction(t.tenantId, up.transactionId))!.state, "Failed");
      const dev = (await s.listDevices(t.tenantId, undefined, 0, 10)).items[0]!;
      assert.equal(dev.state, "Failed");
      assert.equal(dev.error?.message, "USER_NOT_FOUND");
    });

    it("renews, releases and re-leases items after expiry", async () => {
      const t = await tenant();
      const p = profile(t.tenantId);
      await s.createProfile(p, tx(t.tenantId));
      const up = { ...tx(t.tenantId), profileId: p.profileId };
      await s.enqueueDevices(up, [{ deviceId: "r-1", userId: null, userPassword: null }]);
      const at = T0 + 20_000_000; // later than every lease other tests took
      const mine = <T extends { transactionId: string }>(xs: T[]) => xs.filter((i) => i.transactionId === up.transactionId);
      const [item] = mine(await s.claimJobs("a", 1000, at, 1_000));
      assert.ok(item);
      assert.equal(mine(await s.claimJobs("b", 1000, at + 500, 1_000)).length, 0, "leased");
      assert.ok((await s.renewJobLeases("a", at + 900, 1_000)) >= 1);
      assert.equal(mine(await s.claimJobs("b", 1000, at + 1_500, 1_000)).length, 0, "renewed until at + 1900");
      const again = mine(await s.claimJobs("b", 1000, at + 2_000, 1_000));
      assert.equal(again.length, 1, "expired leases are taken over");
      assert.equal(again[0]!.attempts, 2);
      assert.equal(await s.completeJob(item.seq, "a", iso(at)), undefined, "the old owner lost it");
      assert.ok((await s.releaseJobs("b")) >= 1);
      const back = mine(await s.claimJobs("c", 1000, at + 2_001, 1_000));
      assert.equal(back.length, 1, "released items are free at once");
      assert.equal((await s.completeJob(back[0]!.seq, "c", iso(at)))?.state, "Enrolled");
    });

    it("assigns and unassigns enrolled devices, all or nothing; deleting a profile unassigns", async () => {
      const t = await tenant();
      const [p, q] = [profile(t.tenantId), profile(t.tenantId)];
      await s.createProfile(p, tx(t.tenantId));
      await s.createProfile(q, tx(t.tenantId));
      const up = { ...tx(t.tenantId), profileId: p.profileId };
      await s.enqueueDevices(up, ["g-1", "g-2"].map((deviceId) => ({ deviceId, userId: null, userPassword: null })));
      const items = (await s.claimJobs("w", 1000, T0 + 30_000_000, 30_000)).filter((i) => i.transactionId === up.transactionId);
      for (const i of items) await s.completeJob(i.seq, "w", iso(T0));
      assert.deepEqual(await s.assignDevices(t.tenantId, q.profileId, ["g-1", "nope"], iso(T0 + 1)), {
        ok: false,
        reason: "devices_not_found",
        missing: ["nope"],
      });
      assert.deepEqual(await s.assignDevices(t.tenantId, uid("pr"), ["g-1"], iso(T0 + 1)), { ok: false, reason: "profile_not_found" });
      assert.deepEqual(await s.assignDevices(t.tenantId, q.profileId, ["g-1", "g-2"], iso(T0 + 1)), { ok: true, count: 2 });
      assert.deepEqual((await s.listDevices(t.tenantId, q.profileId, 0, 10)).items.map((d) => d.deviceId), ["g-1", "g-2"]);
      assert.deepEqual(await s.unassignDevices(t.tenantId, ["g-2"], iso(T0 + 2)), { ok: true, count: 1 });
      assert.deepEqual(await s.unassignDevices(t.tenantId, ["zzz"], iso(T0 + 2)), { ok: false, missing: ["zzz"] });
      assert.equal(await s.deleteProfile(t.tenantId, q.profileId, tx(t.tenantId)), "ok");
      const all = await s.listDevices(t.tenantId, undefined, 0, 10);
      assert.deepEqual(all.items.map((d) => [d.deviceId, d.profileId]), [["g-1", null], ["g-2", null]]);
    });

    it("lets an assignment outrank an upload queued before it", async () => {
      const t = await tenant();
      const [a, bp, c] = [profile(t.tenantId), profile(t.tenantId), profile(t.tenantId)];
      for (const p of [a, bp, c]) await s.createProfile(p, tx(t.tenantId));
      const run = async (up: NewTransaction & { profileId: string }) => {
        const [item] = (await s.claimJobs("w", 10_000, T0 + 40_000_000, 30_000)).filter((i) => i.transactionId === up.transactionId);
        return s.completeJob(item!.seq, "w", iso(T0 + 2));
      };
      const upA = { ...tx(t.tenantId), profileId: a.profileId };
      await s.enqueueDevices(upA, [{ deviceId: "o-1", userId: null, userPassword: null }]);
      assert.equal((await run(upA))?.applied, true);
      const upB = { ...tx(t.tenantId), profileId: bp.profileId };
      await s.enqueueDevices(upB, [{ deviceId: "o-1", userId: null, userPassword: null }]);
      assert.equal((await s.listDevices(t.tenantId, undefined, 0, 10)).items[0]!.state, "Processing", "an upload is queued");
      assert.deepEqual(await s.assignDevices(t.tenantId, c.profileId, ["o-1"], iso(T0 + 1)), { ok: true, count: 1 });
      assert.deepEqual(await run(upB), { state: "Enrolled", error: null, applied: false }, "the older upload does not undo it");
      const [dev] = (await s.listDevices(t.tenantId, undefined, 0, 10)).items;
      assert.deepEqual([dev!.profileId, dev!.state], [c.profileId, "Enrolled"]);
    });

    it("keeps the first tenant key", async () => {
      const t = await tenant();
      assert.equal(await s.getTenantKey(t.tenantId), undefined);
      const k1 = { tenantId: t.tenantId, publicKey: "pub1", privateKey: "priv1", createdAt: iso(T0) };
      const results = await Promise.all([k1, { ...k1, publicKey: "pub2", privateKey: "priv2" }].map((k) => s.putTenantKeyIfAbsent(k)));
      assert.deepEqual(results[0], results[1], "concurrent first uses agree on one key");
      assert.deepEqual(await s.getTenantKey(t.tenantId), results[0]);
    });
  });
}
