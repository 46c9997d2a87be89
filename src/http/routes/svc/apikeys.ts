import { catalog } from "../../../errors/catalog.ts";
import type { AppInstance } from "../../types.ts";
import { partBErrors } from "../../schemas/common.ts";
import { KeyParams, RestrictionBody, RestrictionView } from "../../schemas/enrollment.ts";
import { clientActor, partBGuards, type PartBDeps } from "./guards.ts";

const tags = ["enrollment"];
const security = [{ apiToken: [] }];

/** IP / referer restrictions of the tenant's Part A keys and Part B clients (src/enrollment/restrictions.ts). */
export function registerApiKeyRoutes(app: AppInstance, deps: PartBDeps): void {
  const onRequest = partBGuards(deps);
  const restrictions = deps.enrollment.restrictions;
  const url = "/svc/v1/apikeys/:keyId/restrictions";
  const errors = partBErrors(400, 401, 403, 404, 429, 500);

  app.post(
    url,
    {
      onRequest,
      bodyLimit: 128 * 1024,
      config: { invalidEntry: catalog.API_KEY_RESTRICTION_INVALID },
      schema: {
        tags,
        security,
        operationId: "setApiKeyRestrictions",
        summary: "Set a key's IP-address and referer restrictions (replaces earlier ones)",
        params: KeyParams,
        body: RestrictionBody,
        response: { 200: RestrictionView, ...errors },
      },
    },
    async (request) => restrictions.set(request.partB!.tenant.tenantId, request.params.keyId, request.body, clientActor(deps, request)),
  );

  app.get(
    url,
    {
      onRequest,
      schema: { tags, security, operationId: "getApiKeyRestrictions", summary: "Read a key's restrictions", params: KeyParams, response: { 200: RestrictionView, ...errors } },
    },
    async (request) => restrictions.get(request.partB!.tenant.tenantId, request.params.keyId),
  );

  app.delete(
    url,
    {
      onRequest,
      schema: { tags, security, operationId: "deleteApiKeyRestrictions", summary: "Remove a key's restrictions", params: KeyParams, response: { 200: RestrictionView, ...errors } },
    },
    async (request) => restrictions.clear(request.partB!.tenant.tenantId, request.params.keyId, clientActor(deps, request)),
  );
}
