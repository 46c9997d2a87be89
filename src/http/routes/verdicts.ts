import { Type } from "typebox";
import { VERDICT_FIELDS } from "../../attestation/types.ts";
import { sendBody } from "../render.ts";
import { partAErrors } from "../schemas/common.ts";
import type { AppDeps, AppInstance } from "../types.ts";
import { methodNotAllowed, partAGuards } from "./guards.ts";

const VerdictWithDetail = Type.Object({
  ...Object.fromEntries(VERDICT_FIELDS.map((f) => [f, Type.String()])),
  // only with ?detail=full; the default answer is exactly the eleven-field record
  attestation: Type.Optional(
    Type.Object({
      format: Type.String(),
      reason: Type.String(),
      detail: Type.Record(Type.String(), Type.Unknown()),
    }),
  ),
});

/** GET /api/v1/verdicts/{objectId}: the stored record, for the tenant that created it only. */
export function registerVerdictRoutes(app: AppInstance, deps: AppDeps): void {
  methodNotAllowed(app, "/api/v1/verdicts/:objectId", ["GET"]);
  app.get(
    "/api/v1/verdicts/:objectId",
    {
      onRequest: partAGuards(deps),
      schema: {
        tags: ["attestation"],
        summary: "A stored verdict; ?detail=full adds the parsed attestation",
        security: [{ apiKey: [] }],
        params: Type.Object({ objectId: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({ detail: Type.Optional(Type.Union([Type.Literal("full"), Type.Literal("none")])) }),
        response: {
          200: VerdictWithDetail,
          ...partAErrors(400, 401, 403, 404, 405, 406, 429, 500),
        },
      },
    },
    async (request, reply) => {
      const v = await deps.attestation.getVerdict(request.principal!.tenant.tenantId, request.params.objectId);
      if (request.query.detail !== "full") return sendBody(request, reply, "verdictRecord", { ...v.record });
      return sendBody(request, reply, "verdictRecord", {
        ...v.record,
        attestation: { format: v.format, reason: v.reason, detail: v.detail },
      });
    },
  );
}
