import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { it } from "node:test";
import { freePort, REPO } from "../helpers/serverProcess.ts";

/** The ```sh blocks between the walkthrough markers of a markdown file, in order. */
export function walkthroughBlocks(markdown: string): string[] {
  const section = /<!-- walkthrough:start[\s\S]*?-->([\s\S]*?)<!-- walkthrough:end -->/.exec(markdown);
  assert.ok(section, "walkthrough markers present");
  return [...section[1]!.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * Runs the README's walk-through exactly as written, with two substitutions that keep it off the developer's
 * own ./data and port 8443: `./data` → a temporary directory and `8443` → a free port (the same values are
 * given to the CLI through ATTESTD_DATA_DIR / ATTESTD_PORT, which the README's commands leave to their defaults).
 */
it("README walk-through: tenant → key → nonce → device-sim blob → verdict Yes → stored record", { timeout: 240_000 }, async () => {
  const blocks = walkthroughBlocks(readFileSync(path.join(REPO, "README.md"), "utf8"));
  assert.equal(blocks.length, 4, "setup, start, request, lookup");
  const tmp = mkdtempSync(path.join(tmpdir(), "attestd-readme-"));
  const data = path.join(tmp, "data");
  const port = await freePort();
  const localise = (block: string) => block.replaceAll("./data", data).replaceAll("8443", String(port));
  const env = { ...process.env, ATTESTD_DATA_DIR: data, ATTESTD_PORT: String(port) };
  const state = path.join(tmp, "state.sh");
  const bash = (script: string) =>
    execFileSync("bash", ["-euo", "pipefail", "-c", script], { cwd: REPO, env, encoding: "utf8", timeout: 120_000 });

  bash(`${localise(blocks[0]!)}\ndeclare -p KEY > ${state}`);
  const server = spawn("bash", ["-c", `exec ${localise(blocks[1]!).trim()}`], { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let log = "";
  server.stdout.on("data", (d) => (log += d));
  server.stderr.on("data", (d) => (log += d));
  try {
    for (let i = 0; !log.includes("attestd listening"); i++) {
      if (server.exitCode !== null || i > 600) assert.fail(`server did not start: ${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const verdict = JSON.parse(bash(`source ${state}\n${localise(blocks[2]!)}`));
    assert.equal(verdict.status, "Success");
    assert.equal(verdict.verdict, "Yes");
    assert.equal(verdict.tamperBit, "0");
    const stored = JSON.parse(bash(`source ${state}\n${localise(blocks[3]!)}`));
    assert.deepEqual(stored, verdict);
    writeFileSync(path.join(tmp, "verdict.json"), JSON.stringify(verdict));
  } finally {
    process.kill(-server.pid!, "SIGTERM");
    await new Promise((r) => server.once("exit", r));
    rmSync(tmp, { recursive: true, force: true });
  }
});
