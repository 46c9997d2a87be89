#!/usr/bin/env node
// The installed `attestd` command (and `npm run attestd`, `npm start` in a checkout): the compiled CLI in dist/,
// which `npm install` builds in a checkout and a package carries ready-made.
try {
  await import("../dist/src/cli/main.js");
} catch (err) {
  if (err?.code !== "ERR_MODULE_NOT_FOUND" || !String(err.message).includes("dist/src/cli/main.js")) throw err;
  process.stderr.write("attestd: dist/ is missing: run `npm run build` (npm install runs it) in the checkout\n");
  process.exit(1);
}
