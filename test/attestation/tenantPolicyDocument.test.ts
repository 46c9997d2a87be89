import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { androidPolicyOf, androidSectionOf, parseTenantPolicy, patchLevelNumber } from "../../src/attestation/policy/tenantPolicyDocument.ts";

/** The policy document's one parser (docs/policy.md): every rule names the field it refuses. */
const problemsOf = (value: unknown): string[] => {
  const r = parseTenantPolicy(value);
  assert.equal(r.ok, false, "refused");
  return r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);
};

describe("tenant policy document", () => {
  it("takes a full document and gives it back normalised (digests and boot keys lowercase)", () => {
    const r = parseTenantPolicy({
      android: {
        allowedApps: [{ packageName: "com.acme.app", signatureDigests: ["AB".repeat(32)] }, { packageName: "com.acme.other" }],
        minOsPatchLevel: "2025-03-05",
        requiredSecurityLevel: "StrongBox",
        factoryExpiry: "refuse",
        allowedBootKeys: [{ key: "CD".repeat(32), label: "GrapheneOS", models: ["Pixel 9"] }],
      },
      playIntegrity: { minDeviceVerdict: "MEETS_DEVICE_INTEGRITY" },
      appAttest: { environments: ["production"] },
    });
    assert.ok(r.ok);
    assert.equal(r.document.android?.allowedApps?.[0]?.signatureDigests?.[0], "ab".repeat(32));
    assert.equal(r.document.android?.allowedBootKeys?.[0]?.key, "cd".repeat(32));
    assert.deepEqual(parseTenantPolicy({}), { ok: true, document: {} });
  });

  it("names every faulty field by its path", () => {
    const cases: [unknown, RegExp][] = [
      [[], /^: must be an object$/],
      [{ ios: {} }, /^ios: unknown field/],
      [{ android: [] }, /^android: must be an object$/],
      [{ android: { minPatch: 1 } }, /^android\.minPatch: unknown field/],
      [{ android: { minOsPatchLevel: 202401 } }, /^android\.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD$/],
      [{ android: { minOsPatchLevel: "2024-13" } }, /^android\.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD$/],
      [{ android: { minOsPatchLevel: "2024-02-32" } }, /^android\.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD$/],
      [{ android: { requiredSecurityLevel: "Software" } }, /^android\.requiredSecurityLevel: must be one of TrustedEnvironment, StrongBox$/],
      [{ android: { factoryExpiry: "maybe" } }, /^android\.factoryExpiry: must be one of accept, refuse$/],
      [{ android: { allowedApps: {} } }, /^android\.allowedApps: must be a list of apps$/],
      [{ android: { allowedApps: [{ packageName: "com acme" }] } }, /^android\.allowedApps\[0\]\.packageName: must be a package name/],
      [{ android: { allowedApps: [{ packageName: "a.b" }, { packageName: "a.b" }] } }, /^android\.allowedApps\[1\]\.packageName: a\.b is listed twice$/],
      [{ android: { allowedApps: [{ packageName: "a.b", signatureDigests: ["00"] }] } }, /^android\.allowedApps\[0\]\.signatureDigests\[0\]: must be a SHA-256 digest/],
      [{ android: { allowedApps: [{ packageName: "a.b", signatureDigests: [] }] } }, /^android\.allowedApps\[0\]\.signatureDigests: must list at least one digest/],
      [{ android: { allowedApps: [{ packageName: "a.b", extra: 1 }] } }, /^android\.allowedApps\[0\]\.extra: unknown field/],
      [{ android: { allowedBootKeys: [{ key: "xyz", label: "x" }] } }, /^android\.allowedBootKeys\[0\]\.key: must be hex of 16 to 64 bytes/],
      [{ android: { allowedBootKeys: [{ key: "ab".repeat(32), label: " " }] } }, /^android\.allowedBootKeys\[0\]\.label: must be 1 to 200 characters$/],
      [{ android: { allowedBootKeys: [{ key: "ab".repeat(32), label: "x", models: [] }] } }, /^android\.allowedBootKeys\[0\]\.models: must be a non-empty list/],
      [{ android: { allowedBootKeys: [{ key: "ab".repeat(32), label: "x" }, { key: "AB".repeat(32), label: "y" }] } }, /^android\.allowedBootKeys\[1\]\.key: is listed twice$/],
      [{ playIntegrity: { minDeviceVerdict: "MEETS_VIRTUAL_INTEGRITY" } }, /^playIntegrity\.minDeviceVerdict: must be one of MEETS_BASIC_INTEGRITY/],
      [{ playIntegrity: { floor: 1 } }, /^playIntegrity\.floor: unknown field/],
      [{ appAttest: { environments: [] } }, /^appAttest\.environments: must name production, development or both$/],
      [{ appAttest: { environments: ["staging"] } }, /^appAttest\.environments\[0\]: must be one of production, development$/],
      [{ appAttest: { environments: ["production", "production"] } }, /^appAttest\.environments: names an environment twice$/],
    ];
    for (const [value, want] of cases) {
      const problems = problemsOf(value);
      assert.ok(problems.some((p) => want.test(p)), `${JSON.stringify(value)} → ${JSON.stringify(problems)}`);
    }
  });

  it("reports all problems at once", () => {
    assert.equal(problemsOf({ android: { minOsPatchLevel: "x", factoryExpiry: "y" }, appAttest: { environments: ["z"] } }).length, 3);
  });

  it("converts patch levels both ways, as the file writes them and as the document does", () => {
    assert.equal(patchLevelNumber("2024-01"), 202401);
    assert.equal(patchLevelNumber("2024-01-05"), 20240105);
    assert.deepEqual(androidSectionOf({ minOsPatchLevel: 20240105, factoryExpiry: "refuse" }), { minOsPatchLevel: "2024-01-05", factoryExpiry: "refuse" });
    assert.deepEqual(androidPolicyOf({ minOsPatchLevel: "2024-01", requiredSecurityLevel: "StrongBox" }), { minOsPatchLevel: 202401, requiredSecurityLevel: "StrongBox" });
  });
});
