import { createHmac } from "node:crypto";
import { TenantReadCache } from "./tenantReadCache.ts";
import type { Clock, Rng } from "../clock.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import type { VerdictDeviceDetail } from "../domain/devices.ts";
import {
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_VERDICT_FILTERS,
  type NewWebhookDelivery,
  type StoredWebhookEndpoint,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookEndpointSummary,
  type WebhookEventType,
  type WebhookPlan,
  type WebhookSecrets,
  type WebhookVerdictFilter,
} from "../domain/webhooks.ts";
import { randomId } from "../enrollment/ids.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { checkWebhookUrl, WebhookTargetRefused, type WebhookTargetPolicy } from "../net/webhookTarget.ts";
import { sealContext, type SecretBox } from "../secrets/secretBox.ts";
import { WEBHOOK_SECRET_PURPOSE } from "../store/sealedColumns.ts";
import type { ChangeActor } from "./auditTrail.ts";
import type { TenantStore, WebhookStore } from "../store/types.ts";

/**
 * How long an instance plans deliveries with the subscriptions it read: the bound on an endpoint added, changed or
 * removed elsewhere (another instance, the CLI) reaching it. This instance drops its copy at once.
 */
export const WEBHOOK_CACHE_MS = 5_000;
export const MAX_ENDPOINTS_PER_TENANT = 20;
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION = 200;
/** Standard Webhooks: secrets of 24 to 64 bytes; attestd makes 32 */
const SECRET_BYTES = 32;
export const SECRET_PREFIX = "whsec_";
/** the longest a previous secret may keep signing after a rotation (7 days) */
export const MAX_ROTATION_OVERLAP_S = 7 * 86_400;
export const DEFAULT_ROTATION_OVERLAP_S = 86_400;

export interface WebhookSettings {
  targets: WebhookTargetPolicy;
  /** how long a delivery is retried after its event (or a resend) before it fails */
  retryPeriodMs: number;
  cacheMs?: number;
}

/** What a person registers or changes, as the CLI, the admin API and the portal take it. */
export interface WebhookEndpointInput {
  url: string;
  events: readonly string[];
  verdicts?: string;
  description?: string;
  enabled?: boolean;
}

const invalid = (reason: string) => new AppError(catalog.PORTAL_INVALID_REQUEST, reason);

/**
 * The Standard Webhooks signature header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, separated
 * by spaces. `secrets` are `whsec_<base64>`; the HMAC key is the decoded bytes.
 */
export function webhookSignature(secrets: readonly string[], id: string, timestampS: number, body: string): string {
  return secrets
    .map((s) => {
      const key = Buffer.from(s.startsWith(SECRET_PREFIX) ? s.slice(SECRET_PREFIX.length) : s, "base64");
      return `v1,${createHmac("sha256", key).update(`${id}.${timestampS}.${body}`).digest("base64")}`;
    })
    .join(" ");
}

/** The subscriptions a verdict or key event is planned against: enabled endpoints only, without secrets. */
interface Subscription {
  endpointId: string;
  events: ReadonlySet<WebhookEventType>;
  verdicts: WebhookVerdictFilter;
}

function checkEvents(events: readonly string[]): WebhookEventType[] {
  if (!Array.isArray(events) || events.length === 0) throw invalid(`subscribe to at least one event: ${WEBHOOK_EVENT_TYPES.join(", ")}`);
  const out: WebhookEventType[] = [];
  for (const e of events) {
    if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e)) throw invalid(`unknown event ${JSON.stringify(e)}: the events are ${WEBHOOK_EVENT_TYPES.join(", ")}`);
    if (!out.includes(e as WebhookEventType)) out.push(e as WebhookEventType);
  }
  return out;
}

function checkVerdicts(v: string | undefined): WebhookVerdictFilter {
  const f = v ?? "all";
  if (!(WEBHOOK_VERDICT_FILTERS as readonly string[]).includes(f)) throw invalid(`verdicts is one of ${WEBHOOK_VERDICT_FILTERS.join(", ")}`);
  return f as WebhookVerdictFilter;
}

