import { Type } from "typebox";
import { TRUST_STATES, type TrustState as TrustStateWord } from "../../domain/trustStates.ts";
import { TRUST_SOURCE_NAMES, type TrustSourceName } from "../../services/trustSources.ts";
import { overviewPage } from "../../../web/pages/overview.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";

const Count = Type.Integer({ minimum: 0 });
const SeriesPoint = Type.Object({ bucket: Type.String({ description: "UTC hour (2026-11-22T10) or day (2026-11-22)" }), Yes: Count, No: Count, Unknown: Count });
const Totals = Type.Object({ total: Count, succeeded: Count, refused: Count, failed: Count });
const Verdict = Type.Union([Type.Literal("Yes"), Type.Literal("No"), Type.Literal("Unknown")]);

// built from the one vocabulary (src/domain/trustStates.ts), so the schema can never list another word
const TrustState = Type.Unsafe<TrustStateWord>(
  Type.Union(
    (Object.keys(TRUST_STATES) as TrustStateWord[]).map((w) => Type.Literal(w)),
    { description: Object.entries(TRUST_STATES).map(([w, meaning]) => `${w}: ${meaning}`).join("; ") },
  ),
);

export const TrustSourcesView = Type.Object({
  usable: Type.Boolean({ description: "android-key can answer Success now: both sources present and fresh" }),
  maxAgeSeconds: Type.Number(),
  sources: Type.Array(
    Type.Object({
      name: Type.Unsafe<TrustSourceName>(Type.Union(TRUST_SOURCE_NAMES.map((n) => Type.Literal(n)))),
      label: Type.String(),
      state: TrustState,
      usedBy: Type.String({ description: "what depends on the source" }),
      configured: Type.Boolean(),
      origin: Type.Optional(Type.Union([Type.Literal("built-in"), Type.Literal("source"), Type.Literal("cache")])),
      fetchedAt: Type.Optional(Type.String()),
      ageSeconds: Type.Optional(Type.Number()),
      lastAttempt: Type.Optional(Type.String({ description: "the last read of the source; Play Integrity: the last call to Google" })),
      reason: Type.Optional(Type.String({ description: "why the source is not simply fine; names no URL, file or directory" })),
      heldBack: Type.Optional(
        Type.Object(
          {
            at: Type.String(),
            items: Type.Number({ description: "entries (certificates) of the copy held back" }),
            inForce: Type.Number({ description: "entries (certificates) of the copy that stays in force" }),
            lostPercent: Type.Number(),
          },
          { description: "a new copy held back for losing more than --android-max-shrink of the entries in force" },
        ),
      ),
      items: Type.Optional(Type.Number()),
      itemsAre: Type.Optional(Type.String({ description: "what items counts: certificates, entries, apps with a service account" })),
      pending: Type.Optional(Type.Boolean()),
      source: Type.Optional(Type.String({ description: "operators only" })),
      lastError: Type.Optional(Type.String({ description: "operators only: may name the URL or file" })),
      summary: Type.Optional(Type.String({ description: "operators only" })),
    }),
  ),
});

const OverviewBody = Type.Object({
  generatedAt: Type.String(),
  verdicts: Type.Object({ hourly: Type.Array(SeriesPoint), daily: Type.Array(SeriesPoint) }),
  failures: Type.Array(Type.Object({ verdict: Verdict, status: Type.String(), reason: Type.String(), total: Count, recent: Count })),
  requests: Type.Object({ last24h: Totals, last30d: Totals }),
  errors: Type.Array(
    Type.Object({ status: Type.Integer(), code: Type.Union([Type.String(), Type.Null()]), method: Type.String(), route: Type.String(), total: Count, recent: Count }),
  ),
  trust: TrustSourcesView,
});

/**
 * The overview: the page (tables drawn on the server; web/static/overview.js draws the chart from the admin API's
 * answer) and GET /portal/api/overview. A tenant user sees their tenant; an operator every tenant, or ?tenant=.
 */
export function registerOverviewRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags }: PortalRoutes): void {
  const forOperator = (role: string) => role === "operator";

  app.get("/portal/", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
    const { tenant, tenantId } = await scope(request, true);
    const actor = request.actor!;
    const overview = await deps.overview.overview(tenantId, forOperator(actor.role));
    const tenants = forOperator(actor.role) ? (await deps.tenantAdmin.list()).map((t) => t.name) : undefined;
    // one tenant without a verdict in 30 days: its first steps, with its keys (never their secrets)
    const empty = tenant && overview.verdicts.daily.every((p) => p.Yes + p.No + p.Unknown === 0);
    const start = empty ? { keys: await deps.keys.list(tenant), canWrite: allowed(actor, "admin"), api: deps.api } : undefined;
    return html(reply, overviewPage(ctxOf(request), overview, tenants, start));
  });

  app.get(
    "/portal/api/overview",
    {
      schema: {
        tags,
        operationId: "portalGetOverview",
        summary: "The overview: verdicts per hour (24 h) and day (30 d), top failure reasons, requests and refusals, trust sources",
        querystring: Type.Object(TenantQuery),
        response: { 200: OverviewBody, ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenantId } = await scope(request, true);
      return deps.overview.overview(tenantId, forOperator(request.actor!.role));
    },
  );
}
