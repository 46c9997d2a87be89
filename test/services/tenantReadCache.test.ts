import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TenantReadCache } from "../../src/services/tenantReadCache.ts";

/** The per-tenant copy the Play and iOS app registries read through (src/services/tenantReadCache.ts). */

function clockAt(start = 1_000) {
  const c = { ms: start, nowMs: () => c.ms };
  return c;
}

describe("TenantReadCache", () => {
  it("reads a tenant once per ttl, each tenant apart", async () => {
    const clock = clockAt();
    const cache = new TenantReadCache<string>(clock, 5_000);
    let reads = 0;
    const read = (v: string) => async () => (reads++, v);
    assert.equal(await cache.get("t1", read("a")), "a");
    assert.equal(await cache.get("t1", read("b")), "a");
    assert.equal(await cache.get("t2", read("c")), "c");
    assert.equal(reads, 2);
    clock.ms += 4_999;
    assert.equal(await cache.get("t1", read("d")), "a");
    clock.ms += 1;
    assert.equal(await cache.get("t1", read("e")), "e", "a copy never outlives the ttl");
    assert.equal(reads, 3);
  });

  it("forget drops the copy at once", async () => {
    const cache = new TenantReadCache<string>(clockAt(), 5_000);
    await cache.get("t1", async () => "old");
    cache.forget("t1");
    assert.equal(await cache.get("t1", async () => "new"), "new");
  });

  it("a read that began before a change is answered but not kept: it may have missed the change", async () => {
    const cache = new TenantReadCache<string>(clockAt(), 5_000);
    let release!: () => void;
    const slow = cache.get("t1", () => new Promise<string>((r) => (release = () => r("before the change"))));
    cache.forget("t1");
    release();
    assert.equal(await slow, "before the change");
    assert.equal(await cache.get("t1", async () => "after the change"), "after the change");
  });

  it("keeps at most 10,000 tenants, dropping the oldest", async () => {
    const cache = new TenantReadCache<number>(clockAt(), 60_000);
    for (let i = 0; i <= 10_000; i++) await cache.get(`t${i}`, async () => i);
    let reread = false;
    await cache.get("t0", async () => ((reread = true), -1));
    assert.equal(reread, true, "the oldest tenant was dropped to make room");
    let kept = true;
    await cache.get("t10000", async () => ((kept = false), -1));
    assert.equal(kept, true, "the newest stays");
  });
});
