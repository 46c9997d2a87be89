import assert from "node:assert/strict";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { it } from "node:test";
import ts from "typescript";
import { REPO } from "../helpers/serverProcess.ts";
import { walkthroughBlocks, walkthroughFiles, walkthroughSession } from "../helpers/walkthrough.ts";

/** The type errors of the TypeScript files in `dir`, checked with the tsconfig.json there, as `tsc -p dir` would. */
function typeErrors(dir: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(dir, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, "\n")),
  });
  assert.ok(parsed);
  const program = ts.createProgram(parsed.fileNames, parsed.options);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${path.basename(d.file.fileName)}(${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}): ` : "";
    return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}

/**
 * docs/client.md as a relying party follows it: the README's part 1 setup and server start, then the page's
 * walk-through as written. Its files are saved in ./data/client, the types generated from the document the
 * running server serves, the client type-checked with the page's tsconfig.json (the TypeScript compiler API, as
 * `tsc -p` would), then run: nonce → device-sim blob → verdict Yes, and an access token → the tenant's profiles.
 */
it("docs/client.md: a client generated from /openapi.json type-checks, then walks nonce → blob → Yes and a Part B call", { timeout: 120_000 }, async () => {
  // the README's set-up: the demo CAs, the service started trusting them, the tenant acme and its KEY
  const [cas, start, tenant] = walkthroughBlocks("README.md", "walkthrough-setup") as [string, string, string];
  const blocks = walkthroughBlocks("docs/client.md", "client");
  assert.equal(blocks.length, 4, "client create, generate, attest, enrollment");
  const [clientCreate, generate, attest, enrollment] = blocks as [string, string, string, string];
  const files = walkthroughFiles("docs/client.md", "client");

  const s = await walkthroughSession();
  try {
    const client = path.join(s.data, "client");
    mkdirSync(client, { recursive: true });
    for (const [name, text] of files) writeFileSync(path.join(client, name), text);
    // In a checkout, ./data/client finds the client's packages in the checkout's node_modules and is an ES module
    // by its package.json; the test's ./data lies in a temporary directory, so that directory gets the same two.
    symlinkSync(path.join(REPO, "node_modules"), path.join(s.data, "..", "node_modules"));
    writeFileSync(path.join(s.data, "..", "package.json"), JSON.stringify({ type: "module" }));

    // One terminal: what a block exports (and the README's KEY) is there for the blocks after it.
    const state = path.join(s.data, "..", "state.sh");
    writeFileSync(state, "");
    const run = (block: string) => s.bash(`source ${state}\n${s.localise(block)}\n{ export -p; declare -p KEY; } > ${state}`);
    s.bash(s.localise(cas)); // the first terminal's: no KEY there yet
    await s.startServer(start);
    run(tenant);
    run(clientCreate);

    run(generate);
    assert.ok(existsSync(path.join(client, "attestd.d.ts")), "the types are generated");
    assert.deepEqual(typeErrors(client), []);
    // the check has teeth: the page's own call without its nonce does not compile
    const attestation = files.get("attestation.ts")!;
    const withoutNonce = attestation.replace("params: { query: { nonce } }", "params: { query: {} }");
    assert.notEqual(withoutNonce, attestation);
    writeFileSync(path.join(client, "forgot-nonce.ts"), withoutNonce);
    assert.match(typeErrors(client).join("\n"), /^forgot-nonce\.ts\(\d+\): .*Property 'nonce' is missing/m);

    const record = JSON.parse(run(attest));
    assert.equal(record.status, "Success");
    assert.equal(record.verdict, "Yes");
    assert.equal(record.tamperBit, "0");

    assert.deepEqual(JSON.parse(run(enrollment)), { totalCount: 0, totalPage: 0, pageNum: 0, profiles: [] });
  } finally {
    await s.close();
  }
});
