import type { ReferenceValue } from "../attestation/types.ts";
import type { ActivityEntry } from "../domain/activity.ts";
import type { AuditActor, AuditRecord } from "../domain/audit.ts";
import type { StoredReferenceSet } from "../domain/referenceValues.ts";
import type { StoredPlayApp } from "../domain/playApps.ts";
import type { TenantPolicyVersion } from "../domain/tenantPolicy.ts";
import type { AppAttestKeyEffect, AppAttestRefreshOutcome, StoredAppAttestKey, StoredIosApp } from "../domain/iosApps.ts";
import type {
  AccessTokenRecord,
  ApiClient,
  DevicePage,
  EnrollTransaction,
  EnrollmentUser,
  DeviceError,
  NewApiClient,
  NewTransaction,
  Page,
  Profile,
  ProfileFields,
  ResellerAssociation,
  TenantKeyRecord,
  TransactionState,
  TransactionType,
  UserState,
} from "../domain/enrollment.ts";
import type { ApiKeyRecord, ApiKeyRestrictions, NewTenant, Tenant, TenantState } from "../domain/tenants.ts";
import type { StoredVerdict, VerdictValue } from "../domain/verdicts.ts";
import type { DevicePin, DeviceRecord } from "../domain/devices.ts";
import type { PasskeyChallenge, PortalInvite, PortalPasskey, PortalRole, PortalSession, PortalUser, PortalUserState, SsoMapping } from "../domain/portal.ts";
import type { SigningKeyRecord } from "../domain/signingKeys.ts";
import type { NewWebhookDelivery, StoredWebhookEndpoint, WebhookAttempt, WebhookAttemptOutcome, WebhookDelivery, WebhookPlan } from "../domain/webhooks.ts";
import type { NonceConsumeOutcome, NonceIssueOutcome, NonceRecord } from "../nonces/types.ts";

/**
 * The store interfaces, and only them: the records they keep are in src/domain/ (nonces' in src/nonces/). Grouped
 * by lifetime so each can live on the backend that suits it — short-lived and shared (nonces, rate-limit buckets,
 * JWT ids) on memory, SQLite or Redis; durable records (tenants, keys, verdicts, activity, reference values,
 * Part B) on SQLite or PostgreSQL. Every backend passes the same conformance suites (test/store/conformance.ts,
 * test/store/enrollmentConformance.ts).
 */

// ---------------------------------------------------------------------------------------------------------------
// Short-lived and shared

export interface NonceStore {
  /**
   * Stores a new nonce unless the tenant already has `maxOutstanding` unused, unexpired ones. Expired nonces must
   * not count against the cap, even before the purge has removed them.
   */
  issue(n: NonceRecord, maxOutstanding: number, nowMs: number): Promise<NonceIssueOutcome>;
  /**
   * Marks the nonce used if it exists, belongs to `tenantId`, is unexpired and unused. Atomic: of any number of
   * concurrent calls for one nonce (on any instance), at most one answers "ok". Another tenant's nonce answers
   * "unknown" so a tenant cannot probe another's nonces.
   */
  consume(nonce: string, tenantId: string, nowMs: number): Promise<NonceConsumeOutcome>;
  /** Forgets nonces that expired more than `retainMs` ago (kept a while so late posts get NONCE_EXPIRED / USED). */
  purgeExpired(nowMs: number, retainMs: number): Promise<number>;
}

/**
 * A store that holds both nonces and verdicts (the embedded SQLite one) can commit a nonce's consumption and the
 * verdict appraised against it in one transaction, so a crash can never leave a nonce used with no verdict.
 */
export interface NonceVerdictStore {
  /**
   * `consume`, and when it answers "ok" also `saveVerdict(verdict)`, in one transaction: both or neither. Atomic
   * as `consume` is: of concurrent calls for one nonce, at most one answers "ok" and stores its verdict.
   */
  consumeWithVerdict(nonce: string, tenantId: string, nowMs: number, verdict: StoredVerdict, webhooks?: WebhookPlan): Promise<NonceConsumeOutcome>;
}

/**
 * The same, for an appraisal of a named device: `consume`, and when it answers "ok" also
 * `DeviceStore.saveDeviceVerdict(tenantId, deviceId, decide)`, in one transaction. Answers the verdict stored.
 */
export interface NonceDeviceVerdictStore {
  consumeWithDeviceVerdict(
    nonce: string,
    tenantId: string,
    nowMs: number,
    deviceId: string,
    decide: DeviceVerdictDecision,
    webhooks?: WebhookPlan,
  ): Promise<{ outcome: NonceConsumeOutcome; verdict?: StoredVerdict }>;
}

