import { Type, type Static } from "typebox";
import type { DeviceEntry, EnrollTransaction, Profile } from "../../domain/enrollment.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_NUM, MAX_PAGE_SIZE, numbered, type NumberedPage } from "../../enrollment/paging.ts";
import { enrollmentDevicesPage, enrollmentProfilePage, enrollmentProfilesPage, enrollmentTransactionsPage } from "../../../web/pages/enrollment.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { tenantRefusal } from "../../enrollment/tokens.ts";
import { portalNotFound, TenantQuery, type PortalRoutes } from "./context.ts";

const Id = Type.String({ maxLength: 64 });
/** Part B's paging (0-based page numbers), so a portal page and an API page of the same number hold the same records. */
const Paging = {
  page: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PAGE_NUM, default: 0, description: "0-based" })),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
};
const TransactionType = Type.Union([Type.Literal("Post"), Type.Literal("Put"), Type.Literal("Delete"), Type.Literal("")]);
const TransactionState = Type.Union([Type.Literal("Processing"), Type.Literal("Complete"), Type.Literal("Failed"), Type.Literal("")]);

const ProfilesQuery = Type.Object({ ...TenantQuery, ...Paging }, { additionalProperties: false });
const TransactionsQuery = Type.Object(
  { ...TenantQuery, ...Paging, type: Type.Optional(TransactionType), state: Type.Optional(TransactionState), profileId: Type.Optional(Id) },
  { additionalProperties: false },
);
const DevicesQuery = Type.Object({ ...TenantQuery, ...Paging, transactionId: Type.Optional(Id), profileId: Type.Optional(Id) }, { additionalProperties: false });
const ProfileParams = Type.Object({ profileId: Type.String({ minLength: 1, maxLength: 64 }) });

