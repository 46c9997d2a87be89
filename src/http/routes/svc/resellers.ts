import type { AppInstance } from "../../types.ts";
import { partBErrors } from "../../schemas/common.ts";
import { ResellerAssociate, ResellerList, ResellerView } from "../../schemas/enrollment.ts";
import { clientActor, partBGuards, type PartBDeps } from "./guards.ts";

const tags = ["enrollment"];
const security = [{ apiToken: [] }];

export function registerResellerRoutes(app: AppInstance, deps: PartBDeps): void {
  const onRequest = partBGuards(deps);
  const resellers = deps.enrollment.resellers;

  app.post(
    "/svc/v1/resellers/associate",
    {
      onRequest,
      bodyLimit: 4096,
      schema: {
        tags,
        security,
        operationId: "associateReseller",
        summary: "Associate a reseller with the current tenant",
        body: ResellerAssociate,
        response: { 200: ResellerView, ...partBErrors(400, 401, 403, 404, 409, 429, 500) },
      },
    },
    async (request) => resellers.associate(request.partB!.tenant, request.body.resellerId, clientActor(deps, request)),
  );

  app.get(
    "/svc/v1/resellers",
    {
      onRequest,
      schema: {
        tags,
        security,
        operationId: "listResellers",
        summary: "Resellers associated with the current tenant",
        response: { 200: ResellerList, ...partBErrors(401, 403, 429, 500) },
      },
    },
    async (request) => ({ resellers: await resellers.list(request.partB!.tenant.tenantId) }),
  );
}
