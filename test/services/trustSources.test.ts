import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TRUST_STATES } from "../../src/domain/trustStates.ts";
import { androidState, TrustSources } from "../../src/services/trustSources.ts";
import type { SourceHealth } from "../../src/trust/refreshingSource.ts";
import type { VendorTrustFacts } from "../../src/trust/openTrust.ts";
import { makeAppAttestCa } from "../../src/attestation/sim/appAttest.ts";
import { appAttestTrustFacts, builtInAppAttestTrust, type AppAttestTrustFacts } from "../../src/trust/appAttestRoots.ts";

const health = (o: Partial<SourceHealth>): SourceHealth => ({ state: "ok", configured: true, summary: "s", ...o });

const builtInAppAttest = appAttestTrustFacts(undefined, builtInAppAttestTrust());

function sources(o: { vendor?: Partial<VendorTrustFacts>; apps?: number; appAttest?: AppAttestTrustFacts } = {}) {
  let now = Date.parse("2026-11-22T10:00:00Z");
  let counted = 0;
  const trust = {
    androidHealth: () => ({ ok: true, roots: health({ origin: "built-in", configured: false }), status: health({ origin: "source" }), allowedBootKeys: { count: 0 }, maxAgeSeconds: 604800 }),
    refreshAndroid: async () => undefined,
    vendorFacts: { roots: 0, problems: [], revocations: 0, ...o.vendor },
    appAttestFacts: o.appAttest ?? builtInAppAttest,
  };
  const play = { oauthUrl: "https://oauth.test/token", apiUrl: "https://play.test", appsWithServiceAccount: async () => (counted++, o.apps ?? 0) };
  const s = new TrustSources(trust, play, () => now);
  return { s, tick: (ms: number) => (now += ms), counted: () => counted };
}
const stateOf = async (s: TrustSources, name: string) => (await s.view(true)).sources.find((x) => x.name === name)!;

