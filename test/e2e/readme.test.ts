import assert from "node:assert/strict";
import path from "node:path";
import { it } from "node:test";
import { walkthroughBlocks, walkthroughSession } from "../helpers/walkthrough.ts";

/** The README's walk-through, run as written (helpers/walkthrough.ts says what is substituted). */
it("README walk-through: tenant → key → nonce → device-sim blob → verdict Yes → stored record", { timeout: 240_000 }, async () => {
  const blocks = walkthroughBlocks("README.md");
  assert.equal(blocks.length, 4, "setup, start, request, lookup");
  const s = await walkthroughSession();
  try {
    const state = path.join(s.data, "..", "state.sh");
    s.bash(`${s.localise(blocks[0]!)}\ndeclare -p KEY > ${state}`);
    await s.startServer(blocks[1]!);
    const verdict = JSON.parse(s.bash(`source ${state}\n${s.localise(blocks[2]!)}`));
    assert.equal(verdict.status, "Success");
    assert.equal(verdict.verdict, "Yes");
    assert.equal(verdict.tamperBit, "0");
    const stored = JSON.parse(s.bash(`source ${state}\n${s.localise(blocks[3]!)}`));
    assert.deepEqual(stored, verdict);
  } finally {
    await s.close();
  }
});
