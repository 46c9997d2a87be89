import { Readable } from "node:stream";
import { Type } from "typebox";
import { AUDIT_ACTOR_KINDS } from "../../domain/audit.ts";
import type { AuditView } from "../../services/auditReader.ts";
import { auditPage } from "../../../web/pages/audit.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { TenantQuery, type PortalRoutes } from "./context.ts";

const AuditQuery = Type.Object(
  {
    ...TenantQuery,
    from: Type.Optional(Type.String({ maxLength: 40, description: "records at or after this time (ISO 8601 or a date)" })),
    to: Type.Optional(Type.String({ maxLength: 40, description: "records before this time" })),
    actor: Type.Optional(Type.String({ maxLength: 200, description: `an actor kind (${AUDIT_ACTOR_KINDS.join(", ")}) or an actor's id (a portal user id, an API client id, an OS user)` })),
    action: Type.Optional(Type.String({ maxLength: 100, description: "an action (key.revoked) or a family of them (key.*)" })),
    target: Type.Optional(Type.String({ maxLength: 300, description: "a target kind (api-key), or kind and id (api-key:KEYID)" })),
    after: Type.Optional(Type.String({ maxLength: 400, description: "the `next` cursor of a page: the page of older records (the export ignores it)" })),
  },
  { additionalProperties: false },
);

const Actor = Type.Object(
  {
    kind: Type.Union([Type.Literal("user"), Type.Literal("api-client"), Type.Literal("operator"), Type.Literal("system")]),
    id: Type.String({ description: "a portal user's id, an API client's id, the operator's OS user, or what of attestd acted" }),
    email: Type.Optional(Type.String({ description: "a portal user's email" })),
  },
  { description: "who made the change" },
);
const Source = Type.Object(
  {
    kind: Type.Union([Type.Literal("http"), Type.Literal("cli"), Type.Literal("system")]),
    remoteAddress: Type.Optional(Type.String()),
    userAgent: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    hostname: Type.Optional(Type.String()),
  },
  { description: "where the change came from: an HTTP request's remote address and user agent, or the CLI's host" },
);
export const AuditRecordSchema = Type.Object({
  id: Type.String(),
  time: Type.String(),
  actor: Actor,
  tenantId: Type.Union([Type.String(), Type.Null()], { description: "null: an operator-wide change (a global reference set, a signing key)" }),
  action: Type.String({ description: "a stable dotted name (docs/audit.md lists them)" }),
  target: Type.Object({ kind: Type.String(), id: Type.String() }),
  before: Type.Unknown({ description: "the record before the change (null when there was none), every secret removed" }),
  after: Type.Unknown({ description: "the record after the change (null when it was removed), every secret removed" }),
  from: Source,
});

function view(q: Record<string, unknown>): AuditView {
  const v: AuditView = {};
  for (const k of ["from", "to", "actor", "action", "target"] as const) if (typeof q[k] === "string" && q[k] !== "") v[k] = q[k] as string;
  return v;
}

/**
 * The audit trail (docs/audit.md): a tenant admin reads the tenant's own records, an operator every record (or one
 * tenant's, ?tenant=NAME). A page, the JSON-lines export, and the portal's Audit trail page.
 */
export function registerAuditRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags }: PortalRoutes): void {
  app.get("/portal/audit", { schema: { hide: true, querystring: AuditQuery }, config: { portal: "admin" } }, async (request, reply) => {
    const { tenantId } = await scope(request, true);
    const v = view(request.query);
    return html(reply, auditPage(ctxOf(request), v, await deps.auditLog.page(tenantId, v, request.query.after)));
  });

  app.get(
    "/portal/api/audit",
    {
      schema: {
        tags,
        operationId: "portalListAudit",
        summary: "The audit trail, newest first: every change of state, who made it, from where, before and after (secrets removed); filters, and an opaque `after` cursor for older records",
        querystring: AuditQuery,
        response: { 200: Type.Object({ items: Type.Array(AuditRecordSchema), next: Type.Optional(Type.String()) }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const { tenantId } = await scope(request, true);
      return deps.auditLog.page(tenantId, view(request.query), request.query.after);
    },
  );

  app.get(
    "/portal/api/audit/export",
    {
      schema: {
        tags,
        operationId: "portalExportAudit",
        summary: "Every audit record the filter selects, newest first, as JSON lines (one record per line; streamed, at most 100 000 records)",
        querystring: AuditQuery,
        produces: ["application/x-ndjson"],
        response: { 200: Type.Unsafe<Readable>({ type: "string", description: "application/x-ndjson: one audit record per line" }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const { tenant, tenantId } = await scope(request, true);
      const lines = deps.auditLog.exportLines(tenantId, view(request.query));
      // the first page before the answer starts, so a bad filter is a 400
      const first = await lines.next();
      return reply
        .type("application/x-ndjson; charset=utf-8")
        .header("content-disposition", `attachment; filename="audit-${tenant?.name ?? "all-tenants"}.jsonl"`)
        .send(
          Readable.from(
            (async function* () {
              if (!first.done) yield first.value;
              yield* lines;
            })(),
          ),
        );
    },
  );
}
