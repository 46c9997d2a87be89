import assert from "node:assert/strict";
import { userInfo } from "node:os";
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

/** The README's walk-throughs, in the order it gives them, each with the names of its request blocks. */
const PARTS = [
  { marker: "walkthrough", blocks: ["request", "lookup"] },
  { marker: "walkthrough-android", blocks: ["request", "unlocked request"] },
  { marker: "walkthrough-devices", blocks: ["twice", "downgrade", "history", "reset"] },
  { marker: "walkthrough-play", blocks: ["request", "basic request"] },
  { marker: "walkthrough-app-attest", blocks: ["attestation", "assertion", "replayed counter"] },
] as const;

/**
 * Runs the README's walk-throughs as written (helpers/walkthrough.ts says what is substituted), as a reader does:
 * the set-up's first block (the demo CAs), then its second starts the ONE server every part uses, its third makes
 * the tenant and defines KEY; then every part's request blocks in order, each one's JSON answer kept by part.
 */
async function runWalkthroughs(): Promise<Answer[][]> {
  const setup = walkthroughBlocks("README.md", "walkthrough-setup");
  assert.equal(setup.length, 3, "the set-up: demo CAs, the server, the tenant and its key");
  const s = await walkthroughSession();
  try {
    const state = path.join(s.data, "..", "state.sh");
    s.bash(s.localise(setup[0]!));
    await s.startServer(setup[1]!);
    s.bash(`${s.localise(setup[2]!)}\ndeclare -p KEY > ${state}`);
    return PARTS.map(({ marker, blocks: names }) => {
      const blocks = walkthroughBlocks("README.md", marker);
      assert.equal(blocks.length, names.length, `${marker}: ${names.join(", ")}`);
      return blocks.map((block) => answers(s.bash(`source ${state}\n${s.localise(block)}`)));
    });
  } finally {
    await s.close();
  }
}

/** One run for every test below: the walk-throughs share their server, as the README's reader does. */
let run: Promise<Answer[][]> | undefined;
const walkthroughs = () => (run ??= runWalkthroughs());

it("README walk-through: tenant → key → nonce → device-sim blob → verdict Yes → stored record", { timeout: 600_000 }, async () => {
  const [verdict, stored] = (await walkthroughs())[0]!;
  assert.equal(verdict!.status, "Success");
  assert.equal(verdict!.verdict, "Yes");
  assert.equal(verdict!.tamperBit, "0");
  assert.deepEqual(stored, verdict);
});

/** Part 2: the same path with the demo Android PKI and the Android device simulator, no phone, on the same server. */
it("README walk-through, part 2: dev-ca --android → nonce → simulated phone's chain → Yes; unlocked → No", { timeout: 600_000 }, async () => {
  const [verdict, unlocked] = (await walkthroughs())[1]!;
  assert.equal(verdict!.status, "Success");
  assert.equal(verdict!.verdict, "Yes");
  assert.equal(verdict!.tamperBit, "0");
  assert.equal(verdict!.version, "300");
  assert.equal(unlocked!.status, "Success");
  assert.equal(unlocked!.verdict, "No");
  assert.equal(unlocked!.tamperBit, "1");
});

/** Part 3: per-device memory. One simulated phone kept in a file: Yes twice for one deviceId, then a downgrade. */
it("README walk-through, part 3: the same phone twice → Yes, Yes; an older patch → No (downgrade); history; reset", { timeout: 600_000 }, async () => {
  const [twice, downgraded, history, reset] = (await walkthroughs())[2]!;
  assert.deepEqual(twice!.map((v: Answer) => [v.status, v.verdict]), [["Success", "Yes"], ["Success", "Yes"]]);
  assert.equal(downgraded!.status, "Success");
  assert.equal(downgraded!.verdict, "No");
  assert.equal(history!.deviceId, "alice.phone-1");
  assert.equal(history!.count, 3);
  assert.equal(history!.last.pin, "downgrade");
  assert.deepEqual(history!.last.changes[0], { fact: "osPatchLevel", from: String(history!.pin.levels.osPatchLevel), to: "202401" });
  assert.equal(history!.pin.format, "android-key");
  assert.equal(reset!.by, userInfo().username, "the audit trail names the OS user who ran the reset");
  assert.deepEqual(reset!.previousPin, history!.pin);
});

/** Part 4: a Play Integrity token from the demo app's keys, registered for the tenant in the set-up. */
it("README walk-through, part 4: dev-ca --play-integrity → play-app add → nonce → simulated token → Yes; basic device → No", { timeout: 600_000 }, async () => {
  const [verdict, basic] = (await walkthroughs())[3]!;
  assert.equal(verdict!.status, "Success");
  assert.equal(verdict!.verdict, "Yes");
  assert.match(verdict!.measurements, /^[0-9a-f]{64}$/);
  assert.equal(verdict!.chipId, "");
  assert.equal(verdict!.version, "1");
  assert.equal(basic!.status, "Success");
  assert.equal(basic!.verdict, "No");
});

/** Part 5: an App Attest key from the demo root, its app registered for the tenant in the set-up; its counter kept. */
it("README walk-through, part 5: dev-ca --app-attest → ios-app add → attestation → Yes; assertion → Yes, counter 1; counter 1 again → No", { timeout: 600_000 }, async () => {
  const [attested, asserted, replayed] = (await walkthroughs())[4]!;
  assert.deepEqual([attested!.status, attested!.verdict, attested!.version], ["Success", "Yes", "0"]);
  assert.equal(attested!.measurements, "DEMOTEAM01.com.example.attestd.demo");
  assert.match(attested!.chipId, /^[A-Za-z0-9+/]{43}=$/);
  assert.deepEqual([asserted!.status, asserted!.verdict, asserted!.version, asserted!.chipId], ["Success", "Yes", "1", attested!.chipId]);
  // the same key and counter as the accepted assertion, for a fresh nonce: a replay or a clone, refused by the counter
  assert.deepEqual([replayed!.status, replayed!.verdict, replayed!.version, replayed!.chipId], ["NonceMismatch", "No", "1", attested!.chipId]);
});
