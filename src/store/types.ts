import type { ReferenceValue, VerdictRecord } from "../attestation/types.ts";
import type { EnrollmentStore } from "./enrollmentTypes.ts";

/**
 * Store interfaces, split by lifetime so each can live on the backend that suits it:
 * short-lived and shared (nonces, rate-limit buckets) → memory, SQLite or Redis;
 * durable records (tenants, keys, verdicts, activity) → SQLite or PostgreSQL.
 * Every backend passes the same conformance suite (test/store/conformance.ts).
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
}

export interface NewTenant {
  tenantId: string;
  name: string;
  customerId: string;
  kind: TenantKind;
  createdAt: string;
}

export interface TenantStore {
  createTenant(t: NewTenant): Promise<Tenant>;
  getTenant(tenantId: string): Promise<Tenant | undefined>;
  getTenantByName(name: string): Promise<Tenant | undefined>;
  getTenantByCustomerId(customerId: string): Promise<Tenant | undefined>;
  listTenants(): Promise<Tenant[]>;
  /** returns false when no tenant has that name */
  setTenantState(name: string, state: TenantState): Promise<boolean>;
  setEnrollmentEnabled(name: string, enabled: boolean): Promise<boolean>;

  createApiKey(k: Omit<ApiKeyRecord, "revokedAt" | "restrictions">): Promise<void>;
  getApiKey(keyId: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(tenantId: string): Promise<ApiKeyRecord[]>;
  /** returns false when the key is unknown or already revoked */
  revokeApiKey(keyId: string, at: string): Promise<boolean>;
  setApiKeyRestrictions(keyId: string, r: ApiKeyRestrictions | null): Promise<boolean>;
}

export interface NonceRecord {
  nonce: string;
  tenantId: string;
  createdAtMs: number;
  expiresAtMs: number;
}

export type NonceIssueOutcome = "ok" | "limit";
export type NonceConsumeOutcome = "ok" | "unknown" | "expired" | "used";

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
  consumeWithVerdict(nonce: string, tenantId: string, nowMs: number, verdict: StoredVerdict): Promise<NonceConsumeOutcome>;
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

export interface StoredVerdict {
  objectId: string;
  tenantId: string;
  format: string;
  record: VerdictRecord;
  reason: string;
  detail: Record<string, unknown>;
  createdAt: string;
}

export interface VerdictStore {
  saveVerdict(v: StoredVerdict): Promise<void>;
  getVerdict(objectId: string): Promise<StoredVerdict | undefined>;
}

export interface ActivityEntry {
  time: string;
  errorId: string | null;
  tenantId: string | null;
  clientId: string | null;
  method: string;
  route: string;
  status: number;
  code: string | null;
  latencyMs: number;
  remoteAddress: string;
}

export interface ActivityFilter {
  tenantId?: string;
  errorId?: string;
  since?: string;
  limit?: number;
}

export interface ActivityStore {
  appendActivity(entries: readonly ActivityEntry[]): Promise<void>;
  queryActivity(filter: ActivityFilter): Promise<ActivityEntry[]>;
}

export interface ReferenceValueStore {
  /** insert or replace by (model, firmwareVersion); returns how many were written */
  upsertReferenceValues(values: readonly ReferenceValue[], at: string): Promise<number>;
  listReferenceValues(): Promise<ReferenceValue[]>;
}

/** Everything durable, as one backend provides it. */
export interface DurableStore extends TenantStore, VerdictStore, ActivityStore, ReferenceValueStore {
  readonly kind: string;
  /** cheap round trip for /readyz */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface JtiStore {
  /**
   * Remembers `jti` until `expiresAtMs`. Answers true when it was not already remembered (or its earlier entry has
   * expired at `nowMs`), false for a replay. Atomic: of concurrent calls for one jti, on any instance, one is true.
   */
  remember(jti: string, expiresAtMs: number, nowMs: number): Promise<boolean>;
}

/** The set of stores a running service uses; nonces and rate limits may come from a different backend. */
export interface Stores {
  durable: DurableStore;
  nonces: NonceStore;
  /** present when nonces and verdicts share one store that commits a consumption with its verdict */
  nonceVerdicts?: NonceVerdictStore;
  rateLimits: RateLimitStore;
  /** Part B records (src/store/enrollmentTypes.ts); on the durable backend */
  enrollment: EnrollmentStore;
  /** JWT ids seen by Part B, for replay refusal; shared by every instance */
  jti: JtiStore;
  /** every backend in use, for /readyz */
  health(): Promise<{ name: string; ok: boolean; error?: string }[]>;
  close(): Promise<void>;
}