describe("trust sources: one word per state", () => {
  it("Google's sources: built in, current, held (over current), stale and missing, as /readyz says them", () => {
    assert.equal(androidState(health({ origin: "built-in" })), "built in");
    assert.equal(androidState(health({ origin: "source" })), "current");
    assert.equal(androidState(health({ origin: "source", heldBack: { at: "t", items: 0, inForce: 9, lostPercent: 100 } })), "held");
    assert.equal(androidState(health({ state: "stale", heldBack: { at: "t", items: 0, inForce: 9, lostPercent: 100 } })), "stale");
    assert.equal(androidState(health({ state: "missing" })), "missing");
  });

  it("vendor files: roots missing when not given, failed when none anchors, current otherwise; revocations not set or current", async () => {
    assert.equal((await stateOf(sources().s, "vendor-roots")).state, "missing");
    assert.equal((await stateOf(sources().s, "vendor-revocations")).state, "not set");
    const bad = sources({ vendor: { rootsFile: "/etc/r.pem", roots: 1, problems: ["not a CA"] } }).s;
    const roots = await stateOf(bad, "vendor-roots");
    assert.deepEqual([roots.state, roots.lastError], ["failed", "not a CA"]);
    const good = sources({ vendor: { rootsFile: "/etc/r.pem", roots: 2, problems: ["not a CA"], revocationsFile: "/etc/rev.json", revocations: 3 } }).s;
    assert.equal((await stateOf(good, "vendor-roots")).state, "current");
    assert.match((await stateOf(good, "vendor-roots")).reason!, /1 of 2 configured roots cannot anchor/);
    assert.deepEqual([(await stateOf(good, "vendor-revocations")).state, (await stateOf(good, "vendor-revocations")).items], ["current", 3]);
  });

  it("Play Integrity: not set without a service account; failed after Google failed, current again after a decode", async () => {
    assert.equal((await stateOf(sources().s, "play-integrity")).state, "not set");
    const { s, tick } = sources({ apps: 2 });
    assert.equal((await stateOf(s, "play-integrity")).state, "current");
    s.notePlayDecode("unreachable");
    const failed = await stateOf(s, "play-integrity");
    assert.equal(failed.state, "failed");
    assert.match(failed.reason!, /could not be reached/);
    s.notePlayDecode("token-refused"); // a token's doing, not Google's: the source works
    assert.equal((await stateOf(s, "play-integrity")).state, "current");
    s.notePlayDecode("google-error");
    tick(1000);
    s.notePlayDecode("decoded");
    const back = await stateOf(s, "play-integrity");
    assert.equal(back.state, "current");
    assert.match(back.lastError!, /after the retries/, "the operator still sees the last failure");
    assert.equal(back.lastAttempt, "2026-11-22T10:00:01.000Z");
  });

  it("App Attest, built in: Apple's root and Apple Root CA - G3 (receipts checked), each 'built in'", async () => {
    const { s } = sources();
    const roots = await stateOf(s, "app-attest-roots");
    assert.deepEqual([roots.label, roots.state, roots.origin, roots.configured, roots.items, roots.usedBy], ["Apple App Attestation root", "built in", "built-in", false, 1, "app-attest appraisal"]);
    assert.match(roots.source!, /appleAppAttestationRootCa\.pem$/);
    assert.match(roots.summary!, /built in, its fingerprint checked at start-up: CN=Apple App Attestation Root CA, O=Apple Inc\., ST=California/);
    assert.equal(roots.reason, undefined);
    const receipts = await stateOf(s, "app-attest-receipt-root");
    assert.deepEqual([receipts.label, receipts.state, receipts.origin, receipts.items], ["Apple receipt root (Apple Root CA - G3)", "built in", "built-in", 1]);
    assert.match(receipts.usedBy, /^App Attest receipt checks/);
    assert.match(receipts.summary!, /receipt refresh with Apple is not served yet/);
    assert.match(receipts.source!, /appleRootCaG3\.ts/);
  });

  it("App Attest with --app-attest-roots: the file's roots 'current' with their subjects; receipts 'not set', and why", async () => {
    const ca = await makeAppAttestCa(new Date("2026-11-22T10:00:00Z"));
    const { s } = sources({ appAttest: appAttestTrustFacts("/etc/attestd/aa-roots.pem", { rootsDer: [ca.rootDer, ca.intermediateDer] }) });
    const roots = await stateOf(s, "app-attest-roots");
    assert.deepEqual([roots.state, roots.origin, roots.configured, roots.items, roots.source], ["current", undefined, true, 2, "/etc/attestd/aa-roots.pem"]);
    assert.match(roots.summary!, /^2 certificates read from \/etc\/attestd\/aa-roots\.pem at start-up: CN=attestd demo App Attestation Root CA, O=attestd demo; CN=/);
    assert.match(roots.reason!, /not Apple's/);
    const receipts = await stateOf(s, "app-attest-receipt-root");
    assert.deepEqual([receipts.state, receipts.origin, receipts.configured, receipts.source], ["not set", undefined, false, undefined]);
    assert.match(receipts.reason!, /kept with the key, not checked/);
    assert.match(receipts.summary!, /with --app-attest-roots no receipt is checked/);
    // a tenant sees the words and the reasons, never the file or the subjects
    const tenant = (await s.view(false)).sources.filter((x) => x.name.startsWith("app-attest"));
    assert.deepEqual(tenant.map((x) => [x.state, "source" in x, "summary" in x]), [["current", false, false], ["not set", false, false]]);
    assert.ok(tenant.every((x) => !JSON.stringify(x).includes("/etc/")));
  });

  it("every state a view can give is a word of the vocabulary; the apps are counted at most every 30 s", async () => {
    const { s, tick, counted } = sources({ apps: 1 });
    for (const x of (await s.view(false)).sources) assert.ok(x.state in TRUST_STATES, x.state);
    await s.view(true);
    assert.equal(counted(), 1);
    tick(31_000);
    await s.view(true);
    assert.equal(counted(), 2);
    s.forgetAppsCount();
    await s.view(true);
    assert.equal(counted(), 3);
  });
});
