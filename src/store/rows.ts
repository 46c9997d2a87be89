import type { ReferenceValue } from "../attestation/types.ts";
import type { TenantPolicyDocument, TenantPolicyVersion } from "../domain/tenantPolicy.ts";
import { catalog, type CatalogEntry } from "../errors/catalog.ts";
import type {
  AccessTokenRecord,
  ApiClient,
  DeviceEntry,
  DeviceError,
  EnrollmentUser,
  EnrollTransaction,
  Profile,
  ResellerAssociation,
  TenantKeyRecord,
} from "../domain/enrollment.ts";
import type { FailureCount, JobItem, RequestErrorCount, StatusCount, StoredActivityEntry, VerdictCount } from "./types.ts";
import type { PasskeyChallenge, PortalInvite, PortalPasskey, PortalSession, PortalUser } from "../domain/portal.ts";
import type { ApiKeyRecord, ApiKeyRestrictions, Tenant } from "../domain/tenants.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import type { DeviceRecord } from "../domain/devices.ts";
import type { StoredReferenceSet } from "../domain/referenceValues.ts";
import type { EarAlgorithm, SigningKeyRecord } from "../domain/signingKeys.ts";
import type { StoredPlayApp } from "../domain/playApps.ts";
import type { StoredWebhookEndpoint, WebhookAttempt, WebhookDelivery, WebhookDeliveryState, WebhookEventType, WebhookVerdictFilter } from "../domain/webhooks.ts";
import type { StoredAppAttestKey, StoredIosApp } from "../domain/iosApps.ts";
import type { IntegrityLabel } from "../attestation/types.ts";

/**
 * Result rows → records, written once for both SQL backends. The schemas mirror each other column for column
 * (see README.md, "Migrations"); what differs is how each driver hands back two column types, and a `Dialect` says
 * that. Everything else (names, NULLs, BIGINTs, the shape of each record) is the same code for SQLite and PostgreSQL.
 */

/** A result row as the driver returns it, by column name. */
export type Row = Record<string, unknown>;

/** How a driver returns the column types the two schemas spell differently. */
export interface Dialect {
  /** a boolean column: SQLite INTEGER 0/1, PostgreSQL BOOLEAN */
  bool(v: unknown): boolean;
  /** a JSON column: SQLite TEXT still to parse, PostgreSQL `json` already decoded; SQL NULL is null */
  json<T>(v: unknown): T | null;
}

/** SQLite: booleans are 0/1, JSON is text (empty text, which we never write, reads as null as NULL does). */
const sqliteDialect: Dialect = {
  bool: (v) => v === 1,
  json: <T>(v: unknown) => (v ? (JSON.parse(v as string) as T) : null),
};

/** node-postgres: booleans arrive as booleans and `json` columns already parsed. */
const pgDialect: Dialect = {
  bool: (v) => v as boolean,
  json: <T>(v: unknown) => (v as T | null) ?? null,
};

/** a nullable TEXT column */
export const str = (v: unknown): string | null => (v as string | null) ?? null;

/** BIGINT columns arrive as strings from PostgreSQL (they may exceed 2^53); ours are ms and sequence numbers, well within. */
export const num = (v: unknown): number => (typeof v === "number" ? v : Number(v));

/** The error columns (error_code, error_message, error_reason) of a job item or device row. */
function errorFromRow(r: Row): DeviceError | null {
  return r.error_code
    ? { code: r.error_code as string, message: r.error_message as string, reason: (r.error_reason as string) ?? "" }
    : null;
}

function deviceError(entry: CatalogEntry, reason: string): DeviceError {
  return { code: entry.code, message: entry.message, reason };
}

/** Why completeJob fails an item, on every backend: its profile or its user went away after the upload. */
export const jobFailure = {
  profileDeleted: (): DeviceError =>
    deviceError(catalog.BULK_ENROLL_PROFILE_NOT_FOUND, "The profile was deleted before the device was processed"),
  userDeregistered: (): DeviceError =>
    deviceError(catalog.USER_NOT_FOUND, "The user was deregistered before the device was processed"),
};

