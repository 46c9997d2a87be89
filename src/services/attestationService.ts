import { appraise } from "../attestation/appraise.ts";
import { looksLikePlayIntegrityToken } from "../attestation/encoding/playIntegrityToken.ts";
import type { AppAttestEvidence, AppraisalResult, DeviceFacts, PlayIntegrityEvidence, TrustConfig } from "../attestation/types.ts";
import { refusedByStore } from "../attestation/formats/appAttest.ts";
import type { AppAttestKeyEffect } from "../domain/iosApps.ts";
import type { DeviceRecord } from "../domain/devices.ts";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { TenantPolicyVersion } from "../domain/tenantPolicy.ts";
import { newVerdictObjectId, type StoredVerdict } from "../domain/verdicts.ts";
import type { WebhookPlan } from "../domain/webhooks.ts";
import { checkNonceShape, NonceService, refuseUnlessConsumed, type NonceLimits } from "../nonces/nonceService.ts";
import type { AppAttestStore, DeviceStore, NonceAppAttestStore, NonceDeviceVerdictStore, NonceStore, NonceVerdictStore, VerdictStore } from "../store/types.ts";
import { applyDevicePin } from "./devicePinning.ts";
import { checkDeviceId } from "./deviceService.ts";
import { inSpan, inSpanSync, inStoreSpan } from "../tracing/spans.ts";

export interface AttestationDeps {
  nonces: NonceStore;
  /** verdicts, and the named devices whose records are written with them */
  verdicts: VerdictStore & DeviceStore;
  /**
   * when nonces and verdicts live in one store that can commit a consumption with its verdict (SQLite); otherwise
   * the nonce is consumed and the verdict saved in two steps
   */
  nonceVerdicts?: (NonceVerdictStore & NonceDeviceVerdictStore) | undefined;
  /**
   * when nonces and App Attest keys live in one store (SQLite; PostgreSQL without Redis): an App Attest verdict's
   * nonce, key effect and verdict commit in one transaction; otherwise the nonce is consumed first, on its own
   */
  nonceAppAttest?: NonceAppAttestStore | undefined;
  /**
   * the trust configuration for a tenant now (its android-key policy may differ), under its stored policy version
   * when it has one; changes when a source refreshes
   */
  trust: (tenant: Tenant, stored?: TenantPolicyVersion) => TrustConfig;
  /** the tenant's stored policy version in force (TenantPolicies.forAppraisal, docs/policy.md); without it, none */
  policies?: { forAppraisal(tenantId: string): Promise<TenantPolicyVersion | undefined> };
  clock: Clock;
  rng: Rng;
  limits: NonceLimits;
  /** called once per appraisal, for metrics */
  onAppraisal?: (result: AppraisalResult, seconds: number) => void;
  /**
   * opens a Play Integrity token with the tenant's registered apps before appraisal (PlayIntegrityOpener);
   * undefined for any other body. Without it a token is appraised as if the tenant registered no app.
   */
  playIntegrity?: { open(tenantId: string, blob: Uint8Array): Promise<PlayIntegrityEvidence | undefined> };
  /**
   * App Attest (AppAttestKeys): the tenant's apps and keys looked up before appraisal, and the store a Yes's key or
   * counter is written to with its verdict. Without it an App Attest body is appraised as if no app were registered.
   */
  appAttest?: {
    keys: {
      evidence(tenantId: string, blob: Uint8Array, nonce: string): Promise<AppAttestEvidence | undefined>;
      effectOf(tenantId: string, result: AppraisalResult): AppAttestKeyEffect | undefined;
      /** `detail.fraudRisk` (informational: Apple's fraud-risk metric as stored with the key, or why there is none) */
      fraudRisk?(result: AppraisalResult, evidence: AppAttestEvidence): Record<string, unknown> | undefined;
    };
    store: AppAttestStore;
    /** told after a Yes attestation stored a new key (AppAttestReceiptRefreshes.nudge: its receipt refreshed in the background) */
    onKeyAttested?: () => void;
  };
  /**
   * signed webhooks (WebhookRegistry): the outbox rows a verdict carries, written in its transaction; undefined (one
   * cache lookup) when the tenant has no endpoint that hears verdict or pin events
   */
  webhooks?: { verdictPlan(tenantId: string): Promise<WebhookPlan | undefined> };
}

/**
 * Nonces and verdicts in stores that share no transaction (Redis nonces, PostgreSQL verdicts): consume, then save.
 * A crash between the two leaves the nonce used with no verdict; nothing answered is lost.
 */
