import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { systemClock } from "../../src/clock.ts";
import { loadConfig } from "../../src/config.ts";
import { parsePemBundle } from "../../src/attestation/encoding/pem.ts";
import { readCertificate } from "../../src/attestation/encoding/derChain.ts";
import {
  BUILT_IN_ROOTS_URL,
  emptyAndroidTrust,
  loadAndroidTrust,
  parseAndroidRoots,
  type AndroidTrustOptions,
} from "../../src/trust/androidTrustSource.ts";
import { openTrust } from "../../src/trust/openTrust.ts";
import type { TrustLog } from "../../src/trust/refreshingSource.ts";
import { appraiseAt, pemBlob, vec } from "./fixtures.ts";

const ROOTS = vec("android_keyattestation/roots.json");
const STATUS = vec("google_android-key-attestation/status.json");
const CAIMAN = () => pemBlob("android_keyattestation/testdata/caiman/sdk36/TEE_EC_RKP.pem");
const CAIMAN_NONCE = "d688d763-6118-4ca6-94b2-e6cd9ed7e4e4";
const AT = "2025-10-01T00:00:00Z";
/** Pixel 9a (tegu): an RKP chain to the EC P-384 "Key Attestation CA1" root */
const TEGU = () => pemBlob("android_keyattestation/testdata/tegu/sdk36/TEE_EC_2026_ROOT.pem");
const TEGU_NONCE = "6417f92c-daef-4cc1-8828-5bb39338ffd5";
const TEGU_AT = "2026-03-01T00:00:00Z";
const GOOGLE_STATUS_URL = "https://android.googleapis.com/attestation/status";
const RSA_ROOT_PIN = "feb2ea7551ee316ed4bb443c8293b884dbfdea40b603ee3e4f4a897e4580fbae";
const ROOT_DER = (i: number) => readFileSync(vec(`grapheneos_attestationserver_roots/google_root_${i}.der`));

/** A pino-compatible log that keeps every line. */
function captureLog(): TrustLog & { lines: { level: "info" | "warn" | "error"; obj: object; msg: string }[] } {
  const lines: { level: "info" | "warn" | "error"; obj: object; msg: string }[] = [];
  return {
    lines,
    info: (obj, msg) => void lines.push({ level: "info", obj, msg }),
    warn: (obj, msg) => void lines.push({ level: "warn", obj, msg }),
    error: (obj, msg) => void lines.push({ level: "error", obj, msg }),
  };
}

/** undici's rejection when DNS fails, as on a machine without a network */
const dnsFailure = () =>
  Object.assign(new TypeError("fetch failed"), {
    cause: Object.assign(new Error("getaddrinfo ENOTFOUND android.googleapis.com"), { code: "ENOTFOUND" }),
  });

