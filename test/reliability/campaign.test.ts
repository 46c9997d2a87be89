import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Deployment } from "../../reliability/lib/deployment.ts";
import { PrivatePostgres, PrivateRedis } from "../../reliability/lib/services.ts";
import { FUZZ_FORMATS, fuzzFormat } from "../../reliability/parts/fuzz.ts";
import { killUnderLoad, type KillResult } from "../../reliability/parts/kill.ts";
import { storeOutage } from "../../reliability/parts/outage.ts";
import { slowClients } from "../../reliability/parts/slowClients.ts";
import { soak } from "../../reliability/parts/soak.ts";
import type { LedgerCheck } from "../../reliability/lib/load.ts";

/**
 * The reliability campaign (`npm run reliability`, docs/reliability.md) in miniature: each part once, small,
 * asserting the same invariants and nothing about speed. Backend outages without load (and /readyz naming the
 * store) are test/scale/faults.test.ts's; this adds real stops of a private PostgreSQL and Redis under load,
 * checked against the client's ledger. The private cluster is required: missing PostgreSQL binaries fail here.
 */

function assertLedger(l: LedgerCheck): void {
  assert.ok(l.acknowledged > 0, "some verdicts were acknowledged");
  assert.deepEqual(
    { missing: l.missing, different: l.different, acceptedTwice: l.acceptedTwice, replayAccepted: l.replayAccepted, replayOther: l.replayOther },
    { missing: 0, different: 0, acceptedTwice: 0, replayAccepted: 0, replayOther: 0 },
    l.examples.join("\n"),
  );
  assert.equal(l.readBackIdentical, l.acknowledged);
  assert.equal(l.replayRefused, l.acknowledged);
}

function assertKill(k: KillResult): void {
  assert.equal(k.rounds.length, 1);
  const round = k.rounds[0]!;
  assert.equal(round.unexpected, 0, JSON.stringify(round.answers));
  // the kill really cut requests off mid-flight, and duplicates were really refused
  assert.ok(round.answers["blob 400/4000004"]! > 0, JSON.stringify(round.answers));
  assertLedger(round.ledger);
}

describe("reliability campaign, short version", () => {
  for (const format of FUZZ_FORMATS) {
    it(`fuzz: 2,000 mutated ${format} blobs through appraise give a record or the container error, and no Yes from a signed change`, async () => {
      const r = await fuzzFormat({ format, cases: 2_000, seed: 13, rssLimitMb: 1024 });
      assert.equal(r.violations, 0, r.examples.join("\n"));
      // the mutants reach both the parser's refusals and the appraisal's rules
      assert.ok((r.outcomes.malformed ?? 0) > 100 && (r.outcomes.No ?? 0) > 100, JSON.stringify(r.outcomes));
    });
  }

  describe("SQLite, one process", () => {
    let d: Deployment;
    before(async () => {
      d = await Deployment.sqlite();
    });
    after(() => d?.close());

    it("kill -9 under load: every acknowledged verdict reads back identical, no nonce accepted twice", async () => {
      assertKill(await killUnderLoad(d, { rounds: 1, loadMs: 1_500, concurrency: 8 }));
    });

    it("a 5 s soak at half of the peak answers every request", async () => {
      const r = await soak(d, { minutes: 5 / 60, peakSeconds: 2, peakConcurrency: 8, sampleMs: 1_000 });
      assert.ok(r.cycles > 0);
      assert.equal(r.errors, 0, r.examples.join("\n"));
      assert.ok(r.rss.samples.length >= 2 && r.rss.samples.every(([, mb]) => mb > 0), "the server's RSS was sampled");
      // the heap is read from the server's /metrics four times a second: a 5 s run gives each window readings
      assert.ok(r.heap.readings >= 10, `the server's JS heap was read (${r.heap.readings} readings)`);
      assert.ok(r.heap.firstWindowFloorMb > 0 && r.heap.lastWindowFloorMb > 0, JSON.stringify(r.heap));
    });

    it("50 slow clients: the normal client's every request succeeds while they are held open", async () => {
      const r = await slowClients(d, { clients: 50, phaseMs: 2_000, byteEveryMs: 500 });
      assert.equal(r.normalFailures, 0, JSON.stringify(r.normalAnswers));
      assert.ok(r.with.blob.n > 0 && r.without.blob.n > 0);
      assert.ok(r.slowPeakOpen >= 45, `${r.slowPeakOpen} slow connections open at once`);
    });
  });

  describe("PostgreSQL + Redis (private, started here), two instances", () => {
    let pg: PrivatePostgres;
    let redis: PrivateRedis;
    let d: Deployment;
    before(async () => {
      [pg, redis] = await Promise.all([PrivatePostgres.start(), PrivateRedis.start()]);
      d = await Deployment.cluster(pg, redis);
    });
    after(async () => {
      await d?.close();
      await Promise.allSettled([pg?.destroy(), redis?.destroy()]);
    });

    it("kill -9 of one instance under load: the ledger holds across both", async () => {
      assertKill(await killUnderLoad(d, { rounds: 1, loadMs: 1_500, concurrency: 8 }));
    });

    for (const store of ["postgres", "redis"] as const) {
      it(`${store} stopped and restarted under load: 503 with Retry-After meanwhile, full service after, nothing lost`, async () => {
        const s = store === "postgres" ? pg : redis;
        const r = await storeOutage(d, { store, stop: () => s.stop(), resume: () => s.resume(), beforeMs: 500, downMs: 1_500, afterMs: 1_000, concurrency: 8 });
        assert.equal(r.during.violations, 0, r.examples.join("\n"));
        assert.ok(r.during.unavailable > 0, `no 503 while ${store} was down: ${JSON.stringify(r.during.answers)}`);
        assert.equal(r.after.failures, 0, r.examples.join("\n"));
        assert.ok(Object.keys(r.after.answers).length > 0, "load ran after recovery");
        assertLedger(r.ledger);
      });
    }
  });
});
