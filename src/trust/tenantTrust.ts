import type { AndroidTrust, AppAttestTrust, TrustConfig, VendorTrust } from "../attestation/types.ts";
import { androidPolicyOf, bootKeysOf } from "../attestation/policy/tenantPolicyDocument.ts";
import type { TenantPolicyVersion } from "../domain/tenantPolicy.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { AndroidPolicies } from "./androidPolicyFile.ts";

/**
 * The per-tenant combination of the two trust halves: the vendor trust with the tenant's own reference values (if
 * any), and the android-key trust with the tenant's policy laid over the default policy of --android-policy.
 *
 * The tenant's policy is its stored version when it has one (docs/policy.md): the version's android section
 * replaces the default's fields it sets, its boot keys join the operator's allow-list, and its number and floors
 * ride along as `tenantPolicy`. Without a stored version, the file's section for the tenant (if any) applies as
 * before the store held policies.
 */

export type TrustTenant = Pick<Tenant, "name" | "tenantId">;

/**
 * The trust for a tenant now. Objects are reused while nothing changes (the same TrustConfig per tenant while its
 * vendor and android halves and its policy version are the same; one shared TrustConfig for every tenant with
 * nothing of its own) so the appraisal's per-trust caches (the policy id among them) stay warm between calls.
 */
export function tenantTrust(
  vendor: { get(): VendorTrust; forTenant(tenantId: string): VendorTrust },
  android: () => AndroidTrust,
  policies: AndroidPolicies,
  appAttest?: AppAttestTrust,
): (tenant: TrustTenant, stored?: TenantPolicyVersion) => TrustConfig {
  const apple = appAttest ? { appAttest } : {};
  let base: TrustConfig | undefined;
  const perTenant = new Map<string, { vendor: VendorTrust; android: AndroidTrust; version: number | undefined; trust: TrustConfig }>();
  return (tenant, stored) => {
    const shared = vendor.get();
    const v = vendor.forTenant(tenant.tenantId);
    const a = android();
    if (!base || base.vendor !== shared || base.android !== a) {
      base = { vendor: shared, android: a, ...apple };
      perTenant.clear();
    }
    const own = stored ? undefined : policies.tenants.get(tenant.name);
    if (!own && !stored && v === shared) return base;
    const cached = perTenant.get(tenant.tenantId);
    // a version is immutable: the same number is the same document
    if (cached && cached.vendor === v && cached.android === a && cached.version === stored?.version) return cached.trust;
    let trust: TrustConfig;
    if (stored) {
      const section = stored.document.android ?? {};
      const bootKeys = bootKeysOf(section);
      const tenantPolicy = {
        version: stored.version,
        ...(stored.document.playIntegrity?.minDeviceVerdict ? { playIntegrityFloor: stored.document.playIntegrity.minDeviceVerdict } : {}),
        ...(stored.document.appAttest?.environments ? { appAttestEnvironments: stored.document.appAttest.environments } : {}),
      };
      trust = {
        vendor: v,
        android: {
          ...a,
          policy: { ...a.policy, ...androidPolicyOf(section) },
          ...(bootKeys.length ? { allowedBootKeys: [...a.allowedBootKeys, ...bootKeys.filter((k) => !a.allowedBootKeys.some((o) => o.key === k.key))] } : {}),
        },
        ...apple,
        tenantPolicy,
      };
    } else {
      trust = { vendor: v, android: own ? { ...a, policy: { ...a.policy, ...own } } : a, ...apple };
    }
    perTenant.set(tenant.tenantId, { vendor: v, android: a, version: stored?.version, trust });
    return trust;
  };
}
