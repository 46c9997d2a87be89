import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import { ActivityRecorder, type ActivityDropReason } from "../../src/services/activityRecorder.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import type { ActivityAppendResult, ActivityStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The write-behind activity log (src/services/activityRecorder.ts): one bad entry never costs its batch-mates,
 * what was not written is retried a bounded number of times, and what is given up on is counted and logged with
 * its error ids. Flushes are driven by hand (`flush()`), never by waiting for the timer.
 */

let n = 0;
function entry(over: Partial<ActivityEntry> = {}): ActivityEntry {
  n++;
  return {
    time: new Date(T0 + n).toISOString(),
    errorId: `e${n}`,
    tenantId: "t_acme",
    clientId: null,
    method: "GET",
    route: "/svc/v1/enroll/profiles",
    status: 401,
    code: "4010000",
    latencyMs: 1,
    remoteAddress: "127.0.0.1",
    reason: null,
    ...over,
  };
}

/** a store that can be made to fail whole batches, over the memory store's per-entry rules */
class FlakyStore implements ActivityStore {
  readonly inner = new MemoryDurableStore();
  down = false;
  calls = 0;
  async appendActivity(entries: readonly ActivityEntry[]): Promise<ActivityAppendResult> {
    this.calls++;
    if (this.down) throw new Error("store unreachable");
    return this.inner.appendActivity(entries);
  }
  queryActivity = this.inner.queryActivity.bind(this.inner);
  async errorIds(): Promise<string[]> {
    return (await this.inner.queryActivity({ limit: 1000 })).map((e) => e.errorId!).sort();
  }
}

function recorder(store: ActivityStore, opts: ConstructorParameters<typeof ActivityRecorder>[2] = {}) {
  const drops: [ActivityDropReason, number][] = [];
  const logged: Record<string, unknown>[] = [];
  const log = { warn: () => {}, error: (o: object) => void logged.push(o as Record<string, unknown>) };
  // a flush timer long enough never to fire during a test: every write here is an explicit flush()
  const r = new ActivityRecorder(store, log, { flushMs: 60_000, onDropped: (reason, count) => drops.push([reason, count]), ...opts });
  return { r, drops, logged };
}

describe("activity recorder", () => {
  it("writes the valid entries of a batch that holds an invalid one", async () => {
    const store = new FlakyStore();
    const { r } = recorder(store);
    const good = [entry(), entry(), entry()];
    r.record(good[0]!);
    r.record(entry({ remoteAddress: undefined as unknown as string }));
    r.record(good[1]!);
    r.record(good[2]!);
    await r.flush();
    assert.deepEqual(await store.errorIds(), good.map((e) => e.errorId).sort());
    assert.equal(r.pending, 1, "the refused entry waits for a retry");
    await r.close();
  });

  it("retries a refused entry a bounded number of times, then drops it, counted and logged with its error id", async () => {
    const store = new FlakyStore();
    const { r, drops, logged } = recorder(store, { maxAttempts: 3 });
    const bad = entry({ route: null as unknown as string });
    r.record(bad);
    for (let i = 0; i < 3; i++) await r.flush();
    assert.equal(store.calls, 3);
    assert.equal(r.pending, 0);
    assert.deepEqual(drops, [["refused", 1]]);
    assert.deepEqual(logged.map((l) => [l.reason, l.errorIds]), [["refused", [bad.errorId]]]);
    await r.flush();
    assert.equal(store.calls, 3, "nothing left to write");
  });

  it("keeps a batch the store could not write and writes it once the store is back", async () => {
    const store = new FlakyStore();
    const { r, drops } = recorder(store);
    const batch = [entry(), entry()];
    for (const e of batch) r.record(e);
    store.down = true;
    await r.flush();
    await r.flush();
    assert.equal(r.pending, 2);
    store.down = false;
    const later = entry();
    r.record(later);
    await r.flush();
    assert.deepEqual(await store.errorIds(), [...batch, later].map((e) => e.errorId).sort());
    assert.deepEqual(drops, []);
    await r.close();
  });

  it("gives up on entries whose batches keep failing, and bounds what it holds meanwhile", async () => {
    const store = new FlakyStore();
    const { r, drops } = recorder(store, { maxAttempts: 2, maxBatch: 2, maxWaiting: 3 });
    store.down = true;
    r.record(entry());
    await r.flush();
    await r.flush();
    assert.deepEqual(drops, [["failed", 1]]);
    // the store still failing: a full batch waits for the retry pause, the oldest over the bound are dropped
    for (let i = 0; i < 5; i++) r.record(entry());
    assert.equal(r.pending, 3);
    assert.deepEqual(drops, [["failed", 1], ["overflow", 1], ["overflow", 1]]);
    assert.equal(store.calls, 2, "no write while backing off");
    store.down = false;
    await r.close();
    assert.equal((await store.errorIds()).length, 3);
  });

  it("close writes what is waiting and drops, counted, what the store still refuses", async () => {
    const store = new FlakyStore();
    const { r, drops } = recorder(store);
    const good = entry();
    r.record(good);
    r.record(entry({ status: null as unknown as number }));
    await r.close();
    assert.deepEqual(await store.errorIds(), [good.errorId]);
    assert.deepEqual(drops, [["shutdown", 1]]);
    assert.equal(r.pending, 0);
  });
});
