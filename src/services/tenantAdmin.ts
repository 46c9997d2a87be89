import type { Clock, Rng } from "../clock.ts";
import type { Tenant, TenantKind, TenantState } from "../domain/tenants.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { TenantStore } from "../store/types.ts";
import type { ChangeActor } from "./auditTrail.ts";

export const TENANT_STATES: readonly TenantState[] = ["active", "inactive", "blocked"];
export const TENANT_NAME = /^[A-Za-z0-9._-]{1,64}$/;
export const CUSTOMER_ID = /^\d{1,20}$/;

/**
 * Tenants as the operator manages them, for `attestd tenant ...` and the portal's Tenants page alike: one home
 * for what a valid name is, how a tenant is made (its id and customer ID from the CSPRNG), and how its state and
 * enrollment are changed. Refusals are catalog errors; the CLI prints their reason.
 */
export class TenantAdmin {
  constructor(
    private readonly store: TenantStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
  ) {}

  list(): Promise<Tenant[]> {
    return this.store.listTenants();
  }

  async create(o: { name: string; kind?: TenantKind; customerId?: string }, by: ChangeActor): Promise<Tenant> {
    if (!TENANT_NAME.test(o.name)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a tenant name is 1-64 of A-Z a-z 0-9 . _ -");
    if (o.customerId !== undefined && !CUSTOMER_ID.test(o.customerId)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a customer ID is 1-20 digits");
    if (await this.store.getTenantByName(o.name)) throw new AppError(catalog.PORTAL_TENANT_EXISTS, `tenant "${o.name}" already exists`);
    const customerId = o.customerId ?? this.randomCustomerId();
    if (await this.store.getTenantByCustomerId(customerId)) throw new AppError(catalog.PORTAL_TENANT_EXISTS, `customer ID ${customerId} is taken`);
    const tenant = await this.store.createTenant({
      tenantId: "t_" + this.rng.bytes(9).toString("base64url"),
      name: o.name,
      customerId,
      kind: o.kind ?? "customer",
      createdAt: new Date(this.clock.nowMs()).toISOString(),
    });
    await by.record({ tenantId: tenant.tenantId, action: "tenant.created", target: { kind: "tenant", id: tenant.tenantId }, before: null, after: tenant });
    return tenant;
  }

  /** blocked and inactive tenants are refused (403) by Part A and Part B */
  async setState(name: string, state: TenantState, by: ChangeActor): Promise<Tenant> {
    if (!TENANT_STATES.includes(state)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `state must be one of ${TENANT_STATES.join(", ")}`);
    const before = await this.store.getTenantByName(name);
    if (!before || !(await this.store.setTenantState(name, state))) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant named "${name}"`);
    const after = (await this.store.getTenantByName(name))!;
    if (before.state !== after.state) {
      const action = state === "active" ? "tenant.activated" : state === "blocked" ? "tenant.blocked" : "tenant.suspended";
      await by.record({ tenantId: after.tenantId, action, target: { kind: "tenant", id: after.tenantId }, before, after });
    }
    return after;
  }

  /** resellers may use the enrollment API only once enabled */
  async setEnrollment(name: string, enabled: boolean, by: ChangeActor): Promise<Tenant> {
    const before = await this.store.getTenantByName(name);
    if (!before || !(await this.store.setEnrollmentEnabled(name, enabled))) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant named "${name}"`);
    const after = (await this.store.getTenantByName(name))!;
    if (before.enrollmentEnabled !== after.enrollmentEnabled) {
      await by.record({ tenantId: after.tenantId, action: enabled ? "tenant.enrollment-enabled" : "tenant.enrollment-disabled", target: { kind: "tenant", id: after.tenantId }, before, after });
    }
    return after;
  }

  /** 10 digits, the first not 0 */
  private randomCustomerId(): string {
    const digits = Array.from(this.rng.bytes(10), (b) => String(b % 10));
    if (digits[0] === "0") digits[0] = "1";
    return digits.join("");
  }
}
