import { Type } from "typebox";
import { tenantsPage, trustPage } from "../../../web/pages/operator.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import type { PortalRoutes } from "./context.ts";
import { TrustSourcesView } from "./overview.ts";

const State = Type.Union([Type.Literal("active"), Type.Literal("inactive"), Type.Literal("blocked")]);
const TenantItem = Type.Object({
  tenantId: Type.String(),
  name: Type.String(),
  customerId: Type.String(),
  kind: Type.Union([Type.Literal("customer"), Type.Literal("reseller")]),
  state: State,
  enrollmentEnabled: Type.Boolean(),
  createdAt: Type.String(),
});
const NameParams = Type.Object({ name: SafeText({ minLength: 1, maxLength: 64 }) });

/**
 * What only operators do: tenants (the same TenantAdmin as `attestd tenant ...`) and the trust sources (the
 * refresh the timer makes, on demand). Every tenant user is refused (403) by the role check before a route runs.
 */
export function registerOperatorRoutes(app: AppInstance, { deps, ctxOf, html, tags, by }: PortalRoutes): void {
  app.get("/portal/tenants", { schema: { hide: true }, config: { portal: "operator" } }, async (request, reply) =>
    html(reply, tenantsPage(ctxOf(request), await deps.tenantAdmin.list())),
  );
  app.get("/portal/trust", { schema: { hide: true }, config: { portal: "operator" } }, async (request, reply) =>
    html(reply, trustPage(ctxOf(request), await deps.trust.view(true))),
  );

  app.get(
    "/portal/api/tenants",
    { schema: { tags, operationId: "portalListTenants", summary: "Every tenant (operators)", response: { 200: Type.Array(TenantItem), ...partBErrors(401, 403) } }, config: { portal: "operator" } },
    async () => deps.tenantAdmin.list(),
  );
  app.post(
    "/portal/api/tenants",
    {
      schema: {
        tags,
        operationId: "portalCreateTenant",
        summary: "Create a tenant (operators); as `attestd tenant create`",
        body: Type.Object(
          {
            name: SafeText({ minLength: 1, maxLength: 64 }),
            kind: Type.Optional(Type.Union([Type.Literal("customer"), Type.Literal("reseller")])),
            customerId: Type.Optional(Type.String({ maxLength: 20, description: "digits; random when absent or empty" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: TenantItem, ...partBErrors(400, 401, 403, 409) },
      },
      config: { portal: "operator" },
    },
    async (request) => {
      const { name, kind, customerId } = request.body;
      return deps.tenantAdmin.create({ name, ...(kind ? { kind } : {}), ...(customerId ? { customerId } : {}) }, by(request));
    },
  );
  app.patch(
    "/portal/api/tenants/:name",
    {
      schema: {
        tags,
        operationId: "portalUpdateTenant",
        summary: "Set a tenant's state and whether it may use the enrollment API (operators); as `attestd tenant set-state` / `enable-enrollment`",
        params: NameParams,
        body: Type.Object({ state: Type.Optional(State), enrollmentEnabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false, minProperties: 1 }),
        response: { 200: TenantItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request) => {
      const { state, enrollmentEnabled } = request.body;
      let tenant = state !== undefined ? await deps.tenantAdmin.setState(request.params.name, state, by(request)) : undefined;
      if (enrollmentEnabled !== undefined) tenant = await deps.tenantAdmin.setEnrollment(request.params.name, enrollmentEnabled, by(request));
      return tenant!;
    },
  );

  app.get(
    "/portal/api/trust",
    {
      schema: {
        tags,
        operationId: "portalGetTrustSources",
        summary: "The state of every trust source (Google's attestation roots and status list, vendor roots and revocations, Play Integrity decoding): its state word, age, last read, last error",
        response: { 200: TrustSourcesView, ...partBErrors(401) },
      },
      config: { portal: "viewer" },
    },
    async (request) => deps.trust.view(request.actor!.role === "operator"),
  );
  app.post(
    "/portal/api/trust/refresh",
    {
      schema: {
        tags,
        operationId: "portalRefreshTrustSources",
        summary: "Refresh the trust sources now (operators): the refresh the timer makes; answers their state after it",
        response: { 200: TrustSourcesView, ...partBErrors(401, 403) },
      },
      config: { portal: "operator" },
    },
    async () => deps.trust.refresh(),
  );
}
