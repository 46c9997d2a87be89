import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { attestdCli, startInstance, type Instance } from "../helpers/serverProcess.ts";
import { WebhookReceiver } from "../helpers/webhookReceiver.ts";
import { createTestDatabase, type TestDatabase } from "../store/backends.ts";
import { issueNonce, postBlob } from "../scale/harness.ts";

/**
 * Signed webhooks with real attestd processes (docs/events.md): endpoints registered with `attestd webhook add`,
 * verdicts posted over HTTP, deliveries checked by a receiver on 127.0.0.1 with its own Standard Webhooks check.
 * The outbox survives a SIGKILL between the event and its delivery; a slow receiver does not slow the request
 * that caused the event; two instances on one PostgreSQL database deliver each event exactly once.
 */

const ALLOW = ["--webhook-allow-private", "--webhook-allow-http"];
const FAST = [...ALLOW, "--webhook-poll-ms", "50", "--webhook-retry-base-ms", "200", "--webhook-retry-max-ms", "1000", "--webhook-timeout-ms", "1000"];

async function stop(i: Instance | undefined, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (i && i.proc.exitCode === null && i.proc.signalCode === null) {
    i.kill(signal);
    await i.exited;
  }
}

function addEndpoint(flags: string[], tenant: string, url: string): string {
  const r = attestdCli(["webhook", "add", "--tenant", tenant, "--url", url, "--events", "verdict.stored", ...ALLOW, ...flags]);
  assert.equal(r.status, 0, r.stderr);
  const secret = /whsec_[A-Za-z0-9+/=]+/.exec(r.stderr)?.[0];
  assert.ok(secret, r.stderr);
  assert.ok(!r.stdout.includes(secret), "the secret is not in the JSON");
  return secret;
}

async function verdicts(i: Instance, key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let k = 0; k < n; k++) {
    const nonce = await issueNonce(i.base, key);
    const r = await postBlob(i.base, key, nonce);
    assert.equal(r.status, 200, r.body);
    // the verdict's objectId is the last segment of its Location
    ids.push(String(r.headers.location).split("/").pop()!);
  }
  return ids;
}

describe("webhooks: one process on SQLite", () => {
  let dir: string;
  let data: string[];
  let key: string;
  let receiver: WebhookReceiver;
  let server: Instance | undefined;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-webhooks-"));
    data = ["--data-dir", path.join(dir, "data")];
    assert.equal(attestdCli(["tenant", "create", "acme", ...data]).status, 0);
    key = attestdCli(["key", "create", "--tenant", "acme", ...data]).stdout.trim();
    receiver = await WebhookReceiver.start();
    receiver.secrets = [addEndpoint(data, "acme", receiver.url)];
  });
  after(async () => {
    await stop(server, "SIGKILL");
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a URL outside what the operator allows is refused at registration", () => {
    const r = attestdCli(["webhook", "add", "--tenant", "acme", "--url", "https://169.254.169.254/x", "--events", "key.created", ...data]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /loopback, private, link-local/);
    const http = attestdCli(["webhook", "add", "--tenant", "acme", "--url", "http://hooks.example.com/x", "--events", "key.created", ...data]);
    assert.equal(http.status, 1);
    assert.match(http.stderr, /must be https/);
  });

  it("SIGKILL between the events and their delivery: every event is delivered after the restart", async () => {
    await receiver.down();
    server = await startInstance([...data, ...FAST]);
    const ids = await verdicts(server, key, 5);
    // the first attempts met a closed port; the events are in the outbox only
    await new Promise((r) => setTimeout(r, 300));
    await stop(server, "SIGKILL");
    server = undefined;
    await receiver.up();
    server = await startInstance([...data, ...FAST]);
    await receiver.waitFor(5, 60_000);
    await new Promise((r) => setTimeout(r, 500));
    const got = receiver.received.map((r) => r.json.data.objectId as string).sort();
    assert.deepEqual(got, [...ids].sort(), "each event once");
    assert.ok(receiver.received.every((r) => r.verified && r.json.type === "verdict.stored"));
    const list = JSON.parse(attestdCli(["webhook", "deliveries", "--tenant", "acme", ...data]).stdout) as { state: string; attempts: number }[];
    assert.equal(list.length, 5);
    assert.ok(list.every((d) => d.state === "delivered" && d.attempts >= 2), JSON.stringify(list));
  });

  it("a slow receiver does not slow the request that caused the event; its delivery times out and is retried", async () => {
    receiver.received.length = 0;
    receiver.delayMs = 5_000;
    const t0 = performance.now();
    await verdicts(server!, key, 1);
    const took = performance.now() - t0;
    assert.ok(took < 2_000, `nonce and verdict took ${took} ms while the receiver takes 5 s`);
    // attempts of 1 s time out; once the receiver is quick again, the delivery goes through
    await new Promise((r) => setTimeout(r, 1_500));
    receiver.delayMs = 0;
    await receiver.waitFor(1, 30_000);
    const list = JSON.parse(attestdCli(["webhook", "deliveries", "--tenant", "acme", "--limit", "1", ...data]).stdout) as { id: string }[];
    const shown = JSON.parse(attestdCli(["webhook", "show", "--tenant", "acme", "--delivery", list[0]!.id, ...data]).stdout) as {
      delivery: { id: string };
      payload: string;
      attempts: { status: number | null; error: string | null }[];
    };
    assert.match(shown.attempts[0]!.error ?? "", /no answer within 1000 ms/);
    // the admin API's shapes (GET /portal/api/webhook-deliveries[/{id}]), not the outbox's rows
    assert.deepEqual(Object.keys(list[0]!), ["id", "eventId", "endpointId", "eventType", "state", "attempts", "lastStatus", "createdAt", "nextAttemptAt", "giveUpAt", "finishedAt"]);
    assert.deepEqual([Object.keys(shown), shown.delivery], [["delivery", "payload", "attempts"], list[0]]);
    assert.deepEqual(Object.keys(shown.attempts[0]!), ["attempt", "at", "status", "durationMs", "error", "response"]);
    assert.equal((JSON.parse(shown.payload) as { type: string }).type, "verdict.stored");
  });
});