function checkDescription(d: string | undefined): string {
  const text = d ?? "";
  if (typeof text !== "string" || text.length > MAX_DESCRIPTION || /[\x00-\x1f\x7f]/.test(text)) throw invalid(`the description is at most ${MAX_DESCRIPTION} printable characters`);
  return text;
}

/**
 * A tenant's webhook endpoints (issue 26, docs/events.md), for the CLI (`attestd webhook ...`), the admin API and
 * the portal's Webhooks page alike; and the planner of the deliveries an event carries, which the verdict and key
 * writes commit with their own rows (the outbox). The signing secret is made here (`whsec_` and 32 random bytes),
 * answered once, sealed bound to the endpoint's id before the store sees it, and opened only by `secretsFor` (the
 * delivery worker).
 *
 * The hot path: `verdictPlan` answers undefined, at the cost of one cache lookup, when the tenant has no enabled
 * endpoint for verdict or pin events; the store then writes no outbox row and runs no extra statement.
 */
export class WebhookRegistry {
  private readonly planner: WebhookPlanner;

  constructor(
    private readonly store: WebhookStore & Pick<TenantStore, "listTenants">,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly secrets: SecretBox,
    private readonly settings: WebhookSettings,
  ) {
    this.planner = new WebhookPlanner(store, clock, rng, settings);
  }

  get retryPeriodMs(): number {
    return this.settings.retryPeriodMs;
  }

  private url(raw: string): string {
    if (typeof raw !== "string" || raw.length > MAX_URL_LENGTH) throw invalid(`the URL is at most ${MAX_URL_LENGTH} characters`);
    try {
      return checkWebhookUrl(raw, this.settings.targets).href;
    } catch (e) {
      if (e instanceof WebhookTargetRefused) throw new AppError(catalog.PORTAL_WEBHOOK_URL_REFUSED, e.message);
      throw e;
    }
  }

  private newSecret(): string {
    return SECRET_PREFIX + this.rng.bytes(SECRET_BYTES).toString("base64");
  }

  private seal(id: string, s: WebhookSecrets): string {
    return this.secrets.seal(JSON.stringify(s), sealContext(WEBHOOK_SECRET_PURPOSE, id));
  }

  private open(e: StoredWebhookEndpoint): WebhookSecrets {
    try {
      return JSON.parse(this.secrets.open(e.sealedSecret, sealContext(WEBHOOK_SECRET_PURPOSE, e.id))) as WebhookSecrets;
    } catch (err) {
      throw new AppError(catalog.INTERNAL_SERVER_ERROR, "The webhook endpoint's secret cannot be used", {}, (err as Error).message);
    }
  }

  private summary(e: StoredWebhookEndpoint): WebhookEndpointSummary {
    const { sealedSecret: _s, ...rest } = e;
    const prev = this.open(e).previous;
    return { ...rest, events: [...e.events], previousSecretUntil: prev && Date.parse(prev.until) > this.clock.nowMs() ? prev.until : null };
  }

  private iso(ms = this.clock.nowMs()): string {
    return new Date(ms).toISOString();
  }

  /** Registers an endpoint; its secret is in the answer and never again. */
  async add(tenant: Tenant, input: WebhookEndpointInput, by: ChangeActor): Promise<{ endpoint: WebhookEndpointSummary; secret: string }> {
    const url = this.url(input.url);
    const events = checkEvents(input.events);
    const verdicts = checkVerdicts(input.verdicts);
    const description = checkDescription(input.description);
    if ((await this.store.listWebhookEndpoints(tenant.tenantId)).length >= MAX_ENDPOINTS_PER_TENANT) {
      throw invalid(`a tenant has at most ${MAX_ENDPOINTS_PER_TENANT} webhook endpoints`);
    }
    const id = randomId(this.rng, "we_");
    const secret = this.newSecret();
    const at = this.iso();
    const e: StoredWebhookEndpoint = {
      id,
      tenantId: tenant.tenantId,
      url,
      description,
      events,
      verdicts,
      enabled: input.enabled ?? true,
      sealedSecret: this.seal(id, { current: secret }),
      createdAt: at,
      updatedAt: at,
    };
    await this.store.addWebhookEndpoint(e);
    this.planner.forget(tenant.tenantId);
    const endpoint = this.summary(e);
    await by.record({ tenantId: tenant.tenantId, action: "webhook.added", target: { kind: "webhook", id }, before: null, after: endpoint });
    return { endpoint, secret };
  }