const Nullable = (t: ReturnType<typeof Type.String>) => Type.Union([t, Type.Null()]);
const ProfileItem = Type.Object({
  profileId: Type.String(),
  tenantId: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  mdmUrl: Nullable(Type.String()),
  settings: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const TransactionItem = Type.Object({
  tenantId: Type.String(),
  transactionId: Type.String(),
  type: Type.String(),
  state: Type.String(),
  kind: Type.String({ description: "profile: a profile change (complete when recorded); devices: a device upload (job queue)" }),
  profileId: Type.String(),
  profileName: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const DeviceItem = Type.Object({
  deviceId: Type.String(),
  profileId: Nullable(Type.String()),
  state: Type.String(),
  updatedAt: Type.String(),
  error: Type.Union([Type.Object({ code: Type.String(), message: Type.String(), reason: Type.String() }), Type.Null()]),
});
const PageOf = <T extends Parameters<typeof Type.Array>[0]>(items: T, extra = {}) =>
  Type.Object({ total: Type.Integer(), totalPages: Type.Integer(), page: Type.Integer(), pageSize: Type.Integer(), items: Type.Array(items), ...extra });

/**
 * Part B as the tenant sees it: profiles, transactions (with their state) and each device's status. Read through
 * the same ProfileService and DeviceService the /svc/v1 routes call, with Part B's paging, so the portal and the
 * API always show the same records.
 */
export function registerEnrollmentRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags }: PortalRoutes): void {
  const paging = (q: { page?: number; pageSize?: number }) => ({ pageNum: q.page ?? 0, pageSize: q.pageSize ?? DEFAULT_PAGE_SIZE });
  const profiles = async (tenantId: string, q: { page?: number; pageSize?: number }): Promise<NumberedPage<Profile>> => {
    const p = paging(q);
    return numbered(await deps.profiles.list(tenantId, p), p);
  };
  const transactions = async (tenantId: string, q: Static<typeof TransactionsQuery>): Promise<NumberedPage<EnrollTransaction>> => {
    const p = paging(q);
    return numbered(await deps.profiles.status(tenantId, { ...p, type: q.type || undefined, state: q.state || undefined, profileId: q.profileId || undefined }), p);
  };
  const devices = async (tenantId: string, q: Static<typeof DevicesQuery>): Promise<NumberedPage<DeviceEntry> & { processing: number }> => {
    const p = paging(q);
    return numbered(
      await portalNotFound(() => deps.devices.list(tenantId, { ...p, transactionId: q.transactionId || undefined, profileId: q.profileId || undefined })),
      p,
    );
  };

  const view = { schema: { hide: true }, config: { portal: "viewer" as const } };
  app.get("/portal/enrollment", { ...view, schema: { ...view.schema, querystring: ProfilesQuery } }, async (request, reply) => {
    const tenant = (await scope(request, false)).tenant!;
    return html(reply, enrollmentProfilesPage(ctxOf(request), tenant, tenantRefusal(tenant), await profiles(tenant.tenantId, request.query)));
  });
  app.get("/portal/enrollment/transactions", { ...view, schema: { ...view.schema, querystring: TransactionsQuery } }, async (request, reply) => {
    const tenant = (await scope(request, false)).tenant!;
    return html(reply, enrollmentTransactionsPage(ctxOf(request), tenant, tenantRefusal(tenant), request.query, await transactions(tenant.tenantId, request.query)));
  });
  app.get("/portal/enrollment/devices", { ...view, schema: { ...view.schema, querystring: DevicesQuery } }, async (request, reply) => {
    const tenant = (await scope(request, false)).tenant!;
    return html(reply, enrollmentDevicesPage(ctxOf(request), tenant, tenantRefusal(tenant), request.query, await devices(tenant.tenantId, request.query)));
  });
  app.get(
    "/portal/enrollment/profiles/:profileId",
    { ...view, schema: { ...view.schema, params: ProfileParams, querystring: Type.Object(TenantQuery) } },
    async (request, reply) => {
      const tenant = (await scope(request, false)).tenant!;
      const profile = await portalNotFound(() => deps.profiles.get(tenant.tenantId, request.params.profileId));
      return html(reply, enrollmentProfilePage(ctxOf(request), profile));
    },
  );

  const errors = partBErrors(400, 401, 404);
  app.get(
    "/portal/api/enrollment/profiles",
    { schema: { tags, operationId: "portalListProfiles", summary: "The tenant's Part B profiles, newest first (Part B's paging)", querystring: ProfilesQuery, response: { 200: PageOf(ProfileItem), ...errors } }, config: { portal: "viewer" } },
    async (request) => profiles((await scope(request, false)).tenantId!, request.query),
  );
  app.get(
    "/portal/api/enrollment/profiles/:profileId",
    {
      schema: { tags, operationId: "portalGetProfile", summary: "One Part B profile of the tenant", params: ProfileParams, querystring: Type.Object(TenantQuery), response: { 200: ProfileItem, ...errors } },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, false);
      return portalNotFound(() => deps.profiles.get(tenantId!, request.params.profileId));
    },
  );
  app.get(
    "/portal/api/enrollment/transactions",
    {
      schema: { tags, operationId: "portalListTransactions", summary: "The tenant's Part B transactions with their state, newest first; filters by type, state and profile", querystring: TransactionsQuery, response: { 200: PageOf(TransactionItem), ...errors } },
      config: { portal: "viewer" },
    },
    async (request) => transactions((await scope(request, false)).tenantId!, request.query),
  );
  app.get(
    "/portal/api/enrollment/devices",
    {
      schema: {
        tags,
        operationId: "portalListEnrolledDevices",
        summary: "Each device's enrollment status: one upload's devices (transactionId) or the tenant's (optionally one profile's)",
        querystring: DevicesQuery,
        response: { 200: PageOf(DeviceItem, { processing: Type.Integer({ description: "of the whole result, still waiting for the job queue" }) }), ...errors },
      },
      config: { portal: "viewer" },
    },
    async (request) => devices((await scope(request, false)).tenantId!, request.query),
  );
}
