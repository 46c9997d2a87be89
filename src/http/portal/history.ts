import { Type } from "typebox";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { ACTIVITY_KINDS, type ActivityKind } from "../../domain/activity.ts";
import type { ActivityView, VerdictFilter } from "../../portal/history.ts";
import { Readable } from "node:stream";
import { activityPage, verdictDetailPage, verdictsPage } from "../../../web/pages/history.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { TenantQuery, type PortalRoutes } from "./context.ts";

const VerdictQuery = Type.Object(
  {
    ...TenantQuery,
    verdict: Type.Optional(Type.Union([Type.Literal("Yes"), Type.Literal("No"), Type.Literal("Unknown"), Type.Literal("")])),
    status: Type.Optional(Type.String({ maxLength: 64 })),
    format: Type.Optional(Type.String({ maxLength: 32 })),
    device: Type.Optional(Type.String({ maxLength: 128 })),
    from: Type.Optional(Type.String({ maxLength: 40 })),
    to: Type.Optional(Type.String({ maxLength: 40 })),
    after: Type.Optional(Type.String({ maxLength: 400, description: "the `next` cursor of a page: the page of older verdicts (the CSV export ignores it)" })),
    before: Type.Optional(Type.String({ maxLength: 400, description: "the `prev` cursor of a page: the page of newer verdicts (the CSV export ignores it)" })),
  },
  { additionalProperties: false },
);
const ActivityQuery = Type.Object(
  {
    ...TenantQuery,
    errorId: Type.Optional(Type.String({ maxLength: 64 })),
    status: Type.Optional(Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Literal("")])),
    code: Type.Optional(Type.String({ maxLength: 64 })),
    route: Type.Optional(Type.String({ maxLength: 200 })),
    key: Type.Optional(Type.String({ maxLength: 64, description: "the API key id (Part A) or enrollment client id (Part B) that made the request" })),
    kind: Type.Optional(Type.Union([...ACTIVITY_KINDS.map((k) => Type.Literal(k)), Type.Literal("")], {
      description: "api (the default): Part A, Part B and the admin API; portal: the portal's own pages; all: both. An exact errorId is found whatever its kind.",
    })),
    from: Type.Optional(Type.String({ maxLength: 40 })),
    to: Type.Optional(Type.String({ maxLength: 40 })),
    after: Type.Optional(Type.String({ maxLength: 400, description: "the `next` cursor of a page: the page of older entries" })),
    before: Type.Optional(Type.String({ maxLength: 400, description: "the `prev` cursor of a page: the page of newer entries" })),
  },
  { additionalProperties: false },
);
function verdictFilter(q: Record<string, unknown>): VerdictFilter {
  const f: VerdictFilter = {};
  if (q.verdict) f.verdict = q.verdict as VerdictFilter["verdict"] & string;
  for (const k of ["status", "format", "device", "from", "to"] as const) if (typeof q[k] === "string" && q[k] !== "") f[k] = q[k] as string;
  return f;
}

function activityView(q: Record<string, unknown>): ActivityView {
  const f: ActivityView = {};
  if (typeof q.status === "number") f.status = q.status;
  if (typeof q.kind === "string" && q.kind !== "") f.kind = q.kind as ActivityKind;
  for (const k of ["errorId", "code", "route", "key", "from", "to"] as const) if (typeof q[k] === "string" && q[k] !== "") f[k] = q[k] as string;
  return f;
}

