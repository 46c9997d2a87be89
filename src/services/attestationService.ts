import { appraise } from "../attestation/appraise.ts";
import type { AppraisalResult, TrustConfig } from "../attestation/types.ts";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import { checkNonceShape, NonceService, refuseUnlessConsumed, type NonceLimits } from "../nonces/nonceService.ts";
import type { NonceStore, NonceVerdictStore, VerdictStore } from "../store/types.ts";

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
  limits: NonceLimits;
  /** called once per appraisal, for metrics */
  onAppraisal?: (result: AppraisalResult, seconds: number) => void;
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
 * Redis nonces) the verdict is saved right after the consumption. What a nonce is, its TTL and cap, and what
 * each refusal answers are src/nonces/'s.
 */
export class AttestationService {
  private readonly nonces: NonceService;
  private readonly nonceVerdicts: NonceVerdictStore;

  constructor(private readonly d: AttestationDeps) {
    // built here rather than injected: consumeThenSave spends from the same NonceStore, so one dependency serves both
    this.nonces = new NonceService(d.nonces, d.clock, d.rng, d.limits);
    this.nonceVerdicts = d.nonceVerdicts ?? consumeThenSave(d.nonces, d.verdicts);
  }

  issueNonce(tenantId: string): Promise<string> {
    return this.nonces.issue(tenantId);
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
      await this.nonces.consume(nonce, tenantId);
      throw e;
    }
    refuseUnlessConsumed(await this.nonceVerdicts.consumeWithVerdict(nonce, tenantId, this.d.clock.nowMs(), stored));
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
