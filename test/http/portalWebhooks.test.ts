import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { portalPeople, refusalCode } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { WebhookReceiver } from "../helpers/webhookReceiver.ts";

/**
 * A tenant's webhooks over the portal's admin API (issue 26, docs/events.md), in process: who may list, add, change,
 * rotate, remove and resend (a tenant's admin its own, a viewer lists, an operator any tenant by ?tenant=), refusals
 * by code, the secret in the POST's answer and never again, and a delivery with its attempts and a resend.
 */
describe("portal: webhooks", () => {
  let t: TestRuntime;
  let portal: ReturnType<typeof portalPeople>;
  let receiver: WebhookReceiver;
  let secret: string;
  let endpointId: string;

  before(async () => {
    t = await startTestRuntime({ webhookAllowPrivate: true, webhookAllowHttp: true, webhookPollMs: 20 });
    portal = portalPeople(t);
    receiver = await WebhookReceiver.start();
    await t.addTenant("globex");
    await portal.add("ada@acme.example", "admin", "acme");
    await portal.add("vic@acme.example", "viewer", "acme");
    await portal.add("gus@globex.example", "admin", "globex");
    await portal.add("root@example.org", "operator");
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it("an admin adds an endpoint: the secret is in this answer only", async () => {
    const res = await portal.as("ada@acme.example", {
      method: "POST",
      url: "/portal/api/webhooks",
      payload: { url: receiver.url, events: ["key.created", "verdict.stored"], verdicts: "non-yes", description: "ops" },
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    secret = body.secret;
    endpointId = body.endpoint.id;
    assert.match(secret, /^whsec_/);
    assert.deepEqual([body.endpoint.tenantId, body.endpoint.url, body.endpoint.verdicts, body.endpoint.enabled], ["t_acme", receiver.url, "non-yes", true]);
    const list = await portal.as("vic@acme.example", { url: "/portal/api/webhooks" });
    assert.equal(list.statusCode, 200);
    assert.deepEqual((list.json() as { id: string }[]).map((e) => e.id), [endpointId]);
    assert.ok(!list.body.includes(secret.slice(6)));
    const stored = (await t.runtime.stores.durable.listWebhookEndpoints("t_acme"))[0]!;
    assert.ok(!stored.sealedSecret.includes(secret.slice(6)));
  });

  it("refuses by code: a viewer's change, another tenant's endpoint, a bad event, no CSRF token", async () => {
    const viewer = await portal.as("vic@acme.example", { method: "POST", url: "/portal/api/webhooks", payload: { url: receiver.url, events: ["key.created"] } });
    assert.deepEqual([viewer.statusCode, refusalCode(viewer)], [403, "4038000"]);
    const other = await portal.as("gus@globex.example", { method: "PATCH", url: `/portal/api/webhooks/${endpointId}`, payload: { enabled: false } });
    assert.deepEqual([other.statusCode, refusalCode(other)], [404, "4048000"]);
    const bad = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/webhooks", payload: { url: receiver.url, events: ["verdict.nope"] } });
    assert.equal(bad.statusCode, 400);
    const csrf = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/webhooks", payload: { url: receiver.url, events: ["key.created"] }, csrf: false });
    assert.deepEqual([csrf.statusCode, refusalCode(csrf)], [403, "4038001"]);
    assert.equal((await t.runtime.stores.durable.listWebhookEndpoints("t_acme")).length, 1);
  });

  it("a key created through the portal is delivered; the delivery shows its attempt; a resend delivers again", async () => {
    receiver.secrets = [secret];
    const k = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload: {} });
    assert.equal(k.statusCode, 200, k.body);
    await receiver.waitFor(1);
    assert.equal(receiver.received[0]!.json.type, "key.created");
    assert.equal(receiver.received[0]!.verified, true);
    let list = (await portal.as("vic@acme.example", { url: "/portal/api/webhook-deliveries" })).json() as { id: string; state: string; eventType: string }[];
    for (let i = 0; i < 50 && list[0]?.state !== "delivered"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      list = (await portal.as("vic@acme.example", { url: "/portal/api/webhook-deliveries" })).json();
    }
    assert.deepEqual([list.length, list[0]!.eventType, list[0]!.state], [1, "key.created", "delivered"]);
    const one = await portal.as("vic@acme.example", { url: `/portal/api/webhook-deliveries/${list[0]!.id}` });
    assert.equal(one.statusCode, 200);
    assert.deepEqual(one.json().attempts.map((a: { status: number; response: string }) => [a.status, a.response]), [[200, "thanks"]]);
    const viewerResend = await portal.as("vic@acme.example", { method: "POST", url: `/portal/api/webhook-deliveries/${list[0]!.id}/resend` });
    assert.equal(viewerResend.statusCode, 403);
    const resend = await portal.as("ada@acme.example", { method: "POST", url: `/portal/api/webhook-deliveries/${list[0]!.id}/resend` });
    assert.equal(resend.statusCode, 204);
    await receiver.waitFor(2);
    assert.equal(receiver.received[1]!.id, receiver.received[0]!.id, "a resend keeps the webhook-id");
  });

  it("/metrics counts the attempts by result and reads the outbox backlog", async () => {
    const m = (await t.runtime.app.inject({ method: "GET", url: "/metrics" })).body;
    const delivered = /^attestd_webhook_attempts_total\{result="delivered"\} (\d+)$/m.exec(m);
    assert.ok(delivered && Number(delivered[1]) >= 2, m.split("\n").filter((l) => l.includes("webhook")).join("\n"));
    assert.match(m, /^attestd_webhook_outbox_pending 0$/m);
    assert.match(m, /^attestd_webhook_attempt_duration_seconds_count \d+$/m);
  });

  it("the page lists endpoints and deliveries, one delivery's attempts, and forms for an admin only", async () => {
    const list = (await portal.as("vic@acme.example", { url: "/portal/api/webhook-deliveries" })).json() as { id: string }[];
    const page = await portal.as("vic@acme.example", { url: `/portal/webhooks?delivery=${list[0]!.id}` });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Latest deliveries/);
    assert.ok(page.body.includes(receiver.url));
    assert.match(page.body, /Attempts/);
    assert.match(page.body, /key\.created/);
    assert.doesNotMatch(page.body, /Add endpoint|>Resend<|Rotate secret/, "no form or action for a viewer");
    assert.ok(!page.body.includes(secret.slice(6)));
    const admin = await portal.as("ada@acme.example", { url: "/portal/webhooks" });
    assert.match(admin.body, /Add endpoint/);
    assert.match(admin.body, />Resend</);
    assert.match(admin.body, /href="\/portal\/webhooks"[^>]*>Webhooks</, "in the navigation");
    const operator = await portal.as("root@example.org", { url: "/portal/webhooks" });
    assert.equal(operator.statusCode, 200);
    assert.match(operator.body, /acme/);
  });

  it("rotates (the new secret once), disables, and an operator removes by ?tenant=", async () => {
    const rot = await portal.as("ada@acme.example", { method: "POST", url: `/portal/api/webhooks/${endpointId}/rotate`, payload: { overlapSeconds: 60 } });
    assert.equal(rot.statusCode, 200, rot.body);
    assert.match(rot.json().secret, /^whsec_/);
    assert.notEqual(rot.json().secret, secret);
    const dis = await portal.as("ada@acme.example", { method: "PATCH", url: `/portal/api/webhooks/${endpointId}`, payload: { enabled: false } });
    assert.deepEqual([dis.statusCode, dis.json().enabled, typeof dis.json().previousSecretUntil], [200, false, "string"]);
    const del = await portal.as("root@example.org", { method: "DELETE", url: `/portal/api/webhooks/${endpointId}?tenant=acme` });
    assert.equal(del.statusCode, 204);
    assert.deepEqual(await t.runtime.stores.durable.listWebhookEndpoints("t_acme"), []);
  });
});
