/**
 * Signed webhooks (issue 26, docs/events.md): a tenant's endpoints, the events they subscribe to, and the durable
 * outbox of deliveries written in the same store transaction as the event's own write. Deliveries follow the
 * Standard Webhooks specification; src/services/webhooks.ts owns the endpoints and plans the deliveries,
 * src/services/webhookDelivery.ts delivers them.
 */

/** Every event a tenant's endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  "verdict.stored",
  "device.pin.changed",
  "device.pin.refused",
  "key.created",
  "key.revoked",
  "trust.degraded",
  "trust.recovered",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Which verdicts a `verdict.stored` subscription hears: every one, or only those that are not Yes. */
export const WEBHOOK_VERDICT_FILTERS = ["all", "non-yes"] as const;
export type WebhookVerdictFilter = (typeof WEBHOOK_VERDICT_FILTERS)[number];

/** An endpoint as the store keeps it; `sealedSecret` is the sealed JSON of its signing secrets (WebhookSecrets). */
export interface StoredWebhookEndpoint {
  id: string;
  tenantId: string;
  url: string;
  description: string;
  events: WebhookEventType[];
  verdicts: WebhookVerdictFilter;
  enabled: boolean;
  sealedSecret: string;
  createdAt: string;
  updatedAt: string;
}

/** What lists show: the endpoint without its secret, with when a previous secret stops signing (a rotation). */
export type WebhookEndpointSummary = Omit<StoredWebhookEndpoint, "sealedSecret"> & { previousSecretUntil: string | null };

/** The signing secrets of an endpoint, as sealed: the current one, and a previous one signing beside it until `until`. */
export interface WebhookSecrets {
  current: string;
  previous?: { secret: string; until: string };
}

export type WebhookDeliveryState = "pending" | "delivered" | "failed";

/** One outbox row: one event for one endpoint, written with the event's own write (or on its own for trust events). */
export interface NewWebhookDelivery {
  /** the delivery's id (whd_...) */
  id: string;
  /** the event's id, the Standard Webhooks `webhook-id`: one per event, the same for every endpoint and attempt */
  eventId: string;
  tenantId: string;
  endpointId: string;
  eventType: WebhookEventType;
  /** the body, exactly as it is sent and signed */
  payload: string;
  createdAt: string;
  nextAttemptMs: number;
  /** no attempt is made after this: the delivery is then failed */
  giveUpAtMs: number;
}

export interface WebhookDelivery extends NewWebhookDelivery {
  state: WebhookDeliveryState;
  /** attempts made so far (the next attempt's number is attempts + 1) */
  attempts: number;
  /** failed attempts since the delivery was last (re)started: the backoff's exponent */
  tries: number;
  lastStatus: number | null;
  finishedAt: string | null;
}

/** One attempt to deliver: when, what came back (an HTTP status, or an error for no answer) and how long it took. */
export interface WebhookAttempt {
  deliveryId: string;
  attempt: number;
  at: string;
  /** the HTTP status of the answer; null when there was none (refused, timed out, unreachable) */
  status: number | null;
  durationMs: number;
  /** why there was no usable answer (timeout, connection refused, address refused by the SSRF guard) */
  error: string | null;
  /** the first bytes of the answer's body (WEBHOOK_RESPONSE_EXCERPT_BYTES), as text */
  response: string | null;
}

/**
 * A delivery as the admin API and `attestd webhook deliveries|show` show it: what an operator reads, with the
 * outbox's scheduling in ISO times and without the tenant (named by the request) or the backoff's counter.
 */
export function deliveryView(d: WebhookDelivery) {
  return {
    id: d.id,
    eventId: d.eventId,
    endpointId: d.endpointId,
    eventType: d.eventType,
    state: d.state,
    attempts: d.attempts,
    lastStatus: d.lastStatus,
    createdAt: d.createdAt,
    nextAttemptAt: d.state === "pending" ? new Date(d.nextAttemptMs).toISOString() : null,
    giveUpAt: new Date(d.giveUpAtMs).toISOString(),
    finishedAt: d.finishedAt,
  };
}

/** One delivery with its payload and every attempt, as `GET /portal/api/webhook-deliveries/{id}` and `webhook show` give it. */
export function deliveryDetailView(d: { delivery: WebhookDelivery; attempts: WebhookAttempt[] }) {
  return { delivery: deliveryView(d.delivery), payload: d.delivery.payload, attempts: d.attempts.map(({ deliveryId: _d, ...a }) => a) };
}

/** What an attempt leaves the delivery as: delivered, failed for good, or pending again at `nextAttemptMs`. */
export type WebhookAttemptOutcome =
  | { state: "delivered" | "failed"; at: string }
  | { state: "pending"; nextAttemptMs: number };

/**
 * The deliveries a verdict's write carries, decided from the verdict as it is stored (a named device's pin may have
 * turned it to No): pure and synchronous, called inside the store's transaction, possibly more than once (a store
 * retrying a lost race) and only the last answer kept.
 */
export type WebhookPlan = (verdict: import("./verdicts.ts").StoredVerdict) => readonly NewWebhookDelivery[];