/**
 * What an App Attest appraisal stores with its nonce (AppAttestStore.saveAppAttestVerdict's choice): `verdict` when
 * the key effect applied, `refused` when it did not; or, for a named device, the device's record and the verdict
 * `decide(applied)` reaches.
 */
export type AppAttestSave =
  | { verdict: StoredVerdict; refused: StoredVerdict }
  | { deviceId: string; decide: (applied: boolean) => DeviceVerdictDecision };

/**
 * A store that holds nonces and App Attest keys and verdicts alike (SQLite; PostgreSQL without Redis): the nonce's
 * consumption, the key effect (a new key, or the counter's compare-and-set) and the verdict in one transaction.
 */
export interface NonceAppAttestStore {
  /**
   * `consume`; when it answers "ok", also the effect and the verdict (`AppAttestSave`): all or nothing. A refused
   * nonce touches neither key nor verdict; a refused effect still spends the nonce and stores the refused verdict
   * (one blob per nonce, whatever its outcome). Answers the verdict stored when the nonce was consumed.
   */
  consumeWithAppAttestVerdict(
    nonce: string,
    tenantId: string,
    nowMs: number,
    effect: AppAttestKeyEffect,
    save: AppAttestSave,
    /** the verdict's webhook deliveries (WebhookPlan), written in the same transaction */
    webhooks?: WebhookPlan,
  ): Promise<{ outcome: NonceConsumeOutcome; verdict?: StoredVerdict; applied?: boolean }>;
}

export interface RateDecision {
  allowed: boolean;
  /** tokens left after this request (whole tokens) */
  remaining: number;
  /** when allowed is false: ms until one token is available */
  retryAfterMs: number;
  /** ms until the bucket is full again */
  resetMs: number;
}

export interface RateLimitStore {
  /** Token bucket: `ratePerSec` refill, `burst` capacity, one token per call. */
  take(bucket: string, ratePerSec: number, burst: number, nowMs: number): Promise<RateDecision>;
}

export interface JtiStore {
  /**
   * Remembers `jti` until `expiresAtMs`. Answers true when it was not already remembered (or its earlier entry has
   * expired at `nowMs`), false for a replay. Atomic: of concurrent calls for one jti, on any instance, one is true.
   */
  remember(jti: string, expiresAtMs: number, nowMs: number): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------------------------
// Durable

export interface TenantStore {
  createTenant(t: NewTenant): Promise<Tenant>;
  getTenant(tenantId: string): Promise<Tenant | undefined>;
  getTenantByName(name: string): Promise<Tenant | undefined>;
  getTenantByCustomerId(customerId: string): Promise<Tenant | undefined>;
  listTenants(): Promise<Tenant[]>;
  /** returns false when no tenant has that name */
  setTenantState(name: string, state: TenantState): Promise<boolean>;
  setEnrollmentEnabled(name: string, enabled: boolean): Promise<boolean>;