  async list(tenant: Tenant): Promise<WebhookEndpointSummary[]> {
    return (await this.store.listWebhookEndpoints(tenant.tenantId)).map((e) => this.summary(e));
  }

  async get(tenant: Tenant, id: string): Promise<WebhookEndpointSummary | undefined> {
    const e = await this.store.getWebhookEndpoint(tenant.tenantId, id);
    return e && this.summary(e);
  }

  /** Changes what `f` names; undefined when the tenant has no endpoint of that id. */
  async update(tenant: Tenant, id: string, f: Partial<WebhookEndpointInput>, by: ChangeActor): Promise<WebhookEndpointSummary | undefined> {
    const before = await this.get(tenant, id);
    const changed = await this.store.updateWebhookEndpoint(tenant.tenantId, id, {
      ...(f.url !== undefined ? { url: this.url(f.url) } : {}),
      ...(f.events !== undefined ? { events: checkEvents(f.events) } : {}),
      ...(f.verdicts !== undefined ? { verdicts: checkVerdicts(f.verdicts) } : {}),
      ...(f.description !== undefined ? { description: checkDescription(f.description) } : {}),
      ...(f.enabled !== undefined ? { enabled: f.enabled === true } : {}),
      updatedAt: this.iso(),
    });
    this.planner.forget(tenant.tenantId);
    if (!changed) return undefined;
    const after = await this.get(tenant, id);
    await by.record({ tenantId: tenant.tenantId, action: "webhook.updated", target: { kind: "webhook", id }, before: before ?? null, after: after ?? null });
    return after;
  }

  async remove(tenant: Tenant, id: string, by: ChangeActor): Promise<boolean> {
    const before = await this.get(tenant, id);
    const removed = await this.store.removeWebhookEndpoint(tenant.tenantId, id);
    this.planner.forget(tenant.tenantId);
    if (removed) await by.record({ tenantId: tenant.tenantId, action: "webhook.removed", target: { kind: "webhook", id }, before: before ?? null, after: null });
    return removed;
  }

