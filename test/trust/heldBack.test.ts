import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Agent } from "undici";
import { ensureDevTls } from "../../src/tls/devTls.ts";
import { BUILT_IN_ROOTS_URL, loadAndroidTrust, type AndroidTrustOptions } from "../../src/trust/androidTrustSource.ts";
import { vec } from "../android/fixtures.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * Issue 22, item 4: a status list (or roots document) that empties itself, and redirects. Against stand-in servers
 * on 127.0.0.1 started here: an https one (the source), another https one (another origin) and a plain http one.
 * A copy losing more than --android-max-shrink of the entries in force is held back, the copy in force stays, and
 * /readyz, the portal and /metrics say so; every redirect is refused.
 */

const FULL_STATUS = readFileSync(vec("google_android-key-attestation/status.json"), "utf8");
const FULL = JSON.parse(FULL_STATUS) as { entries: Record<string, unknown> };
const SERIALS = Object.keys(FULL.entries);
/** the status list with only its first `n` entries */
const statusWith = (n: number) => JSON.stringify({ entries: Object.fromEntries(SERIALS.slice(0, n).map((k) => [k, FULL.entries[k]])) });
/** Google's five roots (a PEM bundle), and a document of two of them */
const FIVE_ROOTS = readFileSync(BUILT_IN_ROOTS_URL, "utf8");
const TWO_ROOTS = readFileSync(vec("android_keyattestation/roots.json"), "utf8");

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), "attestd-held-"));
  dirs.push(d);
  return d;
};

/** What the source server answers on /status and /roots: a body, or a redirect to `to`. */
interface Answer {
  body?: string;
  to?: string;
}

interface StandIns {
  /** the source (https) */
  a: string;
  /** another https origin */
  b: string;
  /** plain http */
  c: string;
  status: Answer;
  roots: Answer;
  /** requests other origins received: a followed redirect would show here */
  elsewhere: number;
  fetch: typeof fetch;
  close(): Promise<void>;
}

async function standIns(): Promise<StandIns> {
  const tls = await ensureDevTls(tempDir());
  const cert = readFileSync(tls.certFile);
  const key = readFileSync(tls.keyFile);
  const ca = readFileSync(tls.caFile);
  const s = { status: { body: FULL_STATUS }, roots: { body: FIVE_ROOTS }, elsewhere: 0 } as StandIns;
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const a = req.url === "/status" ? s.status : req.url === "/roots" ? s.roots : undefined;
    if (!a) return void res.writeHead(404).end();
    if (a.to) return void res.writeHead(302, { location: a.to }).end();
    res.writeHead(200, { "content-type": "application/json" }).end(a.body);
  };
  const other = (_req: IncomingMessage, res: ServerResponse) => {
    s.elsewhere++;
    res.writeHead(200, { "content-type": "application/json" }).end(statusWith(0));
  };
  const servers = [createHttpsServer({ cert, key }, answer), createHttpsServer({ cert, key }, other), createHttpServer(other)];
  const ports = await Promise.all(
    servers.map((srv) => new Promise<number>((resolve) => srv.listen(0, "127.0.0.1", () => resolve((srv.address() as AddressInfo).port)))),
  );
  s.a = `https://127.0.0.1:${ports[0]}`;
  s.b = `https://127.0.0.1:${ports[1]}`;
  s.c = `http://127.0.0.1:${ports[2]}`;
  // the platform's fetch, trusting the stand-ins' CA: what attestd's code does with the answer is what is tested
  const agent = new Agent({ connect: { ca } });
  s.fetch = ((input: string | URL | Request, init?: RequestInit) => fetch(input, { ...init, dispatcher: agent } as RequestInit)) as typeof fetch;
  s.close = async () => {
    await agent.close();
    await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))));
  };
  return s;
}

