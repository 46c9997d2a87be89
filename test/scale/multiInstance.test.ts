import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, createTestRedisPrefix, type TestDatabase, type TestRedisPrefix } from "../store/backends.ts";
import { issueNonce, KEY, postBlob, request, tenantWithKeys, type Res } from "./harness.ts";
import { attestdCli, startInstance, type Instance } from "../helpers/serverProcess.ts";

/**
 * Two real attestd processes on one PostgreSQL database and one Redis (each run: a fresh database and its own key
 * prefix), as docs/deployment.md sets them up behind a load balancer.
 */
describe("several instances on PostgreSQL + Redis", () => {
  let db: TestDatabase;
  let redis: TestRedisPrefix;
  let dirs: string[] = [];
  let a: Instance;
  let b: Instance;
  let key: string; // generous limits
  let limited: string; // burst 6, practically no refill
  let storeFlags: string[];

  before(async () => {
    [db, redis] = await Promise.all([createTestDatabase("scale"), createTestRedisPrefix("scale")]);
    const redisUrl = `${redis.url}?keyPrefix=${encodeURIComponent(redis.prefix)}`;
    storeFlags = ["--store", "postgres", "--database-url", db.url, "--redis-url", redisUrl];
    dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), "attestd-scale-")));
    // every instance seals the store's secrets with the same key, as docs/deployment.md has the operator give it
    const keyFile = path.join(dirs[0]!, "shared-secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    // both instances start at once: the migration advisory lock serialises them on the empty database
    const started = await Promise.all(dirs.map((d) => startInstance([...storeFlags, "--data-dir", d, "--secrets-key-file", keyFile])));
    [a, b] = [started[0]!, started[1]!];
    const keys = await tenantWithKeys(storeFlags, "scale", [{ rps: 10_000, burst: 10_000 }, { rps: 0.001, burst: 6 }]);
    [key, limited] = [keys[0]!, keys[1]!];
  });

  after(async () => {
    for (const i of [a, b]) {
      if (i && i.proc.exitCode === null && i.proc.signalCode === null) {
        i.kill("SIGTERM");
        await i.exited;
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await Promise.allSettled([db?.drop(), redis?.clean()]);
  });

  it("both instances report postgres and redis ready", async () => {
    for (const i of [a, b]) {
      const r = (await request("GET", `${i.base}/readyz`)).json();
      assert.deepEqual(
        r.checks.filter((c: { name: string }) => c.name === "postgres" || c.name === "redis").map((c: { ok: boolean }) => c.ok),
        [true, true],
      );
    }
  });

  it("refuses, in one line, an instance with a secrets key of its own", () => {
    const own = mkdtempSync(path.join(tmpdir(), "attestd-scale-"));
    dirs.push(own);
    const r = attestdCli(["serve", "--insecure-http", "--port", "0", ...storeFlags, "--data-dir", own]);
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, /^attestd: the store's secrets are sealed with key [0-9a-f]{16} and there is no key file at /);
  });

  it("consumes on one instance a nonce issued by the other", async () => {
    const nonce = await issueNonce(a.base, key);
    const r = await postBlob(b.base, key, nonce);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json().nonce, nonce);
    assert.equal(r.json().status, "DeviceError");
    const again = await postBlob(a.base, key, nonce);
    assert.equal(again.status, 400);
    assert.equal(again.json().error.code, "4000004");
  });

  it("lets exactly one of many concurrent posts of one nonce, across both instances, produce a verdict", async () => {
    for (let round = 0; round < 3; round++) {
      const nonce = await issueNonce(round % 2 ? a.base : b.base, key);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => postBlob(i % 2 ? a.base : b.base, key, nonce)));
      const ok = results.filter((r) => r.status === 200);
      assert.equal(ok.length, 1, results.map((r) => r.status).join(","));
      for (const r of results.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 400);
        assert.equal(r.json().error.code, "4000004", r.body);
      }
      // the winner's verdict is readable from both
      const location = ok[0]!.headers.location!;
      for (const i of [a, b]) assert.equal((await request("GET", `${i.base}${location}`, { [KEY]: key })).status, 200);
    }
  });

  it("shares a key's rate limit between the instances", async () => {
    const results: Res[] = [];
    for (let i = 0; i < 12; i++) results.push(await request("POST", `${(i % 2 ? a : b).base}/v2/nonces`, { [KEY]: limited }));
    assert.deepEqual(
      results.map((r) => r.status),
      [200, 200, 200, 200, 200, 200, 429, 429, 429, 429, 429, 429],
    );
    const refused = results[6]!;
    assert.equal(refused.json().error.code, "4290000");
    assert.ok(Number(refused.headers["retry-after"]) >= 1);
    assert.match(String(refused.headers["ratelimit"]), /remaining=0/);
  });

  it("keeps every acknowledged verdict when an instance is SIGKILLed right after acknowledging", async () => {
    const nonces = await Promise.all(Array.from({ length: 40 }, () => issueNonce(b.base, key)));
    const acked: { objectId: string; nonce: string }[] = [];
    let killed = false;
    await Promise.all(
      nonces.map(async (nonce) => {
        try {
          const r = await postBlob(a.base, key, nonce);
          if (r.status !== 200) return;
          acked.push({ objectId: String(r.headers.location).split("/").pop()!, nonce });
          // kill at the 15th acknowledgement, with the other posts still in flight
          if (acked.length === 15 && !killed) {
            killed = true;
            a.kill("SIGKILL");
          }
        } catch {
          // connection reset by the kill: not acknowledged, so nothing is promised
        }
      }),
    );
    assert.equal(await a.exited, "SIGKILL");
    assert.ok(acked.length >= 15, `${acked.length} acknowledged`);
    for (const { objectId, nonce } of acked) {
      const r = await request("GET", `${b.base}/api/v1/verdicts/${objectId}`, { [KEY]: key });
      assert.equal(r.status, 200, `${objectId}: ${r.body}`);
      assert.equal(r.json().nonce, nonce);
    }
  });
});
