import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { startInstance, type Instance } from "../helpers/serverProcess.ts";
import { createTestDatabase, createTestRedisPrefix, type TestDatabase, type TestRedisPrefix } from "../store/backends.ts";
import { issueNonce, KEY, OCTET, request, tenantWithKeys, type Res } from "./harness.ts";

/**
 * The race the pin exists for, between two real attestd processes on one PostgreSQL database (nonces in Redis,
 * as docs/deployment.md runs them): many first appraisals of one new device at once, half on each instance. Exactly
 * one pins; every other is decided against the winner's pin, whichever instance served it; both instances then
 * answer the same history.
 */
describe("device pins with two instances on PostgreSQL + Redis", () => {
  let db: TestDatabase;
  let redis: TestRedisPrefix;
  let dir: string;
  let instances: Instance[] = [];
  let key: string;
  let ca: DevCa;
  let leaves: CertifiedKey[];

  before(async () => {
    [db, redis] = await Promise.all([createTestDatabase("pins"), createTestRedisPrefix("pins")]);
    dir = mkdtempSync(path.join(tmpdir(), "attestd-pins-scale-"));
    ca = await createDevCa();
    leaves = await Promise.all(Array.from({ length: 16 }, () => issueDeviceLeaf(ca, { keyType: "ec" })));
    const roots = path.join(dir, "root.pem");
    const refs = path.join(dir, "refs.json");
    writeFileSync(roots, ca.root.certPem);
    writeFileSync(refs, JSON.stringify(demoReferenceValues()));
    const redisUrl = `${redis.url}?keyPrefix=${encodeURIComponent(redis.prefix)}`;
    const storeFlags = ["--store", "postgres", "--database-url", db.url, "--redis-url", redisUrl];
    // one secrets key for both, as docs/deployment.md has the operator give it: two instances starting at once on an
    // empty database would otherwise each make their own, and the second to seal is refused
    const keyFile = path.join(dir, "shared-secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    instances = await Promise.all(
      ["a", "b"].map((n) =>
        startInstance([...storeFlags, "--data-dir", path.join(dir, n), "--secrets-key-file", keyFile, "--vendor-roots", roots, "--reference-values", refs], { timeoutMs: 60_000 }),
      ),
    );
    key = (await tenantWithKeys(storeFlags, "pins", [{ rps: 10_000, burst: 10_000 }]))[0]!;
  });

  after(async () => {
    for (const i of instances) {
      if (i.proc.exitCode === null && i.proc.signalCode === null) {
        i.kill("SIGTERM");
        await i.exited;
      }
    }
    rmSync(dir, { recursive: true, force: true });
    await Promise.allSettled([db?.drop(), redis?.clean()]);
  });

  const base = (i: number) => instances[i % 2]!.base;
  const detail = async (i: number, r: Res) => {
    const full = await request("GET", `${base(i)}${r.headers.location}?detail=full`, { [KEY]: key! });
    return full.json().attestation.detail.device as { pin: string; changes?: { fact: string; from: string; to: string }[] };
  };

  /** `leafs[i]` posted for `deviceId` on instance i % 2, all at once, each with its own nonce. */
  async function race(deviceId: string, leafs: CertifiedKey[]) {
    const nonces = await Promise.all(leafs.map((_, i) => issueNonce(base(i + 1), key!)));
    const results = await Promise.all(
      leafs.map((leaf, i) =>
        request(
          "POST",
          `${base(i)}/v2/blobs?nonce=${nonces[i]}&deviceId=${deviceId}`,
          { [KEY]: key!, ...OCTET },
          Buffer.from(encodeVendorBlob({ ca, leaf, nonce: nonces[i]! })),
        ),
      ),
    );
    for (const r of results) assert.equal(r.status, 200, r.body);
    return Promise.all(results.map(async (r, i) => ({ verdict: r.json().verdict as string, device: await detail(i, r) })));
  }

  it("sixteen devices claiming one new deviceId at once: one pins, fifteen are refused against the winner's key", async () => {
    for (let round = 0; round < 3; round++) {
      const deviceId = `race-${round}`;
      const outcomes = await race(deviceId, leaves);
      const pins = outcomes.map((o) => o.device.pin);
      assert.equal(pins.filter((p) => p === "first").length, 1, pins.join(","));
      assert.equal(pins.filter((p) => p === "changed").length, 15, pins.join(","));
      const winner = outcomes.find((o) => o.device.pin === "first")!;
      assert.equal(winner.verdict, "Yes");
      const histories = await Promise.all([0, 1].map((i) => request("GET", `${base(i)}/api/v1/devices/${deviceId}`, { [KEY]: key! })));
      assert.deepEqual(histories[0]!.json(), histories[1]!.json(), "both instances answer the same history");
      const h = histories[0]!.json();
      assert.equal(h.count, 16);
      const winnerKey = h.pin.identity.leafKey;
      for (const o of outcomes.filter((x) => x.device.pin === "changed")) {
        assert.equal(o.verdict, "No");
        assert.equal(o.device.changes![0]!.fact, "leafKey");
        assert.equal(o.device.changes![0]!.from, winnerKey, "every loser compared against the winner's pin");
      }
    }
  });

  it("one honest device racing itself: one first, the rest matched, all Yes", async () => {
    const outcomes = await race("same-device", Array.from({ length: 12 }, () => leaves[0]!));
    const pins = outcomes.map((o) => o.device.pin).sort();
    assert.deepEqual(pins, ["first", ...Array(11).fill("matched")]);
    assert.ok(outcomes.every((o) => o.verdict === "Yes"));
  });
});
