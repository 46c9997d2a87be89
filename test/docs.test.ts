import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";
import { renderConfigDocs } from "../src/docs/renderConfigDocs.ts";

it("docs/configuration.md matches the settings table (regenerate with src/docs/renderConfigDocs.ts)", () => {
  assert.equal(readFileSync(new URL("../docs/configuration.md", import.meta.url), "utf8"), renderConfigDocs());
});
