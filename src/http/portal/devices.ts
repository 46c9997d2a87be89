import { Type } from "typebox";
import { devicePage, devicesPage } from "../../../web/pages/devices.ts";
import { pickTenantPage, withQuery } from "../../../web/layout.ts";
import { DEVICE_ID_PATTERN, DEVICE_ID_RE, type DevicePinReset } from "../../domain/devices.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { DeviceHistory, historyBody } from "../routes/devices.ts";
import { DeviceIdSchema, partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, portalNotFound, TenantQuery, type PortalRoutes } from "./context.ts";

const PAGE = 50;

const ListQuery = Type.Object(
  {
    ...TenantQuery,
    after: Type.Optional(Type.String({ pattern: DEVICE_ID_PATTERN, maxLength: 128, description: "the cursor: the last deviceId of the previous page" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: PAGE })),
  },
  { additionalProperties: false },
);
/** the page's lookup form sends `deviceId`; an empty one shows the list */
const PageQuery = Type.Object(
  { ...TenantQuery, after: ListQuery.properties.after, deviceId: Type.Optional(Type.String({ maxLength: 200 })) },
  { additionalProperties: false },
);
const DeviceParams = Type.Object({ deviceId: DeviceIdSchema });

const nullablePin = DeviceHistory.properties.pin;
const PinReset = Type.Object(
  {
    deviceId: Type.String(),
    at: Type.String(),
    by: Type.String({ description: "who reset it: `portal:EMAIL` from the portal, `--by` (default `cli`) from `attestd device reset`" }),
    previousPin: nullablePin,
  },
  { description: "one pin reset, as its audit record keeps it" },
);

const resetBody = ({ tenantId: _tenant, ...rest }: DevicePinReset) => rest;

/**
 * Named devices (per-device memory, docs/devices.md) as a tenant sees them: the list, one device's history, pin and
 * resets, and the pin reset for tenant admins and operators. Through the same DeviceService as `attestd device
 * show|reset` and `GET /api/v1/devices/{deviceId}`; always within the request's tenant (scope), so another
 * tenant's device is not found whatever the URL names.
 */
export function registerPinnedDeviceRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  const devices = deps.pinnedDevices;

  app.get("/portal/devices", { schema: { hide: true, querystring: PageQuery }, config: { portal: "viewer" } }, async (request, reply) => {
    if (request.actor!.role === "operator" && !request.query.tenant) {
      return html(reply, pickTenantPage(ctxOf(request), "Attested devices", "/portal/devices", (await deps.tenantAdmin.list()).map((t) => t.name)));
    }
    const { tenantId } = await scope(request, false);
    const wanted = request.query.deviceId?.trim();
    // the lookup form: straight to the device's page (a malformed or unknown name is answered there)
    if (wanted) return reply.redirect(withQuery(`/portal/devices/${encodeURIComponent(wanted)}`, { tenant: request.query.tenant }), 303);
    const page = await devices.list(tenantId!, { after: request.query.after, limit: PAGE });
    return html(reply, devicesPage(ctxOf(request), page.items, page.next, request.query.after));
  });

  app.get(
    "/portal/devices/:deviceId",
    // the name is checked here rather than by the schema, so that a mistyped lookup gets a page saying what a name is
    { schema: { hide: true, params: Type.Object({ deviceId: Type.String({ maxLength: 200 }) }), querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } },
    async (request, reply) => {
      if (!DEVICE_ID_RE.test(request.params.deviceId)) {
        throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a device id is 1-128 characters of A-Z a-z 0-9 . _ : -");
      }
      const { tenantId } = await scope(request, false);
      const shown = await portalNotFound(() => devices.history(tenantId!, request.params.deviceId));
      return html(reply, devicePage(ctxOf(request), shown.device, shown.resets, allowed(request.actor!, "admin")));
    },
  );

  app.get(
    "/portal/api/devices",
    {
      schema: {
        tags,
        operationId: "portalListDevices",
        summary: "The tenant's named devices in deviceId order, a page at a time (`next` is the cursor for `after`)",
        querystring: ListQuery,
        response: { 200: Type.Object({ items: Type.Array(DeviceHistory), next: Type.Union([Type.String(), Type.Null()]) }), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, false);
      const page = await devices.list(tenantId!, { after: request.query.after, limit: request.query.limit ?? PAGE });
      return { items: page.items.map(historyBody), next: page.next };
    },
  );

  app.get(
    "/portal/api/devices/:deviceId",
    {
      schema: {
        tags,
        operationId: "portalGetDevice",
        summary: "One named device of the tenant: its history, latest facts and pin, and its pin resets oldest first (as `attestd device show`)",
        params: DeviceParams,
        querystring: Type.Object(TenantQuery),
        response: { 200: Type.Object({ device: DeviceHistory, resets: Type.Array(PinReset) }), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, false);
      const shown = await portalNotFound(() => devices.history(tenantId!, request.params.deviceId));
      return { device: historyBody(shown.device), resets: shown.resets.map(resetBody) };
    },
  );

  app.post(
    "/portal/api/devices/:deviceId/reset",
    {
      schema: {
        tags,
        operationId: "portalResetDevicePin",
        summary:
          "Reset a device's pin (as `attestd device reset`): its history stays, its next Yes pins it afresh; the reset is kept as an audit record naming who did it",
        params: DeviceParams,
        querystring: Type.Object(TenantQuery),
        response: { 200: PinReset, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const { tenantId, tenant } = await scope(request, false);
      const reset = await portalNotFound(() => devices.resetPin(tenantId!, request.params.deviceId, by(request)));
      request.log.info({ tenant: tenant?.name, deviceId: reset.deviceId, by: reset.by, hadPin: reset.previousPin !== null }, "device pin reset from the portal");
      return resetBody(reset);
    },
  );
}