  /**
   * A new secret, answered once; the current one keeps signing beside it for `overlapSeconds` (0: stops at once), so
   * a receiver can switch without losing a delivery. A rotation during an overlap ends the older overlap.
   */
  async rotateSecret(tenant: Tenant, id: string, by: ChangeActor, overlapSeconds = DEFAULT_ROTATION_OVERLAP_S): Promise<{ secret: string; previousUntil: string | null } | undefined> {
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_ROTATION_OVERLAP_S) {
      throw invalid(`the overlap is a whole number of seconds from 0 to ${MAX_ROTATION_OVERLAP_S}`);
    }
    const e = await this.store.getWebhookEndpoint(tenant.tenantId, id);
    if (!e) return undefined;
    const old = this.open(e);
    const secret = this.newSecret();
    const previousUntil = overlapSeconds > 0 ? this.iso(this.clock.nowMs() + overlapSeconds * 1000) : null;
    const next: WebhookSecrets = { current: secret, ...(previousUntil ? { previous: { secret: old.current, until: previousUntil } } : {}) };
    const ok = await this.store.updateWebhookEndpoint(tenant.tenantId, id, { sealedSecret: this.seal(id, next), updatedAt: this.iso() });
    if (!ok) return undefined;
    // the secrets themselves are in no record: only when the old one stops signing
    await by.record({ tenantId: tenant.tenantId, action: "webhook.secret-rotated", target: { kind: "webhook", id }, before: null, after: { previousSecretUntil: previousUntil } });
    return { secret, previousUntil };
  }

  /** The secrets that sign a delivery now: the current one, and the previous one while its overlap lasts. */
  secretsFor(e: StoredWebhookEndpoint): string[] {
    const s = this.open(e);
    return s.previous && Date.parse(s.previous.until) > this.clock.nowMs() ? [s.current, s.previous.secret] : [s.current];
  }

  async deliveries(tenant: Tenant, q: { endpointId?: string | undefined; before?: { createdAt: string; id: string } | undefined; limit: number }): Promise<WebhookDelivery[]> {
    return this.store.listWebhookDeliveries(tenant.tenantId, q);
  }

  async delivery(tenant: Tenant, id: string): Promise<{ delivery: WebhookDelivery; attempts: WebhookAttempt[] } | undefined> {
    const delivery = await this.store.getWebhookDelivery(tenant.tenantId, id);
    if (!delivery) return undefined;
    return { delivery, attempts: await this.store.listWebhookAttempts(tenant.tenantId, id) };
  }

  /** The delivery attempted again now, with a fresh retry period; false when the tenant has no delivery of that id. */
  async resend(tenant: Tenant, id: string, by: ChangeActor): Promise<boolean> {
    const now = this.clock.nowMs();
    const resent = await this.store.resendWebhookDelivery(tenant.tenantId, id, now, now + this.settings.retryPeriodMs);
    if (resent) await by.record({ tenantId: tenant.tenantId, action: "webhook.delivery-resent", target: { kind: "webhook-delivery", id }, before: null, after: null });
    return resent;
  }

  // ---- planning (WebhookPlanner), through this registry's own planner so its changes apply at once ----

  verdictPlan(tenantId: string): Promise<WebhookPlan | undefined> {
    return this.planner.verdictPlan(tenantId);
  }

  keyEvent(tenantId: string, type: "key.created" | "key.revoked", data: { keyId: string; label?: string | null; at: string }): Promise<NewWebhookDelivery[]> {
    return this.planner.keyEvent(tenantId, type, data);
  }

  pinResetEvents(tenantId: string, data: { deviceId: string; at: string }): Promise<NewWebhookDelivery[]> {
    return this.planner.pinResetEvents(tenantId, data);
  }

  trustEvent(type: "trust.degraded" | "trust.recovered", data: object): Promise<number> {
    return this.planner.trustEvent(type, data);
  }

  /** The endpoint a delivery goes to, as stored (the worker's; its secret opened by secretsFor). */
  endpointFor(tenantId: string, id: string): Promise<StoredWebhookEndpoint | undefined> {
    return this.store.getWebhookEndpoint(tenantId, id);
  }
}

/**
 * The outbox rows an event carries, planned against the tenant's enabled endpoints (read at most every
 * WEBHOOK_CACHE_MS per tenant). No secret is needed to plan: the CLI's key and device commands plan with one of
 * their own, and the registry's changes drop its planner's copy at once.
 */
export class WebhookPlanner {
  private readonly cache: TenantReadCache<Subscription[]>;

  constructor(
    private readonly store: WebhookStore & Pick<TenantStore, "listTenants">,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly settings: Pick<WebhookSettings, "retryPeriodMs" | "cacheMs">,
  ) {
    this.cache = new TenantReadCache(clock, settings.cacheMs ?? WEBHOOK_CACHE_MS);
  }

  forget(tenantId: string): void {
    this.cache.forget(tenantId);
  }

  private iso(ms = this.clock.nowMs()): string {
    return new Date(ms).toISOString();
  }

  private subscriptions(tenantId: string): Promise<Subscription[]> {
    return this.cache.get(tenantId, async () =>
      (await this.store.listWebhookEndpoints(tenantId))
        .filter((e) => e.enabled)
        .map((e) => ({ endpointId: e.id, events: new Set(e.events), verdicts: e.verdicts })),
    );
  }

