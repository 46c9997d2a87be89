import type { AndroidTrust, TrustConfig, VendorTrust } from "../attestation/types.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { AndroidPolicies } from "./androidPolicyFile.ts";

/**
 * The per-tenant combination of the two trust halves: the vendor trust, and the android-key trust with the
 * tenant's --android-policy overrides laid over the default policy.
 */

/**
 * The trust for a tenant now. Objects are reused while nothing changes (the same TrustConfig per tenant policy
 * and trust generation) so the appraisal's per-trust caches stay warm between calls.
 */
export function tenantTrust(
  vendor: () => VendorTrust,
  android: () => AndroidTrust,
  policies: AndroidPolicies,
): (tenant: Pick<Tenant, "name">) => TrustConfig {
  let base: TrustConfig | undefined;
  let perTenant = new Map<string, TrustConfig>();
  return (tenant) => {
    const v = vendor();
    const a = android();
    if (!base || base.vendor !== v || base.android !== a) {
      base = { vendor: v, android: a };
      perTenant = new Map();
    }
    const own = policies.tenants.get(tenant.name);
    if (!own) return base;
    let t = perTenant.get(tenant.name);
    if (!t) {
      t = { vendor: v, android: { ...a, policy: { ...a.policy, ...own } } };
      perTenant.set(tenant.name, t);
    }
    return t;
  };
}
