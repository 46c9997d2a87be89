import type { Clock, Rng } from "../clock.ts";
import type { WebhookAttempt, WebhookAttemptOutcome, WebhookDelivery } from "../domain/webhooks.ts";
import { postWebhook, resolveWebhookTarget, WebhookTargetRefused, type Lookup, type WebhookTargetPolicy } from "../net/webhookTarget.ts";
import { abortablePause, retryAfterMs } from "../net/retry.ts";
import type { WebhookStore } from "../store/types.ts";
import { webhookSignature, type WebhookRegistry } from "./webhooks.ts";

/** What is kept of a receiver's answer: its first bytes, as text (the portal shows them). */
export const WEBHOOK_RESPONSE_EXCERPT_BYTES = 1024;

export interface WebhookDeliveryOptions {
  /** this process's name in the leases it takes (instance and pid) */
  owner: string;
  targets: WebhookTargetPolicy;
  /** one attempt: connection, answer and excerpt */
  timeoutMs: number;
  /** how often the outbox is polled when the last pass found nothing to do */
  pollMs: number;
  /** the first retry's pause; each later one doubles, up to `retryMaxMs`, spread by ±20 % */
  retryBaseMs: number;
  retryMaxMs: number;
  /** deliveries attempted at once */
  batch?: number;
  lookup?: Lookup;
  /** each attempt's result, for metrics */
  onAttempt?: (result: "delivered" | "retry" | "failed", seconds: number) => void;
  /** a pass that threw (the store unreachable): logged, and the loop goes on */
  onError?: (e: unknown) => void;
}

export type AttemptResult = "delivered" | "retry" | "failed";

/**
 * The delivery worker (issue 26, docs/events.md): claims due outbox rows with a lease (PostgreSQL: FOR UPDATE SKIP
 * LOCKED, so of several instances one attempts each row), POSTs each per the Standard Webhooks specification
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature` with one `v1,` signature per active secret), records the
 * attempt, and schedules the next with exponential backoff and jitter (no sooner than a 429's or 503's Retry-After,
 * up to the longest pause) until the delivery's retry period ends.
 *
 * It runs beside the request path, never in it: an event's request only wrote its outbox row, so a slow or dead
 * receiver costs that request nothing. The lease outlasts an attempt's timeout, so a row is never attempted twice at
 * once; a process killed mid-attempt leaves its lease to expire, and the row is attempted again (at least once).
 */
export class WebhookDeliverer {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly store: WebhookStore,
    private readonly registry: WebhookRegistry,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly o: WebhookDeliveryOptions,
  ) {}

  /**
   * An attempt ends within its timeout (one timer over connection and answer), then records its outcome: twice the
   * timeout and 5 s more is a lease no live attempt outlasts, and what a killed process's rows wait before another
   * instance takes them.
   */
  private get leaseMs(): number {
    return 2 * this.o.timeoutMs + 5_000;
  }

  start(): void {
    if (this.loop) return;
    this.loop = (async () => {
      while (!this.stopping.signal.aborted) {
        let n = 0;
        try {
          n = await this.runOnce();
        } catch (e) {
          this.o.onError?.(e);
        }
        // a full batch: more may be due, look again at once
        if (n < (this.o.batch ?? 16)) await abortablePause(this.o.pollMs, this.stopping.signal);
      }
    })();
  }

  /**
   * Stops claiming, and waits for the attempts in flight (each ends within the timeout), so that their outcome is
   * recorded and no lease is left to expire: a graceful stop delays no delivery.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** One pass: claims due deliveries and attempts them all at once; answers how many it claimed. */
  async runOnce(): Promise<number> {
    const now = this.clock.nowMs();
    const due = await this.store.claimWebhookDeliveries(this.o.owner, this.o.batch ?? 16, now, this.leaseMs);
    await Promise.all(due.map((d) => this.attempt(d)));
    return due.length;
  }

  /** The pause before the next attempt after `tries` failed ones: base·2^(tries-1), capped, ±20 % jitter. */
  retryDelayMs(tries: number): number {
    const plain = Math.min(this.o.retryMaxMs, this.o.retryBaseMs * 2 ** Math.min(tries - 1, 40));
    const spread = 0.8 + 0.4 * (this.rng.bytes(1)[0]! / 255);
    return Math.round(plain * spread);
  }

  private async attempt(d: WebhookDelivery): Promise<AttemptResult> {
    const started = this.clock.nowMs();
    const t0 = performance.now();
    const number = d.attempts + 1;
    let status: number | null = null;
    let error: string | null = null;
    let response: string | null = null;
    let askedPauseMs: number | undefined;
    let terminal = false;
    const endpoint = await this.registry.endpointFor(d.tenantId, d.endpointId);
    if (!endpoint) {
      error = "the endpoint was removed";
      terminal = true;
    } else if (!endpoint.enabled) {
      error = "the endpoint is disabled";
      terminal = true;
    } else {
      try {
        const target = await resolveWebhookTarget(endpoint.url, this.o.targets, this.o.lookup);
        const ts = Math.floor(this.clock.nowMs() / 1000);
        const headers = {
          "webhook-id": d.eventId,
          "webhook-timestamp": String(ts),
          "webhook-signature": webhookSignature(this.registry.secretsFor(endpoint), d.eventId, ts, d.payload),
          "user-agent": "attestd-webhooks",
        };
        const r = await postWebhook(target, headers, d.payload, {
          timeoutMs: this.o.timeoutMs,
          maxExcerptBytes: WEBHOOK_RESPONSE_EXCERPT_BYTES,
        });
        status = r.status;
        response = r.excerpt.length ? r.excerpt.toString("utf8") : null;
        // a receiver that says when to come back (429, 503) is not asked sooner, up to the longest pause
        if (status === 429 || status === 503) askedPauseMs = retryAfterMs(r.retryAfter, this.clock.nowMs());
      } catch (e) {
        const err = e as Error & { code?: string };
        error = e instanceof WebhookTargetRefused ? `refused: ${err.message}` : err.name === "TimeoutError" ? err.message : `${err.code ?? err.name}: ${err.message}`;
      }
    }
    const durationMs = Math.round(performance.now() - t0);
    const ok = status !== null && status >= 200 && status < 300;
    const nowMs = this.clock.nowMs();
    let outcome: WebhookAttemptOutcome;
    let result: AttemptResult;
    if (ok) {
      outcome = { state: "delivered", at: new Date(nowMs).toISOString() };
      result = "delivered";
    } else {
      const next = nowMs + Math.max(this.retryDelayMs(d.tries + 1), Math.min(askedPauseMs ?? 0, this.o.retryMaxMs));
      if (terminal || next > d.giveUpAtMs) {
        outcome = { state: "failed", at: new Date(nowMs).toISOString() };
        result = "failed";
      } else {
        outcome = { state: "pending", nextAttemptMs: next };
        result = "retry";
      }
    }
    const a: WebhookAttempt = { deliveryId: d.id, attempt: number, at: new Date(started).toISOString(), status, durationMs, error, response };
    await this.store.recordWebhookAttempt(this.o.owner, a, outcome);
    this.o.onAttempt?.(result, durationMs / 1000);
    return result;
  }
}
