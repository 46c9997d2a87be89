import { looksLikeAppAttestAssertion, looksLikeAppAttestAttestation, readAppAttestAssertion } from "../attestation/encoding/appAttestObject.ts";
import type { AppAttestEvidence, AppAttestReceiptCheck, AppraisalResult } from "../attestation/types.ts";
import type { Clock } from "../clock.ts";
import type { AppAttestKeyEffect, StoredAppAttestKey } from "../domain/iosApps.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { AppAttestStore } from "../store/types.ts";
import { assertionMessages } from "../attestation/formats/appAttest.ts";
import type { CheckAssertionSignature } from "./cryptoThreads.ts";
import type { IosAppRegistry } from "./iosApps.ts";
import { fraudRiskDetail } from "./appAttestReceiptRefreshes.ts";

/** A key id as attestd shows and takes it: base64 (standard alphabet, padded) of 32 bytes. */
export const KEY_ID_RE = /^[A-Za-z0-9+/]{43}=$/;

export function checkKeyId(keyId: string): void {
  if (!KEY_ID_RE.test(keyId)) throw new AppError(catalog.INVALID_REQUEST, "a key id is the base64 of 32 bytes (44 characters)");
}

/** A key as lists show it: no receipt bytes (their size only). */
export type AppAttestKeySummary = Omit<StoredAppAttestKey, "receipt"> & { receiptBytes: number };

export function keySummary({ receipt, ...k }: StoredAppAttestKey): AppAttestKeySummary {
  return { ...k, receiptBytes: Buffer.from(receipt, "base64").length };
}

/**
 * App Attest's memory (issue 25): what an appraisal needs looked up before it runs (the tenant's apps; for an
 * assertion, the tenant's key of that id), the effect a Yes asks the store to apply with its verdict, and the
 * keys as operators see them (`attestd ios-key list|show|revoke`, the admin API).
 *
 * The receipt seam: `receiptCheck` (AppAttestEvidence.receiptCheck) is handed to every attestation's appraisal when
 * given; the receipt module (encoding/appAttestReceipt.ts) plugs in there. Without it the receipt is kept with the
 * key, not judged. Refreshing receipts with Apple works from the stored `receipt` (`StoredAppAttestKey.receipt`).
 */
export class AppAttestKeys {
  /** the stored key an assertion's evidence was made from, for its verdict's detail.fraudRisk (no second read) */
  private readonly storedOf = new WeakMap<AppAttestEvidence, StoredAppAttestKey>();

  constructor(
    private readonly store: AppAttestStore,
    private readonly apps: Pick<IosAppRegistry, "appsForAppraisal">,
    private readonly clock: Clock,
    private readonly receiptCheck?: AppAttestReceiptCheck,
    /** checks an assertion's signature before its appraisal, on CryptoThreads' threads; without it the appraisal does */
    private readonly checkSignature?: CheckAssertionSignature,
  ) {}

  /**
   * The evidence for an app-attest body against `nonce`; undefined for any other body. A malformed assertion is the
   * appraisal's to refuse. For an assertion of a key the tenant holds and has not revoked, its signature is checked
   * here when a checker was given (the appraisal then uses the answer: AppAttestEvidence.signature).
   */
  async evidence(tenantId: string, blob: Uint8Array, nonce: string): Promise<AppAttestEvidence | undefined> {
    const receipt = this.receiptCheck ? { receiptCheck: this.receiptCheck } : {};
    if (looksLikeAppAttestAttestation(blob)) return { apps: await this.apps.appsForAppraisal(tenantId), ...receipt };
    if (!looksLikeAppAttestAssertion(blob)) return undefined;
    let assertion;
    try {
      assertion = readAppAttestAssertion(blob);
    } catch {
      return { apps: [] };
    }
    const keyId = Buffer.from(assertion.keyId).toString("base64");
    const key = await this.store.getAppAttestKey(tenantId, keyId);
    const evidence: AppAttestEvidence = {
      apps: [],
      key: key && { keyId: key.keyId, appId: key.appId, publicKey: key.publicKey, counter: key.counter, revoked: key.revokedAt !== null },
      assertion: { blob, read: assertion },
    };
    if (key) this.storedOf.set(evidence, key);
    if (key && key.revokedAt === null && this.checkSignature) {
      const messages = assertionMessages(assertion.authenticatorData, nonce);
      // a key that cannot be used (a stored point that does not decode) is left to the appraisal, which says so
      const reading = await this.checkSignature(key.publicKey, messages, assertion.signature).catch(() => undefined);
      if (reading !== undefined) evidence.signature = { keyId, nonce, reading };
    }
    return evidence;
  }

