import type { ApiKeyRestrictions } from "./tenants.ts";

/**
 * Part B (enrollment) records: users, API clients and their access tokens, profiles and their transactions,
 * devices, tenant encryption keys, reseller associations. Plain records; the store keeps them
 * (store/types.ts, EnrollmentStore) and src/enrollment/ owns their rules.
 */

/** the `aud` every client-signed Part B JWT carries (enrollment-api.md), unless the operator widens --token-audience */
export const AUDIENCE = "VendorWSM";

export type UserState = "registered" | "deregistered";

export interface EnrollmentUser {
  userId: string;
  tenantId: string;
  email: string;
  state: UserState;
  createdAt: string;
  updatedAt: string;
}

export interface ApiClient {
  clientId: string;
  tenantId: string;
  userId: string;
  /** base64 SPKI DER of the client's RSA public key (the client alone holds the private key) */
  publicKey: string;
  /** lowercase hex SHA-256 of the secret part of the client identifier; the identifier itself is never stored */
  identifierHash: string;
  readOnly: boolean;
  rps: number;
  burst: number;
  restrictions: ApiKeyRestrictions | null;
  createdAt: string;
  /** set once revoked: the client is kept for the record but can no longer authenticate */
  revokedAt: string | null;
}

export type NewApiClient = Omit<ApiClient, "restrictions" | "revokedAt">;

export interface AccessTokenRecord {
  tokenId: string;
  clientId: string;
  /** lowercase hex SHA-256 of the token's secret part */
  tokenHash: string;
  expiresAtMs: number;
  createdAt: string;
}

export type ProfileSettings = Record<string, string | number | boolean>;

export interface Profile {
  profileId: string;
  tenantId: string;
  name: string;
  description: string | null;
  mdmUrl: string | null;
  settings: ProfileSettings | null;
  createdAt: string;
  updatedAt: string;
}

/** What a create or a full update (PUT) writes. */
export type ProfileFields = Pick<Profile, "name" | "description" | "mdmUrl" | "settings">;

export type TransactionType = "Post" | "Put" | "Delete";

export type TransactionState = "Processing" | "Complete" | "Failed";

/** `profile`: a profile create/update/delete (complete when recorded); `devices`: a device upload (job queue) */
export type TransactionKind = "profile" | "devices";

export interface EnrollTransaction {
  tenantId: string;
  transactionId: string;
  type: TransactionType;
  state: TransactionState;
  kind: TransactionKind;
  profileId: string;
  /** the profile's name when the transaction was made */
  profileName: string;
  createdAt: string;
  updatedAt: string;
}

/** Identifies a new transaction; the store fills in the profile name and state. */
export interface NewTransaction {
  transactionId: string;
  tenantId: string;
  at: string;
}

export interface Page<T> {
  total: number;
  items: T[];
}

export type DeviceState = "Processing" | "Enrolled" | "Failed";

export interface DeviceError {
  code: string;
  message: string;
  reason: string;
}

export interface DeviceEntry {
  deviceId: string;
  /** null when the device is assigned to no profile */
  profileId: string | null;
  state: DeviceState;
  updatedAt: string;
  error: DeviceError | null;
}

export interface DevicePage extends Page<DeviceEntry> {
  /** entries of the whole (unpaged) result still waiting for the job queue */
  processing: number;
}

export interface TenantKeyRecord {
  tenantId: string;
  /** base64 SPKI DER */
  publicKey: string;
  /**
   * base64 PKCS#8 DER, sealed (`sealed:v1:…`, src/secrets/secretBox.ts) with the operator's secrets key: the store
   * never holds it in the clear (see src/enrollment/README.md, "Tenant encryption keys")
   */
  privateKey: string;
  createdAt: string;
}

export interface ResellerAssociation {
  tenantId: string;
  resellerId: string;
  createdAt: string;
}