  private rows(tenantId: string, subs: readonly Subscription[], type: WebhookEventType, data: object, atMs: number, wants?: (s: Subscription) => boolean): NewWebhookDelivery[] {
    const targets = subs.filter((s) => s.events.has(type) && (!wants || wants(s)));
    if (targets.length === 0) return [];
    const eventId = randomId(this.rng, "msg_");
    const createdAt = this.iso(atMs);
    const payload = JSON.stringify({ type, timestamp: createdAt, data });
    return targets.map((s) => ({
      id: randomId(this.rng, "whd_"),
      eventId,
      tenantId,
      endpointId: s.endpointId,
      eventType: type,
      payload,
      createdAt,
      nextAttemptMs: atMs,
      giveUpAtMs: atMs + this.settings.retryPeriodMs,
    }));
  }

  /**
   * The plan a verdict's write carries (verdict.stored, and device.pin.changed / device.pin.refused for a named
   * device), or undefined when no enabled endpoint of the tenant hears any of them: then the store does nothing more.
   */
  async verdictPlan(tenantId: string): Promise<WebhookPlan | undefined> {
    const subs = await this.subscriptions(tenantId);
    if (!subs.some((s) => s.events.has("verdict.stored") || s.events.has("device.pin.changed") || s.events.has("device.pin.refused"))) return undefined;
    return (v: StoredVerdict) => {
      const atMs = Date.parse(v.createdAt);
      const device = (v.detail as { device?: VerdictDeviceDetail } | undefined)?.device;
      const data = {
        objectId: v.objectId,
        verdict: v.record.verdict,
        status: v.record.status,
        format: v.format,
        reason: v.reason,
        createdAt: v.createdAt,
        ...(device ? { deviceId: device.deviceId, pin: device.pin } : {}),
      };
      const out = this.rows(tenantId, subs, "verdict.stored", data, atMs, (s) => s.verdicts === "all" || v.record.verdict !== "Yes");
      if (device?.pin === "first") {
        out.push(...this.rows(tenantId, subs, "device.pin.changed", { deviceId: device.deviceId, change: "pinned", objectId: v.objectId, at: v.createdAt }, atMs));
      } else if (device?.pin === "changed" || device?.pin === "downgrade") {
        out.push(
          ...this.rows(tenantId, subs, "device.pin.refused", { deviceId: device.deviceId, outcome: device.pin, changes: device.changes ?? [], objectId: v.objectId, at: v.createdAt }, atMs),
        );
      }
      return out;
    };
  }

  /** The outbox rows of a key event (key.created, key.revoked), or none when no enabled endpoint hears it. */
  async keyEvent(tenantId: string, type: "key.created" | "key.revoked", data: { keyId: string; label?: string | null; at: string }): Promise<NewWebhookDelivery[]> {
    return this.rows(tenantId, await this.subscriptions(tenantId), type, data, Date.parse(data.at));
  }

  /** A pin cleared by an operator (device.pin.changed, change "reset"): the rows the reset's transaction writes. */
  async pinResetEvents(tenantId: string, data: { deviceId: string; at: string }): Promise<NewWebhookDelivery[]> {
    return this.rows(tenantId, await this.subscriptions(tenantId), "device.pin.changed", { deviceId: data.deviceId, change: "reset", at: data.at }, Date.parse(data.at));
  }

  /**
   * A trust source's state changed (trust.degraded, trust.recovered): an event of every tenant with an endpoint
   * that hears it. No tenant write carries it, so the rows are written on their own; of several instances that
   * each see the change, each writes its own (docs/events.md says so: the `data.instance` tells them apart).
   */
  async trustEvent(type: "trust.degraded" | "trust.recovered", data: object): Promise<number> {
    const at = this.clock.nowMs();
    const rows: NewWebhookDelivery[] = [];
    for (const t of await this.store.listTenants()) rows.push(...this.rows(t.tenantId, await this.subscriptions(t.tenantId), type, data, at));
    await this.store.enqueueWebhookDeliveries(rows);
    return rows.length;
  }

}
