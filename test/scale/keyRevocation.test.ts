import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { catalog } from "../../src/errors/catalog.ts";
import { KEY_CACHE_MS } from "../../src/services/apiKeyAuth.ts";
import { createTestDatabase, createTestRedisPrefix, type TestDatabase, type TestRedisPrefix } from "../store/backends.ts";
import { attestdCliAsync, startInstance, type Instance } from "../helpers/serverProcess.ts";
import { KEY, request, tenantWithKeys } from "./harness.ts";

/**
 * Issue 22, item 10: a key revoked elsewhere (the `attestd key revoke` CLI, another process) is refused by every
 * running instance within KEY_CACHE_MS of the revocation being committed. While the CLI runs, each instance is
 * asked with each key without pause, so every key is in every instance's cache when it is revoked.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const REFUSED = catalog.A_AUTHORIZATION_FAIL.code;
/** several keys, revoked at once: with the old 2 s cache, all of them expiring within the bound by luck is unlikely */
const KEYS = 3;

interface Sample {
  keyId: string;
  instance: number;
  sentAt: number;
  status: number;
  code: string | undefined;
}

async function revokeWhileServing(ctx: TestContext, instances: Instance[], storeFlags: string[], keys: string[]): Promise<void> {
  const keyIdOf = (key: string) => /^atd_([a-z2-7]{10})_/.exec(key)![1]!;
  const samples: Sample[] = [];
  let done = false;
  const loops = keys.flatMap((key) =>
    instances.map(async (inst, i) => {
      while (!done) {
        const sentAt = performance.now();
        const r = await request("POST", `${inst.base}/v2/nonces`, { [KEY]: key });
        samples.push({ keyId: keyIdOf(key), instance: i, sentAt, status: r.status, code: r.status === 200 ? undefined : r.json().error.code });
      }
    }),
  );
  await sleep(500);
  const revokedAt = new Map(
    await Promise.all(
      keys.map(async (key) => {
        await attestdCliAsync(["key", "revoke", keyIdOf(key), ...storeFlags]);
        // the revocation was committed before the CLI exited, so this is no earlier than the commit
        return [keyIdOf(key), performance.now()] as const;
      }),
    ),
  );
  await sleep(KEY_CACHE_MS + 700);
  done = true;
  await Promise.all(loops);

  const lastAccepted: number[] = [];
  for (const [keyId, at] of revokedAt) {
    for (let i = 0; i < instances.length; i++) {
      const mine = samples.filter((s) => s.keyId === keyId && s.instance === i);
      assert.ok(mine.some((s) => s.sentAt < at && s.status === 200), `key ${keyId} was in use on instance ${i} before its revocation`);
      const late = mine.filter((s) => s.sentAt >= at + KEY_CACHE_MS);
      assert.ok(late.length >= 3, `requests with key ${keyId} on instance ${i} after the bound: ${late.length}`);
      const admitted = late.filter((s) => s.status !== 401 || s.code !== REFUSED);
      assert.equal(admitted.length, 0, `key ${keyId} on instance ${i}, ${KEY_CACHE_MS} ms after the CLI returned: ${JSON.stringify(admitted.slice(0, 3))}`);
      const accepted = mine.filter((s) => s.status === 200).map((s) => s.sentAt - at);
      lastAccepted.push(Math.max(...accepted));
    }
  }
  // the figure docs/portal.md quotes: how long after the CLI returned a request was still admitted (≤ 0: none)
  ctx.diagnostic(`last request admitted after the CLI returned: ${lastAccepted.map((ms) => `${ms.toFixed(0)} ms`).join(", ")}`);
}

describe("a key revoked by the CLI while two instances on PostgreSQL + Redis serve it", () => {
  let db: TestDatabase;
  let redis: TestRedisPrefix;
  let dir: string;
  let instances: Instance[] = [];
  let storeFlags: string[];

  before(async () => {
    [db, redis] = await Promise.all([createTestDatabase("keyrevoke"), createTestRedisPrefix("keyrevoke")]);
    storeFlags = ["--store", "postgres", "--database-url", db.url, "--redis-url", `${redis.url}?keyPrefix=${encodeURIComponent(redis.prefix)}`];
    dir = mkdtempSync(path.join(tmpdir(), "attestd-keyrevoke-"));
    const keyFile = path.join(dir, "shared-secrets.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
    instances = await Promise.all([0, 1].map((i) => startInstance([...storeFlags, "--data-dir", path.join(dir, `i${i}`), "--secrets-key-file", keyFile])));
  });

  after(async () => {
    for (const i of instances) {
      i.kill("SIGTERM");
      await i.exited;
    }
    rmSync(dir, { recursive: true, force: true });
    await Promise.allSettled([db?.drop(), redis?.clean()]);
  });

  it(`is refused by both instances ${KEY_CACHE_MS} ms after the revocation`, async (ctx) => {
    const keys = await tenantWithKeys(storeFlags, "revoked", Array.from({ length: KEYS }, () => ({ rps: 10_000, burst: 10_000 })));
    await revokeWhileServing(ctx, instances, storeFlags, keys);
  });
});

describe("a key revoked by the CLI while an instance on SQLite serves it", () => {
  let dir: string;
  let instance: Instance | undefined;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "attestd-keyrevoke-"));
    instance = await startInstance(["--data-dir", dir]);
  });

  after(async () => {
    if (instance) {
      instance.kill("SIGTERM");
      await instance.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(`is refused ${KEY_CACHE_MS} ms after the revocation`, async (ctx) => {
    const storeFlags = ["--data-dir", dir];
    const keys = await tenantWithKeys(storeFlags, "revoked", Array.from({ length: KEYS }, () => ({ rps: 10_000, burst: 10_000 })));
    await revokeWhileServing(ctx, [instance!], storeFlags, keys);
  });
});