/** A fetch the test controls: `online` serves the file for each URL, otherwise DNS fails. Counts requests. */
function fakeNetwork(files: Record<string, string>) {
  const net = {
    online: true,
    requests: [] as string[],
    fetch: (async (input: string | URL | Request) => {
      const url = String(input);
      net.requests.push(url);
      const file = files[url];
      if (!net.online) throw dnsFailure();
      if (!file) return new Response("not found", { status: 404 });
      return new Response(readFileSync(file), { status: 200, headers: { "content-type": "application/json" } });
    }) as typeof fetch,
  };
  return net;
}

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

  test("no status list configured: missing, fail closed, and the reason says so", async () => {
    const src = await loadAndroidTrust(opts({ rootsSource: ROOTS, now: clock().now }));
    const h = src.health();
    assert.equal(h.ok, false);
    assert.equal(h.status.state, "missing");
    assert.equal(h.status.configured, false);
    const trust = src.current();
    assert.equal(trust.unavailableReason, "no Android attestation status list is configured (--android-status)");
    assert.equal(h.unavailableReason, trust.unavailableReason);
    const r = appraiseAt(CAIMAN(), CAIMAN_NONCE, trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.reason, "no Android attestation status list is configured (--android-status) (fail closed)");
  });

  test("nothing configured: Google's built-in roots, no status list, fail closed", async () => {
    const src = await loadAndroidTrust(opts({}));
    assert.equal(src.health().roots.state, "ok");
    assert.equal(src.health().roots.origin, "built-in");
    assert.equal(src.current().pinnedRootSpkiSha256.size, 2);
    assert.equal(src.current().fresh, false);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.status, "CertificateInvalid");
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, emptyAndroidTrust(), AT).record.status, "CertificateInvalid");
    assert.equal(emptyAndroidTrust().unavailableReason, "no Android attestation roots or status list are loaded");
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
    // the operator's sentence names the file; the appraisal's reason, which tenants read, does not
    assert.equal(
      h.roots.summary,
      `the Android attestation roots are stale: last obtained ${AT.replace("Z", ".000Z")} from ${rootsFile}, ` +
        "older than --android-max-age 3600 s; the last attempt failed: ENOENT",
    );
    assert.equal(
      stale.unavailableReason,
      `the Android attestation roots are stale: last obtained ${AT.replace("Z", ".000Z")}, older than the maximum age; ` +
        "the last attempt failed: ENOENT",
    );
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, stale, AT).reason, `${stale.unavailableReason} (fail closed)`);
    assert.equal(src.current(), stale, "the same object while nothing changes, unusable too");
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
    assert.equal(
      src.health().roots.summary,
      `the Android attestation roots could not be fetched from ${base}/attestation/root?other (HTTP 503) and the cached copy ` +
        `${path.join(cacheDir, "android-roots.json")} is of another source (${base}/attestation/root)`,
    );
    assert.equal(src.current().pinnedRootSpkiSha256.size, 0, "a failing roots source does not fall back to the built-in set");
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

describe("Google's roots built in (src/trust/googleAttestationRoots.pem)", () => {
  test("the file holds exactly Google's five root certificates, each with comments stating its own hashes", () => {
    const text = readFileSync(BUILT_IN_ROOTS_URL, "utf8");
    const ders = parsePemBundle(text, "built-in roots");
    assert.equal(ders.length, 5);
    ders.forEach((der, i) => assert.ok(Buffer.from(der).equals(ROOT_DER(i)), `block ${i} is google_root_${i}.der`));
    const facts = ders.map((d) => readCertificate(d));
    assert.deepEqual(facts.slice(0, 4).map((c) => c.spkiSha256), Array(4).fill(RSA_ROOT_PIN), "the four RSA roots share one key");
    assert.notEqual(facts[4]!.spkiSha256, RSA_ROOT_PIN);
    assert.match(facts[4]!.subject, /CN=Key Attestation CA1/);
    // Google's own roots.json (github.com/android/keyattestation) lists the 2022 RSA certificate and CA1
    const google = (JSON.parse(readFileSync(ROOTS, "utf8")) as string[]).map((pem) => Buffer.from(parsePemBundle(pem)[0]!));
    assert.ok(google[0]!.equals(Buffer.from(ders[3]!)), "2022 RSA root byte-identical to roots.json");
    assert.ok(google[1]!.equals(Buffer.from(ders[4]!)), "CA1 byte-identical to roots.json");
    // the comment lines above each block are what a reviewer checks with openssl: they must not drift
    const blocks = text.split("-----END CERTIFICATE-----").slice(0, 5);
    blocks.forEach((block, i) => {
      const c = facts[i]!;
      assert.ok(block.includes(`# certificate SHA-256: ${c.sha256}`), `block ${i} states its certificate hash`);
      assert.ok(block.includes(`# SubjectPublicKeyInfo SHA-256: ${c.spkiSha256}`), `block ${i} states its key hash`);
      assert.ok(block.includes(`valid ${c.notBefore.toISOString().replace(".000Z", "Z")} .. ${c.notAfter.toISOString().replace(".000Z", "Z")}`));
    });
  });

  test("used when no roots source is given: a real RSA-root chain and a real CA1 chain give Yes", async () => {
    const src = await loadAndroidTrust(opts({ statusSource: STATUS, now: clock().now }));
    const h = src.health();
    assert.equal(h.ok, true);
    assert.deepEqual(
      { state: h.roots.state, origin: h.roots.origin, configured: h.roots.configured, items: h.roots.items, keys: h.roots.keys },
      { state: "ok", origin: "built-in", configured: false, items: 5, keys: 2 },
    );
    assert.equal(h.roots.source, fileURLToPath(BUILT_IN_ROOTS_URL));
    assert.equal(h.roots.summary, "Google's roots are built in: 5 certificates, 2 keys");
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.verdict, "Yes");
    assert.equal(appraiseAt(TEGU(), TEGU_NONCE, src.current(), TEGU_AT).record.verdict, "Yes");
  });

  test("built-in roots never go stale; only the status list ages", async () => {
    const c = clock();
    const src = await loadAndroidTrust(opts({ statusSource: STATUS, maxAgeSeconds: 60, now: c.now }));
    c.advance(20 * 365 * 86_400);
    const h = src.health();
    assert.equal(h.roots.state, "ok");
    assert.equal(h.status.state, "stale");
    assert.match(src.current().unavailableReason ?? "", /^the Android attestation status list is stale: /);
    assert.doesNotMatch(src.current().unavailableReason ?? "", /roots/);
  });

  test("a roots source replaces the built-in set entirely", async () => {
    const dir = tempDir();
    const rsaOnly = path.join(dir, "rsa.der");
    writeFileSync(rsaOnly, ROOT_DER(3));
    const rsa = await loadAndroidTrust(opts({ rootsSource: rsaOnly, statusSource: STATUS, now: clock().now }));
    assert.deepEqual([rsa.health().roots.origin, rsa.health().roots.items, rsa.health().roots.keys], ["source", 1, 1]);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, rsa.current(), AT).record.verdict, "Yes");
    const tegu = appraiseAt(TEGU(), TEGU_NONCE, rsa.current(), TEGU_AT);
    assert.equal(tegu.record.status, "CertificateInvalid", "CA1 is built in but not in the replacement");

    const ca1Only = path.join(dir, "ca1.der");
    writeFileSync(ca1Only, ROOT_DER(4));
    const ca1 = await loadAndroidTrust(opts({ rootsSource: ca1Only, statusSource: STATUS, now: clock().now }));
    assert.equal(appraiseAt(TEGU(), TEGU_NONCE, ca1.current(), TEGU_AT).record.verdict, "Yes");
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, ca1.current(), AT).record.status, "CertificateInvalid");
  });
});

