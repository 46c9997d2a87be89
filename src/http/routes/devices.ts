import { Type, type TLiteral, type TSchema } from "typebox";
import { PIN_OUTCOMES, type DeviceRecord, type PinOutcome } from "../../domain/devices.ts";
import { sendBody } from "../render.ts";
import { DeviceIdSchema, partAErrors } from "../schemas/common.ts";
import type { AppDeps, AppInstance } from "../types.ts";
import { methodNotAllowed, partAGuards } from "./guards.ts";

const nullable = (t: TSchema) => Type.Union([t, Type.Null()]);
const Identity = Type.Record(Type.String(), Type.String(), { description: "facts that must not change, e.g. verifiedBootKey" });
const Levels = Type.Record(Type.String(), Type.Number(), { description: "OS version and patch levels, e.g. osPatchLevel" });
const Format = Type.Union([Type.Literal("vendor"), Type.Literal("android-key"), Type.Literal("play-integrity"), Type.Literal("app-attest")]);

/** The device history answer (docs/devices.md has an example); the tenant's id is not part of it. */
export const DeviceHistory = Type.Object(
  {
    deviceId: Type.String(),
    firstSeen: Type.String({ description: "the first stored appraisal naming it" }),
    lastSeen: Type.String({ description: "the latest stored appraisal naming it, whatever its verdict" }),
    count: Type.Integer({ description: "stored appraisals naming it" }),
    last: Type.Object({
      objectId: Type.String(),
      at: Type.String(),
      verdict: Type.String(),
      status: Type.String(),
      // (typed as one literal of the union, so the answer type-checks; the schema lists each)
      pin: Type.Union(PIN_OUTCOMES.map((p) => Type.Literal(p)) as [TLiteral<PinOutcome>]),
      changes: Type.Optional(Type.Array(Type.Object({ fact: Type.String(), from: Type.String(), to: Type.String() }))),
    }, { description: "the latest stored appraisal naming it, and how it stood to the pin" }),
    latestFacts: nullable(
      Type.Object({ objectId: Type.String(), at: Type.String(), format: Format, identity: Identity, levels: Levels }, {
        description: "what the latest appraisal that authenticated any facts attested",
      }),
    ),
    pin: nullable(
      Type.Object(
        {
          pinnedAt: Type.String(),
          objectId: Type.String({ description: "the verdict that pinned it" }),
          format: Format,
          identity: Identity,
          levels: Type.Record(Type.String(), Type.Number(), { description: "high-water marks: the highest level seen in a Yes" }),
          raisedAt: Type.String({ description: "when a Yes last raised a mark" }),
        },
        { description: "null until a Yes pins the device, and after a reset" },
      ),
    ),
    resets: Type.Integer({ description: "times its pin was reset" }),
  },
  { description: "a named device's history and pin (docs/devices.md)" },
);

export function historyBody(d: DeviceRecord): Omit<DeviceRecord, "tenantId"> {
  const { tenantId: _tenant, ...rest } = d;
  return rest;
}

/** GET /api/v1/devices/{deviceId}: a named device's history and pin, for the tenant whose appraisals named it. */
export function registerDeviceRoutes(app: AppInstance, deps: AppDeps): void {
  methodNotAllowed(app, "/api/v1/devices/:deviceId", ["GET"]);
  app.get(
    "/api/v1/devices/:deviceId",
    {
      onRequest: partAGuards(deps),
      schema: {
        tags: ["attestation"],
        operationId: "getDevice",
        summary: "A named device's history and pin (trust on first use); another tenant's device is 404",
        security: [{ apiKey: [] }],
        params: Type.Object({ deviceId: DeviceIdSchema }),
        response: {
          200: DeviceHistory,
          ...partAErrors(400, 401, 403, 404, 405, 406, 429, 500),
        },
      },
    },
    async (request, reply) => {
      const d = await deps.devices.get(request.principal!.tenant.tenantId, request.params.deviceId);
      return sendBody(request, reply, "device", historyBody(d));
    },
  );
}
