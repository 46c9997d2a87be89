import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { catalog } from "../../src/errors/catalog.ts";
import { assertPartBError, Harness, type Session } from "./harness.ts";

describe("Part B profiles and the transaction status listing", () => {
  let h: Harness;
  let s: Session;
  before(async () => {
    h = await Harness.start();
    s = await h.session();
  });
  after(() => h.close());

  const status = (q: string, session = s) => session.call("GET", `/svc/v1/enroll/profiles/status${q}`);

  it("creates, reads, replaces and deletes a profile, each a transaction", async () => {
    const created = await s.call("POST", "/svc/v1/enroll/profiles", {
      name: "Warehouse",
      description: "scanners",
      mdmUrl: "https://mdm.example.com/enroll",
      settings: { kiosk: true, volume: 3, wifi: "corp", one: 1, yes: "true" },
    });
    assert.equal(created.statusCode, 200, created.body);
    const { profileId, transactionId: t1 } = created.json();
    assert.match(profileId, /^pr_[a-z2-7]{16}$/);

    const read = (await s.call("GET", `/svc/v1/enroll/profiles/${profileId}`)).json();
    assert.deepEqual(
      { name: read.name, description: read.description, mdmUrl: read.mdmUrl, settings: read.settings },
      { name: "Warehouse", description: "scanners", mdmUrl: "https://mdm.example.com/enroll", settings: { kiosk: true, volume: 3, wifi: "corp", one: 1, yes: "true" } },
    );

    h.clock.advance(1000);
    const put = await s.call("PUT", `/svc/v1/enroll/profiles/${profileId}`, { name: "Warehouse B" });
    assert.equal(put.statusCode, 200, put.body);
    const after = (await s.call("GET", `/svc/v1/enroll/profiles/${profileId}`)).json();
    assert.equal(after.name, "Warehouse B");
    assert.equal(after.description, undefined, "PUT replaces: omitted fields are cleared");
    assert.notEqual(after.updatedDate, after.createdDate);

    const del = await s.call("DELETE", `/svc/v1/enroll/profiles/${profileId}`);
    assert.equal(del.statusCode, 200);
    assertPartBError(await s.call("GET", `/svc/v1/enroll/profiles/${profileId}`), catalog.PROFILE_NOT_FOUND);
    assertPartBError(await s.call("PUT", `/svc/v1/enroll/profiles/${profileId}`, { name: "x" }), catalog.PROFILE_NOT_FOUND);
    assertPartBError(await s.call("DELETE", `/svc/v1/enroll/profiles/${profileId}`), catalog.PROFILE_NOT_FOUND);

    const tx = (await status(`?profileId=${profileId}`)).json().profiles;
    assert.equal(tx.totalCount, 3);
    assert.deepEqual(
      tx.transactions.map((t: { type: string; state: string; profileName: string }) => [t.type, t.state, t.profileName]),
      [
        ["Delete", "Complete", "Warehouse B"],
        ["Put", "Complete", "Warehouse B"],
        ["Post", "Complete", "Warehouse"],
      ],
      "newest first, with the profile's name at the time",
    );
    assert.equal(tx.transactions[2].transactionId, t1);
    assert.ok(tx.transactions.every((t: { tenantId: string }) => t.tenantId === s.tenant.tenantId));
  });

  it("refuses invalid profiles and name conflicts, including on PUT", async () => {
    const invalid = [
      { name: "" },
      { name: "   " },
      { name: "x".repeat(101) },
      { name: "ok", mdmUrl: "https://user:pw@mdm.example.com" },
      { name: "ok", settings: { ["k".repeat(65)]: 1 } },
      { name: "ok", settings: { nested: { a: 1 } } },
      { name: "ok", extra: 1 },
      { name: "ok", settings: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
      { name: "ok", settings: { long: "v".repeat(1025) } },
    ];
    for (const body of invalid) {
      assertPartBError(await s.call("POST", "/svc/v1/enroll/profiles", body), catalog.BULK_ENROLL_PROFILE_INVALID, JSON.stringify(body));
    }
    const a = (await s.call("POST", "/svc/v1/enroll/profiles", { name: "A" })).json().profileId;
    await s.call("POST", "/svc/v1/enroll/profiles", { name: "B" });
    assertPartBError(await s.call("PUT", `/svc/v1/enroll/profiles/${a}`, { name: "B" }), catalog.BULK_ENROLL_PROFILE_NAME_CONFLICT);
    // another tenant may use the same name, and cannot see this tenant's profile
    const t = await h.session();
    assert.equal((await t.call("POST", "/svc/v1/enroll/profiles", { name: "A" })).statusCode, 200);
    assertPartBError(await t.call("GET", `/svc/v1/enroll/profiles/${a}`), catalog.PROFILE_NOT_FOUND);
  });

  it("pages the status listing with exact totalCount and totalPage", async () => {
    const p = await h.session();
    const empty = (await status("", p)).json();
    assert.deepEqual(empty, { profiles: { totalCount: 0, totalPage: 0, pageNum: 0, transactions: [] } }, "empty listing");

    const names: string[] = [];
    for (let i = 0; i < 45; i++) {
      h.clock.advance(10);
      names.push(`P${String(i).padStart(2, "0")}`);
      assert.equal((await p.call("POST", "/svc/v1/enroll/profiles", { name: names[i] })).statusCode, 200);
    }
    const page = async (q: string) => (await status(q, p)).json().profiles;

    const first = await page("?pageNum=0&pageSize=20");
    assert.equal(first.totalCount, 45);
    assert.equal(first.totalPage, 3);
    assert.equal(first.transactions.length, 20);
    assert.equal(first.transactions[0].profileName, "P44", "newest first");

    const last = await page("?pageNum=2&pageSize=20");
    assert.equal(last.pageNum, 2);
    assert.deepEqual(
      last.transactions.map((t: { profileName: string }) => t.profileName),
      ["P04", "P03", "P02", "P01", "P00"],
      "the last page holds the remainder",
    );
    const beyond = await page("?pageNum=3&pageSize=20");
    assert.deepEqual([beyond.totalCount, beyond.totalPage, beyond.transactions.length], [45, 3, 0], "past the end: empty page, same totals");

    const exact = await page("?pageNum=0&pageSize=45");
    assert.equal(exact.totalPage, 1);
    assert.equal((await page("?pageSize=100")).transactions.length, 45);
    assert.equal((await page("?pageNum=0&pageSize=20&type=&state=&profileId=")).totalCount, 45, "empty filters mean any");
    const blank = await page("?pageNum=&pageSize=");
    assert.deepEqual([blank.pageNum, blank.transactions.length], [0, 20], "empty paging parameters take the defaults");

    // every page together is the whole listing, each transaction once
    const seen = new Set<string>();
    for (let n = 0; n < 5; n++) for (const t of (await page(`?pageNum=${n}&pageSize=10`)).transactions) seen.add(t.transactionId);
    assert.equal(seen.size, 45);
  });

  it("filters by type, state and profileId", async () => {
    const p = await h.session();
    const a = (await p.call("POST", "/svc/v1/enroll/profiles", { name: "A" })).json().profileId;
    const b = (await p.call("POST", "/svc/v1/enroll/profiles", { name: "B" })).json().profileId;
    await p.call("PUT", `/svc/v1/enroll/profiles/${a}`, { name: "A2" });
    await p.call("DELETE", `/svc/v1/enroll/profiles/${b}`);
    const count = async (q: string) => (await status(q, p)).json().profiles.totalCount;
    assert.equal(await count("?type=Post"), 2);
    assert.equal(await count("?type=Put"), 1);
    assert.equal(await count("?type=Delete&profileId=" + b), 1);
    assert.equal(await count("?profileId=" + a), 2);
    assert.equal(await count("?state=Complete"), 4);
    assert.equal(await count("?state=Processing"), 0);
  });

  it("refuses bad paging and filter parameters with RESOURCE_INVALID_PARAM", async () => {
    for (const q of [
      "?pageSize=0",
      "?pageSize=101",
      "?pageNum=-1",
      "?pageNum=1.5",
      "?pageNum=abc",
      "?pageSize=20x",
      "?type=Patch",
      "?state=Done",
      `?profileId=${"p".repeat(65)}`,
      "?unknown=1",
    ]) {
      assertPartBError(await status(q), catalog.RESOURCE_INVALID_PARAM, q);
    }
    for (const q of ["?pageSize=0", "?pageSize=101", "?pageNum=-1"]) {
      assertPartBError(await s.call("GET", `/svc/v1/enroll/profiles${q}`), catalog.RESOURCE_INVALID_PARAM, q);
      assertPartBError(await s.call("GET", `/svc/v1/enroll/devices${q}`), catalog.RESOURCE_INVALID_PARAM, q);
    }
  });

  it("lists profiles newest first with totals", async () => {
    const p = await h.session();
    for (const name of ["one", "two", "three"]) {
      h.clock.advance(5);
      await p.call("POST", "/svc/v1/enroll/profiles", { name });
    }
    const list = (await p.call("GET", "/svc/v1/enroll/profiles?pageSize=2")).json();
    assert.equal(list.totalCount, 3);
    assert.equal(list.totalPage, 2);
    assert.deepEqual(list.profiles.map((x: { name: string }) => x.name), ["three", "two"]);
  });
});