describe("the default status list: Google's URL, cached on disk, fail closed offline", () => {
  const network = () => fakeNetwork({ [GOOGLE_STATUS_URL]: STATUS });

  test("--android-status defaults to Google's URL", () => {
    assert.equal(loadConfig({}, {}).androidStatus, GOOGLE_STATUS_URL);
  });

  test("with nothing configured the server fetches it, caches it, and serves from the cache once the network fails", async () => {
    const dataDir = tempDir();
    const config = loadConfig({ dataDir }, {});
    const net = network();
    const first = await openTrust(config, { log: captureLog(), clock: systemClock, serving: true, fetch: net.fetch });
    first.stop();
    assert.deepEqual(net.requests, [GOOGLE_STATUS_URL], "the status list and nothing else (the roots are built in)");
    assert.deepEqual(first.readiness().checks.map((c) => [c.name, c.ok]), [["android-roots", true], ["android-status", true]]);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, first.forTenant({ name: "", tenantId: "" }).android, AT).record.verdict, "Yes");
    const cache = JSON.parse(readFileSync(path.join(dataDir, "android-trust", "android-status.json"), "utf8"));
    assert.equal(cache.source, GOOGLE_STATUS_URL);
    assert.ok(Buffer.from(cache.body, "base64").equals(readFileSync(STATUS)));

    net.online = false;
    const second = await openTrust(config, { log: captureLog(), clock: systemClock, serving: true, fetch: net.fetch });
    second.stop();
    assert.equal(net.requests.length, 2, "it did try the network");
    const status = second.readiness().checks.find((c) => c.name === "android-status")!;
    assert.equal(status.ok, true);
    assert.match(status.detail, new RegExp(`read back from the disk cache in ${dataDir}/android-trust \\(the source failed: fetch failed: ENOTFOUND\\)`));
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, second.forTenant({ name: "", tenantId: "" }).android, AT).record.verdict, "Yes");
  });

  test("no network and no cache: fail closed, and every report says exactly that", async () => {
    const cacheDir = tempDir();
    const log = captureLog();
    const net = network();
    net.online = false;
    const src = await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, log, now: clock().now }));
    const expected =
      `the Android attestation status list could not be fetched from ${GOOGLE_STATUS_URL} ` +
      `(fetch failed: ENOTFOUND) and no cached copy is in ${cacheDir}`;
    const told = "the Android attestation status list could not be fetched (fetch failed: ENOTFOUND) and no usable copy is in the disk cache";
    const trust = src.current();
    assert.equal(trust.fresh, false);
    assert.equal(trust.unavailableReason, told);
    const h = src.health();
    assert.deepEqual([h.ok, h.roots.state, h.status.state, h.status.lastError], [false, "ok", "missing", "fetch failed: ENOTFOUND"]);
    assert.equal(h.unavailableReason, told);
    assert.equal(h.status.summary, expected);
    const r = appraiseAt(CAIMAN(), CAIMAN_NONCE, trust, AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(r.reason, `${told} (fail closed)`, "the verdict names neither the URL nor the cache directory");
    // the start-up line: one warning, the operator's sentence with the URL and the cache directory
    assert.deepEqual(log.lines.map((l) => [l.level, l.msg]), [["warn", `android-key appraisal fails closed: ${expected}`]]);
    // a refresh that fails the same way changes nothing, so the appraisal's caches keep their key
    await src.refresh();
    assert.equal(src.current(), trust);
  });

  test("a list that ages out while serving: the refused verdict names no URL or cache path, the log line at the refusal does", async () => {
    const cacheDir = tempDir();
    const c = clock();
    const log = captureLog();
    const net = network();
    const src = await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, log, now: c.now, maxAgeSeconds: 3600 }));
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.verdict, "Yes");
    net.online = false;
    await src.refresh(); // fails; the copy in force ages on
    c.advance(3601);
    const before = log.lines.length;
    const r = appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT);
    assert.equal(r.record.status, "CertificateInvalid");
    assert.equal(
      r.reason,
      "the Android attestation status list is stale: last obtained 2025-10-01T00:00:00.000Z, older than the maximum age; " +
        "the last attempt failed: fetch failed: ENOTFOUND (fail closed)",
    );
    assert.deepEqual(log.lines.slice(before).map((l) => [l.level, l.msg]), [[
      "warn",
      `android-key appraisal fails closed: the Android attestation status list is stale: last obtained 2025-10-01T00:00:00.000Z ` +
        `from ${GOOGLE_STATUS_URL}, older than --android-max-age 3600 s; the last attempt failed: fetch failed: ENOTFOUND`,
    ]], "logged as the appraisal finds the list stale, with the URL");
  });

  test("a cached list older than the maximum age: stale, and the reason says when it was obtained", async () => {
    const cacheDir = tempDir();
    const c = clock("2026-11-01T10:00:00Z");
    const net = network();
    await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, now: c.now, maxAgeSeconds: 604_800 }));
    net.online = false;
    c.advance(8 * 86_400);
    const src = await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, now: c.now, maxAgeSeconds: 604_800 }));
    assert.equal(src.health().status.state, "stale");
    assert.equal(
      src.health().status.summary,
      `the Android attestation status list is stale: last obtained 2026-11-01T10:00:00.000Z from ${GOOGLE_STATUS_URL} ` +
        `(the copy in the disk cache in ${cacheDir}), older than --android-max-age 604800 s; ` +
        "the last attempt failed: fetch failed: ENOTFOUND",
    );
    assert.equal(
      src.current().unavailableReason,
      "the Android attestation status list is stale: last obtained 2026-11-01T10:00:00.000Z, older than the maximum age; " +
        "the last attempt failed: fetch failed: ENOTFOUND",
    );
    assert.match(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).reason, /is stale: last obtained 2026-11-01T10:00:00\.000Z/);
  });

  test("the start-up line when usable: roots built in, the status list's source, entries and time", async () => {
    const log = captureLog();
    await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: network().fetch, log, now: clock().now }));
    assert.deepEqual(log.lines.map((l) => [l.level, l.msg]), [[
      "info",
      "android-key trust is usable: Google's roots are built in: 5 certificates, 2 keys; the Android attestation " +
        `status list from ${GOOGLE_STATUS_URL}: 5 entries, obtained 2025-10-01T00:00:00.000Z`,
    ]]);
    assert.deepEqual((log.lines[0]!.obj as { status: { state: string; items: number } }).status.items, 5);
  });
});

