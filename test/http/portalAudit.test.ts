import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { parseApiKey } from "../../src/auth/apiKeys.ts";
import type { AuditRecord } from "../../src/domain/audit.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { portalPeople, refusalCode, type PortalRequest } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * The audit trail through the admin API (app.inject): each change made there is recorded once, with the person,
 * where from, and before / after without any secret; a tenant admin reads the tenant's own records only, an
 * operator every record; the export is JSON lines; and every record is also appended to --audit-file and sent to
 * --audit-syslog (a UDP receiver on 127.0.0.1 started here).
 */
describe("the audit trail over the admin API", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  let udp: Socket;
  const datagrams: string[] = [];
  let auditFile: string;
  const as = (email: string, o: PortalRequest): Promise<LightMyRequestResponse> => people.as(email, o);
  const ok = (res: LightMyRequestResponse, status = 200) => {
    assert.equal(res.statusCode, status, res.body);
    return res;
  };
  const trail = async (email: string, query = ""): Promise<AuditRecord[]> => ok(await as(email, { url: `/portal/api/audit${query}` })).json().items;

  before(async () => {
    udp = createSocket("udp4");
    udp.on("message", (m) => datagrams.push(m.toString("utf8")));
    await new Promise<void>((r) => udp.bind(0, "127.0.0.1", () => r()));
    const dir = (await import("node:fs")).mkdtempSync((await import("node:path")).join((await import("node:os")).tmpdir(), "attestd-audit-"));
    auditFile = `${dir}/audit.jsonl`;
    t = await startTestRuntime({ auditFile, auditSyslog: `udp://127.0.0.1:${udp.address().port}` }, { dir });
    people = portalPeople(t);
    await t.addTenant("globex");
    await people.add("ada@acme.example", "admin", "acme");
    await people.add("vic@acme.example", "viewer", "acme");
    await people.add("gus@globex.example", "admin", "globex");
    await people.add("root@example.org", "operator");
  });
  after(async () => {
    await t.close();
    udp.close();
  });

  it("a key made, edited and revoked in the portal: three records naming the person, where from, before and after, no secret", async () => {
    const made = ok(await as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "ci" } })).json();
    const keyId = made.record?.keyId ?? made.keyId;
    const secret = made.key as string;
    assert.ok(secret.startsWith("atd_"));
    t.clock.advance(1000);
    ok(await as("ada@acme.example", { method: "PATCH", url: `/portal/api/keys/${keyId}`, payload: { label: "ci-2" } }));
    t.clock.advance(1000);
    ok(await as("ada@acme.example", { method: "DELETE", url: `/portal/api/keys/${keyId}` }), 204);

    const records = (await trail("ada@acme.example", `?target=api-key:${keyId}`)).reverse();
    assert.deepEqual(records.map((r) => r.action), ["key.created", "key.updated", "key.revoked"]);
    for (const r of records) {
      assert.equal(r.tenantId, t.tenant.tenantId);
      assert.equal(r.actor.kind, "user");
      assert.equal((r.actor as { email: string }).email, "ada@acme.example");
      assert.equal(r.from.kind, "http");
      assert.equal((r.from as { remoteAddress: string }).remoteAddress, "127.0.0.1");
      const text = JSON.stringify(r);
      assert.ok(!text.includes(parseApiKey(secret)!.secret), "the key's secret is nowhere");
      assert.ok(!/secretHash/.test(text), "nor its hash");
    }
    assert.equal(records[0]!.before, null);
    assert.equal((records[0]!.after as { label: string }).label, "ci");
    assert.equal((records[1]!.before as { label: string }).label, "ci");
    assert.equal((records[1]!.after as { label: string }).label, "ci-2");
    assert.equal((records[2]!.before as { revokedAt: unknown }).revokedAt, null);
    assert.notEqual((records[2]!.after as { revokedAt: unknown }).revokedAt, null);
  });

  it("an operator's tenant changes: made, suspended; a change to the same state records nothing", async () => {
    const made = ok(await as("root@example.org", { method: "POST", url: "/portal/api/tenants", payload: { name: "initech" } })).json();
    t.clock.advance(1000);
    ok(await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/initech", payload: { state: "inactive" } }));
    ok(await as("root@example.org", { method: "PATCH", url: "/portal/api/tenants/initech", payload: { state: "inactive" } }));
    const records = (await trail("root@example.org", `?target=tenant:${made.tenantId}`)).reverse();
    assert.deepEqual(records.map((r) => [r.action, (r.actor as { email: string }).email]), [
      ["tenant.created", "root@example.org"],
      ["tenant.suspended", "root@example.org"],
    ]);
    assert.equal((records[1]!.before as { state: string }).state, "active");
    assert.equal((records[1]!.after as { state: string }).state, "inactive");
  });

  it("iOS apps and reference values: added and removed, each one record with before and after", async () => {
    const app = ok(await as("ada@acme.example", { method: "POST", url: "/portal/api/ios-apps", payload: { appId: "ABCDE12345.com.example.app" } })).json();
    t.clock.advance(1000);
    ok(await as("ada@acme.example", { method: "DELETE", url: `/portal/api/ios-apps/${app.id}` }), 204);
    const ios = (await trail("ada@acme.example", `?target=ios-app:${app.id}`)).reverse();
    assert.deepEqual(ios.map((r) => r.action), ["ios-app.added", "ios-app.removed"]);
    assert.equal((ios[0]!.after as { appId: string }).appId, "ABCDE12345.com.example.app");
    assert.deepEqual([(ios[1]!.before as { appId: string }).appId, ios[1]!.after], ["ABCDE12345.com.example.app", null]);

    const content = JSON.stringify([{ model: "M1", firmwareVersion: "1.0", measurements: ["aa".repeat(32)] }]);
    ok(await as("ada@acme.example", { method: "POST", url: "/portal/api/reference-values", payload: { filename: "refs.json", content } }));
    t.clock.advance(1000);
    ok(await as("ada@acme.example", { method: "DELETE", url: "/portal/api/reference-values?model=M1&firmwareVersion=1.0" }), 204);
    const refs = (await trail("ada@acme.example", "?action=reference-values.*")).reverse();
    assert.deepEqual(refs.map((r) => [r.action, r.target.kind, r.tenantId]), [
      ["reference-values.imported", "reference-values", t.tenant.tenantId],
      ["reference-values.removed", "reference-set", t.tenant.tenantId],
    ]);
    assert.equal((refs[0]!.after as { count: number }).count, 1);
  });

  it("tenants see their own records only; operators see every tenant's, or one tenant's with ?tenant=", async () => {
    ok(await as("gus@globex.example", { method: "POST", url: "/portal/api/keys", payload: { label: "globex-key" } }));
    const globex = (await t.runtime.stores.durable.getTenantByName("globex"))!;
    const gus = await trail("gus@globex.example");
    assert.ok(gus.length >= 1);
    assert.ok(gus.every((r) => r.tenantId === globex.tenantId), "globex's admin sees globex's records only");
    const asking = await trail("gus@globex.example", "?tenant=acme");
    assert.ok(asking.every((r) => r.tenantId === globex.tenantId), "?tenant= is ignored for a tenant user");
    const ada = await trail("ada@acme.example");
    assert.ok(ada.length >= 3 && ada.every((r) => r.tenantId === t.tenant.tenantId));
    const all = await trail("root@example.org");
    assert.ok(all.some((r) => r.tenantId === globex.tenantId) && all.some((r) => r.tenantId === t.tenant.tenantId));
    const oneTenant = await trail("root@example.org", "?tenant=globex");
    assert.deepEqual(new Set(oneTenant.map((r) => r.tenantId)), new Set([globex.tenantId]));
  });

  it("people: a password set through the link, each sign-in, an operator's invitation and disable (the tenant's admin sees them), a sign-out; no password hash or token", async () => {
    const ada = (await t.runtime.stores.durable.getPortalUserByEmail("ada@acme.example"))!;
    const own = (await trail("ada@acme.example", `?target=portal-user:${ada.userId}`)).reverse();
    // (made in the same millisecond of the test's clock: their order is not asserted)
    assert.deepEqual(own.map((r) => [r.action, r.actor.id]).sort(), [
      ["portal.session.signed-in", ada.userId],
      ["portal.user.password-set", ada.userId],
    ]);
    assert.equal((own.find((r) => r.action === "portal.session.signed-in")!.after as { method: string }).method, "password");

    t.clock.advance(1000);
    const invited = ok(await as("root@example.org", { method: "POST", url: "/portal/api/users", payload: { email: "new@acme.example", tenant: "acme", role: "viewer" } })).json();
    const newcomer = (await t.runtime.stores.durable.getPortalUserByEmail("new@acme.example"))!;
    t.clock.advance(1000);
    ok(await as("root@example.org", { method: "POST", url: `/portal/api/users/${newcomer.userId}/disable` }));
    const theirs = (await trail("ada@acme.example", `?target=portal-user:${newcomer.userId}`)).reverse();
    assert.deepEqual(theirs.map((r) => [r.action, (r.actor as { email: string }).email]), [
      ["portal.user.invited", "root@example.org"],
      ["portal.user.disabled", "root@example.org"],
    ]);
    const text = JSON.stringify(await t.runtime.stores.durable.queryAudit({ limit: 1000 }));
    assert.ok(!/passwordHash|tokenHash|sessionHash|csrfToken/.test(text));
    const link = JSON.stringify(invited);
    const token = /#([A-Za-z0-9_-]{20,})/.exec(link)?.[1];
    if (token) assert.ok(!text.includes(token), "the invitation's token is nowhere");

    // sign-out, as the last thing this person does here
    const vic = (await t.runtime.stores.durable.getPortalUserByEmail("vic@acme.example"))!;
    ok(await as("vic@acme.example", { method: "DELETE", url: "/portal/api/session" }), 204);
    const out = await t.runtime.stores.durable.queryAudit({ actorId: vic.userId, action: "portal.session.signed-out" });
    assert.equal(out.length, 1);
    assert.equal(out[0]!.tenantId, t.tenant.tenantId);
  });

  it("a viewer may not read the trail; a bad filter is refused", async () => {
    await people.add("vic@acme.example", "viewer", "acme");
    const res = await as("vic@acme.example", { url: "/portal/api/audit" });
    assert.equal(res.statusCode, 403);
    assert.equal(refusalCode(res), catalog.PORTAL_FORBIDDEN.code);
    const bad = await as("ada@acme.example", { url: "/portal/api/audit?action=DROP%20TABLE" });
    assert.equal(bad.statusCode, 400);
    assert.equal(refusalCode(bad), catalog.PORTAL_INVALID_REQUEST.code);
  });

  it("pages: `next` leads to the older records, none repeated", async () => {
    const first = ok(await as("root@example.org", { url: "/portal/api/audit" })).json();
    const all = await t.runtime.stores.durable.queryAudit({ limit: 1000 });
    const seen: string[] = [];
    let page = ok(await as("root@example.org", { url: "/portal/api/audit?action=key.*" })).json();
    seen.push(...page.items.map((r: AuditRecord) => r.id));
    assert.equal(first.items.length, Math.min(all.length, 100));
    while (page.next) {
      page = ok(await as("root@example.org", { url: `/portal/api/audit?action=key.*&after=${page.next}` })).json();
      seen.push(...page.items.map((r: AuditRecord) => r.id));
    }
    assert.equal(new Set(seen).size, seen.length);
    assert.equal(seen.length, all.filter((r) => r.action.startsWith("key.")).length);
  });

  it("the export is JSON lines: one record per line, the same records as the list", async () => {
    const res = ok(await as("ada@acme.example", { url: "/portal/api/audit/export" }));
    assert.match(String(res.headers["content-type"]), /^application\/x-ndjson/);
    assert.ok(res.body.endsWith("\n"));
    const lines = res.body.trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRecord);
    assert.deepEqual(lines, await t.runtime.stores.durable.queryAudit({ tenantId: t.tenant.tenantId, limit: 1000 }));
  });

  it("every record is also a line of --audit-file and an RFC 5424 datagram to --audit-syslog", async () => {
    const stored = await t.runtime.stores.durable.queryAudit({ limit: 1000 });
    // the sinks never hold up a change: wait for them here
    for (let i = 0; i < 100 && (datagrams.length < stored.length || readFileSync(auditFile, "utf8").split("\n").length - 1 < stored.length); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const fileRecords = readFileSync(auditFile, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRecord);
    assert.deepEqual(new Set(fileRecords.map((r) => r.id)), new Set(stored.map((r) => r.id)));
    assert.equal(datagrams.length, stored.length);
    for (const d of datagrams) {
      const m = /^<109>1 (\S+) (\S+) attestd (\d+) (\S+) - (\{.*\})$/.exec(d);
      assert.ok(m, d);
      const r = JSON.parse(m[5]!) as AuditRecord;
      assert.equal(m[1], r.time);
      assert.equal(m[4], r.action);
    }
    assert.deepEqual(new Set(datagrams.map((d) => (JSON.parse(d.slice(d.indexOf("{"))) as AuditRecord).id)), new Set(stored.map((r) => r.id)));
  });

  it("the Audit trail page: in the navigation for admins, the records with who and from where, filter links", async () => {
    const page = ok(await as("ada@acme.example", { url: "/portal/audit?action=key.*" }));
    assert.match(page.body, /<a[^>]*href="\/portal\/audit"[^>]*>Audit trail<\/a>/);
    assert.match(page.body, /<code>key\.revoked<\/code>/);
    assert.match(page.body, /ada@acme\.example <small class="muted">portal user<\/small>/);
    assert.doesNotMatch(page.body, /<code>tenant\.created<\/code>/, "filtered to key.*");
    const viewer = await as("vic@acme.example", { url: "/portal/audit" });
    assert.equal(viewer.statusCode, 403);
    assert.doesNotMatch(ok(await as("vic@acme.example", { url: "/portal/verdicts" })).body, />Audit trail</, "not in a viewer's navigation");
  });

});

describe("an audit stream that fails", () => {
  it("never fails the change; the failure is counted in attestd_audit_stream_failures_total{sink}", async () => {
    const t = await startTestRuntime({ auditFile: "/nonexistent-dir/audit.jsonl" });
    try {
      const people = portalPeople(t);
      await people.add("ada@acme.example", "admin", "acme");
      const made = await people.as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: { label: "ci" } });
      assert.equal(made.statusCode, 200, made.body);
      assert.equal((await t.runtime.stores.durable.queryAudit({ action: "key.created" })).length, 1, "stored all the same");
      let body = "";
      for (let i = 0; i < 100 && !/attestd_audit_stream_failures_total\{sink="file"\} [1-9]/.test(body); i++) {
        await new Promise((r) => setTimeout(r, 10));
        body = (await t.runtime.app.inject({ method: "GET", url: "/metrics" })).body;
      }
      assert.match(body, /attestd_audit_stream_failures_total\{sink="file"\} [1-9]/);
      assert.doesNotMatch(body, /attestd_audit_stream_failures_total\{sink="store"\}/);
    } finally {
      await t.close();
    }
  });
});
