import { Type } from "typebox";
import type { AppDeps, AppInstance } from "../app.ts";

export interface ReadinessReport {
  ready: boolean;
  checks: { name: string; ok: boolean; detail?: string }[];
}
export type ReadinessCheck = () => Promise<ReadinessReport>;

const Readiness = Type.Object({
  ready: Type.Boolean(),
  checks: Type.Array(Type.Object({ name: Type.String(), ok: Type.Boolean(), detail: Type.Optional(Type.String()) })),
});

/** Liveness, readiness and metrics: unauthenticated, cheap, never logged to the activity log. */
export function registerHealthRoutes(app: AppInstance, deps: AppDeps): void {
  app.get(
    "/healthz",
    { schema: { tags: ["operations"], response: { 200: Type.Object({ status: Type.Literal("ok") }) } } },
    async () => ({ status: "ok" as const }),
  );
  app.get(
    "/readyz",
    { schema: { tags: ["operations"], response: { 200: Readiness, 503: Readiness } } },
    async (_request, reply) => {
      const report = await deps.readiness();
      return reply.code(report.ready ? 200 : 503).send(report);
    },
  );
  app.get("/metrics", { schema: { tags: ["operations"], hide: true } }, async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
