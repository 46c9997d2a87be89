import assert from "node:assert/strict";
import path from "node:path";
import { it } from "node:test";
import { walkthroughBlocks, walkthroughSession } from "../helpers/walkthrough.ts";

/** a JSON answer of any of the walk-throughs' shapes */
type Answer = Record<string, any>;

/** A block's output: one JSON document, or one per line (a block that loops); the latter as an array. */
function answers(out: string): Answer {
  try {
    return JSON.parse(out);
  } catch {
    return out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  }
}

/**
 * Runs one of the README's walk-throughs as written (helpers/walkthrough.ts says what is substituted): its first
 * block sets up and defines KEY, the second starts the server, and each later block is a request whose JSON
 * answer is returned, in order.
 */
async function runWalkthrough(marker: string | undefined, blockNames: readonly string[]): Promise<Answer[]> {
  const blocks = walkthroughBlocks("README.md", marker);
  assert.equal(blocks.length, blockNames.length, blockNames.join(", "));
  const s = await walkthroughSession();
  try {
    const state = path.join(s.data, "..", "state.sh");
    s.bash(`${s.localise(blocks[0]!)}\ndeclare -p KEY > ${state}`);
    await s.startServer(blocks[1]!);
    return blocks.slice(2).map((block) => answers(s.bash(`source ${state}\n${s.localise(block)}`)));
  } finally {
    await s.close();
  }
}

it("README walk-through: tenant → key → nonce → device-sim blob → verdict Yes → stored record", { timeout: 240_000 }, async () => {
  const [verdict, stored] = await runWalkthrough(undefined, ["setup", "start", "request", "lookup"]);
  assert.equal(verdict!.status, "Success");
  assert.equal(verdict!.verdict, "Yes");
  assert.equal(verdict!.tamperBit, "0");
  assert.deepEqual(stored, verdict);
});

/** Part 2: the same path with the demo Android PKI and the Android device simulator, no phone. */
it("README walk-through, part 2: dev-ca --android → nonce → simulated phone's chain → Yes; unlocked → No", { timeout: 240_000 }, async () => {
  const [verdict, unlocked] = await runWalkthrough("walkthrough-android", ["setup", "start", "request", "unlocked request"]);
  assert.equal(verdict!.status, "Success");
  assert.equal(verdict!.verdict, "Yes");
  assert.equal(verdict!.tamperBit, "0");
  assert.equal(verdict!.version, "300");
  assert.equal(unlocked!.status, "Success");
  assert.equal(unlocked!.verdict, "No");
  assert.equal(unlocked!.tamperBit, "1");
});

/** Part 4: a Play Integrity token from the demo app's keys, registered for the tenant with play-app add. */
it("README walk-through, part 4: dev-ca --play-integrity → play-app add → nonce → simulated token → Yes; basic device → No", { timeout: 240_000 }, async () => {
  const [verdict, basic] = await runWalkthrough("walkthrough-play", ["setup", "start", "request", "basic request"]);
  assert.equal(verdict!.status, "Success");
  assert.equal(verdict!.verdict, "Yes");
  assert.match(verdict!.measurements, /^[0-9a-f]{64}$/);
  assert.equal(verdict!.chipId, "");
  assert.equal(verdict!.version, "1");
  assert.equal(basic!.status, "Success");
  assert.equal(basic!.verdict, "No");
});

/** Part 3: per-device memory. One simulated phone kept in a file: Yes twice for one deviceId, then a downgrade. */
it("README walk-through, part 3: the same phone twice → Yes, Yes; an older patch → No (downgrade); history; reset", { timeout: 300_000 }, async () => {
  const [twice, downgraded, history, reset] = await runWalkthrough("walkthrough-devices", ["setup", "start", "twice", "downgrade", "history", "reset"]);
  assert.deepEqual(twice!.map((v: Answer) => [v.status, v.verdict]), [["Success", "Yes"], ["Success", "Yes"]]);
  assert.equal(downgraded!.status, "Success");
  assert.equal(downgraded!.verdict, "No");
  assert.equal(history!.deviceId, "alice.phone-1");
  assert.equal(history!.count, 3);
  assert.equal(history!.last.pin, "downgrade");
  assert.deepEqual(history!.last.changes[0], { fact: "osPatchLevel", from: String(history!.pin.levels.osPatchLevel), to: "202401" });
  assert.equal(history!.pin.format, "android-key");
  assert.equal(reset!.by, "cli");
  assert.deepEqual(reset!.previousPin, history!.pin);
});
