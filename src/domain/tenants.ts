/**
 * Tenants and their Part A API keys: nouns every layer speaks (services, enrollment, CLI, store). Plain records;
 * how and where they are kept is store/'s concern (store/types.ts).
 */

export type TenantKind = "customer" | "reseller";

export type TenantState = "active" | "inactive" | "blocked";

export interface Tenant {
  tenantId: string;
  name: string;
  customerId: string;
  kind: TenantKind;
  state: TenantState;
  /** resellers are blocked from enrollment until the operator enables them */
  enrollmentEnabled: boolean;
  createdAt: string;
}

export interface NewTenant {
  tenantId: string;
  name: string;
  customerId: string;
  kind: TenantKind;
  createdAt: string;
}

export interface ApiKeyRestrictions {
  ipAddresses: string[];
  referers: string[];
}

export interface ApiKeyRecord {
  keyId: string;
  tenantId: string;
  /** lowercase hex SHA-256 of the secret part; the key itself is never stored */
  secretHash: string;
  rps: number;
  burst: number;
  createdAt: string;
  revokedAt: string | null;
  restrictions: ApiKeyRestrictions | null;
  /** what the tenant calls the key ("web shop, production"); never secret */
  label: string | null;
  /** updated in batches (at most a minute behind), never on the request path */
  lastUsedAt: string | null;
}
