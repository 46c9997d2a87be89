import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { childEnv, freePort, REPO } from "./serverProcess.ts";

/** The text between a markdown file's walk-through markers (see walkthroughBlocks). */
function walkthroughSection(file: string, name: string): string {
  assert.match(name, /^[a-z][a-z0-9-]*$/, "a marker name is lowercase letters, digits and dashes");
  const markdown = readFileSync(path.join(REPO, file), "utf8");
  const section = new RegExp(`<!-- ${name}:start[\\s\\S]*?-->([\\s\\S]*?)<!-- ${name}:end -->`).exec(markdown);
  assert.ok(section, `${name} markers present in ${file}`);
  return section[1]!;
}

/**
 * The fenced blocks of language `lang` (```sh unless given) between a markdown file's walk-through markers, in
 * order: `<!-- NAME:start ... -->` … `<!-- NAME:end -->`, NAME "walkthrough" unless given (a file with several
 * walk-throughs names the others).
 */
export function walkthroughBlocks(file: string, name = "walkthrough", lang = "sh"): string[] {
  assert.match(lang, /^[a-z]+$/);
  return [...walkthroughSection(file, name).matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

/**
 * The files a walk-through shows for the reader to save: its blocks whose info string names a file after the
 * language (```ts generate.ts), by file name, in order. A markdown renderer takes the first word for the language.
 */
export function walkthroughFiles(file: string, name = "walkthrough"): Map<string, string> {
  const blocks = [...walkthroughSection(file, name).matchAll(/```[a-z]+ ([\w.-]+)\n([\s\S]*?)```/g)];
  const files = new Map(blocks.map((m) => [m[1]!, m[2]!]));
  assert.equal(files.size, blocks.length, `each file is shown once in ${file}`);
  return files;
}

export interface WalkthroughSession {
  /** the temporary directory that stands for the doc's ./data */
  data: string;
  /** a doc block with ./data → the temporary directory and 8443 → a free port */
  localise(block: string): string;
  /** runs a script with bash -euo pipefail in the checkout, returns stdout */
  bash(script: string): string;
  /** runs the doc's server-start block in the background until it logs that it listens */
  startServer(block: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Runs a doc's walk-through as written, with two substitutions that keep it off the developer's own ./data and
 * port 8443: `./data` → a temporary directory and `8443` → a free port. The same values go to the CLI as
 * ATTESTD_DATA_DIR / ATTESTD_PORT, which the docs' commands leave to their defaults.
 */
export async function walkthroughSession(env: NodeJS.ProcessEnv = childEnv()): Promise<WalkthroughSession> {
  const tmp = mkdtempSync(path.join(tmpdir(), "attestd-walkthrough-"));
  const data = path.join(tmp, "data");
  const port = await freePort();
  const fullEnv = { ...env, ATTESTD_DATA_DIR: data, ATTESTD_PORT: String(port) };
  let server: ReturnType<typeof spawn> | undefined;
  const localise = (block: string) => block.replaceAll("./data", data).replaceAll("8443", String(port));
  return {
    data,
    localise,
    bash: (script) =>
      execFileSync("bash", ["-euo", "pipefail", "-c", script], {
        cwd: REPO,
        env: fullEnv,
        encoding: "utf8",
        timeout: 150_000,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    startServer: async (block) => {
      const proc = spawn("bash", ["-c", `exec ${localise(block).trim()}`], {
        cwd: REPO,
        env: fullEnv,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      server = proc;
      let log = "";
      proc.stdout!.on("data", (d) => (log += d));
      proc.stderr!.on("data", (d) => (log += d));
      for (let i = 0; !log.includes("attestd listening"); i++) {
        if (proc.exitCode !== null || i > 600) assert.fail(`server did not start: ${log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: async () => {
      if (server && server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((r) => server!.once("exit", r));
        process.kill(-server.pid!, "SIGTERM");
        await exited;
      }
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}
