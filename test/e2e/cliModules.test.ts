import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { attestdCli, childEnv, CLI, REPO } from "../helpers/serverProcess.ts";

/**
 * The `attestd` command loads only what the command it runs needs (src/cli/main.ts): what `--help` or a store
 * command imports is what they take to start, and start-up is what an operator waits for at every call. The
 * timings themselves are the bench's (`npm run bench -- --only startup`); here, which modules a command loads,
 * which stays true on any machine. A module-level import of the server, a logger or a crypto library added to a
 * module every command loads makes this fail.
 */

/** A preload that records every module the process loads, written out as JSON when it exits. */
const RECORDER = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from "node:module";
import { writeFileSync } from "node:fs";
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
process.on("exit", () => writeFileSync(process.env.ATTESTD_TEST_MODULES_OUT, JSON.stringify(loaded)));
`)}`;

interface Loaded {
  /** npm packages, by name */
  packages: Set<string>;
  /** the project's own modules, relative to dist/ (src/cli/main.js, ...) */
  own: string[];
}

function modulesLoadedBy(args: string[], dir: string): Loaded {
  const out = path.join(dir, `modules-${args[0]}.json`);
  const r = spawnSync(process.execPath, ["--import", RECORDER, ...CLI, ...args], {
    cwd: REPO,
    env: { ...childEnv(), ATTESTD_TEST_MODULES_OUT: out },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(r.status, 0, `attestd ${args.join(" ")}: ${r.stderr}`);
  const urls = JSON.parse(readFileSync(out, "utf8")) as string[];
  const packages = new Set<string>();
  const own: string[] = [];
  for (const url of urls) {
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (pkg) packages.add(pkg[1]!);
    else if (url.startsWith(`file://${REPO}/dist/`)) own.push(url.slice(`file://${REPO}/dist/`.length));
  }
  return { packages, own };
}

/** What only `serve` and the appraisal need: the web framework, the logger, the crypto and ASN.1 stack, the drivers. */
const SERVER_PACKAGES = ["fastify", "pino", "pino-pretty", "jose", "@peculiar/x509", "@peculiar/asn1-schema", "pkijs", "asn1js", "typebox", "ajv", "pg", "ioredis", "prom-client", "@simplewebauthn/server", "@opentelemetry/api", "@opentelemetry/sdk-trace"];

describe("the attestd command loads only what the command it runs needs", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-cli-modules-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("--help loads the command table and commander, no command's module", () => {
    const { packages, own } = modulesLoadedBy(["--help"], dir);
    assert.deepEqual([...packages], ["commander"]);
    assert.deepEqual(own.sort(), ["src/cli/main.js", "src/errors/operatorError.js", "src/packageInfo.js"]);
  });

  it("tenant list loads the store and the tenant service: no server, no logger, no crypto library", () => {
    const data = path.join(dir, "data");
    const made = attestdCli(["tenant", "create", "acme", "--data-dir", data]);
    assert.equal(made.status, 0, made.stderr);
    const { packages, own } = modulesLoadedBy(["tenant", "list", "--data-dir", data], dir);
    for (const p of SERVER_PACKAGES) assert.ok(!packages.has(p), `tenant list loaded ${p}`);
    assert.ok(own.includes("src/store/openStores.js"), "it opens the store");
    for (const m of own) assert.doesNotMatch(m, /^src\/(http|server|main|attestation|trust|results|portal)\b/, `tenant list loaded ${m}`);
  });

  it("a command's help loads its own module and not the others'", () => {
    const { own } = modulesLoadedBy(["device-sim", "--help"], dir);
    assert.ok(own.includes("src/cli/simulatorCommands.js"));
    for (const m of ["src/cli/tenantCommands.js", "src/cli/clientCommands.js", "src/cli/serveCommand.js", "src/main.js"]) {
      assert.ok(!own.includes(m), `device-sim --help loaded ${m}`);
    }
  });
});
