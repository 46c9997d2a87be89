import type { Tenant } from "../domain/tenants.ts";
import type { TenantStore } from "../store/types.ts";

/** Tenants looked up by the HTTP layer (which reaches storage only through services). */
export class TenantDirectory {
  constructor(private readonly store: Pick<TenantStore, "getTenant" | "getTenantByName">) {}
  byId(tenantId: string): Promise<Tenant | undefined> {
    return this.store.getTenant(tenantId);
  }
  byName(name: string): Promise<Tenant | undefined> {
    return this.store.getTenantByName(name);
  }
}
