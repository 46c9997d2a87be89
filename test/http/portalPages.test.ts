import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { makeAppAttestCa } from "../../src/attestation/sim/appAttest.ts";
import { createDevCa, issueDeviceLeaf } from "../../src/attestation/sim/devCa.ts";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { demoReferenceValues } from "../../src/attestation/sim/deviceSim.ts";
import { TRUST_STATES } from "../../src/domain/trustStates.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { T0 } from "../helpers/clock.ts";
import { serviceAccountFile } from "../helpers/playAppKeys.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { overviewPage } from "../../web/pages/overview.ts";

/**
 * Issue 24's page contents over HTTP: an empty tenant's quick start (and its end once a verdict exists), the new
 * key's commands, tenant pickers on Users, every trust source with its one state word, and the sets of
 * --reference-values listed. test/browser/portalPages.test.ts walks the same in Chromium.
 */
describe("portal pages: quick start, trust sources, reference values, users", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  const as = (email: string, o: Parameters<ReturnType<typeof portalPeople>["as"]>[1]) => people.as(email, o);
  const refs = demoReferenceValues();

  before(async () => {
    const ca = await createDevCa({ now: new Date(T0) });
    const revoked = await issueDeviceLeaf(ca, { keyType: "ec", now: new Date(T0) });
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-pages-"));
    const file = (name: string, text: string) => (writeFileSync(path.join(dir, name), text), path.join(dir, name));
    t = await startTestRuntime({
      vendorRoots: file("roots.pem", ca.root.certPem),
      referenceValues: file("refs.json", JSON.stringify(refs)),
      revocations: file("revocations.json", JSON.stringify({ entries: { [revoked.serial]: { status: "REVOKED", reason: "KEY_COMPROMISE" } } })),
      publicUrl: "https://attest.example.com",
    });
    // a tenant with nothing yet: no key, no verdict
    await t.runtime.stores.durable.createTenant({ tenantId: "t_fresh", name: "fresh", customerId: "1234567", kind: "customer", createdAt: new Date(T0).toISOString() });
    people = portalPeople(t);
    await people.add("fay@fresh.example", "admin", "fresh");
    await people.add("val@fresh.example", "viewer", "fresh");
    await people.add("root@example.org", "operator");
  });
  after(() => t.close());

  describe("an empty tenant's quick start", () => {
    it("without a key: a button to make one (admins), the commands with a placeholder for this server, the docs", async () => {
      const page = await as("fay@fresh.example", { url: "/portal/" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h2 id="start-h">Quick start<\/h2>/);
      assert.match(page.body, /<a href="\/portal\/keys" role="button"[^>]*>Create a key<\/a>/);
      // attestation-api.md's two requests, on the host the server reports (--public-url)
      assert.match(page.body, /KEY='atd_YOUR-KEY'/);
      assert.match(page.body, /-X POST -H "x-vendor-attest-api-key: \$KEY" \\\n  https:\/\/attest\.example\.com\/v2\/nonces/);
      assert.match(page.body, /-H "Content-Type: application\/octet-stream" --data-binary @blob\.bin \\\n  "https:\/\/attest\.example\.com\/v2\/blobs\?nonce=\$NONCE"/);
      assert.doesNotMatch(page.body, /--cacert/, "no dev CA in this runtime: nothing to trust beyond the system's");
      assert.match(page.body, /<a href="\/docs">the API reference<\/a>/);
      assert.match(page.body, /The walk-throughs: one set-up, one server/);

      const viewer = await as("val@fresh.example", { url: "/portal/" });
      assert.match(viewer.body, /Quick start/);
      assert.doesNotMatch(viewer.body, /Create a key<\/a>/, "a viewer cannot make a key");
      assert.match(viewer.body, /An admin of your tenant makes it/);
    });

    it("a key made: its box carries the commands to fill in; the overview names its prefix and label, never its secret", async () => {
      const keys = await as("fay@fresh.example", { url: "/portal/keys" });
      assert.match(keys.body, /<pre class="commands" tabindex="0" role="region" aria-label="The commands"><code id="new-key-curl">KEY='<span data-fill-key><\/span>'/);
      const made = await as("fay@fresh.example", { method: "POST", url: "/portal/api/keys", payload: { label: "shop" } });
      assert.equal(made.statusCode, 200, made.body);
      const { key, keyId } = made.json() as { key: string; keyId: string };
      const page = await as("fay@fresh.example", { url: "/portal/" });
      assert.match(page.body, new RegExp(`<code>atd_${keyId}_…</code> \\(“shop”\\)`));
      assert.match(page.body, new RegExp(`KEY='atd_${keyId}_PASTE-THE-REST-OF-THE-KEY'`));
      // the whole secret (it may hold "_" itself: base64url), not a piece of it that could be any text of the page
      assert.ok(!page.body.includes(key.slice(`atd_${keyId}_`.length)), "the secret is never on a page");
      // the commands are right: a nonce with that key from the URL the page names
      const nonce = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { "x-vendor-attest-api-key": key } });
      assert.equal(nonce.statusCode, 200);
    });

    it("the first verdict ends it; an operator sees it on the tenant's overview, not on every tenant's", async () => {
      assert.match((await as("root@example.org", { url: "/portal/?tenant=fresh" })).body, /Quick start/);
      assert.doesNotMatch((await as("root@example.org", { url: "/portal/" })).body, /Quick start/);
      const at = new Date(T0 - 60_000).toISOString();
      const v: StoredVerdict = {
        objectId: randomBytes(16).toString("base64url"),
        tenantId: "t_fresh",
        format: "vendor",
        record: { measurements: "ab", tamperBit: "0", IMEI: "", status: "DeviceError", nonce: "n", chipId: "", verdict: "Unknown", MAC: "", version: "2", createdDate: at, updateDate: at },
        reason: "rule 1: the device reported an error",
        detail: { rule: 1 },
        createdAt: at,
      };
      await t.runtime.stores.durable.saveVerdict(v);
      const page = await as("fay@fresh.example", { url: "/portal/" });
      assert.doesNotMatch(page.body, /Quick start/);
    });
  });

  describe("an operator's first run, and a source that fails closed, as the overview says them", () => {
    it("no tenant yet: the way to the first one; vendor roots not working: every vendor verdict fails closed", async () => {
      const o = (await as("root@example.org", { url: "/portal/api/overview" })).json();
      const ctx = { actor: { userId: "u", email: "root@example.org", role: "operator" as const, tenantId: null, sessionId: "s" } as never };
      const first = overviewPage(ctx, o, []);
      assert.match(first, /<h2 id="first-h">First steps<\/h2>/);
      assert.match(first, /<a href="\/portal\/tenants">Tenants<\/a>/);
      assert.doesNotMatch(overviewPage(ctx, o, ["acme"]), /First steps/);
      assert.doesNotMatch(overviewPage(ctx, o, ["acme"]), /Vendor-format attestation fails closed/, "the vendor roots given are current");
      const down = { ...o, trust: { ...o.trust, sources: o.trust.sources.map((x: { name: string }) => (x.name === "vendor-roots" ? { ...x, state: "failed" } : x)) } };
      assert.match(overviewPage(ctx, down, ["acme"]), /Vendor-format attestation fails closed now<\/strong> \(vendor roots: <span class="state state-bad" title="[^"]+">failed<\/span>\)/);
    });
  });

  describe("trust sources", () => {
    it("every source in force, each with one word of the one vocabulary; a tenant sees no file or URL", async () => {
      const view = await as("root@example.org", { url: "/portal/api/trust" });
      assert.equal(view.statusCode, 200);
      const sources = view.json().sources as { name: string; state: string; items?: number; source?: string }[];
      assert.deepEqual(
        sources.map((s) => [s.name, s.state]),
        [
          ["android-roots", "built in"],
          ["android-status", "missing"],
          ["vendor-roots", "current"],
          ["vendor-revocations", "current"],
          ["play-integrity", "not set"],
          ["app-attest-roots", "built in"],
          ["app-attest-receipt-root", "built in"],
        ],
      );
      for (const s of sources) assert.ok(s.state in TRUST_STATES, s.state);
      assert.equal(sources[2]!.items, 1, "the one root certificate of --vendor-roots");
      assert.equal(sources[3]!.items, 1, "the one entry of --revocations");
      assert.match(sources[2]!.source!, /roots\.pem$/);

      const tenant = (await as("fay@fresh.example", { url: "/portal/api/trust" })).json().sources as object[];
      assert.ok(tenant.every((s) => !("source" in s) && !("summary" in s) && !("lastError" in s)));

      const page = await as("root@example.org", { url: "/portal/trust" });
      assert.equal(page.statusCode, 200);
      for (const label of ["Google attestation roots", "Google attestation status list", "Vendor roots", "Vendor revocations", "Play Integrity decoding by Google", "Apple App Attestation root", "Apple receipt root \\(Apple Root CA - G3\\)"]) {
        assert.match(page.body, new RegExp(`<h2 id="src-[a-z-]+">${label}</h2>`));
      }
      for (const word of ["built in", "missing", "current", "not set"]) assert.match(page.body, new RegExp(`class="state state-[a-z]+" title="[^"]+">${word}</span>`));
      assert.doesNotMatch(page.body, />ok<\/span>|>fresh<\/span>/, "the old words are gone");
      // the overview says the same words
      const overview = await as("fay@fresh.example", { url: "/portal/" });
      assert.match(overview.body, />built in<\/span>/);
      assert.match(overview.body, /<summary>What the states mean<\/summary>/);
    });

    it("Play Integrity decoding: current once an app opens its tokens through Google with a service account", async () => {
      const account = serviceAccountFile();
      const added = await as("fay@fresh.example", { method: "POST", url: "/portal/api/play-apps", payload: { packageName: "com.fresh.app", serviceAccount: account.text } });
      assert.equal(added.statusCode, 200, added.body);
      const play = (await as("root@example.org", { url: "/portal/api/trust" })).json().sources[4];
      assert.deepEqual([play.state, play.items], ["current", 1]);
      assert.match(play.source, /oauth2\.googleapis\.com.*playintegrity\.googleapis\.com/);
    });

    it("/openapi.json lists the vocabulary's words as the states, and /readyz's description maps its own onto them", async () => {
      const doc = (await t.runtime.app.inject({ url: "/openapi.json" })).json();
      const trust = JSON.stringify(doc.paths["/portal/api/trust"].get.responses["200"]);
      for (const w of Object.keys(TRUST_STATES)) assert.ok(trust.includes(`"enum":["${w}"]`), `${w} in ${trust}`);
      assert.ok(!trust.includes(`"enum":["ok"]`), "no second word for current");
      for (const name of ["app-attest-roots", "app-attest-receipt-root"]) assert.ok(trust.includes(`"enum":["${name}"]`), `${name} in ${trust}`);
      assert.match(JSON.stringify(doc.paths["/readyz"]), /says ok as current/);
    });
  });

  describe("reference values and users", () => {
    it("the page lists the sets --reference-values loaded", async () => {
      const page = await as("fay@fresh.example", { url: "/portal/reference-values" });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h2 id="file-h">From the server's file<\/h2>/);
      for (const s of refs) assert.match(page.body, new RegExp(`<tr><td[^>]*>${s.model}</td><td[^>]*>${s.firmwareVersion}</td><td[^>]*>${s.measurements.length}</td></tr>`));
      const other = await as("fay@fresh.example", { url: "/portal/reference-values?model=nothing-like-it" });
      assert.match(other.body, /Model nothing-like-it: 0 of them/);
    });

    it("operators pick a tenant from those that exist, in the filter and the invitation", async () => {
      const page = await as("root@example.org", { url: "/portal/users?tenant=fresh" });
      assert.equal(page.statusCode, 200);
      assert.doesNotMatch(page.body, /<input name="tenant"/);
      assert.match(page.body, /<select name="tenant"><option value="">every tenant<\/option>.*<option value="fresh" selected>fresh<\/option>/s);
      assert.match(page.body, /<select name="tenant"><option value="">— \(an operator\)<\/option>.*<option value="fresh" selected>fresh<\/option>/s);
    });
  });
});