  /** `webhooks`: outbox rows (key.created) written in the same transaction (WebhookStore) */
  createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions" | "lastUsedAt" | "label"> & { label?: string | null }, webhooks?: readonly NewWebhookDelivery[]): Promise<void>;
  getApiKey(keyId: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(tenantId: string): Promise<ApiKeyRecord[]>;
  /** returns false when the key is unknown or already revoked; `webhooks` (key.revoked) are written only with the revocation */
  revokeApiKey(keyId: string, at: string, webhooks?: readonly NewWebhookDelivery[]): Promise<boolean>;
  setApiKeyRestrictions(keyId: string, r: ApiKeyRestrictions | null): Promise<boolean>;
  /** changes what `f` names, at once (one statement); false when the key is unknown or revoked */
  updateApiKey(keyId: string, f: ApiKeyChanges): Promise<boolean>;
  /** last-use times batched in memory by the authenticator; a later time never goes backwards */
  touchApiKeys(uses: readonly { keyId: string; at: string }[]): Promise<void>;
}

export interface ApiKeyChanges {
  rps?: number;
  burst?: number;
  label?: string | null;
  restrictions?: ApiKeyRestrictions | null;
}

export interface VerdictStore {
  /**
   * `webhooks`: the outbox rows the verdict carries (WebhookPlan), written in the verdict's transaction. Every path
   * that stores a verdict takes one, so an event is never lost between its write and its delivery.
   */
  saveVerdict(v: StoredVerdict, webhooks?: WebhookPlan): Promise<void>;
  getVerdict(objectId: string): Promise<StoredVerdict | undefined>;
  /**
   * Verdict history, newest first (createdAt DESC, objectId DESC), filtered on indexed columns and paged by key
   * (`before`), never by OFFSET: the first page of a tenant with a million verdicts is one index range read.
   */
  listVerdicts(q: VerdictQuery): Promise<StoredVerdict[]>;
}

/** Every field optional but `limit`; `tenantId` undefined means every tenant (operators). Times are ISO-8601. */
export interface VerdictQuery {
  tenantId?: string;
  verdict?: VerdictValue;
  /** the record's `status` (Success, SignatureInvalid, ...) */
  status?: string;
  format?: string;
  /** createdAt >= from */
  from?: string;
  /** createdAt < to */
  to?: string;
  /** exact chipId or IMEI of the record */
  device?: string;
  /** keyset cursor: rows strictly after this one in the newest-first order */
  before?: { createdAt: string; objectId: string };
  /**
   * keyset cursor the other way: rows strictly newer than this one, returned OLDEST first (the ones nearest the
   * cursor), for a page of newer verdicts. Not with `before`.
   */
  after?: { createdAt: string; objectId: string };
  /** 1..500 */
  limit: number;
}

/**
 * What a device's appraisal leaves, decided from the device's record as it stands (undefined: never seen). Pure
 * and synchronous (src/services/devicePinning.ts): a store may call it more than once in one save (after losing a
 * race to create the record) and keeps only the last answer.
 */
export type DeviceVerdictDecision = (current: DeviceRecord | undefined) => { verdict: StoredVerdict; device: DeviceRecord };

/** Per-device memory (docs/devices.md): named devices, their history and pins, per tenant. */
export interface DeviceStore {
  getDevice(tenantId: string, deviceId: string): Promise<DeviceRecord | undefined>;
  /**
   * A page of the tenant's devices in deviceId order (bytewise, as the key's index keeps them): those after
   * `after` when given, at most `limit` (the portal's device list).
   */
  listDevices(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<DeviceRecord[]>;
  /**
   * Stores the verdict of an appraisal of a named device together with the device's new record, in one
   * transaction: reads the record, locked against every concurrent save for the same device on any instance (or
   * learns it does not exist, and then creates it so that of concurrent creators exactly one succeeds and the
   * others read the winner's), calls `decide` with it, and writes the record and the verdict `decide` returned.
   * Answers that verdict.
   */
  saveDeviceVerdict(tenantId: string, deviceId: string, decide: DeviceVerdictDecision, webhooks?: WebhookPlan): Promise<StoredVerdict>;
  /**
   * Clears the device's pin (its history stays; the next Yes pins afresh), counts the reset and writes its audit
   * record (`audit(previousPin)`, into the audit trail: AuditStore), atomically. Undefined, changing nothing, when
   * the tenant has no such device. Its resets are read back from the audit trail (action `device.pin-reset`).
   */
  resetDevicePin(
    tenantId: string,
    deviceId: string,
    audit: (previousPin: DevicePin | null) => AuditRecord,
    /** the reset's webhook deliveries (device.pin.changed), written in its transaction */
    webhooks?: readonly NewWebhookDelivery[],
  ): Promise<AuditRecord | undefined>;
}

export interface ActivityFilter {
  tenantId?: string;
  errorId?: string;
  /** time >= since */
  since?: string;
  /** time < until */
  until?: string;
  status?: number;
  code?: string;
  /** exact route pattern, e.g. `/v2/blobs` */
  route?: string;
  /** the API key (Part A) or enrollment client (Part B) that made the request */
  clientId?: string;
  /** the APIs' requests or the portal's page views (isPortalPageRoute); absent: both */
  kind?: "api" | "portal";
  /** keyset cursor (newest first): rows with (time, seq) strictly before this one */
  before?: { time: string; seq: number };
  /**
   * keyset cursor the other way: rows with (time, seq) strictly after this one, returned OLDEST first (the rows
   * nearest the cursor), so a "newer" page reads as few rows as an "older" one. Not with `before`.
   */
  after?: { time: string; seq: number };
  limit?: number;
}

/** An activity entry as read back: `seq` orders entries of the same millisecond and is the paging key. */
export type StoredActivityEntry = ActivityEntry & { seq: number };

/** What `appendActivity` did not write: each entry the store refused, with why. Every other entry is written. */
export interface ActivityAppendResult {
  refused: { entry: ActivityEntry; error: unknown }[];
}

export interface ActivityStore {
  /**
   * Writes the entries, each on its own: one the store refuses (a constraint it breaks) is returned in `refused`
   * and costs the others nothing. An entry whose errorId is already logged is skipped, neither written twice nor
   * refused, so a batch retried after a lost answer is harmless for the entries support looks up. Throws only when
   * nothing could be written (the store unreachable, the transaction lost): the caller may retry the whole batch.
   */
  appendActivity(entries: readonly ActivityEntry[]): Promise<ActivityAppendResult>;
  queryActivity(filter: ActivityFilter): Promise<StoredActivityEntry[]>;
}

/**
 * The portal overview's counts, kept per tenant and UTC hour beside the verdicts and activity they count (written in
 * the same transaction as the row, so they never disagree with it), so an overview of a tenant with millions of
 * verdicts reads a few hundred rows. Hours are "YYYY-MM-DDTHH" (the first 13 characters of an ISO time); `tenantId`
 * undefined means every tenant (operators).
 */
export interface StatsStore {
  /** verdicts per bucket (hour, or day "YYYY-MM-DD") and verdict value, from `fromHour` on; buckets without any are absent */
  verdictCounts(q: StatsWindow & { bucket: "hour" | "day" }): Promise<VerdictCount[]>;
  /** the most frequent (verdict, status, reason) of No and Unknown verdicts from `fromHour`, most frequent first */
  topFailures(q: StatsWindow & TopOf): Promise<FailureCount[]>;
  /** requests per response status from `fromHour` */
  requestCounts(q: StatsWindow & { recentFromHour: string }): Promise<StatusCount[]>;
  /** the most frequent refused requests (status >= 400) by status, code, method and route, most frequent first */
  topRequestErrors(q: StatsWindow & TopOf): Promise<RequestErrorCount[]>;
}

export interface StatsWindow {
  tenantId?: string;
  /** inclusive */
  fromHour: string;
}

export interface TopOf {
  /** `recent` counts from this later hour on (the last 24 h beside the last 30 days) */
  recentFromHour: string;
  /** 1..100 */
  limit: number;
}

export interface VerdictCount {
  bucket: string;
  verdict: VerdictValue;
  n: number;
}

export interface FailureCount {
  verdict: VerdictValue;
  status: string;
  /** the deciding rule, cut to STATS_REASON_CHARS characters */
  reason: string;
  total: number;
  recent: number;
}

export interface StatusCount {
  status: number;
  total: number;
  recent: number;
}

export interface RequestErrorCount {
  status: number;
  code: string | null;
  method: string;
  route: string;
  total: number;
  recent: number;
}

/**
 * Reference sets live in two scopes (StoredReferenceSet): the global sets (`tenantId` null) and each tenant's own.
 * Every operation names its scope; one scope's writes never touch another's.
 */
export interface ReferenceValueStore {
  /**
   * Inserts or replaces by (model, firmwareVersion) within one scope (`tenantId` null or omitted: the global sets),
   * all in one transaction; returns how many were written.
   */
  upsertReferenceValues(values: readonly ReferenceValue[], at: string, tenantId?: string | null): Promise<number>;
  /** the global sets, by (model, firmwareVersion) */
  listReferenceValues(): Promise<ReferenceValue[]>;
  /** stored sets with their scope and time, by (model, firmwareVersion); see ReferenceSetQuery */
  listReferenceSets(q: ReferenceSetQuery): Promise<StoredReferenceSet[]>;
  /** false when that scope has no set for the pair */
  deleteReferenceSet(tenantId: string | null, model: string, firmwareVersion: string): Promise<boolean>;
}

export interface ReferenceSetQuery {
  /**
   * null: the global sets; a tenant id: that tenant's; undefined: every set of every scope, global ones first, then
   * by tenant (what the trust refresh reads; `model`, `after` and `limit` then do not apply)
   */
  tenantId?: string | null;
  /** exact model */
  model?: string;
  /** keyset cursor: sets strictly after this pair in (model, firmwareVersion) order */
  after?: { model: string; firmwareVersion: string };
  /** 1..MAX_HISTORY_PAGE; omitted: all */
  limit?: number;
}

/**
 * Part B (enrollment). One interface so a backend implements the whole enrollment state in one place: several
 * operations must be atomic across records (a profile change and its transaction record; a device result, its
 * job item and its transaction's state), which only one backend transaction can give.
 */

export interface TransactionFilter {
  tenantId: string;
  type?: TransactionType;
  state?: TransactionState;
  profileId?: string;
  offset: number;
  limit: number;
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
  /**
   * Marks the client revoked at `at` and deletes its access tokens, in one transaction; the record stays. False
   * when unknown or already revoked.
   */
  revokeClient(clientId: string, at: string): Promise<boolean>;
  /** false when unknown */
  setClientReadOnly(clientId: string, readOnly: boolean): Promise<boolean>;
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

// ---------------------------------------------------------------------------------------------------------------
// Portal accounts (src/portal/): people, one-time links, sessions

export interface PortalStore {
  /**
   * Makes `email` a portal user. A Part B user of the same tenant and email becomes that portal user (same
   * userId: one email, one record); `email_taken` when another portal user already has the email.
   */
  createPortalUser(u: { userId: string; email: string; tenantId: string | null; role: PortalRole; at: string }): Promise<{ outcome: "ok"; user: PortalUser } | { outcome: "email_taken" }>;
  getPortalUser(userId: string): Promise<PortalUser | undefined>;
  getPortalUserByEmail(email: string): Promise<PortalUser | undefined>;
  /** a tenant's users, or (tenantId null) the operators, or (undefined) everyone; by email */
  listPortalUsers(tenantId?: string | null): Promise<PortalUser[]>;
  updatePortalUser(userId: string, f: { role?: PortalRole; state?: PortalUserState; passwordHash?: string | null }, at: string): Promise<boolean>;

