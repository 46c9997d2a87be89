import assert from "node:assert/strict";
import path from "node:path";
import { it } from "node:test";
import { walkthroughBlocks, walkthroughSession } from "../helpers/walkthrough.ts";

/**
 * Runs one of the README's walk-throughs as written (helpers/walkthrough.ts says what is substituted): its first
 * block sets up and defines KEY, the second starts the server, and each later block is a request whose JSON
 * answer is returned, in order.
 */
async function runWalkthrough(marker: string | undefined, blockNames: readonly string[]): Promise<Record<string, string>[]> {
  const blocks = walkthroughBlocks("README.md", marker);
  assert.equal(blocks.length, blockNames.length, blockNames.join(", "));
  const s = await walkthroughSession();
  try {
    const state = path.join(s.data, "..", "state.sh");
    s.bash(`${s.localise(blocks[0]!)}\ndeclare -p KEY > ${state}`);
    await s.startServer(blocks[1]!);
    return blocks.slice(2).map((block) => JSON.parse(s.bash(`source ${state}\n${s.localise(block)}`)));
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
