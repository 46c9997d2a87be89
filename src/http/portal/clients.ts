import { Type } from "typebox";
import { formatClientKeys } from "../../enrollment/clientJwt.ts";
import { ClientAdminError, summarise, type ClientView } from "../../enrollment/clients.ts";
import { tenantRefusal } from "../../enrollment/tokens.ts";
import type { Tenant } from "../../domain/tenants.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { clientsPage } from "../../../web/pages/clients.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import { StoredRestrictions } from "../schemas/enrollment.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";

const ClientItem = Type.Object({
  clientId: Type.String(),
  tenantId: Type.String(),
  userId: Type.String(),
  email: Type.String(),
  readOnly: Type.Boolean(),
  rps: Type.Number(),
  burst: Type.Number(),
  restrictions: StoredRestrictions,
  createdAt: Type.String(),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([Type.Literal("active"), Type.Literal("revoked"), Type.Literal("user-deregistered")]),
});

/** Why every client of the tenant is refused now (blocked, inactive, a reseller not enabled), as Part B says it. */
const Refusal = Type.Union([Type.Object({ code: Type.String(), message: Type.String(), reason: Type.String() }), Type.Null()]);

/** The tenant's standing for Part B as the API answers it: null when its clients may work. */
export function standingOf(tenant: Tenant): { code: string; message: string; reason: string } | null {
  const refusal = tenantRefusal(tenant);
  return refusal ? { code: refusal.entry.code, message: refusal.entry.message, reason: refusal.reason } : null;
}

const CreateBody = Type.Object(
  {
    email: SafeText({ minLength: 3, maxLength: 254 }),
    readOnly: Type.Optional(Type.Boolean()),
    rps: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
    burst: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  },
  { additionalProperties: false },
);
const ClientParams = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 64 }) });

/** ClientAdmin's refusals (not an email, a deregistered user) are the caller's to fix. */
async function adminRefusals<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ClientAdminError) throw new AppError(catalog.PORTAL_INVALID_REQUEST, e.message);
    throw e;
  }
}

/**
 * Part B API clients of a tenant: the page, and the admin API over the same ClientAdmin as `attestd client ...`.
 * A new client's keys.json is in the creating answer only (the browser saves it as a file); attestd keeps the
 * public key and the identifier's hash.
 */
export function registerClientRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  app.get("/portal/clients", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
    const tenant = (await scope(request, false)).tenant!;
    return html(reply, clientsPage(ctxOf(request), tenant, await deps.clients.list(tenant), tenantRefusal(tenant), allowed(request.actor!, "admin")));
  });

  app.get(
    "/portal/api/clients",
    {
      schema: {
        tags,
        operationId: "portalListClients",
        summary: "The tenant's enrollment (Part B) API clients, revoked ones included; never their keys",
        querystring: Type.Object(TenantQuery),
        response: { 200: Type.Object({ clients: Type.Array(ClientItem), tenantRefusal: Refusal }), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const tenant = (await scope(request, false)).tenant!;
      return { clients: await deps.clients.list(tenant), tenantRefusal: standingOf(tenant) };
    },
  );

  app.post(
    "/portal/api/clients",
    {
      schema: {
        tags,
        operationId: "portalCreateClient",
        summary: "Create an enrollment API client for a user (registered if new); keysJson is keys.json, in this answer only",
        querystring: Type.Object(TenantQuery),
        body: CreateBody,
        response: { 200: Type.Object({ client: ClientItem, keysJson: Type.String() }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const tenant = (await scope(request, false)).tenant!;
      const made = await adminRefusals(() => deps.clients.createClient(tenant, request.body, by(request)));
      const client: ClientView = { ...summarise(made.client), email: request.body.email, state: "active" };
      return { client, keysJson: formatClientKeys(made.keys) };
    },
  );

  app.delete(
    "/portal/api/clients/:clientId",
    {
      schema: {
        tags,
        operationId: "portalRevokeClient",
        summary: "Revoke a client of the tenant: its access tokens stop working at once; it stays listed as revoked",
        params: ClientParams,
        querystring: Type.Object(TenantQuery),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const tenant = (await scope(request, false)).tenant!;
      if (!(await deps.clients.revoke(tenant, request.params.clientId, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no active client of that id for this tenant");
      return reply.code(204).send(null);
    },
  );

  app.patch(
    "/portal/api/clients/:clientId",
    {
      schema: {
        tags,
        operationId: "portalSetClientReadOnly",
        summary: "Set a client's read-only flag (GET only when true); applies from its next request",
        params: ClientParams,
        querystring: Type.Object(TenantQuery),
        body: Type.Object({ readOnly: Type.Boolean() }, { additionalProperties: false }),
        response: { 204: Type.Null(), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const tenant = (await scope(request, false)).tenant!;
      if (!(await deps.clients.setReadOnly(tenant, request.params.clientId, request.body.readOnly, by(request)))) {
        throw new AppError(catalog.PORTAL_NOT_FOUND, "no active client of that id for this tenant");
      }
      return reply.code(204).send(null);
    },
  );
}