describe("start-up does not wait long for the network", () => {
  /** A fetch that answers only when the test says so, and honours its abort signal as undici does. */
  function hangingNetwork() {
    let release: (() => void) | undefined;
    const net = {
      aborted: false,
      release: () => release?.(),
      fetch: ((_input: string, init?: RequestInit) =>
        new Promise<Response>((resolve, reject) => {
          release = () => resolve(new Response(readFileSync(STATUS), { status: 200 }));
          init?.signal?.addEventListener("abort", () => {
            net.aborted = true;
            reject(init.signal!.reason);
          });
        })) as unknown as typeof fetch,
    };
    return net;
  }

  test("no answer within the wait: go on without, then use the list and log when it lands", async () => {
    const cacheDir = tempDir();
    const log = captureLog();
    const net = hangingNetwork();
    const t0 = Date.now();
    const src = await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, log, startupWaitMs: 100, now: clock().now }));
    assert.ok(Date.now() - t0 < 2000, "returned after the start-up wait");
    const h = src.health();
    assert.deepEqual([h.status.state, h.status.pending], ["missing", true]);
    const expected = `the Android attestation status list is still being fetched from ${GOOGLE_STATUS_URL} and no cached copy is in ${cacheDir}`;
    assert.equal(src.current().unavailableReason, "the Android attestation status list is still being fetched");
    assert.deepEqual(log.lines.map((l) => l.msg), [`android-key appraisal fails closed: ${expected}`]);

    net.release();
    await src.refresh(); // joins the fetch under way: refreshes never overlap
    assert.equal(src.health().status.origin, "source");
    assert.equal(src.current().fresh, true);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.verdict, "Yes");
    assert.deepEqual(log.lines.slice(1).map((l) => [l.level, l.msg.split(":")[0]]), [
      ["info", "android status loaded"],
      ["info", "android-key trust is usable"],
    ]);
  });

  test("a silent source fails after the fetch timeout, and the reason says so", async () => {
    const cacheDir = tempDir();
    const net = hangingNetwork();
    const src = await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, fetchTimeoutMs: 100, startupWaitMs: Infinity }));
    assert.equal(net.aborted, true);
    assert.equal(
      src.health().status.summary,
      `the Android attestation status list could not be fetched from ${GOOGLE_STATUS_URL} (no answer within 0.1 s) and no cached copy is in ${cacheDir}`,
    );
    assert.equal(
      src.current().unavailableReason,
      "the Android attestation status list could not be fetched (no answer within 0.1 s) and no usable copy is in the disk cache",
    );
  });

  test("no answer within the wait but a cached copy: appraise with it meanwhile", async () => {
    const cacheDir = tempDir();
    await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: fakeNetwork({ [GOOGLE_STATUS_URL]: STATUS }).fetch, cacheDir, now: clock().now }));
    const net = hangingNetwork();
    const src = await loadAndroidTrust(opts({ statusSource: GOOGLE_STATUS_URL, fetch: net.fetch, cacheDir, startupWaitMs: 50, now: clock().now }));
    const h = src.health();
    assert.deepEqual([h.ok, h.status.origin, h.status.pending], [true, "cache", true]);
    assert.match(h.status.summary, /read back from the disk cache in .* \(the source has not answered yet\)$/);
    assert.equal(appraiseAt(CAIMAN(), CAIMAN_NONCE, src.current(), AT).record.verdict, "Yes");
    src.stop();
    await src.refresh();
    assert.equal(net.aborted, true, "stop() aborts the fetch, so shutdown does not wait for it");
    assert.equal(src.health().status.lastError, "aborted at shutdown");
  });
});