  /**
   * A user has one live link at most. Stores the new one and voids (marks used) every other unused link of the
   * user, atomically with it; false, and nothing stored, when the user is disabled (also when disabled meanwhile).
   */
  createInvite(i: PortalInvite): Promise<boolean>;
  /** the user of an unused, unexpired invite, without using it */
  peekInvite(tokenHash: string, nowMs: number): Promise<string | undefined>;
  /**
   * Marks the invite used and voids the user's other unused links, atomically: of two concurrent uses (of one link
   * or two) one gets the invite, the other `used`.
   */
  useInvite(tokenHash: string, nowMs: number): Promise<PortalInvite | "unknown" | "expired" | "used">;
  /** marks every unused link of the user used (disabling them); how many */
  voidInvites(userId: string, nowMs: number): Promise<number>;
  /**
   * A new password, in one transaction: the hash stored, the user active, every unused link voided and every session
   * ended (how many is the answer). undefined, and nothing changed, for an unknown or disabled user.
   */
  setPassword(userId: string, passwordHash: string, at: string, nowMs: number): Promise<number | undefined>;
  /** the hash replaced only while it is still `from` (a re-hash at sign-in never undoes a password set meanwhile) */
  replacePasswordHash(userId: string, from: string, to: string, at: string): Promise<boolean>;

