import assert from "node:assert/strict";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import jwt from "jsonwebtoken";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob, UNKNOWN_FIRMWARE, type VendorBlobOptions } from "../../src/attestation/sim/deviceSim.ts";
import { ANDROID_DEV_CA_FILES, createAndroidDevCa, writeAndroidDevCa, type AndroidDevCa } from "../../src/attestation/sim/androidCa.ts";
import { buildAndroidChain, encodeAndroidChain, type BuildAndroidChainOptions } from "../../src/attestation/sim/androidDeviceSim.ts";
import { VERDICT_FIELDS } from "../../src/attestation/types.ts";
import type { EarClaims } from "../../src/results/ear.ts";
import { EarKeyRing } from "../../src/results/signingKeys.ts";
import { SecretBox } from "../../src/secrets/secretBox.ts";
import { openStores } from "../../src/store/openStores.ts";
import { loadConfig } from "../../src/config.ts";
import { T0 } from "../helpers/clock.ts";
import { earHeader, verifyEar } from "../helpers/ear.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { createTestDatabase, type TestDatabase } from "../store/backends.ts";

/**
 * Signed results (EAR) over HTTP, on both durable backends: every EAR is verified with `jsonwebtoken` against the
 * JWKS the server publishes (test/helpers/ear.ts; attestd signs with `jose`), and each claim is checked against the
 * appraisal the server stored. Then what must fail (a tampered EAR, a foreign key), the negotiation, the batch, and
 * key rotation with its grace period, through `attestd keys rotate` as an operator runs it.
 */

const OCTET = { "content-type": "application/octet-stream" };
const EAR_TYPE = 'application/eat+jwt; eat_profile="tag:github.com,2023:veraison/ear"';
const ACCEPT_EAR = { accept: "application/eat+jwt" };

interface Backend {
  name: string;
  /** runtime settings that put the durable store on this backend */
  settings(): Promise<Record<string, unknown>>;
  cleanup(): Promise<void>;
}

function sqliteBackend(): Backend {
  return { name: "sqlite", settings: async () => ({}), cleanup: async () => undefined };
}

function postgresBackend(): Backend {
  let db: TestDatabase | undefined;
  return {
    name: "postgres",
    settings: async () => {
      db = await createTestDatabase("ear");
      return { store: "postgres", databaseUrl: db.url };
    },
    cleanup: async () => db?.drop(),
  };
}

