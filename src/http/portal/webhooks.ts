import { Type } from "typebox";
import { deliveryDetailView, deliveryView, WEBHOOK_EVENT_TYPES, type WebhookEndpointSummary } from "../../domain/webhooks.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { DEFAULT_ROTATION_OVERLAP_S, MAX_DESCRIPTION, MAX_ROTATION_OVERLAP_S, MAX_URL_LENGTH, WEBHOOK_CACHE_MS } from "../../services/webhooks.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";
import { webhooksPage } from "../../../web/pages/webhooks.ts";
import { pickTenantPage } from "../../../web/layout.ts";

const EventType = Type.Union([
  Type.Literal("verdict.stored"),
  Type.Literal("device.pin.changed"),
  Type.Literal("device.pin.refused"),
  Type.Literal("key.created"),
  Type.Literal("key.revoked"),
  Type.Literal("trust.degraded"),
  Type.Literal("trust.recovered"),
]);
const VerdictFilter = Type.Union([Type.Literal("all"), Type.Literal("non-yes")], { description: "verdict.stored: every verdict, or only those that are not Yes" });

const EndpointItem = Type.Object({
  id: Type.String(),
  tenantId: Type.String(),
  url: Type.String(),
  description: Type.String(),
  events: Type.Array(EventType),
  verdicts: VerdictFilter,
  enabled: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  previousSecretUntil: Type.Union([Type.String(), Type.Null()], { description: "after a rotation, when the previous secret stops signing" }),
});

const DeliveryItem = Type.Object({
  id: Type.String(),
  eventId: Type.String({ description: "the webhook-id header: one per event" }),
  endpointId: Type.String(),
  eventType: EventType,
  state: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
  attempts: Type.Integer(),
  lastStatus: Type.Union([Type.Integer(), Type.Null()]),
  createdAt: Type.String(),
  nextAttemptAt: Type.Union([Type.String(), Type.Null()]),
  giveUpAt: Type.String(),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
});

const AttemptItem = Type.Object({
  attempt: Type.Integer(),
  at: Type.String(),
  status: Type.Union([Type.Integer(), Type.Null()], { description: "the receiver's HTTP status; null: no answer" }),
  durationMs: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  response: Type.Union([Type.String(), Type.Null()], { description: "the first 1024 bytes of the answer" }),
});

const endpointItem = (e: WebhookEndpointSummary) => ({ ...e, events: [...e.events] });
const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: "https URL the events are POSTed to (no private address unless the operator allows it)" });
const Description = Type.String({ maxLength: MAX_DESCRIPTION });
const Id = Type.Object({ id: Type.String({ minLength: 1, maxLength: 40 }) });

/**
 * A tenant's webhook endpoints and deliveries (issue 26, docs/events.md): the admin API over the same
 * WebhookRegistry as `attestd webhook ...`. An admin adds, changes, rotates, removes and resends; a viewer lists. The
 * secret is in the answer of the POST and of a rotation, never again.
 */