function consumeThenSave(nonces: NonceStore, verdicts: VerdictStore & DeviceStore): NonceVerdictStore & NonceDeviceVerdictStore {
  return {
    async consumeWithVerdict(nonce, tenantId, nowMs, verdict, webhooks) {
      const outcome = await nonces.consume(nonce, tenantId, nowMs);
      if (outcome === "ok") await verdicts.saveVerdict(verdict, webhooks);
      return outcome;
    },
    async consumeWithDeviceVerdict(nonce, tenantId, nowMs, deviceId, decide, webhooks) {
      const outcome = await nonces.consume(nonce, tenantId, nowMs);
      if (outcome !== "ok") return { outcome };
      return { outcome, verdict: await verdicts.saveDeviceVerdict(tenantId, deviceId, decide, webhooks) };
    },
  };
}

/** An appraisal's verdict to store; with an App Attest effect, the verdict stored instead should the store refuse it. */
interface Appraised {
  verdict: StoredVerdict;
  facts: DeviceFacts | undefined;
  effect?: AppAttestKeyEffect;
  refused?: StoredVerdict;
}

export interface SubmitOptions {
  /**
   * the relying party's name for the device (1-128 of A-Z a-z 0-9 . _ : -): the appraisal is then held to the
   * device's pin and recorded in its history (devicePinning.ts, docs/devices.md)
   */
  deviceId?: string | undefined;
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
  private readonly nonceVerdicts: NonceVerdictStore & NonceDeviceVerdictStore;

  constructor(private readonly d: AttestationDeps) {
    // built here rather than injected: consumeThenSave spends from the same NonceStore, so one dependency serves both
    this.nonces = new NonceService(d.nonces, d.clock, d.rng, d.limits);
    this.nonceVerdicts = d.nonceVerdicts ?? consumeThenSave(d.nonces, d.verdicts);
  }

  issueNonce(tenantId: string): Promise<string> {
    return inStoreSpan("issue_nonce", () => this.nonces.issue(tenantId));
  }

  /**
   * One blob against one nonce: appraise, then consume the nonce and store the verdict (one transaction where the
   * store can, `NonceVerdictStore`). The answers and their precedence are as if the nonce were consumed first:
   * any nonce problem (unknown, expired, used — also when a concurrent post won meanwhile) is answered before any
   * blob problem, and the verdict is then discarded; an unreadable blob still consumes the nonce. No read of the
   * nonce comes first: it would cost every request a lookup to spare only posts with a bad nonce an appraisal, and
   * those are bounded by the key's rate limit like any other request.
   *
   * With a `deviceId` (checked first: a malformed one spends no nonce), the device's pin is consulted inside the
   * same transaction that consumes the nonce and stores the verdict (`consumeWithDeviceVerdict`), so a refused
   * nonce leaves the device untouched and concurrent appraisals of one device each see the pin the first wrote.
   */
  async submitBlob(tenant: Tenant, nonce: string | undefined, blob: Uint8Array, opts: SubmitOptions = {}): Promise<StoredVerdict> {
    const { deviceId } = opts;
    if (deviceId !== undefined) checkDeviceId(deviceId);
    if (blob.length === 0) throw new AppError(catalog.BLOB_EMPTY, "The request body is empty");
    checkNonceShape(nonce);
    const { tenantId } = tenant;
    let appraised: Appraised;
    try {
      appraised = await this.appraised(tenant, nonce, blob);
    } catch (e) {
      await inStoreSpan("consume_nonce", () => this.nonces.consume(nonce, tenantId));
      throw e;
    }
    const webhooks = await this.d.webhooks?.verdictPlan(tenantId);
    const nowMs = this.d.clock.nowMs();
    if (appraised.effect) {
      const withEffect = appraised as Required<Appraised>;
      return inStoreSpan("consume_nonce_save_app_attest_verdict", () =>
        this.submitWithKeyEffect(tenant, nonce, nowMs, deviceId, withEffect, webhooks),
      );
    }
    if (deviceId === undefined) {
      const outcome = await inStoreSpan("consume_nonce_save_verdict", () =>
        this.nonceVerdicts.consumeWithVerdict(nonce, tenantId, nowMs, appraised.verdict, webhooks),
      );
      refuseUnlessConsumed(outcome);
      return appraised.verdict;
    }
    const { outcome, verdict } = await inStoreSpan("consume_nonce_save_device_verdict", () =>
      this.nonceVerdicts.consumeWithDeviceVerdict(nonce, tenantId, nowMs, deviceId, (current) => applyDevicePin(current, { deviceId, ...appraised }), webhooks),
    );
    refuseUnlessConsumed(outcome);
    return verdict!;
  }