describe("portal pages: App Attest's trust with --app-attest-roots (a test PKI, as attestd dev-ca --app-attest makes)", () => {
  let t: TestRuntime;
  let people: ReturnType<typeof portalPeople>;
  let rootFile: string;

  before(async () => {
    const ca = await makeAppAttestCa(new Date(T0));
    rootFile = path.join(mkdtempSync(path.join(tmpdir(), "attestd-pages-aa-")), "app-attest-root.pem");
    writeFileSync(rootFile, toPem(ca.rootDer, "CERTIFICATE"));
    t = await startTestRuntime({ appAttestRoots: rootFile });
    people = portalPeople(t);
    await people.add("root@example.org", "operator");
  });
  after(() => t.close());

  it("the file's root is current, with its name and subject; Apple Root CA - G3 is not set, because no receipt is checked", async () => {
    const view = await people.as("root@example.org", { url: "/portal/api/trust" });
    assert.equal(view.statusCode, 200);
    const sources = view.json().sources as { name: string; state: string; items?: number; source?: string; summary?: string; reason?: string }[];
    const roots = sources.find((s) => s.name === "app-attest-roots")!;
    const receipts = sources.find((s) => s.name === "app-attest-receipt-root")!;
    assert.deepEqual([roots.state, roots.items, roots.source], ["current", 1, rootFile]);
    assert.match(roots.summary!, /^1 certificates read from .*app-attest-root\.pem at start-up: CN=attestd demo App Attestation Root CA, O=attestd demo$/);
    assert.equal(receipts.state, "not set");
    assert.match(receipts.reason!, /receipts are not Apple's, so they are kept with the key, not checked/);

    const page = await people.as("root@example.org", { url: "/portal/trust" });
    assert.equal(page.statusCode, 200);
    const card = (name: string) => page.body.slice(page.body.indexOf(`data-source="${name}"`), page.body.indexOf("</article>", page.body.indexOf(`data-source="${name}"`)));
    assert.match(card("app-attest-roots"), /title="[^"]+">current<\/span>/);
    assert.match(card("app-attest-roots"), /<dt>Obtained \(UTC\)<\/dt><dd>read at start-up<\/dd>/);
    assert.match(card("app-attest-roots"), /CN=attestd demo App Attestation Root CA/);
    assert.match(card("app-attest-receipt-root"), /title="[^"]+">not set<\/span>/);
    assert.match(card("app-attest-receipt-root"), /<dt>Why<\/dt><dd class="wrap">Apple&#39;s App Attestation root is replaced/);
  });
});
