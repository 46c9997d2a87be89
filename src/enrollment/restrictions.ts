import type { ChangeActor } from "../services/auditTrail.ts";
import { parseRestrictions, type RestrictionInput } from "../auth/restrictions.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { EnrollmentStore, TenantStore } from "../store/types.ts";
import type { ApiKeyRestrictions } from "../domain/tenants.ts";

export interface RestrictionView {
  keyId: string;
  kind: "apiKey" | "client";
  ipAddresses: string[];
  referers: string[];
}

/**
 * API-key restrictions set through Part B. A client may restrict the keys of its own tenant: Part A API keys
 * (keyId = the key id `attestd key create` reports) and Part B clients (keyId = the clientId), itself included.
 * Another tenant's key and an unknown key get the same 403, so key ids cannot be probed across tenants.
 */
export class RestrictionService {
  constructor(
    private readonly tenants: TenantStore,
    private readonly store: EnrollmentStore,
  ) {}

  private async find(tenantId: string, keyId: string): Promise<{ kind: "apiKey" | "client"; restrictions: ApiKeyRestrictions | null }> {
    const key = await this.tenants.getApiKey(keyId);
    if (key && key.tenantId === tenantId && key.revokedAt === null) return { kind: "apiKey", restrictions: key.restrictions };
    const client = await this.store.getClient(keyId);
    if (client && client.tenantId === tenantId) return { kind: "client", restrictions: client.restrictions };
    throw new AppError(catalog.B_FORBIDDEN, "No such key in this tenant");
  }

  async get(tenantId: string, keyId: string): Promise<RestrictionView> {
    const found = await this.find(tenantId, keyId);
    return { keyId, kind: found.kind, ipAddresses: found.restrictions?.ipAddresses ?? [], referers: found.restrictions?.referers ?? [] };
  }

  async set(tenantId: string, keyId: string, input: RestrictionInput, by: ChangeActor): Promise<RestrictionView> {
    const parsed = parseRestrictions(input);
    if (!parsed.ok) throw new AppError(catalog.API_KEY_RESTRICTION_INVALID, parsed.reason);
    const found = await this.find(tenantId, keyId);
    await this.write(found.kind, keyId, parsed.restrictions);
    const after = { keyId, kind: found.kind, ...parsed.restrictions };
    await by.record({ tenantId, action: "restrictions.set", target: { kind: found.kind === "apiKey" ? "api-key" : "api-client", id: keyId }, before: { restrictions: found.restrictions }, after });
    return after;
  }

  async clear(tenantId: string, keyId: string, by: ChangeActor): Promise<RestrictionView> {
    const found = await this.find(tenantId, keyId);
    await this.write(found.kind, keyId, null);
    await by.record({ tenantId, action: "restrictions.cleared", target: { kind: found.kind === "apiKey" ? "api-key" : "api-client", id: keyId }, before: { restrictions: found.restrictions }, after: { restrictions: null } });
    return { keyId, kind: found.kind, ipAddresses: [], referers: [] };
  }

  private async write(kind: "apiKey" | "client", keyId: string, r: ApiKeyRestrictions | null): Promise<void> {
    if (kind === "apiKey") await this.tenants.setApiKeyRestrictions(keyId, r);
    else await this.store.setClientRestrictions(keyId, r);
  }
}
