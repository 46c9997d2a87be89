import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "../../src/clock.ts";
import { isAppError } from "../../src/errors/AppError.ts";
import { POLICY_CACHE_MS, SEED_AUTHOR, TenantPolicies } from "../../src/services/tenantPolicies.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { T0 } from "../helpers/clock.ts";
import { testActor } from "../helpers/audit.ts";

/** TenantPolicies (src/services/tenantPolicies.ts): numbering under concurrent writers, the appraisal's cache, seeding. */
describe("TenantPolicies", () => {
  async function setup() {
    const store = new MemoryDurableStore();
    const tenant = await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1", kind: "customer", createdAt: new Date(T0).toISOString() });
    const clock = new ManualClock(T0);
    return { store, tenant, clock, policies: new TenantPolicies(store, clock) };
  }

  it("concurrent writers each get their own version: the one that lost a number takes the next", async () => {
    const { policies, tenant, store } = await setup();
    const written = await Promise.all(["2024-01", "2024-02", "2024-03"].map((p) => policies.set(tenant, { android: { minOsPatchLevel: p } }, testActor(store))));
    assert.deepEqual(written.map((v) => v.version).sort(), [1, 2, 3]);
    assert.deepEqual((await policies.versions(tenant)).map((v) => v.version), [3, 2, 1]);
  });

  it("a refused document is 400 PORTAL_POLICY_INVALID and writes nothing", async () => {
    const { policies, tenant, store } = await setup();
    await assert.rejects(policies.set(tenant, { android: { minOsPatchLevel: 202401 } }, testActor(store)), (e) => isAppError(e) && e.entry.code === "4008026" && /android\.minOsPatchLevel/.test(e.reason));
    assert.equal(await policies.current(tenant), undefined);
    assert.deepEqual(await store.queryAudit({ tenantId: tenant.tenantId, limit: 10 }), [], "and records nothing");
  });

  it("a change and a rollback are recorded in the audit trail, authored by the actor, with the version replaced", async () => {
    const { policies, tenant, store } = await setup();
    const by = testActor(store, { kind: "user", id: "u_1", email: "ada@acme.example" });
    const v1 = await policies.set(tenant, { android: { minOsPatchLevel: "2024-01" } }, by);
    const v2 = await policies.set(tenant, { android: { minOsPatchLevel: "2025-01" } }, by);
    const v3 = await policies.rollback(tenant, 1, testActor(store));
    assert.deepEqual([v1.author, v2.author, v3.author], ["ada@acme.example", "ada@acme.example", "operator:test"]);
    // (one millisecond for all three: ordered by the version each stored)
    const trail = (await store.queryAudit({ tenantId: tenant.tenantId, targetKind: "policy", limit: 10 })).sort(
      (a, b) => (a.after as { version: number }).version - (b.after as { version: number }).version,
    );
    assert.deepEqual(trail.map((r) => [r.action, (r.before as { version?: number } | null)?.version ?? null, (r.after as { version: number }).version]), [
      ["policy.changed", null, 1],
      ["policy.changed", 1, 2],
      ["policy.rolled-back", 2, 3],
    ]);
  });

  it("the appraisal's read is cached for POLICY_CACHE_MS, and a write through the service drops it at once", async () => {
    const { store, policies, tenant, clock } = await setup();
    assert.equal(await policies.forAppraisal(tenant.tenantId), undefined);
    await store.appendTenantPolicy({ tenantId: tenant.tenantId, version: 1, createdAt: "x", author: "elsewhere", document: {} });
    assert.equal(await policies.forAppraisal(tenant.tenantId), undefined, "another writer's version: not before the bound");
    clock.advance(POLICY_CACHE_MS);
    assert.equal((await policies.forAppraisal(tenant.tenantId))?.version, 1);
    await policies.set(tenant, { appAttest: { environments: ["production"] } }, testActor(store));
    assert.equal((await policies.forAppraisal(tenant.tenantId))?.version, 2, "this service's write: at once");
  });

  it("seeds version 1 for a tenant the file names, once, and never over a stored version", async () => {
    const { policies, tenant, store } = await setup();
    const file = { default: {}, tenants: new Map([["acme", { minOsPatchLevel: 202401 }], ["nobody", { minOsPatchLevel: 202501 }]]) };
    const seeded = await Promise.all([policies.seedFromFile(file), policies.seedFromFile(file)]);
    assert.deepEqual(seeded.flat(), ["acme"], "two instances starting together: one writes it");
    const v1 = await policies.current(tenant);
    assert.deepEqual([v1?.version, v1?.author, v1?.document], [1, SEED_AUTHOR, { android: { minOsPatchLevel: "2024-01" } }]);
    assert.deepEqual(await policies.seedFromFile({ default: {}, tenants: new Map([["acme", { minOsPatchLevel: 209901 }]]) }), []);
    assert.equal((await store.listTenantPolicyVersions(tenant.tenantId, { limit: 10 })).length, 1);
  });
});
