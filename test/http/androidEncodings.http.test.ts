import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import { splitDerCertificates } from "../../src/attestation/encoding/derChain.ts";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { pemBlob, vec } from "../android/fixtures.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * Issue 10 over HTTP, with a real factory-provisioned phone: a Sony Xperia 10 III, whose factory intermediates
 * expired with Google's 2016 root on 2026-05-24, appraised on 2026-11-22. It is sent the three ways integrators
 * send chains; a tenant whose policy says `factoryExpiry: refuse` gets CertificateInvalid for the same phone.
 */
const TODAY = Date.parse("2026-11-22T12:00:00Z");
const SONY = pemBlob("android_keyattestation/testdata/sony-xperia10-iii/sdk33/TEE_EC.pem");
const NONCE = Buffer.from("3eafe4d5dd0090de5a42b432b42481af5ce29963656b2584c59a492de16d00c9", "hex").toString("base64url");
const ders = splitDerCertificates(SONY)!;
const AS_PEM = Buffer.from(ders.map((d) => toPem(d, "CERTIFICATE")).join(""));
const AS_X5C = Buffer.from(JSON.stringify({ x5c: ders.map((d) => Buffer.from(d).toString("base64")) }));

describe("android-key over HTTP: chain encodings and the factory-expiry policy", () => {
  let t: TestRuntime;

  /** The chain's challenge is fixed: each post needs that nonce afresh for the tenant. */
  const post = async (who: { tenant: { tenantId: string }; key: string }, body: Buffer) => {
    await t.runtime.stores.nonces.purgeExpired(TODAY + 300_000, 0);
    await t.runtime.stores.nonces.issue({ nonce: NONCE, tenantId: who.tenant.tenantId, createdAtMs: TODAY, expiresAtMs: TODAY + 300_000 }, 1000, TODAY);
    return t.runtime.app.inject({
      method: "POST",
      url: `/v2/blobs?nonce=${NONCE}`,
      headers: { [KEY_HEADER]: who.key, "content-type": "application/octet-stream" },
      payload: body,
    });
  };

  before(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attestd-encodings-"));
    const policy = path.join(dir, "policy.json");
    writeFileSync(policy, JSON.stringify({ tenants: { "strict-dates": { factoryExpiry: "refuse" } } }));
    t = await startTestRuntime(
      {
        androidStatus: vec("google_android-key-attestation/status.json"),
        androidPolicy: policy,
      },
      { clock: new ManualClock(TODAY) },
    );
  });
  after(async () => t.close());

  for (const [name, body] of [["DER", SONY], ["a PEM bundle", AS_PEM], ["x5c JSON", AS_X5C]] as const) {
    it(`${name}: 200, Success / Yes with Google's built-in roots, the expired factory certificates reported`, async () => {
      const res = await post({ tenant: t.tenant, key: t.key }, body);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().status, "Success");
      assert.equal(res.json().verdict, "Yes");
      const full = await t.runtime.app.inject({ method: "GET", url: `${res.headers.location}?detail=full`, headers: { [KEY_HEADER]: t.key } });
      const detail = full.json().attestation.detail;
      assert.equal(detail.provisioning, "factory");
      assert.deepEqual(detail.factoryExpiry.expiredAccepted.map((e: { index: number }) => e.index), [1, 2]);
    });
  }

  it("the same phone for a tenant whose policy is factoryExpiry: refuse: CertificateInvalid / No", async () => {
    const strict = await t.addTenant("strict-dates");
    const res = await post(strict, SONY);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, "CertificateInvalid");
    assert.equal(res.json().verdict, "No");
  });

  it("the batch route takes the text encodings too, base64 of the body as for any blob", async () => {
    await t.runtime.stores.nonces.purgeExpired(TODAY + 300_000, 0);
    await t.runtime.stores.nonces.issue({ nonce: NONCE, tenantId: t.tenant.tenantId, createdAtMs: TODAY, expiresAtMs: TODAY + 300_000 }, 1000, TODAY);
    const res = await t.runtime.app.inject({
      method: "POST",
      url: "/api/v1/transaction",
      headers: { [KEY_HEADER]: t.key, "content-type": "application/json" },
      payload: { items: [{ requestedId: "pem-1", nonce: NONCE, blob: AS_PEM.toString("base64") }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().success, 1);
  });

  it("a broken PEM body: 400 4000006 whose reason names the format and the fault", async () => {
    const res = await post({ tenant: t.tenant, key: t.key }, Buffer.from(AS_PEM.toString().replace(/-----END CERTIFICATE-----\n$/, "")));
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, "4000006");
    assert.match(res.json().error.reason, /^android-key \(PEM bundle\): .* has no END$/);
  });
});
