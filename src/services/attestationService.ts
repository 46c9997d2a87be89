import { appraise } from "../attestation/appraise.ts";
import type { AppraisalResult, TrustConfig } from "../attestation/types.ts";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import type { NonceConsumeOutcome, NonceStore, NonceVerdictStore, VerdictStore } from "../store/types.ts";

export interface AttestationLimits {
  nonceTtlMs: number;
  maxOutstandingNonces: number;
}

export interface AttestationDeps {
  nonces: NonceStore;
  verdicts: VerdictStore;
  /**
   * when nonces and verdicts live in one store that can commit a consumption with its verdict (SQLite); otherwise
   * the nonce is consumed and the verdict saved in two steps
   */
  nonceVerdicts?: NonceVerdictStore | undefined;
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

function checkNonceShape(nonce: string | undefined): asserts nonce is string {
  if (nonce === undefined || nonce === "") throw new AppError(catalog.NONCE_REQUIRED, "The nonce query parameter is required");
  if (!NONCE_RE.test(nonce)) throw new AppError(catalog.NONCE_INVALID, "The nonce is not one this service issued");
}

function refuse(outcome: NonceConsumeOutcome): void {
  if (outcome === "ok") return;
  const [entry, reason] = CONSUME_ERRORS[outcome];
  throw new AppError(entry, reason);
}

/**
 * Nonces and verdicts in stores that share no transaction (Redis nonces, PostgreSQL verdicts): consume, then save.
 * A crash between the two leaves the nonce used with no verdict; nothing answered is lost.
 */
function consumeThenSave(nonces: NonceStore, verdicts: VerdictStore): NonceVerdictStore {
  return {
    async consumeWithVerdict(nonce, tenantId, nowMs, verdict) {
      const outcome = await nonces.consume(nonce, tenantId, nowMs);
      if (outcome === "ok") await verdicts.saveVerdict(verdict);
      return outcome;
    },
  };
}

/**
 * Part A's use cases: issue a nonce, appraise a blob against one. One blob per nonce, whatever the outcome, and
 * the verdict is stored before the caller is answered, so an acknowledged verdict is never lost. On a store that
 * holds both (SQLite) the consumption and the verdict commit in one transaction; elsewhere (PostgreSQL with
 * Redis nonces) the verdict is saved right after the consumption.
 */
export class AttestationService {
  private readonly nonceVerdicts: NonceVerdictStore;

  constructor(private readonly d: AttestationDeps) {
    this.nonceVerdicts = d.nonceVerdicts ?? consumeThenSave(d.nonces, d.verdicts);
  }

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

  /**
   * One blob against one nonce: appraise, then consume the nonce and store the verdict (one transaction where the
   * store can, `NonceVerdictStore`). The answers and their precedence are as if the nonce were consumed first:
   * any nonce problem (unknown, expired, used — also when a concurrent post won meanwhile) is answered before any
   * blob problem, and the verdict is then discarded; an unreadable blob still consumes the nonce. No read of the
   * nonce comes first: it would cost every request a lookup to spare only posts with a bad nonce an appraisal, and
   * those are bounded by the key's rate limit like any other request.
   */
  async submitBlob(tenant: Tenant, nonce: string | undefined, blob: Uint8Array): Promise<StoredVerdict> {
    if (blob.length === 0) throw new AppError(catalog.BLOB_EMPTY, "The request body is empty");
    checkNonceShape(nonce);
    const { tenantId } = tenant;
    let stored: StoredVerdict;
    try {
      stored = this.appraised(tenant, nonce, blob);
    } catch (e) {
      refuse(await this.d.nonces.consume(nonce, tenantId, this.d.clock.nowMs()));
      throw e;
    }
    refuse(await this.nonceVerdicts.consumeWithVerdict(nonce, tenantId, this.d.clock.nowMs(), stored));
    return stored;
  }

  /** Appraises `blob` now and shapes the verdict to store; throws AppError when the container is unreadable. */
  private appraised(tenant: Tenant, nonce: string, blob: Uint8Array): StoredVerdict {
    const { tenantId } = tenant;
    const now = new Date(this.d.clock.nowMs());
    const started = performance.now();
    const result = appraise({ blob, nonce, trust: this.d.trust(tenant), now });
    this.d.onAppraisal?.(result, (performance.now() - started) / 1000);
    return {
      objectId: this.d.rng.bytes(16).toString("base64url"),
      tenantId,
      format: result.format,
      record: result.record,
      reason: result.reason,
      detail: result.detail,
      createdAt: now.toISOString(),
    };
  }

  async getVerdict(tenantId: string, objectId: string): Promise<StoredVerdict> {
    const v = await this.d.verdicts.getVerdict(objectId);
    if (!v) throw new AppError(catalog.A_NOT_FOUND, "No verdict has that objectId");
    if (v.tenantId !== tenantId) throw new AppError(catalog.A_FORBIDDEN, "The verdict belongs to another tenant");
    return v;
  }
}
