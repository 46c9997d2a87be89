import type { ApiKeyRestrictions } from "./types.ts";

/**
 * Part B (enrollment) records. One interface so a backend implements the whole enrollment state in one place:
 * several operations must be atomic across records (a profile change and its transaction record; a device
 * result, its job item and its transaction's state), which only one backend transaction can give.
 */

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
}

export type NewApiClient = Omit<ApiClient, "restrictions">;

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

export interface TransactionFilter {
  tenantId: string;
  type?: TransactionType;
  state?: TransactionState;
  profileId?: string;
  offset: number;
  limit: number;
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

export interface NewJobItem {
  deviceId: string;
  /** the user's id (already resolved from the request's userId) */
  userId: string | null;
  /** the ciphertext exactly as the client sent it (encrypted to the tenant key); never the plaintext */
  userPassword: string | null;
}

export interface JobItem {
  seq: number;
  transactionId: string;
  tenantId: string;
  deviceId: string;
  profileId: string;
  userId: string | null;
  attempts: number;
}

export interface JobResult {
  state: "Enrolled" | "Failed";
  error: DeviceError | null;
  /** false when a later request for the same device had already been applied (its state wins) */
  applied: boolean;
}

export type EnqueueOutcome = "ok" | "profile_not_found";

export type AssignOutcome =
  | { ok: true; count: number }
  | { ok: false; reason: "profile_not_found" }
  | { ok: false; reason: "devices_not_found"; missing: string[] };

export type UnassignOutcome = { ok: true; count: number } | { ok: false; missing: string[] };

export interface TenantKeyRecord {
  tenantId: string;
  /** base64 SPKI DER */
  publicKey: string;
  /** base64 PKCS#8 DER (see src/enrollment/README.md, "Tenant encryption keys") */
  privateKey: string;
  createdAt: string;
}

export interface ResellerAssociation {
  tenantId: string;
  resellerId: string;
  createdAt: string;
}

export interface EnrollmentStore {
  // ---- users ----
  /** creates the user, or re-registers a deregistered one; returns the stored record */
  registerUser(u: { userId: string; tenantId: string; email: string; at: string }): Promise<EnrollmentUser>;
  getUser(userId: string): Promise<EnrollmentUser | undefined>;
  getUserByEmail(tenantId: string, email: string): Promise<EnrollmentUser | undefined>;
  listUsers(tenantId: string): Promise<EnrollmentUser[]>;
  /** returns false when the tenant has no such user */
  setUserState(tenantId: string, email: string, state: UserState, at: string): Promise<boolean>;

  // ---- API clients and their access tokens ----
  createClient(c: NewApiClient): Promise<void>;
  getClient(clientId: string): Promise<ApiClient | undefined>;
  listClients(tenantId: string): Promise<ApiClient[]>;
  /** deletes the client and every access token issued to it; false when unknown */
  deleteClient(clientId: string): Promise<boolean>;
  setClientRestrictions(clientId: string, r: ApiKeyRestrictions | null): Promise<boolean>;
  createAccessToken(t: AccessTokenRecord): Promise<void>;
  getAccessToken(tokenId: string): Promise<AccessTokenRecord | undefined>;
  purgeExpiredAccessTokens(nowMs: number): Promise<number>;

  // ---- resellers ----
  /** "exists" when the tenant is already associated with that reseller */
  associateReseller(a: ResellerAssociation): Promise<"ok" | "exists">;
  listResellerAssociations(tenantId: string): Promise<ResellerAssociation[]>;

  // ---- profiles and transactions (each mutation and its transaction record commit together) ----
  createProfile(p: Profile, tx: NewTransaction): Promise<"ok" | "name_conflict">;
  updateProfile(tenantId: string, profileId: string, f: ProfileFields, tx: NewTransaction): Promise<"ok" | "not_found" | "name_conflict">;
  /** also unassigns the profile's devices */
  deleteProfile(tenantId: string, profileId: string, tx: NewTransaction): Promise<"ok" | "not_found">;
  getProfile(tenantId: string, profileId: string): Promise<Profile | undefined>;
  listProfiles(tenantId: string, offset: number, limit: number): Promise<Page<Profile>>;
  getTransaction(tenantId: string, transactionId: string): Promise<EnrollTransaction | undefined>;
  /** newest first */
  listTransactions(f: TransactionFilter): Promise<Page<EnrollTransaction>>;

  // ---- devices and the job queue ----
  /**
   * Records a device-upload transaction (state Processing) and one queued job item per device, atomically, unless
   * the profile no longer exists. Devices new to the tenant appear at once, in state Processing.
   */
  enqueueDevices(tx: NewTransaction & { profileId: string }, items: readonly NewJobItem[]): Promise<EnqueueOutcome>;
  /**
   * Leases up to `limit` queued items whose lease is free or expired, oldest first, to `owner` until
   * `nowMs + leaseMs`. Atomic: concurrent callers (other processes included) never get the same item.
   */
  claimJobs(owner: string, limit: number, nowMs: number, leaseMs: number): Promise<JobItem[]>;
  /** extends the lease of every unfinished item `owner` holds */
  renewJobLeases(owner: string, nowMs: number, leaseMs: number): Promise<number>;
  /** gives back unfinished items (graceful stop) so another worker can take them without waiting for the lease */
  releaseJobs(owner: string): Promise<number>;
  /**
   * Finishes an item in one transaction: decides its outcome (the profile must still exist and the user still be
   * registered), writes the device unless a later request for it was already applied, records the result and the
   * device history, and settles the transaction when it was the last item. Answers undefined, changing nothing,
   * when `owner` no longer holds the item's lease or the item is finished: so each item takes effect once.
   */
  completeJob(seq: number, owner: string, at: string): Promise<JobResult | undefined>;
  /** the items of one upload transaction, in request order */
  listTransactionDevices(tenantId: string, transactionId: string, offset: number, limit: number): Promise<DevicePage>;
  /** the tenant's devices (optionally those of one profile), by device id */
  listDevices(tenantId: string, profileId: string | undefined, offset: number, limit: number): Promise<DevicePage>;
  /** all-or-nothing: every device must be enrolled in the tenant */
  assignDevices(tenantId: string, profileId: string, deviceIds: readonly string[], at: string): Promise<AssignOutcome>;
  unassignDevices(tenantId: string, deviceIds: readonly string[], at: string): Promise<UnassignOutcome>;

  // ---- tenant encryption keys ----
  getTenantKey(tenantId: string): Promise<TenantKeyRecord | undefined>;
  /** stores `k` unless the tenant already has a key; returns the tenant's key either way */
  putTenantKeyIfAbsent(k: TenantKeyRecord): Promise<TenantKeyRecord>;
}