  /**
   * An App Attest Yes: the key it made known, or the counter it moves forward, is stored with the verdict
   * (compare-and-set, so of two assertions with one counter exactly one is Yes; the other's verdict is stored as
   * `refused`, rule counter). Where the store holds the nonces too (`nonceAppAttest`: SQLite, PostgreSQL without
   * Redis) the nonce's consumption, the effect and the verdict are one transaction, as for the other formats: a
   * refused nonce touches neither key nor verdict, a refused effect still spends the nonce (its `No` is the blob's
   * answer). Elsewhere (Redis nonces) the nonce is consumed first, on its own: a crash between leaves the nonce used
   * with no verdict. With a deviceId the device's record is written with the verdict it decides.
   */
  private async submitWithKeyEffect(
    tenant: Tenant,
    nonce: string,
    nowMs: number,
    deviceId: string | undefined,
    a: Required<Appraised>,
    webhooks: WebhookPlan | undefined,
  ): Promise<StoredVerdict> {
    const { tenantId } = tenant;
    const store = this.d.appAttest!.store;
    const decide = (did: string) => (applied: boolean) => (current: DeviceRecord | undefined) =>
      applyDevicePin(current, { deviceId: did, verdict: applied ? a.verdict : a.refused, facts: applied ? a.facts : undefined });
    let applied: boolean;
    let stored: StoredVerdict;
    if (this.d.nonceAppAttest) {
      const save = deviceId === undefined ? { verdict: a.verdict, refused: a.refused } : { deviceId, decide: decide(deviceId) };
      const r = await this.d.nonceAppAttest.consumeWithAppAttestVerdict(nonce, tenantId, nowMs, a.effect, save, webhooks);
      refuseUnlessConsumed(r.outcome);
      applied = r.applied === true;
      stored = r.verdict!;
    } else {
      refuseUnlessConsumed(await this.d.nonces.consume(nonce, tenantId, nowMs));
      if (deviceId === undefined) {
        stored = await store.saveAppAttestVerdict(a.effect, a.verdict, a.refused, webhooks);
        applied = stored.objectId === a.verdict.objectId && stored.record.verdict === a.verdict.record.verdict;
      } else {
        applied = await store.applyAppAttestEffect(a.effect);
        stored = await this.d.verdicts.saveDeviceVerdict(tenantId, deviceId, decide(deviceId)(applied), webhooks);
      }
    }
    // a new key: its receipt is refreshed in the background (never in this request's path)
    if (applied && a.effect.kind === "attested") this.d.appAttest!.onKeyAttested?.();
    return stored;
  }

  /**
   * Appraises `blob` now and shapes the verdict to store, with the device facts the appraisal authenticated;
   * throws AppError when the container is unreadable. A Play Integrity token is opened first (its app's keys, or
   * Google), since the appraisal itself reads no key store and no network.
   */
  private async appraised(tenant: Tenant, nonce: string, blob: Uint8Array): Promise<Appraised> {
    const { tenantId } = tenant;
    const opener = this.d.playIntegrity;
    // a span only for a body that is a token: the opener answers any other at once, and a span would be noise
    const playIntegrity = !opener ? undefined : looksLikePlayIntegrityToken(blob) ? await inSpan("play_integrity open", {}, () => opener.open(tenantId, blob)) : await opener.open(tenantId, blob);
    const appAttest = await this.d.appAttest?.keys.evidence(tenantId, blob, nonce);
    const policy = await this.d.policies?.forAppraisal(tenantId);
    const now = new Date(this.d.clock.nowMs());
    const started = performance.now();
    // what the span may say of an appraisal: its format, status and verdict; never the nonce or a device's identity
    const appraisedResult = inSpanSync("appraise", {}, (span) => {
      const r = appraise({
        blob,
        nonce,
        trust: this.d.trust(tenant, policy),
        now,
        ...(playIntegrity ? { playIntegrity } : {}),
        ...(appAttest ? { appAttest } : {}),
      });
      span?.setAttributes({ "attestd.appraisal.format": r.format, "attestd.appraisal.status": r.record.status, "attestd.verdict": r.record.verdict });
      return r;
    });
    this.d.onAppraisal?.(appraisedResult, (performance.now() - started) / 1000);
    const fraudRisk = appAttest && this.d.appAttest?.keys.fraudRisk?.(appraisedResult, appAttest);
    const result = fraudRisk ? { ...appraisedResult, detail: { ...appraisedResult.detail, fraudRisk } } : appraisedResult;
    const objectId = newVerdictObjectId(now.getTime(), this.d.rng);
    const stored = (r: AppraisalResult): StoredVerdict => ({
      objectId,
      tenantId,
      format: r.format,
      record: r.record,
      reason: r.reason,
      detail: r.detail,
      createdAt: now.toISOString(),
    });
    const effect = this.d.appAttest?.keys.effectOf(tenantId, result);
    if (!effect) return { verdict: stored(result), facts: result.facts };
    // one objectId for both: exactly one of the two is stored
    return { verdict: stored(result), facts: result.facts, effect, refused: stored(refusedByStore(result)) };
  }

  async getVerdict(tenantId: string, objectId: string): Promise<StoredVerdict> {
    const v = await inStoreSpan("read_verdict", () => this.d.verdicts.getVerdict(objectId));
    if (!v) throw new AppError(catalog.A_NOT_FOUND, "No verdict has that objectId");
    if (v.tenantId !== tenantId) throw new AppError(catalog.A_FORBIDDEN, "The verdict belongs to another tenant");
    return v;
  }
}
