import { catalog } from "../../../errors/catalog.ts";
import type { AppInstance } from "../../types.ts";
import { partBErrors } from "../../schemas/common.ts";
import { AccessTokenRequest, AccessTokenResponse } from "../../schemas/enrollment.ts";
import { callerOf, rateLimitClient, type PartBDeps } from "./guards.ts";

/** POST /svc/v1/auth/accesstoken: the one Part B route that authenticates by its body instead of a header. */
export function registerAuthRoutes(app: AppInstance, deps: PartBDeps): void {
  app.post(
    "/svc/v1/auth/accesstoken",
    {
      bodyLimit: 16 * 1024,
      // A malformed credential is an authentication failure (401); a validity out of 1..30 is a plain body error.
      config: {
        invalidEntry: catalog.ACCESS_TOKEN_BAD_REQUEST,
        fieldEntries: { validityForAccessTokenInMinutes: catalog.RESOURCE_INVALID_PARAM },
      },
      schema: {
        tags: ["enrollment"],
        operationId: "issueAccessToken",
        summary: "Exchange a signed client identifier for an access token",
        body: AccessTokenRequest,
        response: { 200: AccessTokenResponse, ...partBErrors(400, 401, 403, 429, 500) },
      },
    },
    async (request, reply) => {
      const { tokens } = deps.enrollment;
      const principal = await tokens.identify(request.body, callerOf(request), request);
      await rateLimitClient(deps, principal.client, reply);
      const accessToken = await tokens.mint(principal.client, request.body.validityForAccessTokenInMinutes ?? 30);
      return { accessToken };
    },
  );
}
