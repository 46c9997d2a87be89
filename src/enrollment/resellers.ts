import type { ChangeActor } from "../services/auditTrail.ts";
import type { Clock } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { EnrollmentStore, TenantStore } from "../store/types.ts";
import type { Tenant } from "../domain/tenants.ts";

export interface ResellerView {
  resellerId: string;
  name: string;
  associatedDate: string;
}

/**
 * A customer tenant names the resellers that act for it. `resellerId` is the reseller tenant's tenantId; a
 * customer tenant's id answers RESELLER_NOT_FOUND exactly like an unknown one, so ids cannot be probed for kind.
 */
export class ResellerService {
  constructor(
    private readonly tenants: TenantStore,
    private readonly store: EnrollmentStore,
    private readonly clock: Clock,
  ) {}

  async associate(tenant: Tenant, resellerId: string, by: ChangeActor): Promise<ResellerView> {
    const reseller = resellerId === tenant.tenantId ? undefined : await this.tenants.getTenant(resellerId);
    if (!reseller || reseller.kind !== "reseller") throw new AppError(catalog.RESELLER_NOT_FOUND, "No such reseller");
    const createdAt = new Date(this.clock.nowMs()).toISOString();
    if ((await this.store.associateReseller({ tenantId: tenant.tenantId, resellerId, createdAt })) === "exists") {
      throw new AppError(catalog.RESELLER_ASSOCIATION_ALREADY_EXISTS, "The reseller is already associated with this tenant");
    }
    const view = { resellerId, name: reseller.name, associatedDate: createdAt };
    await by.record({ tenantId: tenant.tenantId, action: "reseller.associated", target: { kind: "reseller", id: resellerId }, before: null, after: view });
    return view;
  }

  async list(tenantId: string): Promise<ResellerView[]> {
    const out: ResellerView[] = [];
    for (const a of await this.store.listResellerAssociations(tenantId)) {
      const r = await this.tenants.getTenant(a.resellerId);
      out.push({ resellerId: a.resellerId, name: r?.name ?? "", associatedDate: a.createdAt });
    }
    return out;
  }
}
