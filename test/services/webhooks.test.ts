import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, beforeEach, describe, it } from "node:test";
import { cryptoRng } from "../../src/clock.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { catalog, type CatalogEntry } from "../../src/errors/catalog.ts";
import { checkWebhookUrl, isRefusedAddress, WebhookTargetRefused, type WebhookTargetPolicy } from "../../src/net/webhookTarget.ts";
import { SecretBox } from "../../src/secrets/secretBox.ts";
import { ApiKeyAdmin } from "../../src/services/apiKeyAdmin.ts";
import { DeviceService } from "../../src/services/deviceService.ts";
import { WebhookDeliverer } from "../../src/services/webhookDelivery.ts";
import { WEBHOOK_CACHE_MS, WebhookRegistry } from "../../src/services/webhooks.ts";
import { WebhookTrustEvents } from "../../src/services/webhookTrustEvents.ts";
import type { TrustSourcesView } from "../../src/services/trustSources.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { T0 } from "../helpers/clock.ts";
import { verifyStandardWebhook, WebhookReceiver } from "../helpers/webhookReceiver.ts";
import { testActor } from "../helpers/audit.ts";
import type { ChangeActor } from "../../src/services/auditTrail.ts";

/**
 * Signed webhooks at the service level (src/services/webhooks.ts, webhookDelivery.ts, src/net/webhookTarget.ts) on
 * the memory store, against a receiver on 127.0.0.1 that checks every signature with its own implementation of the
 * Standard Webhooks check: registration and its refusals (by catalog code), the outbox rows a verdict or a key
 * carries (none when nobody listens), delivery, rotation, a receiver down and back, a slow one, and the SSRF guard
 * after DNS resolution.
 */

const LOCAL: WebhookTargetPolicy = { allowPrivate: true, allowHosts: [], allowHttp: true };
const STRICT: WebhookTargetPolicy = { allowPrivate: false, allowHosts: [], allowHttp: false };
const DAY = 86_400_000;

async function refusedWith(entry: CatalogEntry, fn: () => Promise<unknown>): Promise<void> {
  await assert.rejects(fn, (e: unknown) => isAppError(e) && e.entry === entry);
}

function verdict(tenantId: string, value: "Yes" | "No", at: number, device?: object): StoredVerdict {
  return {
    objectId: randomBytes(16).toString("base64url"),
    tenantId,
    format: "android-key",
    record: { verdict: value, status: value === "Yes" ? "Success" : "SignatureInvalid" } as StoredVerdict["record"],
    reason: value === "Yes" ? "all rules passed" : "signature invalid",
    detail: device ? { device } : {},
    createdAt: new Date(at).toISOString(),
  } as StoredVerdict;
}