let net: StandIns;
before(async () => {
  net = await standIns();
});
after(async () => {
  await net.close();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

function reset() {
  net.status = { body: FULL_STATUS };
  net.roots = { body: FIVE_ROOTS };
  net.elsewhere = 0;
}

const at = () => new Date(T0);
function opts(over: Partial<AndroidTrustOptions> = {}): AndroidTrustOptions {
  return {
    statusSource: `${net.a}/status`,
    cacheDir: tempDir(),
    maxAgeSeconds: 86_400,
    refreshSeconds: 0,
    maxShrinkPercent: 50,
    fetch: net.fetch,
    now: at,
    ...over,
  };
}

describe("a fetched copy that loses too many entries is held back", () => {
  it("an empty status list while the copy in force is not: held, the revocations stay in force, and after a restart too", async () => {
    reset();
    const o = opts();
    const src = await loadAndroidTrust(o);
    assert.equal(src.health().status.items, 5);
    net.status = { body: statusWith(0) };
    await src.refresh();
    const h = src.health().status;
    assert.equal(h.items, 5, "the copy in force stays");
    assert.deepEqual(h.heldBack, { at: at().toISOString(), items: 0, inForce: 5, lostPercent: 100 });
    assert.equal(h.heldTotal, 1);
    assert.equal(h.lastError, "held back: 0 where 5 are in force (100% fewer)");
    assert.equal(src.current().status.size, 5, "every revocation is still applied");
    assert.equal(src.current().fresh, true, "android-key stays usable on the copy in force");

    // a restart reads the disk cache first and measures the new copy against it
    const again = await loadAndroidTrust({ ...o });
    const h2 = again.health().status;
    assert.deepEqual([h2.items, h2.origin, h2.heldBack?.items, h2.heldTotal], [5, "cache", 0, 1]);
    assert.equal(again.current().status.size, 5);
  });

  it("a big shrink is held back, a small one accepted", async () => {
    reset();
    const src = await loadAndroidTrust(opts());
    net.status = { body: statusWith(4) };
    await src.refresh();
    assert.deepEqual([src.health().status.items, src.health().status.heldBack], [4, undefined], "one of five lost (20%): accepted");
    net.status = { body: statusWith(1) };
    await src.refresh();
    const h = src.health().status;
    assert.deepEqual([h.items, h.heldBack?.items, h.heldBack?.lostPercent, h.heldTotal], [4, 1, 75, 1], "three of four lost: held");
    // a copy that keeps enough ends the held state
    net.status = { body: statusWith(3) };
    await src.refresh();
    assert.deepEqual([src.health().status.items, src.health().status.heldBack, src.health().status.heldTotal], [3, undefined, 1]);
  });

  it("the roots source follows the same rule", async () => {
    reset();
    const src = await loadAndroidTrust(opts({ rootsSource: `${net.a}/roots` }));
    assert.equal(src.health().roots.items, 5);
    net.roots = { body: TWO_ROOTS };
    await src.refresh();
    const h = src.health().roots;
    assert.deepEqual([h.items, h.heldBack?.items, h.heldBack?.inForce, h.heldTotal], [5, 2, 5, 1]);
    assert.equal(src.current().rootsDer.length, 5);
  });

  it("--android-max-shrink 100 accepts any copy, an empty one too: how an operator accepts a held-back list", async () => {
    reset();
    const o = opts();
    const src = await loadAndroidTrust(o);
    net.status = { body: statusWith(0) };
    await src.refresh();
    assert.equal(src.health().status.items, 5);
    // the operator's decision: restart with 100 (the disk cache still holds the five)
    const accepting = await loadAndroidTrust({ ...o, maxShrinkPercent: 100 });
    assert.deepEqual([accepting.health().status.items, accepting.health().status.heldBack], [0, undefined]);
    assert.equal(accepting.current().status.size, 0);
  });
});

describe("redirects are refused", () => {
  for (const [what, to] of [
    ["https → http", () => `${net.c}/status`],
    ["to another origin", () => `${net.b}/status`],
    ["even to the same origin", () => `${net.a}/roots`],
  ] as const) {
    it(`${what}: the read fails, nothing is fetched from the target, the copy in force stays`, async () => {
      reset();
      const src = await loadAndroidTrust(opts());
      net.status = { to: to() };
      await src.refresh();
      const h = src.health().status;
      assert.equal(h.lastError, `redirect refused: HTTP 302 to ${to()}`);
      assert.equal(h.reason, "the last refresh failed: redirect refused: HTTP 302", "the public reason names no URL");
      assert.equal(h.items, 5);
      assert.equal(net.elsewhere, 0, "the redirect was not followed");
    });
  }

  it("a source that redirects at start-up is missing, not loaded from where it points", async () => {
    reset();
    net.status = { to: `${net.c}/status` };
    const src = await loadAndroidTrust(opts());
    assert.equal(src.health().status.state, "missing");
    assert.equal(net.elsewhere, 0);
  });
});

describe("what an operator and a tenant see of a held-back list", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  before(async () => {
    reset();
    // --android-max-shrink is left at its default (50)
    t = await startTestRuntime({ androidStatus: `${net.a}/status` }, { fetch: net.fetch });
    people = portalPeople(t);
    await people.add("root@example.org", "operator");
    await people.add("vic@acme.example", "viewer", "acme");
    net.status = { body: statusWith(0) };
    const refreshed = await people.as("root@example.org", { method: "POST", url: "/portal/api/trust/refresh" });
    assert.equal(refreshed.statusCode, 200, refreshed.body);
  });
  after(() => t.close());

  it("/metrics counts it: attestd_trust_refresh_held_total{source=android-status}", async () => {
    const metrics = (await t.runtime.app.inject({ method: "GET", url: "/metrics" })).body;
    assert.match(metrics, /^attestd_trust_refresh_held_total\{source="android-status"\} 1$/m);
    assert.match(metrics, /^attestd_android_trust_fresh 1$/m, "android-key is still usable on the copy in force");
  });

  it("/readyz stays 200 and names android-status as held, without saying where it comes from", async () => {
    const res = await t.runtime.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(body.degraded, ["android-status"]);
    assert.deepEqual(body.checks.find((c: { name: string }) => c.name === "android-status"), { name: "android-status", ok: false, state: "held" });
    assert.ok(!res.body.includes("127.0.0.1"), res.body);
  });

  it("the portal: an operator sees the held copy and the sentence; a tenant viewer the state and a reason naming no URL", async () => {
    const op = (await people.as("root@example.org", { url: "/portal/api/trust" })).json().sources[1];
    assert.deepEqual(op.heldBack, { at: new Date(T0).toISOString(), items: 0, inForce: 5, lostPercent: 100 });
    assert.equal(op.items, 5);
    assert.equal(op.source, `${net.a}/status`);
    assert.match(op.summary, /a new copy was held back .*: it has 0 where the copy in force has 5 \(100% fewer, more than --android-max-shrink 50%\) from https:\/\/127\.0\.0\.1/);

    const res = await people.as("vic@acme.example", { url: "/portal/api/trust" });
    const viewer = res.json().sources[1];
    assert.equal(viewer.state, "held", "the one word the trust page and /readyz use for a held-back copy");
    assert.deepEqual(viewer.heldBack, op.heldBack);
    assert.equal(
      viewer.reason,
      `a new copy was held back at ${new Date(T0).toISOString()}: it has 0 where the copy in force has 5 (100% fewer, more than --android-max-shrink 50%); the copy obtained ${new Date(T0).toISOString()} stays in force`,
    );
    for (const k of ["source", "summary", "lastError"]) assert.ok(!(k in viewer), `a tenant viewer is not shown ${k}`);
    assert.ok(!res.body.includes("127.0.0.1") && !res.body.includes(t.dir), res.body);

    const page = await people.as("root@example.org", { url: "/portal/trust" });
    assert.match(page.body, /<dt>Held back<\/dt>/);
  });
});
