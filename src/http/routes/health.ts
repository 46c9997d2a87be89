import { Type } from "typebox";
import { checkState, type AppDeps, type AppInstance } from "../types.ts";

const Readiness = Type.Object({
  ready: Type.Boolean({ description: "false (and status 503) when a store this instance needs is unreachable or refuses writes (a full disk)" }),
  degraded: Type.Array(Type.String(), {
    description: "failing checks that leave the instance ready (android-roots, android-status): android-key fails closed",
  }),
  checks: Type.Array(
    Type.Object({
      name: Type.String({ description: "sqlite, postgres, redis, android-roots, android-status" }),
      ok: Type.Boolean(),
      state: Type.String({
        description:
          "ok; failing (a store); stale, missing or held (a trust source: held is a new copy held back, the copy in force stays). " +
          "The portal's trust page uses the same words, and says ok as current (or built in, for Google's roots shipped with attestd). " +
          "Why is for operators: the service log and the portal's trust page",
      }),
    }),
  ),
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
      // Unauthenticated: a check's detail names hosts, files and URLs, so strangers get its name and state only.
      const said = checks.map((c) => ({ name: c.name, ok: c.ok, state: checkState(c) }));
      return reply.code(ready ? 200 : 503).send({ ready, degraded, checks: said });
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
