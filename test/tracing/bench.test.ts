import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { runBench } from "../../bench/run.ts";

/**
 * The bench's tracing section in its quick mode (bench/README.md, "8. Traces"), checked for the shape of the JSON
 * it writes and that the "on" server did trace. No timing is asserted: the figures are the bench's to report.
 */
describe("bench (quick, tracing section only)", () => {
  const out = mkdtempSync(path.join(tmpdir(), "attestd-bench-tracing-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  it("runs Part A with tracing off and on and reports CPU per request for both, the sink having received spans", async () => {
    const run = await runBench({ quick: true, only: ["tracing"], profile: "never", outDir: out, print: false });
    const s = JSON.parse(readFileSync(run.files[0]!, "utf8")).sections.tracing;
    assert.equal(s.status, "ok", s.message);
    for (const w of ["nonces", "blobs"]) {
      for (const side of ["off", "on"]) {
        assert.ok(s[w][side].requests2xx > 0, `${w} ${side} answered`);
        assert.equal(s[w][side].non2xx, 0, `${w} ${side}: ${JSON.stringify(s[w][side].statusCodes)}`);
      }
      for (const k of ["off", "on", "added"]) assert.equal(typeof s[w].cpuUsPerRequest[k], "number", `${w} cpuUsPerRequest.${k}`);
      assert.equal(s[w].rounds.length, 1);
    }
    assert.ok(s.sink.exports > 0 && s.sink.bytes > 0, "the traced server exported spans");
    assert.deepEqual(Object.keys(s.micro).sort(), ["call (async)", "call (sync)", "inSpan, tracing off", "inSpanSync, tracing off"]);
    assert.match(s.how.servers, /--otlp-endpoint/);
    assert.match(run.summary, /Traces \(issue 26\)/);
  });
});
