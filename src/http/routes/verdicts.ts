import { Type } from "typebox";
import { VERDICT_FIELDS } from "../../attestation/types.ts";
import { sendBody, sendEar } from "../render.ts";
import { jsonOrEar, partAErrors } from "../schemas/common.ts";
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
      config: { offersEar: true },
      schema: {
        tags: ["attestation"],
        operationId: "getVerdict",
        summary: "A stored verdict; ?detail=full adds the parsed attestation",
        description:
          "With `Accept: application/eat+jwt` the answer is the verdict's signed result (EAR) alone, issued now " +
          "with the current key; `detail` is then ignored.",
        security: [{ apiKey: [] }],
        params: Type.Object({ objectId: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({ detail: Type.Optional(Type.Union([Type.Literal("full"), Type.Literal("none")])) }),
        response: {
          200: jsonOrEar(VerdictWithDetail, "The verdict record (JSON or XML), or its EAR"),
          ...partAErrors(400, 401, 403, 404, 405, 406, 429, 500),
        },
      },
    },
    async (request, reply) => {
      const v = await deps.attestation.getVerdict(request.principal!.tenant.tenantId, request.params.objectId);
      if (request.mediaFormat === "ear") return sendEar(reply, await deps.results.ear(v));
      if (request.query.detail !== "full") return sendBody(request, reply, "verdictRecord", { ...v.record });
      return sendBody(request, reply, "verdictRecord", {
        ...v.record,
        attestation: { format: v.format, reason: v.reason, detail: v.detail },
      });
    },
  );
}
