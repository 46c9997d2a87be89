import type { AndroidTrust, AppAttestTrust, TrustConfig, VendorTrust } from "../attestation/types.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { AndroidPolicies } from "./androidPolicyFile.ts";

/**
 * The per-tenant combination of the two trust halves: the vendor trust with the tenant's own reference values (if
 * any), and the android-key trust with the tenant's --android-policy overrides laid over the default policy.
 */

export type TrustTenant = Pick<Tenant, "name" | "tenantId">;

/**
 * The trust for a tenant now. Objects are reused while nothing changes (the same TrustConfig per tenant while its
 * vendor and android halves are the same objects; one shared TrustConfig for every tenant with nothing of its own)
 * so the appraisal's per-trust caches stay warm between calls.
 */
export function tenantTrust(
  vendor: { get(): VendorTrust; forTenant(tenantId: string): VendorTrust },
  android: () => AndroidTrust,
  policies: AndroidPolicies,
  appAttest?: AppAttestTrust,
): (tenant: TrustTenant) => TrustConfig {
  const apple = appAttest ? { appAttest } : {};
  let base: TrustConfig | undefined;
  const perTenant = new Map<string, { vendor: VendorTrust; android: AndroidTrust; trust: TrustConfig }>();
  return (tenant) => {
    const shared = vendor.get();
    const v = vendor.forTenant(tenant.tenantId);
    const a = android();
    if (!base || base.vendor !== shared || base.android !== a) {
      base = { vendor: shared, android: a, ...apple };
      perTenant.clear();
    }
    const own = policies.tenants.get(tenant.name);
    if (!own && v === shared) return base;
    const cached = perTenant.get(tenant.tenantId);
    if (cached && cached.vendor === v && cached.android === a) return cached.trust;
    const trust = { vendor: v, android: own ? { ...a, policy: { ...a.policy, ...own } } : a, ...apple };
    perTenant.set(tenant.tenantId, { vendor: v, android: a, trust });
    return trust;
  };
}
