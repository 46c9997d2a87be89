import { Type } from "typebox";
import type { StoredReferenceSet } from "../../domain/referenceValues.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { MAX_REFERENCE_FILE_BYTES } from "../../services/referenceValueAdmin.ts";
import { referenceValuesPage } from "../../../web/pages/referenceValues.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";

/** As a blob carries them (the parser's bounds): printable ASCII, at most 64 characters. */
const Name = SafeText({ minLength: 1, maxLength: 64 });
const Cursor = Type.String({ maxLength: 400 });
/** the --reference-values sets a page lists (the file is not paged: the model filter narrows it) */
const FILE_SETS_SHOWN = 200;

const SetItem = Type.Object({
  model: Type.String(),
  firmwareVersion: Type.String(),
  measurements: Type.Array(Type.String()),
  source: Type.Union([Type.Literal("global"), Type.Literal("tenant")]),
  updatedAt: Type.String(),
});

const item = (s: StoredReferenceSet) => ({
  model: s.model,
  firmwareVersion: s.firmwareVersion,
  measurements: s.measurements,
  source: s.tenantId === null ? ("global" as const) : ("tenant" as const),
  updatedAt: s.updatedAt,
});

/**
 * Reference values: the page, and the admin API over the same ReferenceValueAdmin as `attestd refvals ...`.
 * Where a request writes is decided by who asks, never by the URL alone: a tenant's admin always writes its own
 * tenant's sets; only an operator writes the global sets (no ?tenant=) or a tenant's (?tenant=NAME). Everyone
 * reads the global sets too, since they decide the tenant's appraisals wherever it has no set of its own.
 */
export function registerReferenceValueRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  const refvals = deps.referenceValues;

  app.get(
    "/portal/reference-values",
    {
      schema: {
        hide: true,
        querystring: Type.Object({ ...TenantQuery, model: Type.Optional(Type.String({ maxLength: 64 })), after: Type.Optional(Cursor), globalAfter: Type.Optional(Cursor) }),
      },
      config: { portal: "viewer" },
    },
    async (request, reply) => {
      const { tenant } = await scope(request, true);
      const model = request.query.model || undefined;
      const own = tenant ? await refvals.list(tenant, { ...(model ? { model } : {}), ...(request.query.after ? { after: request.query.after } : {}) }) : undefined;
      const global = await refvals.list(undefined, { ...(model ? { model } : {}), ...(request.query.globalAfter ? { after: request.query.globalAfter } : {}) });
      return html(
        reply,
        referenceValuesPage(ctxOf(request), {
          tenant,
          model,
          own,
          global,
          fileSets: refvals.fileValues.length,
          fileShown: refvals.fileValues.filter((s) => !model || s.model === model).slice(0, FILE_SETS_SHOWN),
          canWrite: allowed(request.actor!, "admin"),
          canWriteGlobal: allowed(request.actor!, "operator"),
          maxBytes: MAX_REFERENCE_FILE_BYTES,
        }),
      );
    },
  );

  app.get(
    "/portal/api/reference-values",
    {
      schema: {
        tags,
        operationId: "portalListReferenceValues",
        summary: "Reference sets, by model and firmware: the tenant's own (default) or the global ones (scope=global); paged",
        querystring: Type.Object(
          {
            ...TenantQuery,
            scope: Type.Optional(Type.Union([Type.Literal("own"), Type.Literal("global")])),
            model: Type.Optional(Name),
            after: Type.Optional(Cursor),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ items: Type.Array(SetItem), next: Type.Optional(Type.String()), fileSets: Type.Integer({ description: "global sets of the server's --reference-values file" }) }),
          ...partBErrors(400, 401, 404),
        },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenant } = await scope(request, true);
      const q = request.query;
      const page = await refvals.list(q.scope === "global" ? undefined : tenant, { ...(q.model ? { model: q.model } : {}), ...(q.after ? { after: q.after } : {}) });
      return { items: page.items.map(item), ...(page.next ? { next: page.next } : {}), fileSets: refvals.fileValues.length };
    },
  );

  app.post(
    "/portal/api/reference-values",
    {
      bodyLimit: 2 * MAX_REFERENCE_FILE_BYTES,
      schema: {
        tags,
        operationId: "portalImportReferenceValues",
        summary:
          "Upload a reference-values file (the JSON of `attestd refvals import`): every set stored, or none; a refusal names the item and field",
        querystring: Type.Object(TenantQuery),
        body: Type.Object(
          {
            filename: SafeText({ minLength: 1, maxLength: 255, description: "named in error messages" }),
            content: Type.String({ maxLength: MAX_REFERENCE_FILE_BYTES, description: "the file's text" }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ imported: Type.Integer(), scope: Type.Union([Type.Literal("global"), Type.Literal("tenant")]) }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const { tenant } = await scope(request, true);
      const imported = await refvals.import(request.body.content, request.body.filename, tenant, by(request));
      return { imported, scope: tenant ? ("tenant" as const) : ("global" as const) };
    },
  );

  app.delete(
    "/portal/api/reference-values",
    {
      schema: {
        tags,
        operationId: "portalDeleteReferenceSet",
        summary: "Delete one reference set of the tenant (an operator without ?tenant=: a global set)",
        querystring: Type.Object({ ...TenantQuery, model: Name, firmwareVersion: Name }, { additionalProperties: false }),
        response: { 204: Type.Null(), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const { tenant } = await scope(request, true);
      if (!(await refvals.remove(tenant, request.query.model, request.query.firmwareVersion, by(request)))) {
        throw new AppError(catalog.PORTAL_NOT_FOUND, `no ${tenant ? "set of this tenant" : "global set"} for that model and firmware`);
      }
      return reply.code(204).send(null);
    },
  );
}
