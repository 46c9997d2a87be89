import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { it } from "node:test";
import { REPO } from "../helpers/serverProcess.ts";

/**
 * The independent smoke test of the operator contract and the vendor blob format (its own PKI, its own blob
 * encoder, driving the project only through `npm run attestd` and HTTPS). It lives beside the checkout in
 * ../shared/conformance; CI always has it there.
 */
it("shared conformance smoke test passes (../shared/conformance/part_a_smoke.py)", { timeout: 300_000 }, () => {
  const script = path.resolve(REPO, "../shared/conformance/part_a_smoke.py");
  const r = spawnSync("python3", [script, REPO], { cwd: REPO, encoding: "utf8", timeout: 280_000 });
  const out = `${r.stdout}${r.stderr}`;
  const last = out.trim().split("\n").pop() ?? "";
  assert.equal(r.status, 0, out);
  const m = /^PASS (\d+)\/(\d+)$/.exec(last);
  assert.ok(m, `last line is PASS k/N: ${out}`);
  assert.equal(m[1], m[2], out);
});