  createSession(s: PortalSession): Promise<void>;
  getSession(sessionHash: string): Promise<PortalSession | undefined>;
  touchSession(sessionHash: string, nowMs: number): Promise<void>;
  deleteSession(sessionHash: string): Promise<void>;
  deleteUserSessions(userId: string): Promise<number>;
  /** sessions past their absolute end or idle longer than idleMs */
  purgeSessions(nowMs: number, idleMs: number): Promise<number>;

  /** `exists` when the credential id is registered already, to this user or another */
  createPasskey(p: PortalPasskey): Promise<"ok" | "exists">;
  getPasskey(credentialId: string): Promise<PortalPasskey | undefined>;
  /** a user's passkeys, oldest first */
  listPasskeys(userId: string): Promise<PortalPasskey[]>;
  /**
   * A sign-in with the passkey: its new signature counter and the time. Refused (false) unless the counter moves
   * forward, or stays 0 for an authenticator that keeps none; of two concurrent uses of one counter value, one
   * passes.
   */
  recordPasskeyUse(credentialId: string, counter: number, at: string): Promise<boolean>;
  /** false when the user has no passkey of that id */
  renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean>;
  deletePasskey(userId: string, credentialId: string): Promise<boolean>;

  createPasskeyChallenge(c: PasskeyChallenge): Promise<void>;
  /** removes the challenge, returning it if it had not expired: of two concurrent takes, one gets it */
  takePasskeyChallenge(challengeHash: string, nowMs: number): Promise<PasskeyChallenge | undefined>;
  purgePasskeyChallenges(nowMs: number): Promise<number>;
}

// ---------------------------------------------------------------------------------------------------------------
// Result signing keys (src/results/): shared by every instance, so each signs with the same key

/**
 * The keys attestd signs its results with. Small on purpose: an at-rest encryption of private keys wraps it as a
 * decorator (sealing `privateKey` on the way in, opening it on the way out) without touching a backend.
 */
export interface SigningKeyStore {
  /** the current key and every previous key still published at `nowIso` (retiresAt > nowIso), newest first */
  listSigningKeys(nowIso: string): Promise<SigningKeyRecord[]>;
  /**
   * Makes `k` (retiresAt null) the current key unless there already is one, and returns the current key either way.
   * Atomic across processes: of instances starting together for the first time, all end up with one key.
   */
  putFirstSigningKey(k: SigningKeyRecord): Promise<SigningKeyRecord>;
  /**
   * In one transaction: the current key, if any, gets `retiresAt` (it stays published until then) and `k` becomes
   * current. Answers the kid of the key it retired. Concurrent rotations are serialised: each retires the one before.
   */
  rotateSigningKey(k: SigningKeyRecord, retiresAt: string): Promise<{ retired: string | null }>;
}

/**
 * A tenant's registered Google Play apps (issue 23). The store keeps the secret as the service sealed it and never
 * opens it (src/services/playApps.ts does). Every call names the tenant, so one tenant's id never reaches another's.
 */
export interface PlayAppStore {
  /** "exists" when the tenant has a registration of that package already (nothing is written) */
  addPlayApp(app: StoredPlayApp): Promise<"ok" | "exists">;
  /** the tenant's registrations by package name */
  listPlayApps(tenantId: string): Promise<StoredPlayApp[]>;
  getPlayApp(tenantId: string, id: string): Promise<StoredPlayApp | undefined>;
  /** false when the tenant has no registration of that id */
  removePlayApp(tenantId: string, id: string): Promise<boolean>;
}

/**
 * App Attest (issue 25): a tenant's registered iOS apps, and the keys its devices attested. Every read names the
 * tenant, so another tenant's key is not found.
 */
export interface AppAttestStore {
  /** "exists" when the tenant has registered that app id already (nothing is written) */
  addIosApp(app: StoredIosApp): Promise<"ok" | "exists">;
  /** the tenant's apps by app id */
  listIosApps(tenantId: string): Promise<StoredIosApp[]>;
  /** false when the tenant has no registration of that id */
  removeIosApp(tenantId: string, id: string): Promise<boolean>;

