#!/usr/bin/env node
// `npm run build` (also run by `npm install` in a checkout, and before `npm pack`): compiles src/, web/ and bench/
// to dist/ with tsc, then copies the files the compiled modules read beside themselves (SQL migrations, the built-in
// Android roots, the portal's static files), so dist/ runs without the TypeScript sources or a TypeScript loader.
// Plain JavaScript on purpose: it runs before anything is compiled.
import { spawnSync } from "node:child_process";
import { cpSync, globSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const out = path.join(root, "dist");
const started = performance.now();

// A clean build: a module deleted from src/ must not live on in dist/ (or in a package made from it).
rmSync(out, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const compiled = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { stdio: "inherit" });
if (compiled.status !== 0) {
  process.stderr.write("build: tsc failed\n");
  process.exit(compiled.status ?? 1);
}

const assets = globSync(["src/**/*.sql", "src/**/*.pem", "web/static/**/*.*"], { cwd: root });
for (const file of assets) {
  mkdirSync(path.dirname(path.join(out, file)), { recursive: true });
  cpSync(path.join(root, file), path.join(out, file));
}

const modules = globSync("**/*.js", { cwd: out }).length;
process.stderr.write(`build: dist/ (${modules} modules, ${assets.length} assets) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