export function registerWebhookRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  const tenantOf = async (request: Parameters<typeof scope>[0]) => (await scope(request, false)).tenant!;

  app.get(
    "/portal/webhooks",
    { schema: { hide: true, querystring: Type.Object({ ...TenantQuery, delivery: Type.Optional(Type.String({ maxLength: 40 })) }) }, config: { portal: "viewer" } },
    async (request, reply) => {
      if (request.actor!.role === "operator" && !request.query.tenant) {
        return html(reply, pickTenantPage(ctxOf(request), "Webhooks", "/portal/webhooks", (await deps.tenantAdmin.list()).map((t) => t.name)));
      }
      const tenant = await tenantOf(request);
      const [endpoints, deliveries, shown] = await Promise.all([
        deps.webhooks.list(tenant),
        deps.webhooks.deliveries(tenant, { limit: 50 }),
        request.query.delivery ? deps.webhooks.delivery(tenant, request.query.delivery) : undefined,
      ]);
      return html(reply, webhooksPage(ctxOf(request), { endpoints, deliveries, shown }, allowed(request.actor!, "admin")));
    },
  );

  app.get(
    "/portal/api/webhooks",
    {
      schema: {
        tags,
        operationId: "portalListWebhooks",
        summary: "The tenant's webhook endpoints, never their secrets",
        querystring: Type.Object(TenantQuery),
        response: { 200: Type.Array(EndpointItem), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => (await deps.webhooks.list(await tenantOf(request))).map(endpointItem),
  );

  app.post(
    "/portal/api/webhooks",
    {
      schema: {
        tags,
        operationId: "portalAddWebhook",
        summary: "Register a webhook endpoint (as `attestd webhook add`); the answer holds its signing secret, shown this once",
        querystring: Type.Object(TenantQuery),
        body: Type.Object(
          {
            url: Url,
            events: Type.Array(EventType, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length }),
            verdicts: Type.Optional(VerdictFilter),
            description: Type.Optional(Description),
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ endpoint: EndpointItem, secret: Type.String({ description: "whsec_<base64>: shown once" }) }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const { endpoint, secret } = await deps.webhooks.add(await tenantOf(request), request.body, by(request));
      return { endpoint: endpointItem(endpoint), secret };
    },
  );

  app.patch(
    "/portal/api/webhooks/:id",
    {
      schema: {
        tags,
        operationId: "portalChangeWebhook",
        summary: `Change an endpoint's URL, events, filter, description, or enable or disable it (other instances within ${WEBHOOK_CACHE_MS / 1000} s)`,
        params: Id,
        querystring: Type.Object(TenantQuery),
        body: Type.Object(
          {
            url: Type.Optional(Url),
            events: Type.Optional(Type.Array(EventType, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length })),
            verdicts: Type.Optional(VerdictFilter),
            description: Type.Optional(Description),
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 200: EndpointItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const e = await deps.webhooks.update(await tenantOf(request), request.params.id, request.body, by(request));
      if (!e) throw new AppError(catalog.PORTAL_NOT_FOUND, "no webhook endpoint of that id for this tenant");
      return endpointItem(e);
    },
  );

  app.post(
    "/portal/api/webhooks/:id/rotate",
    {
      schema: {
        tags,
        operationId: "portalRotateWebhookSecret",
        summary: "A new signing secret, shown once; the previous one keeps signing beside it for `overlapSeconds` (default a day)",
        params: Id,
        querystring: Type.Object(TenantQuery),
        body: Type.Object({ overlapSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_ROTATION_OVERLAP_S, default: DEFAULT_ROTATION_OVERLAP_S })) }, { additionalProperties: false }),
        response: { 200: Type.Object({ secret: Type.String(), previousUntil: Type.Union([Type.String(), Type.Null()]) }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const r = await deps.webhooks.rotateSecret(await tenantOf(request), request.params.id, by(request), request.body.overlapSeconds ?? DEFAULT_ROTATION_OVERLAP_S);
      if (!r) throw new AppError(catalog.PORTAL_NOT_FOUND, "no webhook endpoint of that id for this tenant");
      return r;
    },
  );

  app.delete(
    "/portal/api/webhooks/:id",
    {
      schema: {
        tags,
        operationId: "portalRemoveWebhook",
        summary: "Remove an endpoint: its deliveries stay listed; those still pending fail",
        params: Id,
        querystring: Type.Object(TenantQuery),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      if (!(await deps.webhooks.remove(await tenantOf(request), request.params.id, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no webhook endpoint of that id for this tenant");
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/portal/api/webhook-deliveries",
    {
      schema: {
        tags,
        operationId: "portalListWebhookDeliveries",
        summary: "The tenant's webhook deliveries, newest first, optionally of one endpoint",
        querystring: Type.Object({
          ...TenantQuery,
          endpoint: Type.Optional(Type.String({ maxLength: 40 })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
        }),
        response: { 200: Type.Array(DeliveryItem), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) =>
      (await deps.webhooks.deliveries(await tenantOf(request), { endpointId: request.query.endpoint, limit: request.query.limit ?? 50 })).map(deliveryView),
  );

  app.get(
    "/portal/api/webhook-deliveries/:id",
    {
      schema: {
        tags,
        operationId: "portalGetWebhookDelivery",
        summary: "One delivery with its payload and every attempt: time, status, duration, the start of the answer",
        params: Id,
        querystring: Type.Object(TenantQuery),
        response: { 200: Type.Object({ delivery: DeliveryItem, payload: Type.String(), attempts: Type.Array(AttemptItem) }), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const d = await deps.webhooks.delivery(await tenantOf(request), request.params.id);
      if (!d) throw new AppError(catalog.PORTAL_NOT_FOUND, "no webhook delivery of that id for this tenant");
      return deliveryDetailView(d);
    },
  );

  app.post(
    "/portal/api/webhook-deliveries/:id/resend",
    {
      schema: {
        tags,
        operationId: "portalResendWebhookDelivery",
        summary: "Attempt a delivery again now (same webhook-id), with a fresh retry period",
        params: Id,
        querystring: Type.Object(TenantQuery),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      if (!(await deps.webhooks.resend(await tenantOf(request), request.params.id, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no webhook delivery of that id for this tenant");
      return reply.code(204).send(null);
    },
  );
}