  getAppAttestKey(tenantId: string, keyId: string): Promise<StoredAppAttestKey | undefined>;
  /** the tenant's keys in keyId order, after `after` */
  listAppAttestKeys(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<StoredAppAttestKey[]>;
  /** false when the tenant has no such key, or it is revoked already */
  revokeAppAttestKey(tenantId: string, keyId: string, at: string): Promise<boolean>;
  /**
   * In one transaction: applies the effect — a new key inserted unless its id is known (to any tenant); an
   * assertion's counter stored only if it is above the stored one and the key is the tenant's and not revoked
   * (compare-and-set: of two concurrent assertions with one counter, exactly one applies) — then stores `verdict`
   * when it applied, `refused` when it did not. Answers the verdict stored. A new key is due for its receipt's refresh
   * at its `refreshDueAt` only if its app has a developer key at that moment; otherwise never (null) until one is
   * set (`setIosAppDeveloperKey`), so the due keys are only those a sweep can refresh.
   */
  saveAppAttestVerdict(effect: AppAttestKeyEffect, verdict: StoredVerdict, refused: StoredVerdict, webhooks?: WebhookPlan): Promise<StoredVerdict>;
  /** the effect alone, in its own transaction (a named device's appraisal, whose verdict the device's record writes) */
  applyAppAttestEffect(effect: AppAttestKeyEffect): Promise<boolean>;

  // receipt refresh (migration 016)
  /**
   * Sets (or with null clears) the app's developer key, sealed by the service; false when the tenant has no such app.
   * In the same transaction the app's keys follow: setting makes those not revoked and not due due at `at`,
   * clearing makes them never due (null).
   */
  setIosAppDeveloperKey(tenantId: string, id: string, key: { keyId: string; sealed: string } | null, at: string): Promise<boolean>;
  /**
   * Up to `limit` keys, of every tenant, whose refresh is due at `now` (refreshDueAt <= now), not revoked, and whose
   * app (same tenant and app id) has a developer key; in one transaction their refreshDueAt is moved to
   * `leaseUntil`, so that another instance claiming at the same time gets other keys. Oldest due first.
   */
  claimAppAttestRefreshes(now: string, leaseUntil: string, limit: number): Promise<StoredAppAttestKey[]>;
  /** writes one refresh attempt's outcome to its key; false when the tenant has no such key */
  saveAppAttestRefresh(o: AppAttestRefreshOutcome): Promise<boolean>;
}

/**
 * Signed webhooks (issue 26, docs/events.md): a tenant's endpoints and the outbox of deliveries. Endpoint calls name
 * the tenant, so one tenant's id never reaches another's. The outbox is written with the event's own write (the
 * `webhooks` argument of the verdict and key methods) or, for events of no tenant write (trust), by
 * `enqueueWebhookDeliveries`; a worker claims due rows with a lease, so of several instances one attempts each row.
 */
export interface WebhookStore {
  addWebhookEndpoint(e: StoredWebhookEndpoint): Promise<void>;
  /** the tenant's endpoints, oldest first */
  listWebhookEndpoints(tenantId: string): Promise<StoredWebhookEndpoint[]>;
  getWebhookEndpoint(tenantId: string, id: string): Promise<StoredWebhookEndpoint | undefined>;
  /** changes what `f` names; false when the tenant has no endpoint of that id */
  updateWebhookEndpoint(tenantId: string, id: string, f: WebhookEndpointChanges): Promise<boolean>;
  /** false when the tenant has no endpoint of that id; its deliveries stay (their history), pending ones then fail */
  removeWebhookEndpoint(tenantId: string, id: string): Promise<boolean>;
  enqueueWebhookDeliveries(rows: readonly NewWebhookDelivery[]): Promise<void>;
  /**
   * Leases up to `limit` pending deliveries that are due (nextAttemptMs <= nowMs) and not leased (or whose lease
   * expired) to `owner` until nowMs + leaseMs, soonest due first. Atomic across processes: concurrent callers
   * never get the same row while its lease holds.
   */
  claimWebhookDeliveries(owner: string, limit: number, nowMs: number, leaseMs: number): Promise<WebhookDelivery[]>;
  /**
   * Records an attempt and what it leaves the delivery as, in one transaction, and frees the lease; false, changing
   * nothing, when `owner` no longer holds the delivery's lease (another instance took it over).
   */
  recordWebhookAttempt(owner: string, a: WebhookAttempt, outcome: WebhookAttemptOutcome): Promise<boolean>;
  /** the tenant's deliveries, newest first (createdAt, id), optionally of one endpoint, keyset-paged by `before` */
  listWebhookDeliveries(tenantId: string, q: { endpointId?: string | undefined; before?: { createdAt: string; id: string } | undefined; limit: number }): Promise<WebhookDelivery[]>;
  getWebhookDelivery(tenantId: string, id: string): Promise<WebhookDelivery | undefined>;
  /** the delivery's attempts, first first */
  listWebhookAttempts(tenantId: string, deliveryId: string): Promise<WebhookAttempt[]>;
  /**
   * A delivery pending again, due at `nowMs` with a fresh retry window (tries 0, giving up at `giveUpAtMs`), its
   * lease dropped; false when the tenant has no delivery of that id.
   */
  resendWebhookDelivery(tenantId: string, id: string, nowMs: number, giveUpAtMs: number): Promise<boolean>;
  /** pending deliveries, every tenant (the backlog metric) */
  countPendingWebhookDeliveries(): Promise<number>;
  /**
   * Deletes up to `limit` finished deliveries (delivered or failed; never a pending one) whose event is older than
   * `createdBefore`, with their attempts, oldest first; answers how many.
   */
  purgeWebhookDeliveries(createdBefore: string, limit: number): Promise<number>;
}

export interface WebhookEndpointChanges {
  url?: string;
  description?: string;
  events?: StoredWebhookEndpoint["events"];
  verdicts?: StoredWebhookEndpoint["verdicts"];
  enabled?: boolean;
  sealedSecret?: string;
  updatedAt: string;
}

/**
 * A tenant's appraisal policy (issue 26, docs/policy.md): immutable versions 1, 2, 3, … per tenant; the highest is in
 * force. Nothing is ever updated or deleted: a rollback is a new version with an old document.
 */
export interface TenantPolicyStore {
  /**
   * Stores `v` when its number is one more than the tenant's highest (1 when it has none); "conflict" when another
   * writer took that number first (nothing is written: read the current one and try again).
   */
  appendTenantPolicy(v: TenantPolicyVersion): Promise<"ok" | "conflict">;
  /** the tenant's highest version, or undefined when it has none */
  currentTenantPolicy(tenantId: string): Promise<TenantPolicyVersion | undefined>;
  getTenantPolicyVersion(tenantId: string, version: number): Promise<TenantPolicyVersion | undefined>;
  /** the tenant's versions newest first, those below `before` when given */
  listTenantPolicyVersions(tenantId: string, q: { before?: number | undefined; limit: number }): Promise<TenantPolicyVersion[]>;
}

/** Single sign-on (docs/sso.md): operators' mappings and the provider identities portal users are linked to. */
export interface SsoStore {
  /** stores the mapping, replacing one of the same kind and value */
  putSsoMapping(m: SsoMapping): Promise<void>;
  getSsoMapping(kind: SsoMapping["kind"], value: string): Promise<SsoMapping | undefined>;
  /** false when there was none */
  deleteSsoMapping(kind: SsoMapping["kind"], value: string): Promise<boolean>;
  /** by kind, then value */
  listSsoMappings(): Promise<SsoMapping[]>;
  /** the portal user a provider identity is linked to */
  getSsoIdentity(issuer: string, subject: string): Promise<string | undefined>;
  /**
   * Links a provider identity to a portal user; `taken` (nothing stored) when the identity is linked already or the
   * user has another identity of this issuer: of two concurrent first sign-ins, one links.
   */
  linkSsoIdentity(issuer: string, subject: string, userId: string, at: string): Promise<"ok" | "taken">;
}

/** Which audit records a query reads (docs/audit.md); newest first, keyset paging on (time, id). */
export interface AuditFilter {
  /** one tenant's records (a tenant user's view); absent: every record, operator-wide ones included */
  tenantId?: string;
  /** time >= since */
  since?: string;
  /** time < until */
  until?: string;
  actorKind?: AuditActor["kind"];
  /** the actor's id: a portal user's id, an API client's, the operator's OS user */
  actorId?: string;
  /** an action (`key.revoked`), or a family of them (`key.*`) */
  action?: string;
  targetKind?: string;
  targetId?: string;
  /** keyset cursor: records strictly before this one in newest-first order */
  before?: { time: string; id: string };
  /** at most this many (1..1000, default 100) */
  limit?: number;
}

/** The audit trail (src/services/auditTrail.ts writes it; issue 26). Records are never changed or deleted here. */
export interface AuditStore {
  /** Writes one record; durable when it returns. */
  appendAudit(r: AuditRecord): Promise<void>;
  queryAudit(f: AuditFilter): Promise<AuditRecord[]>;
}

/** Everything durable, as one backend provides it. */
export interface DurableStore extends TenantStore, VerdictStore, DeviceStore, ActivityStore, StatsStore, ReferenceValueStore, PortalStore, PlayAppStore, AppAttestStore, WebhookStore, TenantPolicyStore, SsoStore, AuditStore {
  readonly kind: string;
  /** cheap round trip for /readyz */
  ping(): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// Sealed secrets at rest (src/secrets/): the columns of SEALED_COLUMNS (sealedColumns.ts) hold values sealed with
// the operator's key; services seal and open them, the store keeps them and knows which key they are sealed with.

export type SealAllOutcome = { outcome: "sealed"; resealed: number } | { outcome: "conflict"; recordedKeyId: string };

export interface SealAllRequest {
  /** the key to record as the one everything is sealed with */
  keyId: string;
  /** how a value sealed with that key begins; a value that does not begin so is resealed */
  sealedPrefix: string;
  /** the value under the current key (a sealed column's purpose and the row's id make its context) */
  reseal(value: string, purpose: string, recordId: string): string;
  /** whether a key another process recorded is one the caller can open (else: conflict) */
  accepts(recordedKeyId: string): boolean;
}

export interface SecretsStore {
  /** the id of the key the store's sealed values are sealed with; undefined until a first start recorded one */
  sealingKeyId(): Promise<string | undefined>;
  /**
   * In one transaction, serialised across processes: when the recorded key is one `accepts` refuses, changes nothing
   * and answers `conflict`. Otherwise replaces every value of every sealed column that does not begin with
   * `sealedPrefix` (plaintext from before sealing, or an older key's) by `reseal(...)`, records `keyId`, and answers
   * how many it replaced. When it replaced any, it leaves no copy of the old values in the database's files where
   * the backend allows it (SQLite: secure delete and a truncated WAL; PostgreSQL: the tables rewritten).
   */
  sealAll(r: SealAllRequest): Promise<SealAllOutcome>;
}

// ---------------------------------------------------------------------------------------------------------------
// What a running service holds

/** The set of stores a running service uses; nonces and rate limits may come from a different backend. */
export interface Stores {
  durable: DurableStore;
  nonces: NonceStore;
  /** present when nonces and verdicts share one store that commits a consumption with its verdict */
  nonceVerdicts?: NonceVerdictStore & NonceDeviceVerdictStore;
  /** present when nonces and App Attest keys share one store that commits a consumption with the key and verdict */
  nonceAppAttest?: NonceAppAttestStore;
  rateLimits: RateLimitStore;
  /** Part B records (EnrollmentStore above); on the durable backend */
  enrollment: EnrollmentStore;
  /** JWT ids seen by Part B, for replay refusal; shared by every instance */
  jti: JtiStore;
  /** the keys results (EARs) are signed with; on the durable backend */
  signingKeys: SigningKeyStore;
  /** which key the durable backend's sealed columns are sealed with; src/secrets/openSecrets.ts opens them */
  secrets: SecretsStore;
  /** every backend in use, for /readyz */
  health(): Promise<{ name: string; ok: boolean; error?: string }[]>;
  close(): Promise<void>;
}