/** What a tenant has been through: the overview, the verdict history and the activity log, pages and admin API. */
export function registerHistoryRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags }: PortalRoutes): void {
  app.get("/portal/verdicts", { schema: { hide: true, querystring: VerdictQuery }, config: { portal: "viewer" } }, async (request, reply) => {
    const { tenantId } = await scope(request, true);
    const f = verdictFilter(request.query);
    const page = await deps.history.verdicts(tenantId, f, { after: request.query.after, before: request.query.before });
    return html(reply, verdictsPage(ctxOf(request), f, page));
  });
  app.get(
    "/portal/api/verdicts.csv",
    {
      schema: {
        tags,
        operationId: "portalExportVerdictsCsv",
        summary: "Every verdict the filter selects, newest first, as CSV (streamed page by page; formula-like cells neutralised)",
        querystring: VerdictQuery,
        produces: ["text/csv"],
        // a stream of text/csv; described as the string it adds up to
        response: { 200: Type.Unsafe<Readable>({ type: "string", description: "text/csv: a header line, then one line per verdict" }), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request, reply) => {
      const { tenant, tenantId } = await scope(request, true);
      const rows = deps.history.verdictsCsv(tenantId, verdictFilter(request.query));
      // the first chunk (the header, and any refusal of a filter) before the answer starts, so a bad filter is a 400
      const first = await rows.next();
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="verdicts-${tenant?.name ?? "all-tenants"}.csv"`)
        .send(Readable.from((async function* () {
          if (!first.done) yield first.value;
          yield* rows;
        })()));
    },
  );
  const ObjectParams = Type.Object({ objectId: Type.String({ minLength: 1, maxLength: 128 }) });
  app.get(
    "/portal/verdicts/:objectId",
    { schema: { hide: true, params: ObjectParams, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } },
    async (request, reply) => {
      const { tenantId } = await scope(request, true);
      const v = await deps.history.verdict(tenantId, request.params.objectId);
      if (!v) throw new AppError(catalog.PORTAL_NOT_FOUND, "no such verdict for this tenant");
      return html(reply, verdictDetailPage(ctxOf(request), v));
    },
  );
  app.get("/portal/activity", { schema: { hide: true, querystring: ActivityQuery }, config: { portal: "viewer" } }, async (request, reply) => {
    const { tenant, tenantId } = await scope(request, true);
    const f = activityView(request.query);
    const page = await deps.history.activity(tenantId, f, { after: request.query.after, before: request.query.before });
    const keys = tenant ? await deps.keys.list(tenant) : [];
    return html(reply, activityPage(ctxOf(request), f, page, keys));
  });
  const VerdictItem = Type.Object({
    objectId: Type.String(),
    tenantId: Type.String(),
    format: Type.String(),
    reason: Type.String(),
    createdAt: Type.String(),
    record: Type.Ref("VerdictRecord"),
    detail: Type.Record(Type.String(), Type.Unknown()),
  });
  app.get(
    "/portal/api/verdicts",
    {
      schema: {
        tags,
        operationId: "portalListVerdicts",
        summary: "Verdict history, newest first; filters, opaque `after` (older) and `before` (newer) cursors",
        querystring: VerdictQuery,
        response: {
          200: Type.Object({ items: Type.Array(VerdictItem), next: Type.Optional(Type.String()), prev: Type.Optional(Type.String()) }),
          ...partBErrors(400, 401, 404),
        },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, true);
      return deps.history.verdicts(tenantId, verdictFilter(request.query), { after: request.query.after, before: request.query.before });
    },
  );
  app.get(
    "/portal/api/verdicts/:objectId",
    {
      schema: { tags, operationId: "portalGetVerdict", summary: "One verdict of the tenant, with its deciding rule and detail", params: ObjectParams, querystring: Type.Object(TenantQuery), response: { 200: VerdictItem, ...partBErrors(401, 404) } },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, true);
      const v = await deps.history.verdict(tenantId, request.params.objectId);
      if (!v) throw new AppError(catalog.PORTAL_NOT_FOUND, "no such verdict for this tenant");
      return v;
    },
  );
  const ActivityItem = Type.Object({
    seq: Type.Number(),
    time: Type.String(),
    errorId: Type.Union([Type.String(), Type.Null()]),
    tenantId: Type.Union([Type.String(), Type.Null()]),
    clientId: Type.Union([Type.String(), Type.Null()]),
    method: Type.String(),
    route: Type.String(),
    status: Type.Integer(),
    code: Type.Union([Type.String(), Type.Null()]),
    message: Type.Union([Type.String(), Type.Null()], { description: "the catalog's message of `code` (two, joined by \" or \", where two entries share it)" }),
    meaning: Type.Union([Type.String(), Type.Null()], { description: "what the catalog says `code` means, for people" }),
    latencyMs: Type.Number(),
    remoteAddress: Type.String(),
  });
  app.get(
    "/portal/api/activity",
    {
      schema: {
        tags,
        operationId: "portalListActivity",
        summary: "The activity log, newest first: the APIs' requests unless `kind` says otherwise; filters (an exact errorId finds any request), opaque `after` (older) and `before` (newer) cursors",
        querystring: ActivityQuery,
        response: {
          200: Type.Object({ items: Type.Array(ActivityItem), next: Type.Optional(Type.String()), prev: Type.Optional(Type.String()) }),
          ...partBErrors(400, 401, 404),
        },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, true);
      return deps.history.activity(tenantId, activityView(request.query), { after: request.query.after, before: request.query.before });
    },
  );
}
