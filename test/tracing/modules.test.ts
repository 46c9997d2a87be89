import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { REPO } from "../helpers/serverProcess.ts";

/**
 * "Free when off" (docs/traces.md): without --otlp-endpoint no module of the OpenTelemetry SDK is loaded, only the
 * API package (whose calls are then never made: spans.ts tests a boolean first). The same request with tracing on
 * loads the SDK, which shows the check can tell the two apart.
 */

/** the preload of test/e2e/cliModules.test.ts: records every module the process loads, written out at exit */
const RECORDER = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from "node:module";
import { writeFileSync } from "node:fs";
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
process.on("exit", () => writeFileSync(process.env.ATTESTD_TEST_MODULES_OUT, JSON.stringify(loaded)));
`)}`;

/** the npm packages one runtime loads to answer one request, by name */
function packagesLoaded(dir: string, env: Record<string, string>): Set<string> {
  const out = path.join(dir, `modules-${JSON.stringify(env).replace(/\W/g, "")}.json`);
  const r = spawnSync(process.execPath, ["--import", RECORDER, "--import", "tsx", path.join(REPO, "test/tracing/fixtures/oneRequest.ts")], {
    cwd: REPO,
    env: { ...process.env, ...env, ATTESTD_TEST_MODULES_OUT: out },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const packages = new Set<string>();
  for (const url of JSON.parse(readFileSync(out, "utf8")) as string[]) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m) packages.add(m[1]!);
  }
  return packages;
}

function otelPackagesLoaded(dir: string, env: Record<string, string>): Set<string> {
  return new Set([...packagesLoaded(dir, env)].filter((p) => p.startsWith("@opentelemetry/")));
}

describe("the OpenTelemetry SDK is loaded only when tracing is on", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-trace-modules-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("off: only @opentelemetry/api, even with OTEL_* variables set", () => {
    const loaded = otelPackagesLoaded(dir, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_TRACES_EXPORTER: "otlp" });
    assert.deepEqual([...loaded], ["@opentelemetry/api"]);
  });

  it("on: the SDK, the exporter and the context manager", () => {
    // a collector nobody answers at (port 9, discard): loading is what is checked, and shutdown's wait is bounded
    const loaded = otelPackagesLoaded(dir, { ATTESTD_TEST_OTLP_ENDPOINT: "http://127.0.0.1:9" });
    for (const p of ["@opentelemetry/sdk-trace", "@opentelemetry/exporter-trace-otlp-http", "@opentelemetry/context-async-hooks"]) {
      assert.ok(loaded.has(p), `${p} not loaded: ${[...loaded].join(", ")}`);
    }
  });
});

/** The same for single sign-on (docs/sso.md): openid-client is loaded by a deployment that configured a provider only. */
describe("openid-client is loaded only when single sign-on is configured", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-sso-modules-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("off: not loaded; on: loaded (the provider is found at the first sign-in, so none need answer here)", () => {
    assert.ok(!packagesLoaded(dir, {}).has("openid-client"));
    const secretFile = path.join(dir, "client-secret");
    writeFileSync(secretFile, "s3cret\n", { mode: 0o600 });
    assert.ok(packagesLoaded(dir, { ATTESTD_TEST_SSO_SECRET_FILE: secretFile }).has("openid-client"));
  });
});
