import { Type } from "typebox";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { keysPage } from "../../../web/pages/keys.ts";
import { pickTenantPage } from "../../../web/layout.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";

const KeyBody = Type.Object(
  {
    label: Type.Optional(SafeText({ maxLength: 100 })),
    rps: Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000 })),
    burst: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
  },
  { additionalProperties: false },
);

const KeyItem = Type.Object({
  keyId: Type.String(),
  tenantId: Type.String(),
  label: Type.Union([Type.String(), Type.Null()]),
  rps: Type.Number(),
  burst: Type.Number(),
  createdAt: Type.String(),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
  lastUsedAt: Type.Union([Type.String(), Type.Null()]),
  restrictions: Type.Union([Type.Object({ ipAddresses: Type.Array(Type.String()), referers: Type.Array(Type.String()) }), Type.Null()]),
});

const Listed = (what: string) => Type.Optional(Type.Array(Type.String({ maxLength: 512 }), { maxItems: 100, description: `${what}; [] removes the restriction` }));
const KeyEdit = Type.Object(
  {
    label: Type.Optional(Type.Union([SafeText({ maxLength: 100 }), Type.Null()])),
    rps: Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000, description: "0: the server's --rps" })),
    burst: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, description: "0 with rps: twice the rps" })),
    ipAddresses: Listed("addresses or CIDR blocks the key may be used from"),
    referers: Listed("Referer patterns (* matches any run of characters) the key may be used from"),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** Part A API keys of a tenant: the page, and the admin API (the same ApiKeyAdmin as `attestd key ...`). */
export function registerKeyRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  app.get("/portal/keys", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
    // an operator who has not picked a tenant picks one here
    if (request.actor!.role === "operator" && !request.query.tenant) {
      return html(reply, pickTenantPage(ctxOf(request), "API keys", "/portal/keys", (await deps.tenantAdmin.list()).map((t) => t.name)));
    }
    const { tenant } = await scope(request, false);
    return html(reply, keysPage(ctxOf(request), await deps.keys.list(tenant!), allowed(request.actor!, "admin"), deps.api));
  });

  app.get(
    "/portal/api/keys",
    { schema: { tags, operationId: "portalListApiKeys", summary: "The tenant's Part A API keys (never their secrets)", querystring: Type.Object(TenantQuery), response: { 200: Type.Array(KeyItem), ...partBErrors(400, 401, 404) } }, config: { portal: "viewer" } },
    async (request) => deps.keys.list((await scope(request, false)).tenant!),
  );
  app.post(
    "/portal/api/keys",
    {
      schema: {
        tags,
        operationId: "portalCreateApiKey",
        summary: "Create an API key: the key is in this answer only; attestd keeps its hash",
        querystring: Type.Object(TenantQuery),
        body: KeyBody,
        response: { 200: Type.Object({ key: Type.String(), keyId: Type.String() }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const { tenant } = await scope(request, false);
      const made = await deps.keys.create(tenant!, request.body, by(request));
      return { key: made.key, keyId: made.record.keyId };
    },
  );
  app.patch(
    "/portal/api/keys/:keyId",
    {
      schema: {
        tags,
        operationId: "portalUpdateApiKey",
        summary: "Change an API key's label, limits and IP / referer restrictions (as `attestd key set`); effective on this instance from the next request, on others within 0.5 s",
        params: Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 32 }) }),
        querystring: Type.Object(TenantQuery),
        body: KeyEdit,
        response: { 200: KeyItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const { tenant } = await scope(request, false);
      const after = await deps.keys.update(tenant, request.params.keyId, request.body, by(request));
      if (!after) throw new AppError(catalog.PORTAL_NOT_FOUND, "no active key of that id for this tenant");
      return after;
    },
  );
  app.delete(
    "/portal/api/keys/:keyId",
    {
      schema: {
        tags,
        operationId: "portalRevokeApiKey",
        summary: "Revoke an API key of the tenant; this instance refuses it from the 204 on, every other instance within 0.5 s",
        params: Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 32 }) }),
        querystring: Type.Object(TenantQuery),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const { tenant } = await scope(request, false);
      if (!(await deps.keys.revoke(tenant, request.params.keyId, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no active key of that id for this tenant");
      return reply.code(204).send(null);
    },
  );
}
