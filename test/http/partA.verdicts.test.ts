import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { XMLParser } from "fast-xml-parser";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import {
  DEFAULT_IMEI,
  demoReferenceValues,
  encodeVendorBlob,
  UNKNOWN_FIRMWARE,
  type VendorBlobOptions,
} from "../../src/attestation/sim/deviceSim.ts";
import { VERDICT_FIELDS } from "../../src/attestation/types.ts";
import { pluck } from "../../src/store/sqlite/database.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { T0 } from "../helpers/clock.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

const OCTET = { "content-type": "application/octet-stream" };

describe("Part A verdicts over HTTP", () => {
  let t: TestRuntime;
  let ca: DevCa;
  let leaf: CertifiedKey;
  let revokedLeaf: CertifiedKey;

  const post = (url: string, headers: Record<string, string>, payload?: string | Buffer | Uint8Array) =>
    t.runtime.app.inject({
      method: "POST",
      url,
      headers: { [KEY_HEADER]: t.key, ...headers },
      payload: payload === undefined ? undefined : Buffer.from(payload),
    });
  const nonce = async (key = t.key) =>
    (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } })).json().nonce as string;
  const blobFor = (n: string, o: Partial<VendorBlobOptions> & { leaf?: CertifiedKey } = {}) =>
    encodeVendorBlob({ ca, leaf, now: new Date(T0), nonce: n, ...o });
  const submit = async (o: Partial<VendorBlobOptions> & { leaf?: CertifiedKey } = {}, headers: Record<string, string> = {}) => {
    const n = await nonce();
    const res = await post(`/v2/blobs?nonce=${n}`, { ...OCTET, ...headers }, blobFor(n, o));
    return { n, res };
  };

  before(async () => {
    const now = new Date(T0);
    ca = await createDevCa({ now });
    leaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
    revokedLeaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-verdicts-"));
    const roots = path.join(dir, "roots.pem");
    const refs = path.join(dir, "refs.json");
    const revocations = path.join(dir, "revocations.json");
    writeFileSync(roots, ca.root.certPem);
    writeFileSync(refs, JSON.stringify(demoReferenceValues()));
    writeFileSync(revocations, JSON.stringify({ entries: { [revokedLeaf.serial]: { status: "REVOKED", reason: "KEY_COMPROMISE" } } }));
    t = await startTestRuntime({ vendorRoots: roots, referenceValues: refs, revocations });
  });
  after(async () => t.close());

  it("Yes: the eleven fields in order, all strings, with Location naming the stored record", async () => {
    const { n, res } = await submit();
    assert.equal(res.statusCode, 200, res.body);
    const v = res.json();
    assert.deepEqual(Object.keys(v), [...VERDICT_FIELDS]);
    for (const f of VERDICT_FIELDS) assert.equal(typeof v[f], "string", f);
    assert.equal(v.status, "Success");
    assert.equal(v.verdict, "Yes");
    assert.equal(v.tamperBit, "0");
    assert.equal(v.nonce, n);
    assert.equal(v.IMEI, DEFAULT_IMEI);
    assert.equal(v.MAC, "0a:1b:2c:3d:4e:5f");
    assert.equal(v.chipId, "c0ffee0123456789");
    assert.equal(v.version, "2");
    assert.equal(v.measurements, demoReferenceValues()[0]!.measurements.join(""));
    assert.equal(v.createdDate, new Date(T0).toISOString());
    assert.equal(v.updateDate, v.createdDate);

    const location = String(res.headers.location);
    assert.match(location, /^\/api\/v1\/verdicts\/[A-Za-z0-9_-]+$/);
    const stored = await t.runtime.app.inject({ method: "GET", url: location, headers: { [KEY_HEADER]: t.key } });
    assert.equal(stored.statusCode, 200);
    assert.deepEqual(stored.json(), v);

    const full = await t.runtime.app.inject({ method: "GET", url: `${location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
    assert.equal(full.json().attestation.format, "vendor");
    assert.equal(full.json().verdict, "Yes");

    const other = await t.addTenant("nosy-co");
    const theirs = await t.runtime.app.inject({ method: "GET", url: location, headers: { [KEY_HEADER]: other.key } });
    assert.equal(theirs.statusCode, 403);
    assert.equal(theirs.json().error.code, "4030000");
  });

  const outcomes: [string, Partial<VendorBlobOptions> & { leaf?: CertifiedKey }, string, string, string?][] = [
    ["tampered device", { tamper: true }, "Success", "No", "1"],
    ["unknown firmware", { firmwareVersion: UNKNOWN_FIRMWARE }, "Success", "Unknown"],
    ["measurements differ from the reference", { measurements: [new Uint8Array(32)] }, "Success", "No"],
    ["wrong nonce inside", { wrongNonce: true }, "NonceMismatch", "No"],
    ["nonce as ASCII inside", { asciiNonce: true }, "Success", "Yes"],
    ["bad signature", { badSignature: true }, "SignatureInvalid", "No"],
    ["device error", { deviceError: { exitCode: 3, omitData: true, omitSignature: true, omitCertificates: true } }, "DeviceError", "Unknown"],
    ["chain to no operator root", { chain: [] }, "CertificateInvalid", "No"],
  ];
  for (const [name, opts, status, verdict, tamper] of outcomes) {
    it(`${name} → ${status} / ${verdict}`, async () => {
      const { res } = await submit(opts);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().status, status);
      assert.equal(res.json().verdict, verdict);
      if (tamper) assert.equal(res.json().tamperBit, tamper);
    });
  }

  it("revoked device certificate → Revoked / No", async () => {
    const { res } = await submit({ leaf: revokedLeaf });
    assert.equal(res.json().status, "Revoked");
    assert.equal(res.json().verdict, "No");
  });

  it("RSA and Ed25519 device keys appraise as Yes", async () => {
    for (const keyType of ["rsa", "ed25519"] as const) {
      const k = await issueDeviceLeaf(ca, { keyType, now: new Date(T0) });
      const { res } = await submit({ leaf: k });
      assert.equal(res.json().verdict, "Yes", `${keyType}: ${res.body}`);
    }
  });

  it("XML verdict: <verdictRecord> with the eleven fields in order, text-escaped", async () => {
    const { res } = await submit({ model: "A<&>B" }, { accept: "application/json;q=0.5, application/xml" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^application\/xml/);
    assert.ok(res.body.startsWith('<?xml version="1.0" encoding="UTF-8"?><verdictRecord>'));
    assert.ok(!res.body.includes("A<&>B"));
    const doc = new XMLParser({ parseTagValue: false, preserveOrder: true }).parse(res.body);
    const root = doc.find((n: Record<string, unknown>) => "verdictRecord" in n).verdictRecord as Record<string, unknown>[];
    assert.deepEqual(root.map((n) => Object.keys(n)[0]), [...VERDICT_FIELDS]);
  });

  it("batch: successes and failures listed per item, each nonce consumed once", async () => {
    const n1 = await nonce();
    const n2 = await nonce();
    const items = [
      { requestedId: "ok-1", nonce: n1, blob: Buffer.from(blobFor(n1)).toString("base64") },
      { requestedId: "replay", nonce: n1, blob: Buffer.from(blobFor(n1)).toString("base64") },
      { requestedId: "broken", nonce: n2, blob: Buffer.from([1, 2, 3]).toString("base64") },
      { requestedId: "no-nonce", blob: "AA==" },
    ];
    const res = await post("/api/v1/transaction", { "content-type": "application/json" }, JSON.stringify({ items }));
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.count, 4);
    assert.equal(body.success, 1);
    assert.equal(body.fail, 3);
    assert.equal(body.resultList[0].result, "SUCCESS");
    assert.equal(body.resultList[0].requestedId, "ok-1");
    const stored = await t.runtime.stores.durable.getVerdict(body.resultList[0].objectId);
    assert.equal(stored?.record.verdict, "Yes");
    assert.deepEqual(
      body.resultList.slice(1).map((r: any) => [r.requestedId, r.result, r.error.code]),
      [["replay", "FAIL", "4000004"], ["broken", "FAIL", "4000006"], ["no-nonce", "FAIL", "4000001"]],
    );
  });

  it("concurrent posts of one nonce: exactly one verdict, the rest NONCE_ALREADY_USED", async () => {
    const n = await nonce();
    const blob = blobFor(n);
    const results = await Promise.all(Array.from({ length: 20 }, () => post(`/v2/blobs?nonce=${n}`, OCTET, blob)));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1);
    for (const r of results.filter((x) => x.statusCode !== 200)) assert.equal(r.json().error.code, "4000004");
    // every post was appraised (the nonce was fresh when each was checked), but only one verdict was stored
    const db = (t.runtime.stores.durable as SqliteStore).db;
    const stored = pluck(db.prepare("SELECT object_id FROM verdicts WHERE json_extract(record, '$.nonce') = ?")).all(n);
    assert.deepEqual(stored, [ok[0]!.headers.location!.toString().split("/").pop()]);
  });

  it("an unreadable blob still consumes its nonce; a later good blob gets NONCE_ALREADY_USED", async () => {
    const n = await nonce();
    const broken = await post(`/v2/blobs?nonce=${n}`, OCTET, Buffer.from("not a container"));
    assert.equal(broken.statusCode, 400);
    assert.equal(broken.json().error.code, "4000006");
    const again = await post(`/v2/blobs?nonce=${n}`, OCTET, blobFor(n));
    assert.equal(again.statusCode, 400);
    assert.equal(again.json().error.code, "4000004");
  });

  it("a nonce problem outranks a blob problem, although the blob is read before the nonce is consumed", async () => {
    const unknown = Buffer.alloc(32, 7).toString("base64url");
    const broken = Buffer.from("not a container");
    assert.equal((await post(`/v2/blobs?nonce=${unknown}`, OCTET, broken)).json().error.code, "4000002");
    const { n } = await submit();
    assert.equal((await post(`/v2/blobs?nonce=${n}`, OCTET, broken)).json().error.code, "4000004");
    // and a good blob on an unknown nonce is refused without a verdict stored
    const res = await post(`/v2/blobs?nonce=${unknown}`, OCTET, blobFor(unknown));
    assert.equal(res.json().error.code, "4000002");
    const db = (t.runtime.stores.durable as SqliteStore).db;
    assert.equal(pluck(db.prepare("SELECT COUNT(*) FROM verdicts WHERE json_extract(record, '$.nonce') = ?")).get(unknown), 0);
  });

  it("metrics count requests by route and status, and appraisal outcomes", async () => {
    const res = await t.runtime.app.inject({ method: "GET", url: "/metrics" });
    assert.match(res.body, /attestd_http_requests_total\{route="\/v2\/blobs",method="POST",status="200"\} \d+/);
    assert.match(res.body, /attestd_appraisals_total\{format="vendor",status="Success",verdict="Yes"\} \d+/);
    assert.match(res.body, /attestd_http_request_duration_seconds_bucket\{le="0.005",route="\/v2\/nonces"\}/);
  });

  it("every Part A request is in the activity log, errors with their error id", async () => {
    const bad = await post("/v2/blobs?nonce=zzz", OCTET, Buffer.from([1]));
    assert.equal(bad.statusCode, 400);
    // let the write-behind buffer flush
    await new Promise((r) => setTimeout(r, 250));
    const entries = await t.runtime.stores.durable.queryActivity({ tenantId: t.tenant.tenantId, limit: 10_000 });
    const error = entries.find((e) => e.code === "4000002");
    assert.ok(error, "the NONCE_INVALID request is logged");
    assert.equal(error.route, "/v2/blobs");
    assert.equal(error.status, 400);
    assert.equal(error.method, "POST");
    assert.ok(error.errorId && error.errorId.length >= 16);
    assert.ok(entries.some((e) => e.route === "/v2/nonces" && e.status === 200 && e.errorId === null));
  });
});
