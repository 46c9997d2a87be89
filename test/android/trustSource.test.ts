import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import {
  emptyAndroidTrust,
  loadAndroidTrust,
  parseAndroidRoots,
  type AndroidTrustOptions,
} from "../../src/trust/androidTrustSource.ts";
import { appraiseAt, pemBlob, vec } from "./fixtures.ts";

const ROOTS = vec("android_keyattestation/roots.json");
const STATUS = vec("google_android-key-attestation/status.json");
const CAIMAN = () => pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
const CAIMAN_NONCE = "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4";
const AT = "2025-10-01T00:00:00Z";

/** A clock the test moves. */
function clock(iso = AT) {
  let t = Date.parse(iso);
  return { now: () => new Date(t), advance: (s: number) => (t += s * 1000) };
}

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), "attestd-android-trust-"));
  dirs.push(d);
  return d;
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function opts(over: Partial<AndroidTrustOptions>): AndroidTrustOptions {
  return { cacheDir: tempDir(), maxAgeSeconds: 86_400, refreshSeconds: 3600, ...over };
}

describe("roots documents", () => {
  test("Google's roots JSON, a PEM bundle and DER all give the same pins", () => {
    const json = parseAndroidRoots(readFileSync(ROOTS));
    assert.equal(json.rootsDer.length, 2);
    assert.equal(json.pinnedRootSpkiSha256.size, 2);
    const pem = parseAndroidRoots(Buffer.from((JSON.parse(readFileSync(ROOTS, "utf8")) as string[]).join("\n")));
    assert.deepEqual([...pem.pinnedRootSpkiSha256], [...json.pinnedRootSpkiSha256]);
    const der = parseAndroidRoots(Buffer.concat([0, 1, 2, 3, 4].map((i) => readFileSync(vec(`grapheneos_attestationserver_roots/google_root_${i}.der`)))));
    assert.equal(der.rootsDer.length, 5);
    assert.equal(der.pinnedRootSpkiSha256.size, 2, "the four RSA roots share one key");
    for (const pin of json.pinnedRootSpkiSha256) assert.ok(der.pinnedRootSpkiSha256.has(pin));
  });

  test("garbage is refused with the source named", () => {
    assert.throws(() => parseAndroidRoots(Buffer.from("[1, 2]"), "roots.json"), /roots\.json: expected a JSON array/);
    assert.throws(() => parseAndroidRoots(Buffer.from("hello"), "r"), /r: neither roots JSON/);
    assert.throws(() => parseAndroidRoots(Buffer.from("[]"), "r"), /r: no certificates/);
  });
});

describe("loading from files", () => {
  test("fresh roots and status list: Yes; health ok", async () => {
    const c = clock();
    const src = await loadAndroidTrust(opts({ rootsSource: ROOTS, statusSource: STATUS, now: c.now }));
    const h = src.health();
    assert.equal(h.ok, true);
    assert.equal(h.roots.state, "ok");
    assert.equal(h.roots.items, 2);
    assert.equal(h.status.items, 5);
    assert.equal(h.roots.origin, "source");
    const trust = src.current();
    assert.equal(trust.fresh, true);
    assert.equal(src.current(), trust, "the same object while nothing changes");
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, trust, AT).record.verdict, "Yes");
  });

  test("no status list configured: missing, fail closed", async () => {
    const src = await loadAndroidTrust(opts({ rootsSource: ROOTS, now: clock().now }));
    const h = src.health();
    assert.equal(h.ok, false);
    assert.equal(h.status.state, "missing");
    assert.equal(h.status.configured, false);
    const r = appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.match(r.reason, /missing or stale/);
  });

  test("nothing configured: the empty trust, fail closed", async () => {
    const src = await loadAndroidTrust(opts({}));
    assert.equal(src.health().roots.state, "missing");
    assert.equal(src.current().pinnedRootSpkiSha256.size, 0);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, emptyAndroidTrust(), AT).record.status, "CertificateInvalid");
  });

  test("max age: stale after maxAgeSeconds without a good refresh, fresh again after one", async () => {
    const c = clock();
    const dir = tempDir();
    const rootsFile = path.join(dir, "roots.json");
    writeFileSync(rootsFile, readFileSync(ROOTS));
    const src = await loadAndroidTrust(opts({ rootsSource: rootsFile, statusSource: STATUS, maxAgeSeconds: 3600, now: c.now }));
    const before = src.current();
    c.advance(3601);
    rmSync(rootsFile); // the next refresh of the roots fails
    await src.refresh();
    const h = src.health();
    assert.equal(h.roots.state, "stale");
    assert.equal(h.status.state, "ok");
    assert.match(h.roots.lastError ?? "", /ENOENT/);
    const stale = src.current();
    assert.equal(stale.fresh, false);
    assert.notEqual(stale, before);
    assert.equal(stale.rootsDer, before.rootsDer, "same roots kept (and their caches)");
    assert.match(appraiseAt(CAIMAN(), CAIMAN_NONCE, stale, AT).reason, /stale/);
    writeFileSync(rootsFile, readFileSync(ROOTS));
    await src.refresh();
    assert.equal(src.health().ok, true);
    assert.equal(src.current().fresh, true);
    assert.equal(src.current().rootsDer, before.rootsDer, "identical content keeps the same objects");
  });

  test("a bad allow-list file stops loading with one line; a good one is used", async () => {
    const dir = tempDir();
    const bad = path.join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify([{ key: "xyz", label: "x" }]));
    await assert.rejects(loadAndroidTrust(opts({ rootsSource: ROOTS, allowedBootKeysFile: bad })), /bad\.json: entry 0/);
    await assert.rejects(loadAndroidTrust(opts({ rootsSource: ROOTS, allowedBootKeysFile: path.join(dir, "nope.json") })), /ENOENT/);
    const good = path.join(dir, "good.json");
    writeFileSync(good, JSON.stringify([{ key: "ab".repeat(32), label: "Test OS" }]));
    const src = await loadAndroidTrust(opts({ rootsSource: ROOTS, statusSource: STATUS, allowedBootKeysFile: good, now: clock().now }));
    assert.deepEqual(src.current().allowedBootKeys, [{ key: "ab".repeat(32), label: "Test OS" }]);
    assert.equal(src.health().allowedBootKeys.count, 1);
  });
});

