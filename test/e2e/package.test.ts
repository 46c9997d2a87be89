import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import ts from "typescript";
import { Agent, request } from "undici";
import { childEnv, freePort, REPO } from "../helpers/serverProcess.ts";
import { walkthroughBlocks } from "../helpers/walkthrough.ts";

/**
 * attestd as a relying party adopts it (issue 21): `npm pack` in the checkout, `npm install ./attestd-*.tgz` into
 * an empty folder, `npx attestd serve` answering /healthz, and the library entry (the README's "As a library"
 * script) appraising a chain, its types checked by the TypeScript compiler. The tarball is packed from the build
 * `npm test` made (`--ignore-scripts`: no second build).
 */

const npm = (args: string[], cwd: string) =>
  execFileSync("npm", args, { cwd, env: childEnv({ npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" }), encoding: "utf8", timeout: 300_000 });

interface PackedFile {
  path: string;
}

describe("the npm package", () => {
  const tmp = mkdtempSync(path.join(tmpdir(), "attestd-package-"));
  const app = path.join(tmp, "app");
  let files: string[] = [];
  let tarball = "";
  after(() => rmSync(tmp, { recursive: true, force: true }));

  before(() => {
    const [packed] = JSON.parse(npm(["pack", "--json", "--ignore-scripts", "--pack-destination", tmp], REPO)) as [{ filename: string; files: PackedFile[] }];
    files = packed.files.map((f) => f.path);
    tarball = path.join(tmp, packed.filename);
    mkdirSync(app);
    writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "relying-party", private: true, type: "module" }));
    // from the npm cache the checkout's install filled, where it can
    npm(["install", "--prefer-offline", "--no-package-lock", tarball], app);
  });

  it("carries the command, the compiled service, its types and the policies, and no sources, tests or bench", () => {
    for (const f of [
      "package.json",
      "README.md",
      "LICENSE",
      "SECURITY.md",
      "CHANGELOG.md",
      "bin/attestd.js",
      "dist/src/cli/main.js",
      "dist/src/index.js",
      "dist/src/index.d.ts",
      "dist/src/store/sqlite/migrations/001_part_a.sql",
      "dist/src/store/postgres/migrations/001_part_a.sql",
      "dist/src/trust/googleAttestationRoots.pem",
      "dist/src/trust/appleAppAttestationRootCa.pem",
      "dist/web/static/portal.js",
      "docs/deployment.md",
    ]) {
      assert.ok(files.includes(f), `the package lacks ${f}`);
    }
    const stray = files.filter((f) => /^(src|test|bench|reliability|scripts|web|\.ci)\/|^dist\/bench\/|\.ts$(?<!\.d\.ts$)/.test(f));
    assert.deepEqual(stray, [], "sources, tests or bench files in the package");
  });

  it("installs without any development tool: no TypeScript loader among what it brings", () => {
    // `npm ls --parseable` prints the path of each match (and of the project root with it), nothing when none
    const found = (cwd: string, args: string[]) =>
      spawnSync("npm", ["ls", "--parseable", ...args], { cwd, encoding: "utf8" }).stdout.split("\n").filter((l) => l.includes("/node_modules/"));
    assert.deepEqual(found(app, ["--all", "tsx", "typescript"]), []);
    // and the checkout's own runtime dependencies do not bring tsx either
    assert.deepEqual(found(REPO, ["--omit=dev", "tsx"]), []);
  });

  it("npx attestd serve starts from the installed package and answers /healthz", async () => {
    const port = await freePort();
    const data = path.join(tmp, "serve-data");
    const server = spawn("npx", ["--no", "attestd", "serve", "--port", String(port), "--data-dir", data, "--log-format", "json"], {
      cwd: app,
      env: childEnv(),
      stdio: ["ignore", "pipe", "pipe"],
      // npx runs attestd as its child and does not pass a signal on: the test stops the group
      detached: true,
    });
    let out = "";
    server.stdout.on("data", (d) => (out += d));
    server.stderr.on("data", (d) => (out += d));
    const exited = new Promise((resolve) => server.once("exit", resolve));
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        assert.equal(server.exitCode, null, `attestd serve exited: ${out}`);
        assert.ok(Date.now() < deadline, `no /healthz within 60 s: ${out}`);
        if (out.includes("attestd listening")) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const dispatcher = new Agent({ connect: { ca: readFileSync(path.join(data, "tls/ca.pem"), "utf8") } });
      const res = await request(`https://127.0.0.1:${port}/healthz`, { dispatcher });
      assert.equal(res.statusCode, 200);
      await res.body.text();
      await dispatcher.close();
      // the installed package's own files, not the checkout's
      assert.match(out, new RegExp(`${app.replaceAll("/", "\\/")}\\/node_modules\\/attestd\\/dist\\/src\\/trust\\/googleAttestationRoots\\.pem`));
    } finally {
      process.kill(-server.pid!, "SIGTERM");
      await exited;
    }
  });

  it("the README's library example appraises a simulated phone's chain: Success, Yes", () => {
    const [script] = walkthroughBlocks("README.md", "library", "js");
    assert.ok(script, "the README's library block");
    writeFileSync(path.join(app, "appraise.mjs"), script);
    const attestd = (...args: string[]) => execFileSync("npx", ["--no", "attestd", ...args], { cwd: app, env: childEnv(), encoding: "utf8" });
    const ca = path.join(tmp, "android-ca");
    attestd("dev-ca", "--android", "--out", ca);
    const nonce = Buffer.alloc(32, 7).toString("base64url");
    attestd("device-sim", "--format", "android-key", "--ca", ca, "--nonce", nonce, "--out", path.join(tmp, "chain.der"));
    const env = { ...childEnv(), ANDROID_ROOTS: path.join(ca, "root.pem"), ANDROID_STATUS: path.join(ca, "status.json") };
    const out = execFileSync(process.execPath, ["appraise.mjs", path.join(tmp, "chain.der"), nonce], { cwd: app, env, encoding: "utf8" });
    assert.match(out, /^Success Yes /);
    const wrong = execFileSync(process.execPath, ["appraise.mjs", path.join(tmp, "chain.der"), Buffer.alloc(32, 8).toString("base64url")], { cwd: app, env, encoding: "utf8" });
    assert.match(wrong, /^NonceMismatch No /);
  });

  it("its types check a relying party's code, and catch a wrong call", () => {
    const check = (file: string, code: string) => {
      writeFileSync(path.join(app, file), code);
      const program = ts.createProgram([path.join(app, file)], {
        allowJs: true,
        checkJs: true,
        noEmit: true,
        strict: true,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        types: ["node"],
        typeRoots: [path.join(REPO, "node_modules/@types")],
      });
      return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    };
    assert.deepEqual(check("appraise.mjs", readFileSync(path.join(app, "appraise.mjs"), "utf8")), []);
    const wrong = check("wrong.ts", `import { appraise } from "attestd";\nappraise({ blob: "not bytes", nonce: "n", now: new Date() });\n`);
    assert.ok(wrong.length > 0, "a wrong call type-checks: the package's types are not in force");
    assert.ok(wrong.some((m) => /trust/.test(m) || /Uint8Array/.test(m)), wrong.join("\n"));
  });
});