describe("webhooks", () => {
  let store: MemoryDurableStore;
  let now: number;
  let registry: WebhookRegistry;
  let deliverer: WebhookDeliverer;
  let acme: Tenant;
  let receiver: WebhookReceiver;
  /** who makes the changes: an operator, recorded in the test's store */
  let by: ChangeActor;
  const clock = { nowMs: () => now };

  before(async () => {
    receiver = await WebhookReceiver.start();
  });
  after(async () => {
    await receiver.close();
  });

  function make(targets: WebhookTargetPolicy, o: { timeoutMs?: number } = {}) {
    registry = new WebhookRegistry(store, clock, cryptoRng, new SecretBox([randomBytes(32)]), { targets, retryPeriodMs: 3 * DAY });
    deliverer = new WebhookDeliverer(store, registry, clock, cryptoRng, {
      owner: "test-1",
      targets,
      timeoutMs: o.timeoutMs ?? 2_000,
      pollMs: 50,
      retryBaseMs: 5_000,
      retryMaxMs: 3_600_000,
    });
  }

  beforeEach(async () => {
    store = new MemoryDurableStore();
    now = T0;
    receiver.received.length = 0;
    receiver.delayMs = 0;
    receiver.status = 200;
    receiver.retryAfter = undefined;
    make(LOCAL);
    by = testActor(store);
    acme = await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1001", kind: "customer", createdAt: new Date(T0).toISOString() });
  });

  it("makes a whsec_ secret, answers it once and seals it", async () => {
    const { endpoint, secret } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(secret.slice(6), "base64").length, 32);
    assert.equal((endpoint as Record<string, unknown>).sealedSecret, undefined);
    const stored = (await store.getWebhookEndpoint(acme.tenantId, endpoint.id))!;
    assert.ok(!stored.sealedSecret.includes(secret.slice(6)));
    assert.deepEqual(registry.secretsFor(stored), [secret]);
    assert.deepEqual((await registry.list(acme)).map((e) => e.url), [receiver.url]);
  });

  it("refuses bad events, filters and URLs by catalog code", async () => {
    await refusedWith(catalog.PORTAL_INVALID_REQUEST, () => registry.add(acme, { url: receiver.url, events: [] }, by));
    await refusedWith(catalog.PORTAL_INVALID_REQUEST, () => registry.add(acme, { url: receiver.url, events: ["verdict.nope"] }, by));
    await refusedWith(catalog.PORTAL_INVALID_REQUEST, () => registry.add(acme, { url: receiver.url, events: ["verdict.stored"], verdicts: "some" }, by));
    make(STRICT);
    for (const url of [
      "http://hooks.example.com/x", // https required
      "https://127.0.0.1/x",
      "https://10.1.2.3/x",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/x",
      "https://[fd00:ec2::254]/x",
      "https://[::ffff:127.0.0.1]/x",
      "https://localhost/x",
      "https://user:pw@hooks.example.com/x",
      "not a url",
    ]) {
      await refusedWith(catalog.PORTAL_WEBHOOK_URL_REFUSED, () => registry.add(acme, { url, events: ["key.created"] }, by));
    }
    const ok = await registry.add(acme, { url: "https://hooks.example.com/x", events: ["key.created"] }, by);
    assert.equal(ok.endpoint.url, "https://hooks.example.com/x");
  });

  it("classifies addresses: private, loopback, link-local, unique-local, multicast refused; public allowed", () => {
    for (const a of ["127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fc00::1", "ff02::1", "::ffff:10.0.0.1", "::ffff:7f00:1"]) {
      assert.equal(isRefusedAddress(a), true, a);
    }
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"]) assert.equal(isRefusedAddress(a), false, a);
    // an allow-list entry lets one private range through, and only it
    const some: WebhookTargetPolicy = { allowPrivate: false, allowHosts: ["10.9.0.0/16", "hooks.internal"], allowHttp: false };
    assert.equal(checkWebhookUrl("https://10.9.1.1/x", some).hostname, "10.9.1.1");
    assert.throws(() => checkWebhookUrl("https://10.8.1.1/x", some), WebhookTargetRefused);
  });

  it("plans nothing when no endpoint listens, and only non-Yes verdicts for a non-yes subscription", async () => {
    assert.equal(await registry.verdictPlan(acme.tenantId), undefined);
    await registry.add(acme, { url: receiver.url, events: ["verdict.stored"], verdicts: "non-yes" }, by);
    const plan = (await registry.verdictPlan(acme.tenantId))!;
    assert.ok(plan);
    assert.equal(plan(verdict(acme.tenantId, "Yes", now)).length, 0);
    const rows = plan(verdict(acme.tenantId, "No", now));
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.eventType, "verdict.stored");
    assert.equal(JSON.parse(rows[0]!.payload).data.verdict, "No");
    assert.equal(rows[0]!.giveUpAtMs - rows[0]!.nextAttemptMs, 3 * DAY);
  });

  it("a change through the registry is planned with at once; a disabled endpoint gets nothing", async () => {
    const { endpoint } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    assert.ok(await registry.verdictPlan(acme.tenantId));
    await registry.update(acme, endpoint.id, { enabled: false }, by);
    assert.equal(await registry.verdictPlan(acme.tenantId), undefined);
    // another process's change is seen within the cache's time
    await store.updateWebhookEndpoint(acme.tenantId, endpoint.id, { enabled: true, updatedAt: new Date(now).toISOString() });
    assert.equal(await registry.verdictPlan(acme.tenantId), undefined);
    now += WEBHOOK_CACHE_MS;
    assert.ok(await registry.verdictPlan(acme.tenantId));
  });

  it("delivers a stored verdict, signed per Standard Webhooks, and records the attempt", async () => {
    const { endpoint, secret } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    receiver.secrets = [secret];
    const v = verdict(acme.tenantId, "Yes", now);
    await store.saveVerdict(v, await registry.verdictPlan(acme.tenantId));
    assert.equal(await store.countPendingWebhookDeliveries(), 1);
    assert.equal(await deliverer.runOnce(), 1);
    assert.equal(receiver.received.length, 1);
    const got = receiver.received[0]!;
    assert.equal(got.verified, true);
    assert.match(got.id, /^msg_/);
    assert.equal(got.timestamp, Math.floor(now / 1000));
    assert.equal(got.json.type, "verdict.stored");
    assert.equal(got.json.data.objectId, v.objectId);
    const [d] = await registry.deliveries(acme, { limit: 10 });
    assert.equal(d!.state, "delivered");
    assert.equal(d!.endpointId, endpoint.id);
    const detail = (await registry.delivery(acme, d!.id))!;
    assert.equal(detail.attempts.length, 1);
    assert.equal(detail.attempts[0]!.status, 200);
    assert.equal(detail.attempts[0]!.response, "thanks");
    assert.equal(await store.countPendingWebhookDeliveries(), 0);
  });

  it("key.created and key.revoked are written with the key", async () => {
    const { secret } = await registry.add(acme, { url: receiver.url, events: ["key.created", "key.revoked"] }, by);
    receiver.secrets = [secret];
    const keys = new ApiKeyAdmin(store, clock, cryptoRng, undefined, registry);
    const { record } = await keys.create(acme, { label: "ci" }, by);
    assert.equal(await keys.revoke(acme, record.keyId, by), true);
    assert.equal(await keys.revoke(acme, record.keyId, by), false); // already revoked: no second event
    assert.equal(await deliverer.runOnce(), 2);
    assert.deepEqual(receiver.received.map((r) => [r.json.type, r.json.data.keyId, r.verified]).sort(), [
      ["key.created", record.keyId, true],
      ["key.revoked", record.keyId, true],
    ]);
  });

  it("a rotation signs with both secrets for the overlap, then with the new one alone", async () => {
    const { endpoint, secret: old } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    const rotated = (await registry.rotateSecret(acme, endpoint.id, by, 3600))!;
    assert.notEqual(rotated.secret, old);
    assert.equal(rotated.previousUntil, new Date(now + 3_600_000).toISOString());
    assert.equal((await registry.get(acme, endpoint.id))!.previousSecretUntil, rotated.previousUntil);
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    await deliverer.runOnce();
    const first = receiver.received[0]!;
    assert.equal(first.signatures.length, 2);
    receiver.secrets = [old];
    assert.equal(verifyStandardWebhook(old, first.id, String(first.timestamp), first.body, first.signatures.join(" ")), true);
    assert.equal(verifyStandardWebhook(rotated.secret, first.id, String(first.timestamp), first.body, first.signatures.join(" ")), true);
    now += 3_600_000;
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    await deliverer.runOnce();
    const second = receiver.received[1]!;
    assert.equal(second.signatures.length, 1);
    assert.equal(verifyStandardWebhook(old, second.id, String(second.timestamp), second.body, second.signatures[0]!), false);
    assert.equal(verifyStandardWebhook(rotated.secret, second.id, String(second.timestamp), second.body, second.signatures[0]!), true);
    // the audit trail has the endpoint and the rotation, and neither secret (docs/audit.md)
    const trail = await store.queryAudit({ tenantId: acme.tenantId, targetKind: "webhook", targetId: endpoint.id, limit: 10 });
    assert.deepEqual(trail.map((r) => r.action).sort(), ["webhook.added", "webhook.secret-rotated"]);
    assert.deepEqual(trail.map((r) => r.actor), [by.actor, by.actor]);
    assert.equal(JSON.stringify(trail).includes(old) || JSON.stringify(trail).includes(rotated.secret) || JSON.stringify(trail).includes("whsec_"), false);
  });

  it("a receiver down for a while: retried with backoff, delivered once it is back, every attempt recorded", async () => {
    const { secret } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    receiver.secrets = [secret];
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    await receiver.down();
    try {
      assert.equal(await deliverer.runOnce(), 1);
      let [d] = await registry.deliveries(acme, { limit: 1 });
      assert.equal(d!.state, "pending");
      const firstPause = d!.nextAttemptMs - now;
      assert.ok(firstPause >= 4_000 && firstPause <= 6_000, `first pause ${firstPause}`);
      assert.equal(await deliverer.runOnce(), 0); // not due yet
      now = d!.nextAttemptMs;
      assert.equal(await deliverer.runOnce(), 1);
      [d] = await registry.deliveries(acme, { limit: 1 });
      const secondPause = d!.nextAttemptMs - now;
      assert.ok(secondPause >= 8_000 && secondPause <= 12_000, `second pause ${secondPause}`);
      now = d!.nextAttemptMs;
    } finally {
      await receiver.up();
    }
    assert.equal(await deliverer.runOnce(), 1);
    const [d] = await registry.deliveries(acme, { limit: 1 });
    assert.equal(d!.state, "delivered");
    const attempts = (await registry.delivery(acme, d!.id))!.attempts;
    assert.deepEqual(attempts.map((a) => a.status), [null, null, 200]);
    assert.match(attempts[0]!.error!, /ECONNREFUSED/);
    assert.equal(receiver.received.length, 1);
    assert.equal(receiver.received[0]!.verified, true);
  });

  it("a slow receiver: the attempt times out and is retried; the event's write did not wait", async () => {
    make(LOCAL, { timeoutMs: 300 });
    const { secret } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    receiver.secrets = [secret];
    receiver.delayMs = 2_000;
    const t0 = performance.now();
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    assert.ok(performance.now() - t0 < 200);
    await deliverer.runOnce();
    const [d] = await registry.deliveries(acme, { limit: 1 });
    assert.equal(d!.state, "pending");
    const [a] = (await registry.delivery(acme, d!.id))!.attempts;
    assert.equal(a!.status, null);
    assert.match(a!.error!, /no answer within 300 ms/);
    assert.ok(a!.durationMs >= 250 && a!.durationMs < 1_500, `duration ${a!.durationMs}`);
    receiver.delayMs = 0;
    now = d!.nextAttemptMs;
    await deliverer.runOnce();
    assert.equal((await registry.deliveries(acme, { limit: 1 }))[0]!.state, "delivered");
  });

  it("gives up after the retry period, and a resend starts a fresh one", async () => {
    const { secret } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    receiver.secrets = [secret];
    receiver.status = 500;
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    let d = (await registry.deliveries(acme, { limit: 1 }))[0]!;
    let attempts = 0;
    while (d.state === "pending" && attempts < 200) {
      now = Math.max(now, d.nextAttemptMs);
      await deliverer.runOnce();
      attempts++;
      d = (await registry.deliveries(acme, { limit: 1 }))[0]!;
    }
    assert.equal(d.state, "failed");
    assert.ok(now - T0 <= 3 * DAY && now - T0 > 2 * DAY, `gave up after ${(now - T0) / DAY} days`);
    assert.ok(attempts > 10 && attempts < 100, `${attempts} attempts`);
    assert.equal(d.lastStatus, 500);
    receiver.status = 200;
    assert.equal(await registry.resend(acme, d.id, by), true);
    await deliverer.runOnce();
    assert.equal((await registry.deliveries(acme, { limit: 1 }))[0]!.state, "delivered");
  });

  it("the SSRF guard runs again at delivery, after DNS resolution", async () => {
    // registered while the name resolved elsewhere; now it resolves to loopback (DNS rebinding)
    const targets: WebhookTargetPolicy = { allowPrivate: false, allowHosts: [], allowHttp: true };
    registry = new WebhookRegistry(store, clock, cryptoRng, new SecretBox([randomBytes(32)]), { targets, retryPeriodMs: DAY });
    deliverer = new WebhookDeliverer(store, registry, clock, cryptoRng, {
      owner: "t",
      targets,
      timeoutMs: 1_000,
      pollMs: 50,
      retryBaseMs: 1_000,
      retryMaxMs: 10_000,
      lookup: async () => [{ address: "127.0.0.1", family: 4 }],
    });
    const port = new URL(receiver.url).port;
    await registry.add(acme, { url: `http://hooks.example.com:${port}/hook`, events: ["verdict.stored"] }, by);
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    await deliverer.runOnce();
    const d = (await registry.deliveries(acme, { limit: 1 }))[0]!;
    const [a] = (await registry.delivery(acme, d.id))!.attempts;
    assert.match(a!.error!, /refused: hooks\.example\.com resolves to 127\.0\.0\.1/);
    assert.equal(receiver.received.length, 0);
  });

  it("device pin events: first pin is device.pin.changed, a refusal device.pin.refused", async () => {
    await registry.add(acme, { url: receiver.url, events: ["device.pin.changed", "device.pin.refused"] }, by);
    const plan = (await registry.verdictPlan(acme.tenantId))!;
    assert.deepEqual(plan(verdict(acme.tenantId, "Yes", now, { deviceId: "d1", pin: "first" })).map((r) => r.eventType), ["device.pin.changed"]);
    const refused = plan(verdict(acme.tenantId, "No", now, { deviceId: "d1", pin: "changed", changes: [{ fact: "x", from: "a", to: "b" }] }));
    assert.deepEqual(refused.map((r) => r.eventType), ["device.pin.refused"]);
    assert.deepEqual(JSON.parse(refused[0]!.payload).data.changes, [{ fact: "x", from: "a", to: "b" }]);
    assert.equal(plan(verdict(acme.tenantId, "Yes", now, { deviceId: "d1", pin: "matched" })).length, 0);
  });

  it("a pin reset writes device.pin.changed with the reset; an unknown device writes nothing", async () => {
    await registry.add(acme, { url: receiver.url, events: ["device.pin.changed"] }, by);
    const devices = new DeviceService(store, clock, registry);
    await store.saveDeviceVerdict(acme.tenantId, "d1", () => ({
      verdict: verdict(acme.tenantId, "Yes", now),
      device: {
        tenantId: acme.tenantId, deviceId: "d1", firstSeen: new Date(now).toISOString(), lastSeen: new Date(now).toISOString(), count: 1,
        last: { objectId: "o", at: new Date(now).toISOString(), verdict: "Yes", status: "Success", pin: "none" }, latestFacts: null, pin: null, resets: 0,
      },
    }));
    await devices.resetPin(acme.tenantId, "d1", testActor(store));
    await assert.rejects(devices.resetPin(acme.tenantId, "nope", testActor(store)));
    const rows = await registry.deliveries(acme, { limit: 10 });
    assert.deepEqual(rows.map((r) => [r.eventType, JSON.parse(r.payload).data.change]), [["device.pin.changed", "reset"]]);
  });

  it("trust sources: a move to a failing state is trust.degraded, the way back trust.recovered, for each listening tenant", async () => {
    const { secret } = await registry.add(acme, { url: receiver.url, events: ["trust.degraded", "trust.recovered"] }, by);
    receiver.secrets = [secret];
    const globex = await store.createTenant({ tenantId: "t_globex", name: "globex", customerId: "1002", kind: "customer", createdAt: new Date(T0).toISOString() });
    await registry.add(globex, { url: receiver.url, events: ["key.created"] }, by); // hears no trust event
    let state = "current";
    const view = async () => ({ usable: true, maxAgeSeconds: 1, sources: [{ name: "android-status", label: "Google's status list", state, usedBy: "x", configured: true }] }) as unknown as TrustSourcesView;
    const watcher = new WebhookTrustEvents(view, (type, data) => registry.trustEvent(type, data), "host:1");
    assert.equal(await watcher.check(), 0, "the first reading is the baseline");
    state = "stale";
    assert.equal(await watcher.check(), 1);
    assert.equal(await watcher.check(), 0, "no change, no event");
    state = "held"; // also a state that works: back from stale
    assert.equal(await watcher.check(), 1);
    await deliverer.runOnce();
    // one batch, attempted at once: in either order
    assert.deepEqual(receiver.received.map((r) => [r.json.type, r.json.data.state, r.json.data.previous, r.verified]).sort(), [
      ["trust.degraded", "stale", "current", true],
      ["trust.recovered", "held", "stale", true],
    ]);
    assert.equal((await registry.deliveries(globex, { limit: 10 })).length, 0);
  });

  it("the hot path: a tenant's subscriptions are read once per cache period, however many verdicts", async () => {
    let reads = 0;
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "listWebhookEndpoints") reads++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const r = new WebhookRegistry(counting, clock, cryptoRng, new SecretBox([randomBytes(32)]), { targets: LOCAL, retryPeriodMs: DAY });
    for (let i = 0; i < 100; i++) assert.equal(await r.verdictPlan(acme.tenantId), undefined);
    assert.equal(reads, 1, "no endpoint: one read, then the cache answers");
    await r.add(acme, { url: receiver.url, events: ["key.created"] }, by);
    const afterAdd = reads;
    for (let i = 0; i < 100; i++) assert.equal(await r.verdictPlan(acme.tenantId), undefined, "an endpoint that hears no verdict event plans nothing");
    assert.equal(reads - afterAdd, 1, "the add dropped the copy: one read again");
  });

  it("a 503 with Retry-After is not attempted again sooner than it asks (up to the longest pause)", async () => {
    const { secret } = await registry.add(acme, { url: receiver.url, events: ["verdict.stored"] }, by);
    receiver.secrets = [secret];
    receiver.status = 503;
    receiver.retryAfter = "600";
    await store.saveVerdict(verdict(acme.tenantId, "No", now), await registry.verdictPlan(acme.tenantId));
    await deliverer.runOnce();
    let d = (await registry.deliveries(acme, { limit: 1 }))[0]!;
    assert.equal(d.nextAttemptMs - now, 600_000);
    now = d.nextAttemptMs;
    receiver.retryAfter = "999999";
    await deliverer.runOnce();
    d = (await registry.deliveries(acme, { limit: 1 }))[0]!;
    assert.equal(d.nextAttemptMs - now, 3_600_000, "capped at --webhook-retry-max-ms");
    assert.deepEqual((await registry.delivery(acme, d.id))!.attempts.map((a) => [a.status, a.response]), [[503, "not now"], [503, "not now"]]);
  });
});
