import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rssBytes, treePids } from "../bench/lib/cpu.ts";
import { judgeRss, RSS_GROWTH_BOUND, windowFloorsMb } from "../bench/lib/soak.ts";
import { parseBenchArgs } from "../bench/run.ts";

/**
 * The bench's memory figures (issue 15 item 5): what a soak's RSS samples are judged as, and the flag that sets
 * its length. The soak itself runs in `npm run bench`; only its arithmetic is checked here.
 */
describe("bench memory soak", () => {
  const MB = 2 ** 20;
  const samples = (mbs: number[], everyMs = 500) => mbs.map((m, i) => ({ atMs: i * everyMs, bytes: m * MB }));

  it("compares the peak of the first window with the peak of the last", () => {
    // 10 s at 2 samples/s, windows of 2 s: first window 0-2000 ms, last 7500-9500 ms
    const flat = judgeRss(samples([100, 120, 104, 101, 119, 100, 121, 103, 118, 102, 104, 120, 100, 121, 110, 102, 119, 104, 117, 101]), 2);
    assert.equal(flat.peakRssMb, 121);
    assert.equal(flat.firstWindowPeakMb, 120);
    assert.equal(flat.lastWindowPeakMb, 119);
    assert.equal(flat.growth, -0.008);
    assert.equal(flat.flat, true);
    assert.equal(flat.bound, RSS_GROWTH_BOUND);
    assert.equal(flat.rssBySecondMb.length, 10);

    const leak = judgeRss(samples(Array.from({ length: 20 }, (_, i) => 100 + i * 3)), 2);
    assert.equal(leak.firstWindowPeakMb, 112);
    assert.equal(leak.lastWindowPeakMb, 157);
    assert.equal(leak.flat, false);
  });

  it("judges the JS heap on each window's floor, which a young generation's sawtooth does not move", () => {
    // the bench run that prompted it: once-a-second heap readings, peaks 58 -> 72 MB, floors 40 -> 42 MB, nothing kept
    const sawtooth = samples([50, 44, 52, 45, 58, 40, 47, 52, 45, 51, 48, 41, 62, 47, 72, 42, 51, 45, 61, 56], 1000);
    assert.deepEqual(windowFloorsMb(sawtooth, 5), { first: 40, last: 42 });
    assert.equal(judgeRss(sawtooth, 5).flat, false, "peaks alone would call it growing");
    const leak = samples(Array.from({ length: 20 }, (_, i) => 40 + i * 2 + (i % 2) * 10), 1000);
    const floors = windowFloorsMb(leak, 5)!;
    assert.ok(floors.last > floors.first * 1.1, JSON.stringify(floors));
    assert.equal(windowFloorsMb([], 5), undefined);
  });

  it("says nothing it did not measure", () => {
    const none = judgeRss([], 10);
    assert.equal(none.peakRssMb, undefined);
    assert.equal(none.growth, undefined);
    assert.equal(none.flat, undefined);
  });

  it("reads this process's resident memory from /proc", { skip: process.platform !== "linux" && "needs /proc" }, () => {
    const pids = treePids(process.pid);
    assert.equal(pids[0], process.pid);
    const bytes = rssBytes(pids)!;
    // within a factor of two of what Node reports for itself (the tree may hold a child or two)
    assert.ok(bytes >= process.memoryUsage().rss / 2, `${bytes} B`);
    assert.equal(rssBytes([2 ** 22 + 12345]), undefined);
  });

  it("takes --soak SECONDS, 0 for none", () => {
    assert.equal(parseBenchArgs(["--soak", "30"]).soakSec, 30);
    assert.equal(parseBenchArgs(["--soak", "0"]).soakSec, 0);
    assert.equal(parseBenchArgs([]).soakSec, undefined);
    assert.throws(() => parseBenchArgs(["--soak=-1"]), /positive/);
  });
});
