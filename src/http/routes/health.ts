import { Type } from "typebox";
import type { AppDeps, AppInstance } from "../types.ts";

const Readiness = Type.Object({
  ready: Type.Boolean({ description: "false (and status 503) when a store this instance needs is unreachable" }),
  degraded: Type.Array(Type.String(), {
    description: "failing checks that leave the instance ready (android-roots, android-status): android-key fails closed",
  }),
  checks: Type.Array(Type.Object({ name: Type.String(), ok: Type.Boolean(), detail: Type.Optional(Type.String()) })),
});

/** Liveness, readiness and metrics: unauthenticated, cheap, never logged to the activity log. */
export function registerHealthRoutes(app: AppInstance, deps: AppDeps): void {
  const tags = ["operations"];
  app.get(
    "/healthz",
    {
      schema: {
        tags,
        operationId: "checkLiveness",
        summary: "Liveness: the process answers",
        response: { 200: Type.Object({ status: Type.Literal("ok") }) },
      },
    },
    async () => ({ status: "ok" as const }),
  );
  app.get(
    "/readyz",
    {
      schema: {
        tags,
        operationId: "checkReadiness",
        summary: "Readiness: the stores this instance needs answer (503 when not); degraded trust sources are listed",
        response: { 200: Readiness, 503: Readiness },
      },
    },
    async (_request, reply) => {
      const { ready, degraded = [], checks } = await deps.readiness();
      return reply.code(ready ? 200 : 503).send({ ready, degraded, checks });
    },
  );
  app.get(
    "/metrics",
    {
      schema: {
        tags,
        operationId: "getMetrics",
        summary: "Prometheus metrics",
        // the registry's text is sent as it is: a string reply with a non-JSON type is never serialised
        response: {
          200: {
            description: "The Prometheus text exposition format, version 0.0.4",
            content: { "text/plain": { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => {
      reply.type(deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  );
}