  /**
   * `detail.fraudRisk` for an App Attest verdict (fraudRiskDetail): for an assertion of a known key, the metric
   * stored with it and when it was read, or why there is none; for a Yes attestation, that it is not read yet.
   * Undefined for other verdicts. Informational: computed after the appraisal, no rule reads it.
   */
  fraudRisk(result: AppraisalResult, evidence: AppAttestEvidence): Record<string, unknown> | undefined {
    const stored = this.storedOf.get(evidence);
    if (stored) return fraudRiskDetail(stored);
    return result.appAttest?.kind === "attested" ? fraudRiskDetail(undefined) : undefined;
  }

  /** What the store applies with a Yes verdict's commit; undefined when the result asks nothing. */
  effectOf(tenantId: string, result: AppraisalResult): AppAttestKeyEffect | undefined {
    const o = result.appAttest;
    if (!o) return undefined;
    const at = new Date(this.clock.nowMs()).toISOString();
    if (o.kind === "asserted") return { kind: "asserted", tenantId, keyId: o.keyId, counter: o.counter, at };
    return {
      kind: "attested",
      key: {
        tenantId,
        keyId: o.keyId,
        appId: o.appId,
        publicKey: o.publicKey,
        counter: 0,
        environment: o.environment,
        receipt: o.receipt,
        attestedAt: at,
        lastAssertedAt: null,
        revokedAt: null,
        riskMetric: null,
        riskMetricAt: null,
        lastRefreshResult: null,
        lastRefreshReason: null,
        lastRefreshAt: null,
        // due at once; refreshed only when its app has a developer key (AppAttestReceiptRefreshes)
        refreshDueAt: at,
      },
    };
  }

  async list(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<{ items: AppAttestKeySummary[]; next: string | null }> {
    if (q.after !== undefined) checkKeyId(q.after);
    const items = await this.store.listAppAttestKeys(tenantId, q);
    return { items: items.map(keySummary), next: items.length === q.limit ? items[items.length - 1]!.keyId : null };
  }

  /** A_NOT_FOUND when the tenant has no such key (another tenant's is not found either). */
  async get(tenantId: string, keyId: string): Promise<AppAttestKeySummary> {
    checkKeyId(keyId);
    const k = await this.store.getAppAttestKey(tenantId, keyId);
    if (!k) throw new AppError(catalog.A_NOT_FOUND, "No App Attest key of the tenant has that key id");
    return keySummary(k);
  }

  /** Refuses the key's later assertions (rule revoked-key). A_NOT_FOUND for an unknown or already revoked key. */
  async revoke(tenantId: string, keyId: string, by: ChangeActor): Promise<AppAttestKeySummary> {
    checkKeyId(keyId);
    const before = await this.store.getAppAttestKey(tenantId, keyId);
    if (!(await this.store.revokeAppAttestKey(tenantId, keyId, new Date(this.clock.nowMs()).toISOString()))) {
      throw new AppError(catalog.A_NOT_FOUND, "No App Attest key of the tenant has that key id, or it is revoked already");
    }
    const after = await this.get(tenantId, keyId);
    await by.record({ tenantId, action: "app-attest-key.revoked", target: { kind: "app-attest-key", id: keyId }, before: before ? keySummary(before) : null, after });
    return after;
  }
}
