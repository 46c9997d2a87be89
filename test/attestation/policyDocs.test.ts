import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";
import { parseTenantPolicy } from "../../src/attestation/policy/tenantPolicyDocument.ts";

/** docs/policy.md's examples: every JSON policy document it shows is one the parser takes, and its error example is the parser's. */
const doc = readFileSync(new URL("../../docs/policy.md", import.meta.url), "utf8");

it("docs/policy.md: its example documents parse", () => {
  const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const inShell = [...doc.matchAll(/<<'JSON'\n([\s\S]*?)\nJSON/g)].map((m) => m[1]!);
  assert.ok(blocks.length + inShell.length >= 2);
  for (const text of [...blocks, ...inShell]) {
    const r = parseTenantPolicy(JSON.parse(text));
    assert.ok(r.ok, `${text} → ${JSON.stringify(r)}`);
  }
});

it("docs/policy.md: the error example is what the parser says", () => {
  const r = parseTenantPolicy({ android: { minOsPatchLevel: "2025" }, appAttest: { environments: ["staging"] } });
  assert.ok(!r.ok);
  const said = r.problems.map((p) => `${p.path}: ${p.message}`).join("; ");
  assert.ok(doc.includes(said), said);
});
