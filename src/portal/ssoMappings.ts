import type { Clock } from "../clock.ts";
import type { SsoMapping, TenantRole } from "../domain/portal.ts";
import { unsafeCharIn, unsafeTextReason } from "../domain/text.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import type { SsoStore, TenantStore } from "../store/types.ts";

/** A mapping as `attestd sso list` and the admin API show it: the tenant by name. */
export interface SsoMappingView {
  kind: SsoMapping["kind"];
  value: string;
  tenant: string;
  role: TenantRole;
  createdAt: string;
}

/** Names a provider identity the way an operator knows it: its subject, or its (verified) email. */
export type SsoIdentityRef = { subject: string } | { email: string };

/**
 * An operator's single sign-on mappings (docs/sso.md, "Mapping people"): a provider's subject, or a verified email,
 * to a tenant and a role, for `attestd sso map|unmap|list` and the portal's admin API alike. Roles are admin or
 * viewer: a mapping never makes an operator.
 */
export class SsoMappings {
  constructor(
    private readonly store: SsoStore & Pick<TenantStore, "getTenantByName" | "listTenants">,
    private readonly clock: Clock,
  ) {}

  async map(ref: SsoIdentityRef, tenantName: string, role: TenantRole, by: ChangeActor): Promise<SsoMappingView> {
    const { kind, value } = keyOf(ref);
    if (role !== "admin" && role !== "viewer") throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a mapping's role is admin or viewer: single sign-on never makes an operator");
    const tenant = await this.store.getTenantByName(tenantName);
    if (!tenant) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant "${tenantName}"`);
    const m: SsoMapping = { kind, value, tenantId: tenant.tenantId, role, createdAt: new Date(this.clock.nowMs()).toISOString() };
    const before = await this.store.getSsoMapping(kind, value);
    await this.store.putSsoMapping(m);
    const view = { kind, value, tenant: tenant.name, role, createdAt: m.createdAt };
    await by.record({ tenantId: tenant.tenantId, action: "sso.mapping-set", target: { kind: "sso-mapping", id: `${kind}:${value}` }, before: before ?? null, after: view });
    return view;
  }

  /** false when there was no such mapping */
  async unmap(ref: SsoIdentityRef, by: ChangeActor): Promise<boolean> {
    const { kind, value } = keyOf(ref);
    const before = await this.store.getSsoMapping(kind, value);
    const removed = await this.store.deleteSsoMapping(kind, value);
    if (removed && before) await by.record({ tenantId: before.tenantId, action: "sso.mapping-removed", target: { kind: "sso-mapping", id: `${kind}:${value}` }, before, after: null });
    return removed;
  }

  async list(): Promise<SsoMappingView[]> {
    const names = new Map((await this.store.listTenants()).map((t) => [t.tenantId, t.name]));
    return (await this.store.listSsoMappings()).map((m) => ({ kind: m.kind, value: m.value, tenant: names.get(m.tenantId) ?? m.tenantId, role: m.role, createdAt: m.createdAt }));
  }
}

/** The stored key of a reference: a subject as given, an email lowercase. */
export function keyOf(ref: SsoIdentityRef): { kind: SsoMapping["kind"]; value: string } {
  const [kind, raw] = "subject" in ref ? (["subject", ref.subject] as const) : (["email", ref.email] as const);
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 255) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `a ${kind} is 1 to 255 characters`);
  const unsafe = unsafeCharIn(raw);
  if (unsafe) throw new AppError(catalog.PORTAL_INVALID_REQUEST, unsafeTextReason(`a ${kind}`, unsafe));
  if (kind === "email") {
    const email = raw.trim().toLowerCase();
    if (!/^[^\s@]{1,64}@[^\s@]{1,190}$/.test(email)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `"${raw}" is not an email address`);
    return { kind, value: email };
  }
  return { kind, value: raw };
}