for (const backend of [sqliteBackend(), postgresBackend()]) {
  describe(`signed results (EAR) over HTTP: ${backend.name}`, () => {
    let t: TestRuntime;
    let storeSettings: Record<string, unknown>;
    let ca: DevCa;
    let leaf: CertifiedKey;
    let revokedLeaf: CertifiedKey;
    let androidCa: AndroidDevCa;
    let dir: string;

    const nonce = async (key = t.key) =>
      (await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: key } })).json().nonce as string;
    const postBlob = (n: string, blob: Uint8Array, headers: Record<string, string> = {}, key = t.key) =>
      t.runtime.app.inject({ method: "POST", url: `/v2/blobs?nonce=${n}`, headers: { [KEY_HEADER]: key, ...OCTET, ...headers }, payload: Buffer.from(blob) });
    const vendorBlob = (n: string, o: Partial<VendorBlobOptions> & { leaf?: CertifiedKey } = {}) =>
      encodeVendorBlob({ ca, leaf, now: new Date(T0), nonce: n, ...o });
    const androidBlob = async (n: string, o: Partial<BuildAndroidChainOptions> = {}) =>
      encodeAndroidChain(await buildAndroidChain({ ca: androidCa, nonce: n, now: new Date(T0), ...o }));
    const jwks = async () => {
      const res = await t.runtime.app.inject({ method: "GET", url: "/.well-known/jwks.json" });
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { keys: { kid: string; alg: string; kty: string }[] };
    };
    const stored = async (location: string) =>
      (await t.runtime.app.inject({ method: "GET", url: `${location}?detail=full`, headers: { [KEY_HEADER]: t.key } })).json();

    /** Posts a blob asking for its EAR, verifies it against the JWKS and returns it with the stored verdict. */
    async function earFor(blob: (n: string) => Uint8Array | Promise<Uint8Array>) {
      const n = await nonce();
      const res = await postBlob(n, await blob(n), ACCEPT_EAR);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers["content-type"], EAR_TYPE);
      const token = res.body;
      const claims = verifyEar(token, await jwks());
      const verdict = await stored(String(res.headers.location));
      return { n, token, claims, verdict, location: String(res.headers.location) };
    }

    /** The claims every EAR carries, checked against the stored verdict. */
    function assertEnvelope(claims: EarClaims, n: string, verdict: Record<string, any>, format: string, location: string) {
      assert.equal(claims.eat_profile, "tag:github.com,2023:veraison/ear");
      assert.equal(claims.iat, Math.floor(t.clock.nowMs() / 1000));
      assert.deepEqual(claims["ear.verifier-id"], { developer: "attestd", build: "attestd 0.1.0" });
      assert.equal(claims.eat_nonce, n);
      assert.deepEqual(Object.keys(claims.submods), [format]);
      const submod = claims.submods[format]!;
      assert.equal(submod["ear.appraisal-policy-id"], verdict.attestation.detail.appraisalPolicyId);
      assert.match(submod["ear.appraisal-policy-id"]!, /^urn:attestd:appraisal-policy:sha-256:[0-9a-f]{64}$/);
      assert.deepEqual(claims["attestd.verdict"], {
        objectId: location.split("/").pop(),
        status: verdict.status,
        verdict: verdict.verdict,
        createdDate: verdict.createdDate,
      });
    }

    before(async () => {
      const now = new Date(T0);
      ca = await createDevCa({ now });
      leaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
      revokedLeaf = await issueDeviceLeaf(ca, { keyType: "ec", now });
      androidCa = await createAndroidDevCa({ now });
      dir = mkdtempSync(path.join(tmpdir(), "attestd-ear-"));
      await writeAndroidDevCa(androidCa, path.join(dir, "android-ca"));
      writeFileSync(path.join(dir, "roots.pem"), ca.root.certPem);
      writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
      writeFileSync(path.join(dir, "revocations.json"), JSON.stringify({ entries: { [revokedLeaf.serial]: { status: "REVOKED" } } }));
      writeFileSync(path.join(dir, "policy.json"), JSON.stringify({ tenants: { strict: { minOsPatchLevel: 202612 } } }));
      storeSettings = await backend.settings();
      t = await startTestRuntime({
        ...storeSettings,
        vendorRoots: path.join(dir, "roots.pem"),
        referenceValues: path.join(dir, "refs.json"),
        revocations: path.join(dir, "revocations.json"),
        androidRoots: path.join(dir, "android-ca", ANDROID_DEV_CA_FILES.root),
        androidStatus: path.join(dir, "android-ca", ANDROID_DEV_CA_FILES.status),
        androidPolicy: path.join(dir, "policy.json"),
        earKeyRefresh: 1,
      });
    });
    after(async () => {
      await t?.close();
      await backend.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it("publishes one ES256 key, cacheable, with its kid: the key made on first start", async () => {
      const res = await t.runtime.app.inject({ method: "GET", url: "/.well-known/jwks.json" });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers["content-type"], "application/jwk-set+json; charset=utf-8");
      assert.equal(res.headers["cache-control"], "public, max-age=300");
      const { keys } = res.json();
      assert.equal(keys.length, 1);
      assert.deepEqual(Object.keys(keys[0]).sort(), ["alg", "crv", "kid", "kty", "use", "x", "y"]);
      assert.equal(keys[0].alg, "ES256");
      assert.equal(keys[0].crv, "P-256");
      assert.match(keys[0].kid, /^[A-Za-z0-9_-]{43}$/);
      const notGet = await t.runtime.app.inject({ method: "POST", url: "/.well-known/jwks.json" });
      assert.equal(notGet.statusCode, 405);
      assert.equal(notGet.json().error.code, "4050000");
    });

    it("/openapi.json documents the EAR answers, the batch's result: ear and the JWKS route", async () => {
      const doc = (await t.runtime.app.inject({ method: "GET", url: "/openapi.json" })).json();
      for (const [route, method] of [["/v2/blobs", "post"], ["/api/v1/verdicts/{objectId}", "get"]] as const) {
        const content = doc.paths[route][method].responses["200"].content;
        assert.deepEqual(Object.keys(content), ["application/json", "application/eat+jwt"], route);
        assert.equal(content["application/eat+jwt"].schema.$ref, "#/components/schemas/EarJwt");
      }
      assert.equal(doc.components.schemas.EarJwt.type, "string");
      const batch = doc.paths["/api/v1/transaction"].post.requestBody.content["application/json"].schema;
      assert.deepEqual(batch.properties.result.enum ?? [batch.properties.result.const], ["ear"]);
      const jwksRoute = doc.paths["/.well-known/jwks.json"].get;
      assert.ok(jwksRoute.responses["200"].content["application/json"].schema.properties.keys);
      assert.equal(jwksRoute.security, undefined, "public: no API key");
    });

    it("vendor Yes: the EAR alone, signed with the published key, every claim as the appraisal found", async () => {
      const { n, token, claims, verdict, location } = await earFor((n) => vendorBlob(n));
      assert.equal(earHeader(token).kid, (await jwks()).keys[0]!.kid);
      assert.equal(earHeader(token).alg, "ES256");
      assertEnvelope(claims, n, verdict, "vendor", location);
      assert.equal(verdict.verdict, "Yes");
      assert.deepEqual(claims.submods.vendor, {
        "ear.status": "affirming",
        "ear.trustworthiness-vector": { "instance-identity": 2, executables: 2, hardware: 2 },
        "ear.appraisal-policy-id": verdict.attestation.detail.appraisalPolicyId,
      });
    });

    const vendorCases: [string, Partial<VendorBlobOptions> & { leaf?: CertifiedKey }, string, Record<string, number>][] = [
      ["tamper bit", { tamper: true }, "contraindicated", { "instance-identity": 2, hardware: 96 }],
      ["measurements differ", { measurements: [new Uint8Array(32)] }, "contraindicated", { "instance-identity": 2, executables: 96, hardware: 2 }],
      ["unknown firmware (Unknown)", { firmwareVersion: UNKNOWN_FIRMWARE }, "warning", { "instance-identity": 2, executables: 33, hardware: 2 }],
      ["wrong nonce inside", { wrongNonce: true }, "contraindicated", { "instance-identity": 99, hardware: 2 }],
      ["bad signature", { badSignature: true }, "contraindicated", { "instance-identity": 99, hardware: 2 }],
      ["revoked leaf", { get leaf() { return revokedLeaf; } }, "contraindicated", { "instance-identity": 96, hardware: 96 }],
      ["chain to no operator root", { chain: [] }, "contraindicated", { "instance-identity": 99, hardware: 99 }],
      ["device error (Unknown)", { deviceError: { exitCode: 3, omitData: true, omitSignature: true, omitCertificates: true } }, "none", { "instance-identity": 1 }],
    ];
    for (const [name, opts, status, vector] of vendorCases) {
      it(`vendor ${name}: ear.status ${status}`, async () => {
        const { n, claims, verdict, location } = await earFor((n) => vendorBlob(n, { ...opts }));
        assertEnvelope(claims, n, verdict, "vendor", location);
        assert.equal(claims.submods.vendor!["ear.status"], status);
        assert.deepEqual(claims.submods.vendor!["ear.trustworthiness-vector"], vector);
      });
    }

    it("android-key: the vector and the integrity labels of the simulated phone", async () => {
      const { n, claims, verdict, location } = await earFor((n) => androidBlob(n));
      assertEnvelope(claims, n, verdict, "android-key", location);
      assert.equal(verdict.verdict, "Yes");
      const submod = claims.submods["android-key"]!;
      assert.equal(submod["ear.status"], "affirming");
      assert.deepEqual(submod["ear.trustworthiness-vector"], { "instance-identity": 2, configuration: 2, executables: 3, hardware: 2, "storage-opaque": 2 });
      assert.deepEqual(submod["attestd.device-integrity"], verdict.attestation.detail.deviceIntegrity);
      assert.deepEqual(submod["attestd.device-integrity"]!.deviceRecognitionVerdict, [
        "MEETS_BASIC_INTEGRITY",
        "MEETS_DEVICE_INTEGRITY",
        "MEETS_STRONG_INTEGRITY",
      ]);
    });

    it("android-key unlocked: contraindicated configuration and boot, basic integrity only", async () => {
      const { claims, verdict } = await earFor((n) => androidBlob(n, { unlocked: true, bootState: "unverified" }));
      assert.equal(verdict.verdict, "No");
      const submod = claims.submods["android-key"]!;
      assert.equal(submod["ear.status"], "contraindicated");
      assert.deepEqual(submod["ear.trustworthiness-vector"], { "instance-identity": 2, configuration: 96, executables: 96, hardware: 2, "storage-opaque": 2 });
      assert.deepEqual(submod["attestd.device-integrity"], { deviceRecognitionVerdict: ["MEETS_BASIC_INTEGRITY"] });
    });

    it("android-key with an old patch: Yes, and the EAR warns (configuration 32), device integrity without strong", async () => {
      const { claims, verdict } = await earFor((n) => androidBlob(n, { patchLevel: 202510 }));
      assert.equal(verdict.verdict, "Yes");
      const submod = claims.submods["android-key"]!;
      assert.equal(submod["ear.status"], "warning");
      assert.equal(submod["ear.trustworthiness-vector"].configuration, 32);
      assert.deepEqual(submod["attestd.device-integrity"]!.deviceRecognitionVerdict, ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"]);
    });

    it("the policy id names the tenant's effective policy: another android policy, another id; the same policy, the same id", async () => {
      const a = await earFor((n) => vendorBlob(n));
      const b = await earFor((n) => androidBlob(n));
      const idOf = (c: EarClaims) => Object.values(c.submods)[0]!["ear.appraisal-policy-id"];
      assert.equal(idOf(a.claims), idOf(b.claims));
      const strict = await t.addTenant("strict");
      const n = await nonce(strict.key);
      const res = await postBlob(n, await androidBlob(n), ACCEPT_EAR, strict.key);
      const theirs = verifyEar(res.body, await jwks());
      assert.notEqual(idOf(theirs), idOf(a.claims));
      assert.equal(theirs["attestd.verdict"].verdict, "No", "the strict tenant's minimum patch level refuses this month's patch");
    });

    it("GET /api/v1/verdicts/{id} with Accept: application/eat+jwt: the stored verdict's EAR, issued now", async () => {
      const first = await earFor((n) => vendorBlob(n));
      t.clock.advance(90_000);
      try {
        const res = await t.runtime.app.inject({ method: "GET", url: first.location, headers: { [KEY_HEADER]: t.key, ...ACCEPT_EAR } });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers["content-type"], EAR_TYPE);
        const again = verifyEar(res.body, await jwks());
        assert.equal(again.iat, first.claims.iat + 90);
        assert.deepEqual({ ...again, iat: 0 }, { ...first.claims, iat: 0 });
        // the default answer is still the eleven-field record, and ?detail=full is ignored for an EAR
        const plain = await t.runtime.app.inject({ method: "GET", url: first.location, headers: { [KEY_HEADER]: t.key } });
        assert.deepEqual(Object.keys(plain.json()), [...VERDICT_FIELDS]);
        const full = await t.runtime.app.inject({ method: "GET", url: `${first.location}?detail=full`, headers: { [KEY_HEADER]: t.key, ...ACCEPT_EAR } });
        assert.equal(full.headers["content-type"], EAR_TYPE);
        // another tenant's verdict stays refused, in JSON
        const other = await t.addTenant("nosy-ear");
        const theirs = await t.runtime.app.inject({ method: "GET", url: first.location, headers: { [KEY_HEADER]: other.key, ...ACCEPT_EAR } });
        assert.equal(theirs.statusCode, 403);
        assert.equal(theirs.json().error.code, "4030000");
      } finally {
        t.clock.set(T0);
      }
    });

    it("a tampered EAR and one signed by a foreign key under attestd's kid both fail verification", async () => {
      const { token, claims } = await earFor((n) => vendorBlob(n, { tamper: true }));
      const keys = await jwks();
      const [header, , signature] = token.split(".");
      const better = { ...claims, submods: { vendor: { ...claims.submods.vendor!, "ear.status": "affirming" } } };
      const tampered = `${header}.${Buffer.from(JSON.stringify(better)).toString("base64url")}.${signature}`;
      assert.throws(() => verifyEar(tampered, keys), /invalid signature/);
      const foreignKey = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
      const foreign = jwt.sign(better, foreignKey, { algorithm: "ES256", keyid: earHeader(token).kid, noTimestamp: true });
      assert.throws(() => verifyEar(foreign, keys), /invalid signature/);
      // a token claiming no signature at all is refused whatever its kid
      const unsigned = `${Buffer.from(JSON.stringify({ alg: "none", kid: earHeader(token).kid })).toString("base64url")}.${tampered.split(".")[1]}.`;
      assert.throws(() => verifyEar(unsigned, keys));
    });

    it("Accept: the EAR profile parameter is honoured, q-values too; elsewhere an EAR is not acceptable", async () => {
      const n1 = await nonce();
      const profiled = await postBlob(n1, vendorBlob(n1), { accept: EAR_TYPE });
      assert.equal(profiled.headers["content-type"], EAR_TYPE);
      verifyEar(profiled.body, await jwks());
      const n2 = await nonce();
      const otherProfile = await postBlob(n2, vendorBlob(n2), { accept: 'application/eat+jwt; eat_profile="tag:example.com,2026:other"' });
      assert.equal(otherProfile.statusCode, 406);
      assert.equal(otherProfile.json().error.code, "4060000");
      const n3 = await nonce();
      const preferJson = await postBlob(n3, vendorBlob(n3), { accept: "application/eat+jwt;q=0.5, application/json" });
      assert.deepEqual(Object.keys(preferJson.json()), [...VERDICT_FIELDS]);
      const n4 = await nonce();
      const any = await postBlob(n4, vendorBlob(n4), { accept: "*/*" });
      assert.deepEqual(Object.keys(any.json()), [...VERDICT_FIELDS]);
      const nonces = await t.runtime.app.inject({ method: "POST", url: "/v2/nonces", headers: { [KEY_HEADER]: t.key, ...ACCEPT_EAR } });
      assert.equal(nonces.statusCode, 406);
      assert.equal(nonces.json().error.code, "4060000");
      // an error answering an EAR request is a JSON error body
      const bad = await postBlob(randomBytes(32).toString("base64url"), vendorBlob(n1), ACCEPT_EAR);
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().error.code, "4000002");
    });

    it("the batch with \"result\": \"ear\" adds a verifiable EAR to each successful item, none to a failed one", async () => {
      const [n1, n2] = [await nonce(), await nonce()];
      const items = [
        { requestedId: "vendor-1", nonce: n1, blob: Buffer.from(vendorBlob(n1)).toString("base64") },
        { requestedId: "phone-1", nonce: n2, blob: (await androidBlob(n2)).toString("base64") },
        { requestedId: "stale", nonce: n1, blob: Buffer.from(vendorBlob(n1)).toString("base64") },
      ];
      const res = await t.runtime.app.inject({ method: "POST", url: "/api/v1/transaction", headers: { [KEY_HEADER]: t.key }, payload: { items, result: "ear" } });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual([body.count, body.success, body.fail], [3, 2, 1]);
      const keys = await jwks();
      for (const [i, format, n] of [[0, "vendor", n1], [1, "android-key", n2]] as const) {
        const item = body.resultList[i];
        const claims = verifyEar(item.ear, keys);
        assert.equal(claims["attestd.verdict"].objectId, item.objectId);
        assert.equal(claims.eat_nonce, n);
        assert.deepEqual(Object.keys(claims.submods), [format]);
        assert.equal(claims.submods[format]!["ear.status"], "affirming");
      }
      assert.equal(body.resultList[2].result, "FAIL");
      assert.equal(body.resultList[2].error.code, "4000004");
      assert.equal("ear" in body.resultList[2], false);

      const n3 = await nonce();
      const plain = await t.runtime.app.inject({
        method: "POST",
        url: "/api/v1/transaction",
        headers: { [KEY_HEADER]: t.key },
        payload: { items: [{ requestedId: "x", nonce: n3, blob: Buffer.from(vendorBlob(n3)).toString("base64") }] },
      });
      assert.deepEqual(Object.keys(plain.json().resultList[0]), ["result", "objectId", "requestedId"]);
      const wrong = await t.runtime.app.inject({ method: "POST", url: "/api/v1/transaction", headers: { [KEY_HEADER]: t.key }, payload: { items: [], result: "jwt" } });
      assert.equal(wrong.statusCode, 400);
      assert.equal(wrong.json().error.code, "4000000");
    });

    it("the signing key's private half is stored sealed with the secrets key, bound to its kid", async () => {
      const keys = await t.runtime.stores.signingKeys.listSigningKeys(new Date(t.clock.nowMs()).toISOString());
      assert.ok(keys.length >= 1);
      for (const k of keys) {
        assert.match(k.privateKey, /^sealed:v1:[0-9a-f]{16}:/, "sealed, as the tenants' private keys are");
        assert.doesNotMatch(k.privateKey, /PRIVATE KEY|MII/, "no PEM or DER in the column");
      }
    });

    it("instances starting together for the first time agree on one key", async () => {
      const fresh = backend.name === "postgres" ? await createTestDatabase("earfirst") : undefined;
      const freshDir = mkdtempSync(path.join(tmpdir(), "attestd-ear-first-"));
      const config = loadConfig(fresh ? { store: "postgres", databaseUrl: fresh.url, dataDir: freshDir } : { dataDir: freshDir }, {});
      const instances = await Promise.all(Array.from({ length: 4 }, () => openStores(config)));
      try {
        const box = new SecretBox([randomBytes(32)]);
        const rings = await Promise.all(instances.map((s) => EarKeyRing.open(s.signingKeys, t.clock, box, { alg: "ES256", refreshMs: 60_000 })));
        const kids = rings.map((r) => r.signingKey().kid);
        assert.equal(new Set(kids).size, 1, kids.join(", "));
        assert.deepEqual(rings.map((r) => r.publicKeys().length), [1, 1, 1, 1]);
      } finally {
        await Promise.all(instances.map((s) => s.close()));
        await fresh?.drop();
        rmSync(freshDir, { recursive: true, force: true });
      }
    });

    it("attestd keys rotate: running servers sign with the new key within --ear-key-refresh; old EARs verify until the grace period ends", async () => {
      const before = await earFor((n) => vendorBlob(n));
      const oldKid = earHeader(before.token).kid;
      const cli = attestdCli([
        "keys", "rotate", "--data-dir", t.dir, "--ear-key-grace", "600",
        ...(storeSettings.store ? ["--store", "postgres", "--database-url", String(storeSettings.databaseUrl)] : []),
      ]);
      assert.equal(cli.status, 0, cli.stderr);
      const rotated = JSON.parse(cli.stdout) as { kid: string; alg: string; retired: string; retiresAt: string };
      assert.equal(rotated.retired, oldKid);
      assert.equal(rotated.alg, "ES256");
      assert.notEqual(rotated.kid, oldKid);

      // the server re-reads the keys every second (earKeyRefresh: 1): wait for the new kid, bounded
      let token = "";
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
        const res = await t.runtime.app.inject({ method: "GET", url: before.location, headers: { [KEY_HEADER]: t.key, ...ACCEPT_EAR } });
        token = res.body;
        if (earHeader(token).kid === rotated.kid) break;
      }
      assert.equal(earHeader(token).kid, rotated.kid, "the running server signs with the rotated key");
      const during = await jwks();
      assert.deepEqual(during.keys.map((k) => k.kid), [rotated.kid, oldKid]);
      assert.equal(verifyEar(token, during)["attestd.verdict"].objectId, before.claims["attestd.verdict"].objectId);
      assert.deepEqual(verifyEar(before.token, during), before.claims, "an EAR signed before the rotation still verifies");

      // past the grace period the old key is no longer published, and its EARs no longer verify
      t.clock.set(Date.parse(rotated.retiresAt));
      try {
        const afterGrace = await jwks();
        assert.deepEqual(afterGrace.keys.map((k) => k.kid), [rotated.kid]);
        assert.throws(() => verifyEar(before.token, afterGrace), /no key with kid/);
        assert.throws(() => verifyEar(before.token, { keys: afterGrace.keys.map((k) => ({ ...k, kid: oldKid })) }), /invalid signature/);
        verifyEar(token, afterGrace);
      } finally {
        t.clock.set(T0);
      }
    });
  });
}
