import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ReferenceValue } from "../../src/attestation/types.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { tenantTrust } from "../../src/trust/tenantTrust.ts";
import { VendorTrustSource } from "../../src/trust/vendorTrustSource.ts";
import { emptyAndroidTrust } from "../../src/trust/androidTrustSource.ts";
import { loadAndroidPolicies } from "../../src/trust/androidPolicyFile.ts";
import { T0 } from "../helpers/clock.ts";

const iso = new Date(T0).toISOString();
const set = (firmwareVersion: string, digit = "a"): ReferenceValue => ({ model: "M", firmwareVersion, measurements: [digit.repeat(64)] });

describe("vendor trust per tenant", () => {
  async function setup() {
    const store = new MemoryDurableStore();
    for (const name of ["acme", "globex"]) {
      await store.createTenant({ tenantId: `t_${name}`, name, customerId: name === "acme" ? "1" : "2", kind: "customer", createdAt: iso });
    }
    return { store, source: await VendorTrustSource.open({}, store) };
  }

  it("gives a tenant its own sets beside the global ones, and keeps every object while nothing changes", async () => {
    const { store, source } = await setup();
    await store.upsertReferenceValues([set("G")], iso);
    await store.upsertReferenceValues([set("A")], iso, "t_acme");
    await source.refresh();
    const acme = source.forTenant("t_acme");
    assert.deepEqual(acme.tenantReferenceValues, [set("A")]);
    assert.deepEqual(acme.referenceValues, [set("G")]);
    assert.equal(source.forTenant("t_globex"), source.get(), "no sets of its own: the shared object");
    assert.equal(acme.rootsDer, source.get().rootsDer, "one roots array for all (the chain cache is keyed on it)");

    await source.refresh();
    assert.equal(source.forTenant("t_acme"), acme, "nothing changed: the same object");

    await store.upsertReferenceValues([set("B")], iso, "t_globex");
    await source.refresh();
    assert.equal(source.forTenant("t_acme"), acme, "another tenant's change leaves acme's object");
    assert.deepEqual(source.forTenant("t_globex").tenantReferenceValues, [set("B")]);

    await store.upsertReferenceValues([set("G", "b")], iso);
    await source.refresh();
    assert.notEqual(source.forTenant("t_acme"), acme, "a global change reaches every tenant");
    assert.deepEqual(source.forTenant("t_acme").referenceValues, [set("G", "b")]);

    await store.deleteReferenceSet("t_acme", "M", "A");
    await source.refresh();
    assert.equal(source.forTenant("t_acme"), source.get(), "its last own set gone: back to the shared object");
  });

  it("refreshes one after another: a read asked for after a write never loses to an older one", async () => {
    const { store, source } = await setup();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const list = store.listReferenceSets.bind(store);
    let calls = 0;
    store.listReferenceSets = async (q) => {
      const rows = await list(q); // read now ...
      if (++calls === 1) await gate; // ... but the first read lands late
      return rows;
    };
    const stale = source.refresh();
    await store.upsertReferenceValues([set("A")], iso, "t_acme");
    const fresh = source.refresh();
    release();
    await Promise.all([stale, fresh]);
    assert.deepEqual(source.forTenant("t_acme").tenantReferenceValues, [set("A")]);
  });

  it("tenantTrust shares one TrustConfig for tenants with nothing of their own", async () => {
    const { store, source } = await setup();
    await store.upsertReferenceValues([set("A")], iso, "t_acme");
    await source.refresh();
    const android = emptyAndroidTrust();
    const forTenant = tenantTrust(source, () => android, loadAndroidPolicies(undefined, undefined));
    const globex = forTenant({ name: "globex", tenantId: "t_globex" });
    assert.equal(forTenant({ name: "other", tenantId: "t_other" }), globex);
    const acme = forTenant({ name: "acme", tenantId: "t_acme" });
    assert.notEqual(acme, globex);
    assert.equal(forTenant({ name: "acme", tenantId: "t_acme" }), acme, "stable");
    assert.deepEqual(acme.vendor.tenantReferenceValues, [set("A")]);
  });

  it("tenantTrust lays a stored policy version over the file's default, adds its boot keys, and keeps one object per version", async () => {
    const { source } = await setup();
    const policies = { default: { minOsPatchLevel: 202001, factoryExpiry: "refuse" as const }, tenants: new Map([["acme", { minOsPatchLevel: 202301 }]]) };
    const android = { ...emptyAndroidTrust(), allowedBootKeys: [{ key: "aa".repeat(32), label: "operator's" }], policy: policies.default };
    const forTenant = tenantTrust(source, () => android, policies);
    const acme = { name: "acme", tenantId: "t_acme" };
    assert.equal(forTenant(acme).android.policy.minOsPatchLevel, 202301, "no stored version: the file's section");
    const stored = (version: number) => ({
      tenantId: "t_acme",
      version,
      createdAt: iso,
      author: "a",
      document: { android: { minOsPatchLevel: "2025-02", requiredSecurityLevel: "StrongBox" as const, allowedBootKeys: [{ key: "bb".repeat(32), label: "acme's" }] } },
    });
    const v2 = forTenant(acme, stored(2));
    assert.deepEqual(v2.android.policy, { minOsPatchLevel: 202502, factoryExpiry: "refuse", requiredSecurityLevel: "StrongBox" }, "stored fields over the default; the file's acme section is not used");
    assert.deepEqual(v2.android.allowedBootKeys.map((k) => k.label), ["operator's", "acme's"]);
    assert.deepEqual(v2.tenantPolicy, { version: 2 });
    assert.equal(forTenant(acme, stored(2)), v2, "the same version (another read of it), the same object");
    assert.notEqual(forTenant(acme, stored(3)), v2);
    assert.deepEqual(forTenant({ name: "globex", tenantId: "t_globex" }).android.allowedBootKeys.map((k) => k.label), ["operator's"], "another tenant's devices do not get acme's keys");
  });
});
