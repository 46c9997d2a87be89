import type { FastifyRequest } from "fastify";
import { catalog } from "../../../errors/catalog.ts";
import { DEFAULT_PAGE_SIZE } from "../../../enrollment/paging.ts";
import type { AppInstance } from "../../types.ts";
import { partBErrors } from "../../schemas/common.ts";
import { assignBody, CountResponse, DeviceList, DeviceQuery, deviceUploadBody, TransactionRef, unassignBody } from "../../schemas/enrollment.ts";
import { emptyQueryMeansAbsent, clientActor, partBGuards, type PartBDeps } from "./guards.ts";

const tags = ["enrollment"];
const security = [{ apiToken: [] }];
/** the most one device entry can take in JSON: bounded id, userId and ciphertext plus punctuation */
const MAX_DEVICE_JSON = 1400;

/** Device upload (queued), device listing, and (un)assignment to profiles. */
export function registerDeviceRoutes(app: AppInstance, deps: PartBDeps): void {
  const onRequest = partBGuards(deps);
  const devices = deps.enrollment.devices;
  const errors = partBErrors(400, 401, 403, 404, 409, 429, 500);
  const bodyLimit = deps.maxDevices * MAX_DEVICE_JSON + 8192;

  // Empty and oversized lists have codes of their own, so they are counted before the schema (whose maxItems is
  // only a backstop) would call them a malformed request.
  const countList = (field: string) => async (request: FastifyRequest) => {
    const list = (request.body as Record<string, unknown> | undefined)?.[field];
    if (Array.isArray(list)) devices.checkCount(list.length);
  };

  app.post(
    "/svc/v1/enroll/devices",
    {
      onRequest,
      preValidation: countList("devices"),
      bodyLimit,
      config: { invalidEntry: catalog.BULK_ENROLL_REQUEST_INVALID, tooLargeEntry: catalog.TOO_MANY_DEVICES },
      schema: {
        tags,
        security,
        operationId: "registerDevices",
        summary: "Register devices to a profile (processed asynchronously)",
        body: deviceUploadBody(deps.maxDevices),
        response: { 200: TransactionRef, ...errors },
      },
    },
    async (request) => {
      const result = await devices.upload(request.partB!.tenant, request.body, clientActor(deps, request));
      deps.enrollment.worker.nudge();
      return result;
    },
  );

  app.get(
    "/svc/v1/enroll/devices",
    {
      onRequest,
      preValidation: emptyQueryMeansAbsent,
      schema: {
        tags,
        security,
        operationId: "listEnrolledDevices",
        summary: "Device-list async result: one upload's devices (transactionId) or the tenant's",
        querystring: DeviceQuery,
        response: { 200: DeviceList, ...errors },
      },
    },
    async (request) => {
      const q = request.query;
      const page = await devices.list(request.partB!.tenant.tenantId, {
        pageNum: q.pageNum ?? 0,
        pageSize: q.pageSize ?? DEFAULT_PAGE_SIZE,
        transactionId: q.transactionId || undefined,
        profileId: q.profileId || undefined,
      });
      return {
        totalCount: page.total,
        processingCount: page.processing,
        deviceList: page.items.map((d) => ({
          deviceId: d.deviceId,
          ...(d.profileId !== null ? { profileId: d.profileId } : {}),
          state: d.state,
          updatedDate: d.updatedAt,
          ...(d.error ? { error: d.error } : {}),
        })),
      };
    },
  );

  app.post(
    "/svc/v1/enroll/devices/assign",
    {
      onRequest,
      preValidation: countList("deviceIds"),
      bodyLimit,
      config: { tooLargeEntry: catalog.TOO_MANY_DEVICES },
      schema: {
        tags,
        security,
        operationId: "assignDevices",
        summary: "Assign enrolled devices to a profile",
        body: assignBody(deps.maxDevices),
        response: { 200: CountResponse, ...errors },
      },
    },
    async (request) => ({
      count: await devices.assign(request.partB!.tenant.tenantId, request.body.profileId, request.body.deviceIds, clientActor(deps, request)),
    }),
  );

  app.post(
    "/svc/v1/enroll/devices/unassign",
    {
      onRequest,
      preValidation: countList("deviceIds"),
      bodyLimit,
      config: { tooLargeEntry: catalog.TOO_MANY_DEVICES },
      schema: {
        tags,
        security,
        operationId: "unassignDevices",
        summary: "Remove enrolled devices from their profile",
        body: unassignBody(deps.maxDevices),
        response: { 200: CountResponse, ...errors },
      },
    },
    async (request) => ({ count: await devices.unassign(request.partB!.tenant.tenantId, request.body.deviceIds, clientActor(deps, request)) }),
  );
}