describe("loading from an http URL, with the disk cache", () => {
  let server: Server;
  let base: string;
  let failing = false;
  let hits = 0;
  before(async () => {
    server = createServer((req, res) => {
      hits++;
      if (failing) {
        res.writeHead(503).end("down");
        return;
      }
      const file = req.url === "/attestation/root" ? ROOTS : req.url === "/attestation/status" ? STATUS : undefined;
      if (!file) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(readFileSync(file));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test("fetches both, writes the cache, appraises Yes", async () => {
    failing = false;
    const cacheDir = tempDir();
    const src = await loadAndroidTrust(opts({ rootsSource: `${base}/attestation/root`, statusSource: `${base}/attestation/status`, cacheDir, now: clock().now }));
    assert.equal(src.health().ok, true);
    assert.ok(existsSync(path.join(cacheDir, "android-roots.json")));
    assert.ok(existsSync(path.join(cacheDir, "android-status.json")));
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.verdict, "Yes");
  });

  test("when the URL fails at start-up the disk cache is used, and ages from when it was fetched", async () => {
    failing = false;
    const cacheDir = tempDir();
    const c = clock();
    const urls = { rootsSource: `${base}/attestation/root`, statusSource: `${base}/attestation/status` };
    await loadAndroidTrust(opts({ ...urls, cacheDir, now: c.now, maxAgeSeconds: 7200 }));
    failing = true;
    c.advance(3600);
    const src = await loadAndroidTrust(opts({ ...urls, cacheDir, now: c.now, maxAgeSeconds: 7200 }));
    const h = src.health();
    assert.equal(h.ok, true);
    assert.equal(h.roots.origin, "cache");
    assert.equal(h.roots.ageSeconds, 3600);
    assert.match(h.roots.lastError ?? "", /HTTP 503/);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.verdict, "Yes");
    c.advance(3601);
    assert.equal(src.health().roots.state, "stale");
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.status, "CertificateInvalid");
    failing = false;
    await src.refresh();
    assert.equal(src.health().roots.origin, "source");
    assert.equal(src.current().fresh, true);
  });

  test("a cache written for another source is not used", async () => {
    failing = false;
    const cacheDir = tempDir();
    await loadAndroidTrust(opts({ rootsSource: `${base}/attestation/root`, cacheDir }));
    failing = true;
    const src = await loadAndroidTrust(opts({ rootsSource: `${base}/attestation/root?other`, cacheDir }));
    assert.equal(src.health().roots.state, "missing");
    failing = false;
  });

  test("start() refreshes on the timer; stop() stops it", async () => {
    failing = false;
    const src = await loadAndroidTrust(opts({ rootsSource: `${base}/attestation/root`, statusSource: `${base}/attestation/status`, refreshSeconds: 0.05 }));
    const start = hits;
    src.start();
    await new Promise((r) => setTimeout(r, 300));
    src.stop();
    const after = hits;
    assert.ok(after - start >= 4, `expected several refreshes, got ${after - start} requests`);
    await new Promise((r) => setTimeout(r, 150));
    assert.ok(hits - after <= 2, "no refresh after stop (one may have been in flight)");
  });
});