/** Every row mapper of the durable and enrollment stores, for one dialect. */
export function rowMappers(d: Dialect) {
  return {
    // ---- Part A (DurableStore) ----
    tenant: (r: Row): Tenant => ({
      tenantId: r.tenant_id as string,
      name: r.name as string,
      customerId: r.customer_id as string,
      kind: r.kind as Tenant["kind"],
      state: r.state as Tenant["state"],
      enrollmentEnabled: d.bool(r.enrollment_enabled),
      createdAt: r.created_at as string,
    }),

    apiKey: (r: Row): ApiKeyRecord => ({
      keyId: r.key_id as string,
      tenantId: r.tenant_id as string,
      secretHash: r.secret_hash as string,
      rps: r.rps as number,
      burst: r.burst as number,
      createdAt: r.created_at as string,
      revokedAt: str(r.revoked_at),
      restrictions: d.json<ApiKeyRestrictions>(r.restrictions),
      label: str(r.label),
      lastUsedAt: str(r.last_used_at),
    }),

    activity: (r: Row): StoredActivityEntry => ({
      seq: num(r.id),
      time: r.time as string,
      errorId: str(r.error_id),
      tenantId: str(r.tenant_id),
      clientId: str(r.client_id),
      method: r.method as string,
      route: r.route as string,
      status: r.status as number,
      code: str(r.code),
      latencyMs: r.latency_ms as number,
      remoteAddress: r.remote_address as string,
      reason: str(r.reason),
    }),

    // record, detail and measurements are NOT NULL columns
    verdict: (r: Row): StoredVerdict => ({
      objectId: r.object_id as string,
      tenantId: r.tenant_id as string,
      format: r.format as string,
      record: d.json(r.record) as StoredVerdict["record"],
      reason: r.reason as string,
      detail: d.json(r.detail) as StoredVerdict["detail"],
      createdAt: r.created_at as string,
    }),

    // ---- per-device memory (DeviceStore) ----
    attestedDevice: (r: Row): DeviceRecord => ({
      tenantId: r.tenant_id as string,
      deviceId: r.device_id as string,
      firstSeen: r.first_seen as string,
      lastSeen: r.last_seen as string,
      count: num(r.seen_count),
      last: d.json(r.last_appraisal) as DeviceRecord["last"],
      latestFacts: d.json(r.latest_facts),
      pin: d.json(r.pin),
      resets: num(r.resets),
    }),


    // ---- the overview's counts (SUM over BIGINT arrives as a string from PostgreSQL) ----
    verdictCount: (r: Row): VerdictCount => ({ bucket: r.bucket as string, verdict: r.verdict as VerdictCount["verdict"], n: num(r.n) }),
    failureCount: (r: Row): FailureCount => ({
      verdict: r.verdict as FailureCount["verdict"],
      status: r.status as string,
      reason: r.reason as string,
      total: num(r.total),
      recent: num(r.recent),
    }),
    statusCount: (r: Row): StatusCount => ({ status: num(r.status), total: num(r.total), recent: num(r.recent) }),
    requestErrorCount: (r: Row): RequestErrorCount => ({
      status: num(r.status),
      code: (r.code as string) || null,
      method: r.method as string,
      route: r.route as string,
      total: num(r.total),
      recent: num(r.recent),
    }),

    referenceValue: (r: Row): ReferenceValue => ({
      model: r.model as string,
      firmwareVersion: r.firmware_version as string,
      measurements: d.json(r.measurements) as string[],
    }),
    referenceSet: (r: Row): StoredReferenceSet => ({
      tenantId: str(r.tenant_id),
      model: r.model as string,
      firmwareVersion: r.firmware_version as string,
      measurements: d.json(r.measurements) as string[],
      updatedAt: r.updated_at as string,
    }),

    // ---- Part B (EnrollmentStore) ----
    user: (r: Row): EnrollmentUser => ({
      userId: r.user_id as string,
      tenantId: r.tenant_id as string,
      email: r.email as string,
      state: r.state as EnrollmentUser["state"],
      createdAt: r.created_at as string,
      updatedAt: r.updated_at as string,
    }),

    // ---- portal accounts (PortalStore): people are enroll_users rows with a portal_role ----
    portalUser: (r: Row): PortalUser => ({
      userId: r.user_id as string,
      email: r.email as string,
      tenantId: str(r.tenant_id),
      role: r.portal_role as PortalUser["role"],
      state: r.portal_state as PortalUser["state"],
      passwordHash: str(r.password_hash),
      createdAt: r.created_at as string,
      updatedAt: r.updated_at as string,
    }),
    invite: (r: Row): PortalInvite => ({
      tokenHash: r.token_hash as string,
      userId: r.user_id as string,
      createdAtMs: num(r.created_at_ms),
      expiresAtMs: num(r.expires_at_ms),
      usedAtMs: r.used_at_ms === null || r.used_at_ms === undefined ? null : num(r.used_at_ms),
    }),
    session: (r: Row): PortalSession => ({
      sessionHash: r.session_hash as string,
      userId: r.user_id as string,
      csrfToken: r.csrf_token as string,
      createdAtMs: num(r.created_at_ms),
      lastSeenAtMs: num(r.last_seen_at_ms),
      expiresAtMs: num(r.expires_at_ms),
      method: r.method as PortalSession["method"],
    }),
    passkey: (r: Row): PortalPasskey => ({
      credentialId: r.credential_id as string,
      userId: r.user_id as string,
      publicKey: r.public_key as string,
      counter: num(r.counter),
      transports: d.json<string[]>(r.transports) ?? [],
      backedUp: d.bool(r.backed_up),
      name: r.name as string,
      createdAt: r.created_at as string,
      lastUsedAt: str(r.last_used_at),
    }),
    passkeyChallenge: (r: Row): PasskeyChallenge => ({
      challengeHash: r.challenge_hash as string,
      purpose: r.purpose as PasskeyChallenge["purpose"],
      userId: str(r.user_id),
      expiresAtMs: num(r.expires_at_ms),
    }),

    client: (r: Row): ApiClient => ({
      clientId: r.client_id as string,
      tenantId: r.tenant_id as string,
      userId: r.user_id as string,
      publicKey: r.public_key as string,
      identifierHash: r.identifier_hash as string,
      readOnly: d.bool(r.read_only),
      rps: r.rps as number,
      burst: r.burst as number,
      restrictions: d.json<ApiKeyRestrictions>(r.restrictions),
      createdAt: r.created_at as string,
      revokedAt: str(r.revoked_at),
    }),

    accessToken: (r: Row): AccessTokenRecord => ({
      tokenId: r.token_id as string,
      clientId: r.client_id as string,
      tokenHash: r.token_hash as string,
      expiresAtMs: num(r.expires_at_ms),
      createdAt: r.created_at as string,
    }),

    resellerAssociation: (r: Row): ResellerAssociation => ({
      tenantId: r.tenant_id as string,
      resellerId: r.reseller_id as string,
      createdAt: r.created_at as string,
    }),

    profile: (r: Row): Profile => ({
      profileId: r.profile_id as string,
      tenantId: r.tenant_id as string,
      name: r.name as string,
      description: str(r.description),
      mdmUrl: str(r.mdm_url),
      settings: d.json<NonNullable<Profile["settings"]>>(r.settings),
      createdAt: r.created_at as string,
      updatedAt: r.updated_at as string,
    }),

    transaction: (r: Row): EnrollTransaction => ({
      tenantId: r.tenant_id as string,
      transactionId: r.transaction_id as string,
      type: r.type as EnrollTransaction["type"],
      state: r.state as EnrollTransaction["state"],
      kind: r.kind as EnrollTransaction["kind"],
      profileId: r.profile_id as string,
      profileName: r.profile_name as string,
      createdAt: r.created_at as string,
      updatedAt: r.updated_at as string,
    }),

    /** the items a claim leased, in queue order (UPDATE ... RETURNING promises no order) */
    claimedJobs: (rows: readonly Row[]): JobItem[] =>
      rows
        .map((r) => ({
          seq: num(r.seq),
          transactionId: r.transaction_id as string,
          tenantId: r.tenant_id as string,
          deviceId: r.device_id as string,
          profileId: r.profile_id as string,
          userId: str(r.user_id),
          attempts: r.attempts as number,
        }))
        .sort((a, b) => a.seq - b.seq),

    /** an upload's item (an enroll_jobs row): pending until the job queue has finished it */
    jobDevice: (r: Row): DeviceEntry => ({
      deviceId: r.device_id as string,
      profileId: r.profile_id as string,
      state: r.state === "pending" ? "Processing" : (r.outcome as DeviceEntry["state"]),
      updatedAt: r.updated_at as string,
      error: errorFromRow(r),
    }),

    /** a tenant's device (an enroll_devices row with `pending`: whether an item for it is still queued) */
    device: (r: Row): DeviceEntry => ({
      deviceId: r.device_id as string,
      profileId: str(r.profile_id),
      state: r.pending ? "Processing" : (r.state as DeviceEntry["state"]),
      updatedAt: r.updated_at as string,
      error: r.pending ? null : errorFromRow(r),
    }),

    tenantKey: (r: Row): TenantKeyRecord => ({
      tenantId: r.tenant_id as string,
      publicKey: r.public_key as string,
      privateKey: r.private_key as string,
      createdAt: r.created_at as string,
    }),

    webhookEndpoint: (r: Row): StoredWebhookEndpoint => ({
      id: r.id as string,
      tenantId: r.tenant_id as string,
      url: r.url as string,
      description: r.description as string,
      events: d.json<WebhookEventType[]>(r.events) ?? [],
      verdicts: r.verdicts as WebhookVerdictFilter,
      enabled: d.bool(r.enabled),
      sealedSecret: r.secret as string,
      createdAt: r.created_at as string,
      updatedAt: r.updated_at as string,
    }),

    webhookDelivery: (r: Row): WebhookDelivery => ({
      id: r.id as string,
      eventId: r.event_id as string,
      tenantId: r.tenant_id as string,
      endpointId: r.endpoint_id as string,
      eventType: r.event_type as WebhookEventType,
      payload: r.payload as string,
      createdAt: r.created_at as string,
      nextAttemptMs: num(r.next_attempt_ms),
      giveUpAtMs: num(r.give_up_at_ms),
      state: r.state as WebhookDeliveryState,
      attempts: num(r.attempts),
      tries: num(r.tries),
      lastStatus: r.last_status === null || r.last_status === undefined ? null : num(r.last_status),
      finishedAt: str(r.finished_at),
    }),

    webhookAttempt: (r: Row): WebhookAttempt => ({
      deliveryId: r.delivery_id as string,
      attempt: num(r.attempt),
      at: r.at as string,
      status: r.status === null || r.status === undefined ? null : num(r.status),
      durationMs: num(r.duration_ms),
      error: str(r.error),
      response: str(r.response),
    }),

    playApp: (r: Row): StoredPlayApp => ({
      id: r.id as string,
      tenantId: r.tenant_id as string,
      policy: {
        packageName: r.package_name as string,
        certDigests: d.json<string[]>(r.cert_digests) ?? [],
        deviceFloor: r.device_floor as IntegrityLabel,
        maxAgeSeconds: num(r.max_age_seconds),
        require: { licensed: d.bool(r.require_licensed), playProtect: d.bool(r.require_play_protect), appAccessRisk: d.bool(r.require_app_access_risk) },
      },
      opensWith: r.opens_with as StoredPlayApp["opensWith"],
      ...(r.service_account_email ? { serviceAccountEmail: r.service_account_email as string } : {}),
      sealedSecret: r.secret as string,
      createdAt: r.created_at as string,
    }),

    iosApp: (r: Row): StoredIosApp => ({
      id: r.id as string,
      tenantId: r.tenant_id as string,
      appId: r.app_id as string,
      environment: r.environment as StoredIosApp["environment"],
      createdAt: r.created_at as string,
      developerKeyId: (r.developer_key_id as string | null) ?? null,
      sealedDeveloperKey: (r.developer_key as string | null) ?? null,
    }),

    appAttestKey: (r: Row): StoredAppAttestKey => ({
      tenantId: r.tenant_id as string,
      keyId: r.key_id as string,
      appId: r.app_id as string,
      publicKey: r.public_key as string,
      counter: num(r.counter),
      environment: r.environment as StoredAppAttestKey["environment"],
      receipt: r.receipt as string,
      attestedAt: r.attested_at as string,
      lastAssertedAt: (r.last_asserted_at as string | null) ?? null,
      revokedAt: (r.revoked_at as string | null) ?? null,
      riskMetric: r.risk_metric === null || r.risk_metric === undefined ? null : num(r.risk_metric),
      riskMetricAt: (r.risk_metric_at as string | null) ?? null,
      lastRefreshResult: (r.last_refresh_result as string | null) ?? null,
      lastRefreshReason: (r.last_refresh_reason as string | null) ?? null,
      lastRefreshAt: (r.last_refresh_at as string | null) ?? null,
      refreshDueAt: (r.refresh_due_at as string | null) ?? null,
    }),

    // the document is TEXT on both backends (its JSON as written), parsed here
    tenantPolicy: (r: Row): TenantPolicyVersion => ({
      tenantId: r.tenant_id as string,
      version: num(r.version),
      createdAt: r.created_at as string,
      author: r.author as string,
      document: JSON.parse(r.document as string) as TenantPolicyDocument,
    }),

    signingKey: (r: Row): SigningKeyRecord => ({
      kid: r.kid as string,
      alg: r.alg as EarAlgorithm,
      publicJwk: r.public_jwk as string,
      privateKey: r.private_key as string,
      createdAt: r.created_at as string,
      retiresAt: str(r.retires_at),
    }),
  };
}

export type RowMappers = ReturnType<typeof rowMappers>;

export const sqliteRows: RowMappers = rowMappers(sqliteDialect);
export const pgRows: RowMappers = rowMappers(pgDialect);
