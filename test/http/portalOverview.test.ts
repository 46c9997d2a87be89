import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import type { StoredVerdict, VerdictValue } from "../../src/domain/verdicts.ts";
import { ANDROID_SENTENCES, PLAY_SENTENCES, VENDOR_SENTENCES } from "../../src/portal/verdictReasons.ts";
import { hourOf } from "../../src/store/historyQueries.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople, refusalCode } from "../helpers/portalPeople.ts";
import { KEY_HEADER, offlineFetch, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The overview, verdict and activity filters, the CSV export, key edits, and the operators' tenants and trust
 * sources, over HTTP in process (test/browser/portalOverview.test.ts walks them in Chromium). Every route is tried
 * with the data it must answer, and with what must be refused: a viewer writing, another tenant's record by URL, a
 * missing CSRF token, a tenant admin on an operator's route.
 */
/** a text as the pages write it (web/html.ts escapes what it interpolates) */
const escaped = (s: string) => s.replace(/&/g, "&amp;").replace(/'/g, "&#39;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

describe("portal overview, history, keys and operator pages over HTTP", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  let reads = 0;
  const as = (email: string, o: Parameters<ReturnType<typeof portalPeople>["as"]>[1]) => people.as(email, o);

  function verdict(tenantId: string, at: number, v: VerdictValue, o: { status?: string; reason?: string; chipId?: string; IMEI?: string; format?: string } = {}): StoredVerdict {
    return {
      objectId: randomBytes(16).toString("base64url"),
      tenantId,
      format: o.format ?? "vendor",
      record: {
        measurements: "ab",
        tamperBit: "0",
        IMEI: o.IMEI ?? "",
        status: (o.status ?? (v === "Yes" ? "Success" : "SignatureInvalid")) as StoredVerdict["record"]["status"],
        nonce: "n",
        chipId: o.chipId ?? "",
        verdict: v,
        MAC: "",
        version: "2",
        createdDate: iso(at),
        updateDate: iso(at),
      },
      reason: o.reason ?? (v === "Yes" ? "rule 8: every check passed" : "rule 3: the signature does not verify"),
      detail: { rule: 3, chain: [{ subject: "CN=leaf" }] },
      createdAt: iso(at),
    };
  }
  const activity = (tenantId: string | null, at: number, status: number, o: Partial<ActivityEntry> = {}): ActivityEntry => ({
    time: iso(at),
    errorId: status >= 400 ? randomBytes(12).toString("hex") : null,
    tenantId,
    clientId: null,
    method: "POST",
    route: "/v2/blobs",
    status,
    code: status >= 400 ? "4000004" : null,
    latencyMs: 3,
    remoteAddress: "192.0.2.1",
    reason: null,
    ...o,
  });

  before(async () => {
    // the network the trust sources use: counted, and down, so "refresh now" can be seen to read them
    t = await startTestRuntime({}, { fetch: async (input, init) => (reads++, offlineFetch(input, init)) });
    await t.addTenant("globex");
    await t.addTenant("quiet");
    people = portalPeople(t);
    await people.add("ada@acme.example", "admin", "acme");
    await people.add("vic@acme.example", "viewer", "acme");
    await people.add("gus@globex.example", "admin", "globex");
    await people.add("root@example.org", "operator");

    const save = (v: StoredVerdict) => t.runtime.stores.durable.saveVerdict(v);
    for (let i = 0; i < 3; i++) await save(verdict("t_acme", T0 - 2 * HOUR + i * 1000, "Yes", { chipId: `chip-${i}` }));
    await save(verdict("t_acme", T0 - 2 * HOUR + 5000, "No", { chipId: "chip-bad", format: "android-key" }));
    for (let i = 0; i < 2; i++) await save(verdict("t_acme", T0 - 3 * 24 * HOUR + i, "Unknown", { status: "DeviceError", reason: "rule 1: the device reported an error", IMEI: "490154203237518" }));
    await save(verdict("t_globex", T0 - HOUR, "No"));
    // the quiet tenant has no portal user, so nothing but these entries is in its activity log
    await t.runtime.stores.durable.appendActivity([
      activity("t_quiet", T0 - HOUR, 200),
      activity("t_quiet", T0 - HOUR, 200),
      activity("t_quiet", T0 - HOUR, 400),
      activity("t_quiet", T0 - 10 * 24 * HOUR, 401, { route: "/v2/nonces", code: "4010000" }),
      activity("t_quiet", T0 - 10 * 24 * HOUR, 503, { code: "5030000" }),
      activity("t_quiet", T0 - 40 * 24 * HOUR, 400),
    ]);
  });
  after(() => t.close());

  describe("overview", () => {
    it("a tenant's verdicts per hour and per day, its failures and the trust sources; the page's tables hold the same numbers", async () => {
      const res = await as("vic@acme.example", { url: "/portal/api/overview" });
      assert.equal(res.statusCode, 200, res.body);
      const o = res.json();
      assert.equal(o.verdicts.hourly.length, 24);
      assert.equal(o.verdicts.hourly[23].bucket, hourOf(iso(T0)), "the last bar is this hour");
      const twoHoursAgo = o.verdicts.hourly.find((p: { bucket: string }) => p.bucket === hourOf(iso(T0 - 2 * HOUR)));
      assert.deepEqual(twoHoursAgo, { bucket: hourOf(iso(T0 - 2 * HOUR)), Yes: 3, No: 1, Unknown: 0 });
      assert.equal(o.verdicts.hourly.reduce((a: number, p: { Unknown: number }) => a + p.Unknown, 0), 0, "three days ago is not in the last 24 hours");
      assert.equal(o.verdicts.daily.length, 30);
      assert.equal(o.verdicts.daily[29].bucket, iso(T0).slice(0, 10));
      assert.deepEqual(o.verdicts.daily.find((p: { bucket: string }) => p.bucket === iso(T0 - 3 * 24 * HOUR).slice(0, 10)), {
        bucket: iso(T0 - 3 * 24 * HOUR).slice(0, 10),
        Yes: 0,
        No: 0,
        Unknown: 2,
      });
      assert.deepEqual(o.failures, [
        { verdict: "Unknown", status: "DeviceError", reason: "rule 1: the device reported an error", total: 2, recent: 0 },
        { verdict: "No", status: "SignatureInvalid", reason: "rule 3: the signature does not verify", total: 1, recent: 1 },
      ]);
      assert.deepEqual(o.trust.sources.map((s: { name: string }) => s.name), ["android-roots", "android-status", "vendor-roots", "vendor-revocations", "play-integrity", "app-attest-roots", "app-attest-receipt-root"]);
      assert.equal(o.trust.usable, false, "offline with no cached status list: android-key fails closed");
      assert.equal(o.trust.sources[1].state, "missing");
      assert.ok(o.trust.sources.every((s: object) => !("source" in s) && !("summary" in s)), "a tenant does not see the server's paths");

      const page = await as("vic@acme.example", { url: "/portal/" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<canvas data-chart="hourly" data-src="\/portal\/api\/overview"/);
      const hourLabel = `${iso(T0 - 2 * HOUR).slice(0, 10)} ${iso(T0 - 2 * HOUR).slice(11, 13)}:00`;
      assert.match(page.body, new RegExp(`<th[^>]*>${hourLabel}</th><td[^>]*>3</td><td[^>]*>1</td><td[^>]*>0</td>`));
      assert.match(page.body, /rule 1: the device reported an error/);
      assert.doesNotMatch(page.body, /href="\/portal\/tenants"/, "no operator navigation for a tenant user");
    });

    it("another tenant sees only its own; an operator every tenant, or the one named, with the trust sources' paths", async () => {
      const gus = (await as("gus@globex.example", { url: "/portal/api/overview?tenant=acme" })).json();
      assert.deepEqual(gus.failures.map((f: { total: number }) => f.total), [1]);
      assert.equal(gus.verdicts.hourly.reduce((a: number, p: { Yes: number }) => a + p.Yes, 0), 0);

      const every = (await as("root@example.org", { url: "/portal/api/overview" })).json();
      const no = (o: { verdicts: { hourly: { No: number }[] } }) => o.verdicts.hourly.reduce((a, p) => a + p.No, 0);
      assert.equal(no(every), 2, "acme's and globex's");
      assert.ok(every.trust.sources.every((s: { summary?: string }) => typeof s.summary === "string"));
      assert.equal(no((await as("root@example.org", { url: "/portal/api/overview?tenant=acme" })).json()), 1);
      assert.equal((await as("root@example.org", { url: "/portal/api/overview?tenant=nobody" })).statusCode, 404);
      const page = await as("root@example.org", { url: "/portal/?tenant=acme" });
      assert.match(page.body, /<option value="acme" selected>acme<\/option>/);
      assert.match(page.body, /href="\/portal\/tenants/);
    });

    it("requests and the most frequent refusals, over 30 days with the last 24 hours beside them", async () => {
      const o = (await as("root@example.org", { url: "/portal/api/overview?tenant=quiet" })).json();
      assert.deepEqual(o.requests, {
        last24h: { total: 3, succeeded: 2, refused: 1, failed: 0 },
        last30d: { total: 5, succeeded: 2, refused: 2, failed: 1 },
      });
      assert.deepEqual(o.errors, [
        { status: 400, code: "4000004", method: "POST", route: "/v2/blobs", total: 1, recent: 1 },
        { status: 401, code: "4010000", method: "POST", route: "/v2/nonces", total: 1, recent: 0 },
        { status: 503, code: "5030000", method: "POST", route: "/v2/blobs", total: 1, recent: 0 },
      ]);
      const page = await as("root@example.org", { url: "/portal/?tenant=quiet" });
      assert.ok(page.body.includes('href="/portal/activity?status=401&amp;code=4010000&amp;route=%2Fv2%2Fnonces&amp;tenant=quiet"'), "a refusal links to its requests");
    });

    it("a verdict stored now is on the tenant's overview at once", async () => {
      const before = (await as("ada@acme.example", { url: "/portal/api/overview" })).json();
      await t.runtime.stores.durable.saveVerdict(verdict("t_acme", T0, "Yes"));
      const after = (await as("ada@acme.example", { url: "/portal/api/overview" })).json();
      assert.equal(after.verdicts.hourly[23].Yes, before.verdicts.hourly[23].Yes + 1);
    });

    it("signed out: the API answers 401, the page sends to sign-in", async () => {
      const api = await t.runtime.app.inject({ method: "GET", url: "/portal/api/overview" });
      assert.equal(api.statusCode, 401);
      assert.equal(api.json().code, "4018001");
      const page = await t.runtime.app.inject({ method: "GET", url: "/portal/" });
      assert.equal(page.statusCode, 302);
    });

    it("the chart's code and Chart.js are files of this service", async () => {
      for (const asset of ["overview.js", "vendor/chart.umd.min.js"]) {
        const res = await t.runtime.app.inject({ method: "GET", url: `/portal/assets/${asset}` });
        assert.equal(res.statusCode, 200, asset);
        assert.match(String(res.headers["content-type"]), /javascript/);
      }
    });

    it("why verdicts failed, in the Verdicts pages' words with the rule as a small reference; a text it has no words for as it is", async () => {
      // reasons as the formats write them (src/portal/verdictReasons.ts, reasonInWords), in the quiet tenant
      const save = (v: StoredVerdict) => t.runtime.stores.durable.saveVerdict(v);
      await save(verdict("t_quiet", T0 - HOUR, "No", { status: "SignatureInvalid", reason: "rule 4 (SignatureInvalid/No): the signature over data does not verify (ecdsa-with-SHA256)" }));
      await save(verdict("t_quiet", T0 - HOUR, "No", { status: "Success", format: "play-integrity", reason: "rule cert-digest: the app's signing certificate is not one of the tenant's" }));
      await save(verdict("t_quiet", T0 - HOUR, "No", { status: "Success", format: "android-key", reason: "bootloader unlocked (deviceLocked = false); verifiedBootState Unverified" }));
      await save(verdict("t_quiet", T0 - HOUR, "No", { status: "SignatureInvalid", reason: "rule 3 (SignatureInvalid/No): no rule 3 says this" }));
      const page = await as("root@example.org", { url: "/portal/?tenant=quiet" });
      assert.equal(page.statusCode, 200);
      const table = /<table[^>]*>\s*<caption>Why verdicts were No or Unknown<\/caption>[\s\S]*?<\/table>/.exec(page.body)?.[0] ?? "";
      assert.match(table, /Why, and the rule that decided/);
      const cell = (sentence: string, rule: string) => new RegExp(`<div>${escaped(sentence).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}<br><small class="muted rule-ref" title="[^"]*">${rule}</small></div>`);
      assert.match(table, cell(VENDOR_SENTENCES["4"], "vendor rule 4"));
      assert.match(table, cell(PLAY_SENTENCES["cert-digest"], "play-integrity rule cert-digest"));
      assert.match(table, cell(ANDROID_SENTENCES.bootloader, "android-key bootloader"));
      assert.match(table, /<td [^>]*class="wrap">rule 3 \(SignatureInvalid\/No\): no rule 3 says this<\/td>/, "a pairing no rule makes is shown as it is");
      assert.match(table, /title="rule 4 \(SignatureInvalid\/No\): the signature over data does not verify \(ecdsa-with-SHA256\)"/, "the text as counted stays at hand");
      // the status still links to its verdicts
      assert.ok(table.includes('href="/portal/verdicts?verdict=No&amp;status=SignatureInvalid&amp;tenant=quiet"'), table);
      assert.ok(table.includes('href="/portal/verdicts?verdict=No&amp;status=Success&amp;tenant=quiet"'));
    });
  });

  describe("verdicts", () => {
    const ids = async (email: string, query: string) =>
      ((await as(email, { url: `/portal/api/verdicts?${query}` })).json() as { items: StoredVerdict[] }).items.map((v) => v.record.chipId || v.record.IMEI);

    it("filters by verdict, status, format, device and time range, all in the URL; a time that is not one is refused", async () => {
      assert.deepEqual(await ids("vic@acme.example", "verdict=Unknown"), ["490154203237518", "490154203237518"]);
      assert.deepEqual(await ids("vic@acme.example", "status=SignatureInvalid&format=android-key"), ["chip-bad"]);
      assert.deepEqual(await ids("vic@acme.example", "device=490154203237518&verdict=Unknown"), ["490154203237518", "490154203237518"]);
      // a time as the tables write it (date, space, time; UTC), a date, a full ISO time
      const from = iso(T0 - 2 * HOUR).slice(0, 19).replace("T", " ");
      const to = iso(T0 - 2 * HOUR + 2000);
      assert.deepEqual(await ids("vic@acme.example", `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`), ["chip-1", "chip-0"]);
      // the same instant in ISO form, with its T, is the same filter
      assert.deepEqual(await ids("vic@acme.example", `from=${encodeURIComponent(from.replace(" ", "T"))}&to=${encodeURIComponent(to)}`), ["chip-1", "chip-0"]);
      assert.deepEqual(await ids("vic@acme.example", `to=${iso(T0).slice(0, 10)}&device=490154203237518`), ["490154203237518", "490154203237518"]);
      const bad = await as("vic@acme.example", { url: "/portal/api/verdicts?from=yesterday" });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().code, "4008000");
      const page = await as("vic@acme.example", { url: `/portal/verdicts?verdict=No&from=${encodeURIComponent(from.replace(" ", "T") + "Z")}` });
      // shown back as the tables show times, whatever form it was given in
      assert.match(page.body, new RegExp(`name="from" value="${from}"`), "the filter stays in the form, in the pages' own format");
      assert.doesNotMatch(page.body, /datetime-local/, "not a field a browser shows in its locale's format");
      assert.match(page.body, /href="\/portal\/api\/verdicts\.csv\?verdict=No&amp;from=/, "the export is of what the filter shows");
    });

    it("the detail page names the deciding rule and lays out the parsed attestation", async () => {
      const [v] = (await as("vic@acme.example", { url: "/portal/api/verdicts?device=chip-bad" })).json().items as StoredVerdict[];
      const page = await as("vic@acme.example", { url: `/portal/verdicts/${v!.objectId}` });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h2>Why<\/h2>\s*<p>rule 3: the signature does not verify<\/p>/, "a reason the portal has no words for is shown as it is");
      assert.match(page.body, /<dt>chain<\/dt><dd><ol><li><dl class="tree"><dt>subject<\/dt><dd><span class="wrap">CN=leaf<\/span>/);
      assert.equal((await as("gus@globex.example", { url: `/portal/verdicts/${v!.objectId}` })).statusCode, 404);
    });

    it("CSV export: exactly what the filter shows, every page of it, newest first, formula-like cells neutralised", async () => {
      // more than one store page (500) for the export to walk
      const at = T0 - 5 * 24 * HOUR;
      for (let i = 0; i < 1203; i++) await t.runtime.stores.durable.saveVerdict(verdict("t_globex", at + i, "Yes", { chipId: `bulk-${i}` }));
      await t.runtime.stores.durable.saveVerdict(verdict("t_globex", at + 5000, "No", { chipId: "=HYPERLINK(\"http://evil\")", reason: '+cmd|" /C calc"!A0, and more', IMEI: "@SUM(1)" }));
      const res = await as("gus@globex.example", { url: "/portal/api/verdicts.csv?verdict=Yes&format=vendor" });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers["content-type"]), /^text\/csv/);
      assert.equal(res.headers["content-disposition"], 'attachment; filename="verdicts-globex.csv"');
      const lines = res.body.trimEnd().split("\r\n");
      assert.equal(lines[0], "createdAt,objectId,verdict,status,format,chipId,IMEI,MAC,tamperBit,version,measurements,reason");
      assert.equal(lines.length, 1 + 1203);
      assert.deepEqual(lines.slice(1).map((l) => l.split(",")[5]), Array.from({ length: 1203 }, (_, i) => `bulk-${1202 - i}`));

      const hostile = await as("gus@globex.example", { url: "/portal/api/verdicts.csv?verdict=No&device=%40SUM(1)" });
      const [header, row, ...rest] = hostile.body.trimEnd().split("\r\n");
      assert.ok(header && rest.length === 0);
      assert.ok(row!.includes(`"'=HYPERLINK(""http://evil"")"`), row);
      assert.ok(row!.includes(",'@SUM(1),"), row);
      assert.ok(row!.endsWith(`"'+cmd|"" /C calc""!A0, and more"`), row);

      // another tenant's verdicts are not in it, whatever the URL says; signed out, nothing
      const acme = await as("ada@acme.example", { url: "/portal/api/verdicts.csv?tenant=globex" });
      assert.ok(!acme.body.includes("bulk-"));
      assert.equal(acme.body.trimEnd().split("\r\n").length, 1 + 7);
      assert.equal((await t.runtime.app.inject({ method: "GET", url: "/portal/api/verdicts.csv" })).statusCode, 401);
      const bad = await as("gus@globex.example", { url: "/portal/api/verdicts.csv?to=soon" });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().code, "4008000");
    });
  });

  describe("activity log", () => {
    it("filters by time range, status, code and route, paged; the deep link by errorId", async () => {
      await t.runtime.stores.durable.appendActivity([
        activity("t_acme", T0 - 3 * HOUR, 400, { errorId: "e0000000000000000000000a" }),
        activity("t_acme", T0 - 2 * HOUR, 401, { code: "4010000", route: "/v2/nonces" }),
        activity("t_acme", T0 - HOUR, 400, { errorId: "e0000000000000000000000b" }),
      ]);
      const q = async (query: string) =>
        ((await as("vic@acme.example", { url: `/portal/api/activity?${query}` })).json() as { items: ActivityEntry[] }).items.map((e) => e.errorId ?? e.code);
      assert.deepEqual(await q(`status=400&from=${iso(T0 - 4 * HOUR)}&to=${iso(T0 - 2 * HOUR)}`), ["e0000000000000000000000a"]);
      const codes = ((await as("vic@acme.example", { url: "/portal/api/activity?code=4010000&route=%2Fv2%2Fnonces" })).json() as { items: ActivityEntry[] }).items;
      assert.deepEqual(codes.map((e) => [e.code, e.route, e.time]), [["4010000", "/v2/nonces", iso(T0 - 2 * HOUR)]]);
      assert.deepEqual(await q(`errorId=e0000000000000000000000b`), ["e0000000000000000000000b"]);
      const bad = await as("vic@acme.example", { url: "/portal/api/activity?from=later" });
      assert.equal(bad.json().code, "4008000");
      const page = await as("vic@acme.example", { url: "/portal/activity?errorId=e0000000000000000000000b" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<td[^>]*><a class="id" href="\/portal\/activity\?errorId=e0000000000000000000000b">e0000000000000000000000b<\/a><\/td>/);
      const none = await as("gus@globex.example", { url: "/portal/activity?errorId=e0000000000000000000000b" });
      assert.match(none.body, /No request of this tenant answered with error id/);
    });
  });

  describe("API keys", () => {
    let keyId: string;
    let key: string;
    before(async () => {
      const made = (await as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "shop", rps: 5 } })).json();
      keyId = made.keyId;
      key = made.key;
    });

    it("an admin edits label, limits and restrictions at once; the key then admits only what they allow", async () => {
      const res = await as("ada@acme.example", {
        method: "PATCH",
        url: `/portal/api/keys/${keyId}`,
        payload: { label: "shop, production", rps: 20, burst: 30, ipAddresses: ["203.0.113.0/24"], referers: [] },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        { ...(res.json() as object), createdAt: undefined },
        { keyId, tenantId: "t_acme", label: "shop, production", rps: 20, burst: 30, createdAt: undefined, revokedAt: null, lastUsedAt: null, restrictions: { ipAddresses: ["203.0.113.0/24"], referers: [] } },
      );
      const stored = (await t.runtime.stores.durable.getApiKey(keyId))!;
      assert.deepEqual([stored.rps, stored.burst, stored.restrictions?.ipAddresses], [20, 30, ["203.0.113.0/24"]]);
      // the clock unmoved: the edit reached this instance's key cache before it was answered
      const refused = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } });
      assert.equal(refused.statusCode, 403, "inject calls from 127.0.0.1, outside the allowed block");

      // lists emptied: no restriction; rps alone: burst follows it (twice)
      const cleared = await as("ada@acme.example", { method: "PATCH", url: `/portal/api/keys/${keyId}`, payload: { ipAddresses: [], rps: 4 } });
      assert.deepEqual([cleared.json().restrictions, cleared.json().burst], [null, 8]);
      assert.equal((await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } })).statusCode, 200);

      const page = await as("vic@acme.example", { url: "/portal/keys" });
      assert.match(page.body, /<td[^>]*>4 \/ 8<\/td>/);
      assert.doesNotMatch(page.body, /data-method="PATCH"/, "a viewer gets no edit form");
      assert.match((await as("ada@acme.example", { url: "/portal/keys" })).body, new RegExp(`data-api="/portal/api/keys/${keyId}" data-method="PATCH"`));
    });

    it("refused: a bad restriction (nothing changes), a viewer, no CSRF token, another tenant's or a revoked key", async () => {
      const before = await t.runtime.stores.durable.getApiKey(keyId);
      const bad = await as("ada@acme.example", { method: "PATCH", url: `/portal/api/keys/${keyId}`, payload: { rps: 99, ipAddresses: ["not-an-ip"] } });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().code, "4008000");
      assert.match(bad.json().data, /ipAddresses\[0\]/);
      const viewer = await as("vic@acme.example", { method: "PATCH", url: `/portal/api/keys/${keyId}`, payload: { label: "x" } });
      assert.deepEqual([viewer.statusCode, viewer.json().code], [403, "4038000"]);
      const noCsrf = await as("ada@acme.example", { method: "PATCH", url: `/portal/api/keys/${keyId}`, payload: { label: "x" }, csrf: false });
      assert.deepEqual([noCsrf.statusCode, noCsrf.json().code], [403, "4038001"]);
      const cross = await as("gus@globex.example", { method: "PATCH", url: `/portal/api/keys/${keyId}?tenant=acme`, payload: { label: "x" } });
      assert.deepEqual([cross.statusCode, cross.json().code], [404, "4048000"]);
      assert.deepEqual(await t.runtime.stores.durable.getApiKey(keyId), before);
      const empty = await as("ada@acme.example", { method: "PATCH", url: `/portal/api/keys/${keyId}`, payload: {} });
      assert.equal(empty.statusCode, 400);

      const gone = (await as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: {} })).json().keyId as string;
      assert.equal((await as("ada@acme.example", { method: "DELETE", url: `/portal/api/keys/${gone}` })).statusCode, 204);
      assert.equal((await as("ada@acme.example", { method: "PATCH", url: `/portal/api/keys/${gone}`, payload: { rps: 1 } })).statusCode, 404);
    });

    it("an operator without a tenant is asked whose keys", async () => {
      const page = await as("root@example.org", { url: "/portal/keys" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /href="\/portal\/keys\?tenant=globex"/);
    });
  });

  describe("operators: tenants and trust sources", () => {
    it("tenants: listed, created, their state and enrollment set; the tenant's API follows at once", async () => {
      const list = (await as("root@example.org", { url: "/portal/api/tenants" })).json() as { name: string }[];
      assert.deepEqual(list.map((x) => x.name).sort(), ["acme", "globex", "quiet"]);
      const made = await as("root@example.org", { method: "POST", url: "/portal/api/tenants", payload: { name: "initech", kind: "reseller", customerId: "" } });
      assert.equal(made.statusCode, 200, made.body);
      assert.deepEqual([made.json().kind, made.json().state, made.json().enrollmentEnabled], ["reseller", "active", false]);
      assert.match(made.json().customerId, /^[1-9]\d{9}$/);
      const stored = await t.runtime.stores.durable.getTenantByName("initech");
      assert.equal(stored?.tenantId, made.json().tenantId);

      const again = await as("root@example.org", { method: "POST", url: "/portal/api/tenants", payload: { name: "initech" } });
      assert.deepEqual([again.statusCode, again.json().code], [409, "4098050"]);
      const badName = await as("root@example.org", { method: "POST", url: "/portal/api/tenants", payload: { name: "no spaces" } });
      assert.deepEqual([badName.statusCode, badName.json().code], [400, "4008000"]);

      const enabled = await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/initech", payload: { enrollmentEnabled: true } });
      assert.equal(enabled.json().enrollmentEnabled, true);
      const blocked = await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/quiet", payload: { state: "blocked" } });
      assert.equal(blocked.json().state, "blocked");
      const { key } = await t.addTenant("quiet");
      t.clock.advance(5000);
      const refused = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } });
      assert.equal(refused.statusCode, 403, "a blocked tenant's key is refused");
      await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/quiet", payload: { state: "active" } });
      assert.equal((await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/nobody", payload: { state: "active" } })).statusCode, 404);
      assert.equal((await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/quiet", payload: {} })).statusCode, 400);

      const page = await as("root@example.org", { url: "/portal/tenants" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /data-api="\/portal\/api\/tenants\/initech" data-method="PATCH" data-body="\{&quot;enrollmentEnabled&quot;:false\}"/);
    });

    it("trust sources: every user reads their state; an operator refreshes them now (the sources are read again)", async () => {
      const view = await as("vic@acme.example", { url: "/portal/api/trust" });
      assert.equal(view.statusCode, 200);
      // one word per state (src/domain/trustStates.ts): no vendor files given, no Play app with a service account,
      // Apple's App Attestation root and the receipt root built in
      assert.deepEqual(view.json().sources.map((s: { state: string }) => s.state), ["built in", "missing", "missing", "not set", "not set", "built in", "built in"]);
      // a tenant viewer learns why, but not the server's URLs or paths: those are in lastError, source and summary
      const seen = view.json().sources[1];
      assert.equal(seen.reason, "the Android attestation status list could not be fetched (fetch failed: ENOTFOUND) and no usable copy is in the disk cache");
      for (const k of ["lastError", "source", "summary"]) assert.ok(!(k in seen), `a tenant viewer is not shown ${k}`);
      for (const secret of ["googleapis", t.dir]) assert.ok(!view.body.includes(secret), `${secret} in ${view.body}`);
      const overview = await as("vic@acme.example", { url: "/portal/" });
      for (const secret of ["googleapis", t.dir]) assert.ok(!overview.body.includes(secret), `${secret} on the overview page`);
      const readsBefore = reads;
      t.clock.advance(60_000);
      const refreshed = await as("root@example.org", { method: "POST", url: "/portal/api/trust/refresh" });
      assert.equal(refreshed.statusCode, 200, refreshed.body);
      assert.ok(reads > readsBefore, "the status list's URL was fetched again");
      const status = refreshed.json().sources[1];
      assert.equal(status.lastAttempt, new Date(t.clock.nowMs()).toISOString());
      assert.match(status.lastError, /ENOTFOUND/);
      assert.equal(status.source, "https://android.googleapis.com/attestation/status");
      const page = await as("root@example.org", { url: "/portal/trust" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /data-api="\/portal\/api\/trust\/refresh" data-method="POST"/);
    });

    it("a tenant admin is refused every operator route (403), and without a CSRF token an operator changes nothing", async () => {
      const tries = [
        { method: "GET", url: "/portal/api/tenants" },
        { method: "POST", url: "/portal/api/tenants", payload: { name: "sneaky" } },
        { method: "PATCH", url: "/portal/api/tenants/acme", payload: { state: "blocked" } },
        { method: "POST", url: "/portal/api/trust/refresh" },
        { method: "GET", url: "/portal/tenants" },
        { method: "GET", url: "/portal/trust" },
      ] as const;
      for (const x of tries) {
        const res = await as("ada@acme.example", x);
        assert.deepEqual([res.statusCode, refusalCode(res)], [403, "4038000"], `${x.method} ${x.url}`);
      }
      const noCsrf = await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/acme", payload: { state: "blocked" }, csrf: false });
      assert.deepEqual([noCsrf.statusCode, noCsrf.json().code], [403, "4038001"]);
      assert.equal((await t.runtime.stores.durable.getTenantByName("acme"))?.state, "active");
      assert.equal(await t.runtime.stores.durable.getTenantByName("sneaky"), undefined);
    });
  });

  it("/openapi.json documents these routes with their error answers", async () => {
    const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const expect: [string, string, string[]][] = [
      ["/portal/api/overview", "get", ["401", "404"]],
      ["/portal/api/verdicts.csv", "get", ["400", "401"]],
      ["/portal/api/keys/{keyId}", "patch", ["400", "403", "404"]],
      ["/portal/api/tenants", "get", ["401", "403"]],
      ["/portal/api/tenants", "post", ["400", "403", "409"]],
      ["/portal/api/tenants/{name}", "patch", ["400", "403", "404"]],
      ["/portal/api/trust", "get", ["401"]],
      ["/portal/api/trust/refresh", "post", ["401", "403"]],
    ];
    for (const [path, method, errors] of expect) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method} ${path}`);
      for (const s of ["200", ...errors]) assert.ok(s in op.responses, `${method} ${path} ${s}`);
    }
  });
});