describe("webhooks: two instances on PostgreSQL", () => {
  let db: TestDatabase;
  let dirs: string[] = [];
  let a: Instance | undefined;
  let b: Instance | undefined;
  let receiver: WebhookReceiver;
  let flags: string[];
  let key: string;

  before(async () => {
    db = await createTestDatabase("webhooks_e2e");
    dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), "attestd-webhooks-pg-")));
    const keyFile = path.join(dirs[0]!, "shared-secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    flags = ["--store", "postgres", "--database-url", db.url, "--secrets-key-file", keyFile];
    receiver = await WebhookReceiver.start();
    const started = await Promise.all(dirs.map((d) => startInstance([...flags, "--data-dir", d, ...FAST])));
    [a, b] = started;
    assert.equal(attestdCli(["tenant", "create", "acme", ...flags, "--data-dir", dirs[0]!]).status, 0);
    key = attestdCli(["key", "create", "--tenant", "acme", "--rps", "1000", "--burst", "1000", ...flags, "--data-dir", dirs[0]!]).stdout.trim();
    receiver.secrets = [addEndpoint([...flags, "--data-dir", dirs[0]!], "acme", receiver.url)];
    // the instances read subscriptions at most every 5 s
    await new Promise((r) => setTimeout(r, 5_200));
  });
  after(async () => {
    await Promise.all([stop(a), stop(b)]);
    await receiver.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await db?.drop();
  });

  it("each event is delivered once, by one of the two", async () => {
    // both instances make events and both deliver: every row is claimed by one of them
    const ids = (await Promise.all([verdicts(a!, key, 10), verdicts(b!, key, 10)])).flat();
    await receiver.waitFor(20, 60_000);
    // anything delivered twice would arrive now
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(receiver.received.length, 20, "no event twice");
    assert.deepEqual(receiver.received.map((r) => r.json.data.objectId as string).sort(), ids.sort());
    assert.equal(new Set(receiver.received.map((r) => r.id)).size, 20);
    assert.ok(receiver.received.every((r) => r.verified));
  });
});

describe("webhooks: events a CLI command writes", () => {
  let dir: string;
  let data: string[];

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-webhooks-cli-"));
    data = ["--data-dir", path.join(dir, "data")];
    assert.equal(attestdCli(["tenant", "create", "acme", ...data]).status, 0);
    const r = attestdCli(["webhook", "add", "--tenant", "acme", "--url", "http://127.0.0.1:9/hooks", "--events", "key.created,key.revoked", ...ALLOW, ...data]);
    assert.equal(r.status, 0, r.stderr);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it("are retried for the --webhook-retry-period the command is given, as the server's own events are (the default: 3 days)", () => {
    const made = attestdCli(["key", "create", "--tenant", "acme", "--webhook-retry-period", "600", ...data]);
    assert.equal(made.status, 0, made.stderr);
    const keyId = made.stdout.trim().split("_")[1]!;
    const revoked = attestdCli(["key", "revoke", keyId, ...data], { ATTESTD_WEBHOOK_RETRY_PERIOD: "7200" });
    assert.equal(revoked.status, 0, revoked.stderr);
    const unset = attestdCli(["key", "create", "--tenant", "acme", ...data]);
    assert.equal(unset.status, 0, unset.stderr);
    const list = JSON.parse(attestdCli(["webhook", "deliveries", "--tenant", "acme", ...data]).stdout) as { eventType: string; createdAt: string; giveUpAt: string }[];
    const periods = list.map((d) => [d.eventType, (Date.parse(d.giveUpAt) - Date.parse(d.createdAt)) / 1000]).reverse();
    assert.deepEqual(periods, [
      ["key.created", 600],
      ["key.revoked", 7200],
      ["key.created", 259_200],
    ]);
  });
});
