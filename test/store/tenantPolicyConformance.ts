import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { TenantPolicyDocument, TenantPolicyVersion } from "../../src/domain/tenantPolicy.ts";
import type { DurableStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * A tenant's policy versions (TenantPolicyStore, issue 26), asserted the same on memory, SQLite and PostgreSQL: a
 * version comes back as it was given, the highest is current, a number that does not follow the highest is a
 * conflict that writes nothing, of concurrent writers of one number exactly one wins, and every read stays within
 * its tenant. Every test works under its own tenants.
 */
export interface TenantPolicyBackend {
  durable: DurableStore;
  close(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function tenantPolicyConformance(name: string, factory: () => Promise<TenantPolicyBackend>): void {
  describe(`tenant policy store conformance: ${name}`, () => {
    let b: TenantPolicyBackend;
    before(async () => {
      b = await factory();
    });
    after(async () => {
      await b.close();
    });

    async function tenant(): Promise<Tenant> {
      const n = randomBytes(9).toString("base64url");
      return b.durable.createTenant({ tenantId: `t_${n}`, name: n, customerId: `c${randomBytes(6).toString("hex")}`, kind: "customer", createdAt: iso(T0) });
    }

    const doc = (minOsPatchLevel: string): TenantPolicyDocument => ({
      android: {
        minOsPatchLevel,
        requiredSecurityLevel: "StrongBox",
        allowedApps: [{ packageName: "com.example.app", signatureDigests: ["ab".repeat(32)] }],
        allowedBootKeys: [{ key: "cd".repeat(32), label: "GrapheneOS", models: ["Pixel 9"] }],
      },
      playIntegrity: { minDeviceVerdict: "MEETS_DEVICE_INTEGRITY" },
      appAttest: { environments: ["production"] },
    });

    const version = (t: Tenant, n: number, d: TenantPolicyDocument, author = "alice@example.com"): TenantPolicyVersion => ({
      tenantId: t.tenantId,
      version: n,
      createdAt: iso(T0 + n * 1000),
      author,
      document: d,
    });

    it("has no policy for a new tenant", async () => {
      const t = await tenant();
      assert.equal(await b.durable.currentTenantPolicy(t.tenantId), undefined);
      assert.deepEqual(await b.durable.listTenantPolicyVersions(t.tenantId, { limit: 10 }), []);
      assert.equal(await b.durable.getTenantPolicyVersion(t.tenantId, 1), undefined);
    });

    it("keeps each version as given; the highest is current; old ones stay readable", async () => {
      const t = await tenant();
      const v1 = version(t, 1, doc("2024-01"), "seed:--android-policy");
      const v2 = version(t, 2, doc("2025-03-05"));
      assert.equal(await b.durable.appendTenantPolicy(v1), "ok");
      assert.deepEqual(await b.durable.currentTenantPolicy(t.tenantId), v1);
      assert.equal(await b.durable.appendTenantPolicy(v2), "ok");
      assert.deepEqual(await b.durable.currentTenantPolicy(t.tenantId), v2);
      assert.deepEqual(await b.durable.getTenantPolicyVersion(t.tenantId, 1), v1);
      assert.deepEqual(await b.durable.listTenantPolicyVersions(t.tenantId, { limit: 10 }), [v2, v1]);
      assert.deepEqual(await b.durable.listTenantPolicyVersions(t.tenantId, { limit: 1 }), [v2]);
      assert.deepEqual(await b.durable.listTenantPolicyVersions(t.tenantId, { before: 2, limit: 10 }), [v1]);
    });

    it("an empty document is a version too", async () => {
      const t = await tenant();
      assert.equal(await b.durable.appendTenantPolicy(version(t, 1, {})), "ok");
      assert.deepEqual((await b.durable.currentTenantPolicy(t.tenantId))?.document, {});
    });

    it("refuses a number that does not follow the highest, writing nothing", async () => {
      const t = await tenant();
      assert.equal(await b.durable.appendTenantPolicy(version(t, 1, doc("2024-01"))), "ok");
      assert.equal(await b.durable.appendTenantPolicy(version(t, 1, doc("2030-01"))), "conflict", "the number is taken");
      assert.equal((await b.durable.currentTenantPolicy(t.tenantId))?.document.android?.minOsPatchLevel, "2024-01");
      assert.equal(await b.durable.appendTenantPolicy(version(t, 2, doc("2025-01"))), "ok");
      assert.equal(await b.durable.appendTenantPolicy(version(t, 2, doc("2030-01"))), "conflict");
      assert.equal((await b.durable.listTenantPolicyVersions(t.tenantId, { limit: 10 })).length, 2);
    });

    it("of concurrent writers of one number, exactly one wins", async () => {
      const t = await tenant();
      const outcomes = await Promise.all(["2024-01", "2024-02", "2024-03", "2024-04"].map((p) => b.durable.appendTenantPolicy(version(t, 1, doc(p)))));
      assert.deepEqual(outcomes.filter((o) => o === "ok").length, 1);
      assert.equal((await b.durable.listTenantPolicyVersions(t.tenantId, { limit: 10 })).length, 1);
    });

    it("keeps tenants apart", async () => {
      const [a, c] = [await tenant(), await tenant()];
      assert.equal(await b.durable.appendTenantPolicy(version(a, 1, doc("2024-01"))), "ok");
      assert.equal(await b.durable.currentTenantPolicy(c.tenantId), undefined);
      assert.equal(await b.durable.getTenantPolicyVersion(c.tenantId, 1), undefined);
      assert.equal(await b.durable.appendTenantPolicy(version(c, 1, doc("2026-01"))), "ok", "numbers are per tenant");
      assert.equal((await b.durable.currentTenantPolicy(a.tenantId))?.document.android?.minOsPatchLevel, "2024-01");
    });
  });
}
