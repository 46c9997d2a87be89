import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob, UNKNOWN_FIRMWARE, type VendorBlobOptions } from "../../src/attestation/sim/deviceSim.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { explainVerdict, VENDOR_SENTENCES } from "../../src/portal/verdictReasons.ts";
import { T0 } from "../helpers/clock.ts";
import { portalPeople } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

const OCTET = { "content-type": "application/octet-stream" };
const escaped = (s: string) => s.replace(/&/g, "&amp;").replace(/'/g, "&#39;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The Verdicts pages in words a person reads: every vendor-container rule, reached by a real blob through
 * POST /v2/blobs, shows its sentence (src/portal/verdictReasons.ts) with the rule as a small reference, while the
 * API's `reason` stays as the appraisal wrote it; a badge says the verdict in words; the list shows the format and
 * the deviceId, and the detail links to the attested device. A bad filter says which field and what it may be.
 */
describe("the Verdicts pages in words", () => {
  let t: TestRuntime;
  let ca: DevCa;
  let leaf: CertifiedKey;
  let revokedLeaf: CertifiedKey;
  let strangerCa: DevCa;
  let strangerLeaf: CertifiedKey;
  let portal: ReturnType<typeof portalPeople>;

  const submit = async (o: Partial<VendorBlobOptions> & { leaf?: CertifiedKey; ca?: DevCa } = {}, deviceId?: string) => {
    const nonce = (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key } })).json().nonce as string;
    const blob = encodeVendorBlob({ ca, leaf, now: new Date(T0), nonce, ...o });
    const res = await t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${nonce}${deviceId ? `&deviceId=${deviceId}` : ""}`,
      headers: { [KEY_HEADER]: t.key, ...OCTET },
      payload: Buffer.from(blob),
    });
    assert.equal(res.statusCode, 200, res.body);
    const objectId = String(res.headers.location).split("/").pop()!;
    const v = (await portal.as("vic@acme.example", { url: `/portal/api/verdicts/${objectId}` })).json() as StoredVerdict;
    return { api: res.json() as { verdict: string; status: string }, v };
  };

  before(async () => {
    const now = new Date(T0);
    ca = await createDevCa({ now });
    leaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
    revokedLeaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
    // a device of a CA the service does not trust
    strangerCa = await createDevCa({ now });
    strangerLeaf = await issueDeviceLeaf(strangerCa, { keyType: "ec", now });
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-verdict-words-"));
    writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
    writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
    writeFileSync(path.join(dir, "revocations.json"), JSON.stringify({ entries: { [revokedLeaf.serial]: { status: "REVOKED", reason: "KEY_COMPROMISE" } } }));
    t = await startTestRuntime({ vendorRoots: path.join(dir, "roots.pem"), referenceValues: path.join(dir, "refs.json"), revocations: path.join(dir, "revocations.json") });
    portal = portalPeople(t);
    await portal.add("vic@acme.example", "viewer", "acme");
    await portal.add("ada@acme.example", "admin", "acme");
  });
  after(() => t.close());

  it("every vendor rule reads as its sentence on the pages; the API's reason is unchanged", async () => {
    const differ = new Uint8Array(32).fill(7);
    const cases: [keyof typeof VENDOR_SENTENCES, Partial<VendorBlobOptions> & { leaf?: CertifiedKey; ca?: DevCa }, string][] = [
      ["1", { deviceError: { exitCode: 3 } }, "Unknown"],
      ["2", { leaf: strangerLeaf, ca: strangerCa }, "No"],
      ["3", { leaf: revokedLeaf }, "No"],
      ["4", { badSignature: true }, "No"],
      ["5", { wrongNonce: true }, "No"],
      ["6", { tamper: true }, "No"],
      ["7:no-reference", { firmwareVersion: UNKNOWN_FIRMWARE }, "Unknown"],
      ["7:differ", { measurements: [differ] }, "No"],
      ["7:match", {}, "Yes"],
    ];
    for (const [rule, o, verdict] of cases) {
      const { api, v } = await submit(o);
      assert.equal(api.verdict, verdict, rule);
      assert.match(v.reason, new RegExp(`^rule ${rule.split(":")[0]} \\(`), "the stored and API reason keep the appraisal's words");
      const why = explainVerdict(v);
      assert.equal(why.sentence, VENDOR_SENTENCES[rule], rule);
      assert.equal(why.rule, `vendor rule ${rule.replace(":", " ")}`);
      const detail = await portal.as("vic@acme.example", { url: `/portal/verdicts/${v.objectId}` });
      assert.ok(detail.body.includes(escaped(why.sentence)), `${rule}: the sentence on the detail page`);
      assert.ok(detail.body.includes(`<code>${why.rule}</code>`), "the rule as a reference");
      assert.ok(detail.body.includes(escaped(v.reason)), "and the API's words beside it");
      assert.match(detail.body, new RegExp(`<span class="badge badge-${verdict.toLowerCase()}"><span aria-hidden="true">.</span> ${verdict}</span>`));
    }
    const list = await portal.as("vic@acme.example", { url: "/portal/verdicts" });
    for (const s of Object.values(VENDOR_SENTENCES)) assert.ok(list.body.includes(escaped(s)), `the list says: ${s}`);
    assert.ok(!list.body.includes("TAMPER_BIT is 1"), "the list shows people's words, not the rule's");
    assert.match(list.body, /<small class="muted rule-ref">vendor rule 6<\/small>/);
  });

  it("a verdict of a named device shows its deviceId in the list and links to the attested device", async () => {
    const { v } = await submit({}, "phone-7");
    const list = await portal.as("vic@acme.example", { url: "/portal/verdicts" });
    assert.ok(list.body.includes(`<a href="/portal/devices/phone-7"><code>phone-7</code></a>`), "deviceId in the list, a link");
    assert.match(list.body, /<td[^>]*data-label="Format"[^>]*>vendor<\/td>/, "the format");
    const detail = await portal.as("vic@acme.example", { url: `/portal/verdicts/${v.objectId}` });
    assert.ok(detail.body.includes(`<a href="/portal/devices/phone-7">The attested device phone-7: its history and pin</a>`));
    assert.equal((await portal.as("vic@acme.example", { url: "/portal/devices/phone-7" })).statusCode, 200, "and the link leads to it");
  });

  it("verdicts page older and back newer by key, in the page and the admin API", async () => {
    for (let i = 0; i < 45; i++) await submit({ tamper: i % 2 === 0 });
    type Page = { items: StoredVerdict[]; next?: string; prev?: string };
    const list = async (q: string) => (await portal.as("vic@acme.example", { url: `/portal/api/verdicts${q}` })).json() as Page;
    const first = await list("");
    assert.equal(first.items.length, 50);
    assert.equal(first.prev, undefined);
    const older = await list(`?after=${first.next}`);
    assert.ok(older.items.length > 0 && older.prev);
    const back = await list(`?before=${older.prev}`);
    assert.deepEqual(back.items.map((v) => v.objectId), first.items.map((v) => v.objectId), "newer from page 2 is page 1");
    assert.equal(back.prev, undefined);
    const filtered = await list("?verdict=No");
    const filteredOlder = await list(`?verdict=No&after=${filtered.next ?? ""}`);
    assert.ok(filteredOlder.items.every((v) => v.record.verdict === "No"), "the filter holds on every page");
    const page = await portal.as("vic@acme.example", { url: `/portal/verdicts?after=${first.next}` });
    assert.match(page.body, /rel="prev">← Newer verdicts</);
    const top = await portal.as("vic@acme.example", { url: "/portal/verdicts" });
    assert.match(top.body, /Newest verdicts shown/);
    assert.match(top.body, /rel="next">Older verdicts →</);
  });

  it("a bad filter names the field and what it may be, not the validator's words", async () => {
    const cases: [string, RegExp][] = [
      ["/portal/verdicts?verdict=Maybe", /verdict: must be one of Yes, No, Unknown \(or empty\)\./],
      ["/portal/activity?status=abc", /status: must be a whole number from 100 to 599 \(or empty\)\./],
      ["/portal/activity?status=99", /status: must be a whole number from 100 to 599/],
      ["/portal/activity?kind=everything", /kind: must be one of api, portal, all/],
      ["/portal/verdicts?from=later", /from: &quot;later&quot; is not a date or time; write YYYY-MM-DD or YYYY-MM-DDTHH:MM \(UTC\)/],
      ["/portal/verdicts?colour=red", /&quot;colour&quot; is not a filter or query parameter here; the ones there are: tenant, verdict, status/],
      ["/portal/verdicts?device=" + "x".repeat(200), /device: must be at most 128 characters\./],
    ];
    for (const [url, want] of cases) {
      const res = await portal.as("vic@acme.example", { url });
      assert.equal(res.statusCode, 400, url);
      assert.match(res.body, want, url);
      assert.ok(!/querystring\/|anyOf|must be equal to constant|must match/.test(res.body), `${url}: no validator keywords`);
    }
    // a form's fields, the same way: the key form's label, limits and an unknown field
    const form = async (payload: object) => {
      const res = await portal.as("ada@acme.example", { method: "POST", url: "/portal/api/keys", payload });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, "4008000");
      return res.json().data as string;
    };
    assert.equal(await form({ label: "shop\u202Eevil" }), "label: must be at most 100 characters without control or bidi formatting characters.");
    assert.equal(await form({ label: "x".repeat(101) }), "label: must be at most 100 characters without control or bidi formatting characters.");
    assert.match(await form({ colour: "red" }), /^"colour" is not a field here; the ones there are: label, /);
    // the admin API says it the same way in `data`, under its unchanged code
    const api = await portal.as("vic@acme.example", { url: "/portal/api/activity?status=abc" });
    assert.deepEqual([api.json().code, api.json().data], ["4008000", "status: must be a whole number from 100 to 599 (or empty)."]);
  });
});
