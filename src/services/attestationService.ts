import { appraise } from "../attestation/appraise.ts";
import type { AppraisalResult, TrustConfig } from "../attestation/types.ts";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { NonceStore, StoredVerdict, Tenant, VerdictStore } from "../store/types.ts";

export interface AttestationLimits {
  nonceTtlMs: number;
  maxOutstandingNonces: number;
}

export interface AttestationDeps {
  nonces: NonceStore;
  verdicts: VerdictStore;
  /** the trust configuration for a tenant now (its android-key policy may differ); changes when a source refreshes */
  trust: (tenant: Tenant) => TrustConfig;
  clock: Clock;
  rng: Rng;
  limits: AttestationLimits;
  /** called once per appraisal, for metrics */
  onAppraisal?: (result: AppraisalResult, seconds: number) => void;
}

/** base64url of 32 bytes: the only shape a nonce we issued can have. */
const NONCE_RE = /^[A-Za-z0-9_-]{43}$/;

const CONSUME_ERRORS = {
  unknown: [catalog.NONCE_INVALID, "The nonce is unknown to this tenant"],
  expired: [catalog.NONCE_EXPIRED, "The nonce has expired; request a new one"],
  used: [catalog.NONCE_ALREADY_USED, "The nonce was already used for a blob"],
} as const;

/**
 * Part A's use cases: issue a nonce, appraise a blob against one. The nonce is consumed before the blob is read
 * (one blob per nonce, whatever the outcome), and the verdict is stored before the caller answers, so an
 * acknowledged verdict is never lost.
 */
export class AttestationService {
  constructor(private readonly d: AttestationDeps) {}

  async issueNonce(tenantId: string): Promise<string> {
    const nowMs = this.d.clock.nowMs();
    const nonce = this.d.rng.bytes(32).toString("base64url");
    const outcome = await this.d.nonces.issue(
      { nonce, tenantId, createdAtMs: nowMs, expiresAtMs: nowMs + this.d.limits.nonceTtlMs },
      this.d.limits.maxOutstandingNonces,
      nowMs,
    );
    if (outcome === "limit") {
      throw new AppError(
        catalog.NONCE_LIMIT_EXCEEDED,
        `The tenant has ${this.d.limits.maxOutstandingNonces} outstanding nonces; use or let some expire`,
      );
    }
    return nonce;
  }

  /** Checks and consumes the nonce; throws the catalog error for each way it can be wrong. */
  async consumeNonce(tenantId: string, nonce: string | undefined): Promise<void> {
    if (nonce === undefined || nonce === "") throw new AppError(catalog.NONCE_REQUIRED, "The nonce query parameter is required");
    if (!NONCE_RE.test(nonce)) throw new AppError(catalog.NONCE_INVALID, "The nonce is not one this service issued");
    const outcome = await this.d.nonces.consume(nonce, tenantId, this.d.clock.nowMs());
    if (outcome !== "ok") {
      const [entry, reason] = CONSUME_ERRORS[outcome];
      throw new AppError(entry, reason);
    }
  }

  /**
   * One blob against one nonce: consume, appraise, store. Throws AppError for nonce problems and unreadable
   * containers (the nonce stays consumed); returns the stored verdict otherwise.
   */
  async submitBlob(tenant: Tenant, nonce: string | undefined, blob: Uint8Array): Promise<StoredVerdict> {
    if (blob.length === 0) throw new AppError(catalog.BLOB_EMPTY, "The request body is empty");
    const { tenantId } = tenant;
    await this.consumeNonce(tenantId, nonce);
    const now = new Date(this.d.clock.nowMs());
    const started = performance.now();
    const result = appraise({ blob, nonce: nonce!, trust: this.d.trust(tenant), now });
    this.d.onAppraisal?.(result, (performance.now() - started) / 1000);
    const stored: StoredVerdict = {
      objectId: this.d.rng.bytes(16).toString("base64url"),
      tenantId,
      format: result.format,
      record: result.record,
      reason: result.reason,
      detail: result.detail,
      createdAt: now.toISOString(),
    };
    await this.d.verdicts.saveVerdict(stored);
    return stored;
  }

  async getVerdict(tenantId: string, objectId: string): Promise<StoredVerdict> {
    const v = await this.d.verdicts.getVerdict(objectId);
    if (!v) throw new AppError(catalog.A_NOT_FOUND, "No verdict has that objectId");
    if (v.tenantId !== tenantId) throw new AppError(catalog.A_FORBIDDEN, "The verdict belongs to another tenant");
    return v;
  }
}
