import type { FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps, AppInstance } from "./types.ts";

/** routes that are polled, not used: metrics count them, the activity log would only fill with them */
const UNLOGGED = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * What is recorded of every answered request: the Prometheus request metrics, and one activity-log entry (the
 * write-behind ActivityRecorder service) naming the caller, the route, the status and any error id.
 */
export function recordResponses(app: AppInstance, deps: Pick<AppDeps, "clock" | "metrics" | "activity">): void {
  const record = (request: FastifyRequest, reply: FastifyReply): void => {
    const route = request.routeOptions.url ?? "unmatched";
    deps.metrics.observeRequest(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
    if (UNLOGGED.has(route)) return;
    deps.activity.record({
      time: new Date(deps.clock.nowMs()).toISOString(),
      errorId: request.errorId ?? null,
      tenantId: request.principal?.tenant.tenantId ?? request.tenantId ?? null,
      clientId: request.principal?.key.keyId ?? request.clientId ?? null,
      method: request.method,
      route,
      status: reply.statusCode,
      code: request.errorCode ?? null,
      latencyMs: Math.round(reply.elapsedTime * 1000) / 1000,
      remoteAddress: request.ip,
      reason: request.errorReason ?? null,
    });
  };
  // callback form, not async: it runs on every request and awaits nothing, so a promise would be pure cost
  app.addHook("onResponse", (request, reply, done) => {
    try {
      record(request, reply);
    } catch (err) {
      request.log.error({ err }, "recording the response failed");
    }
    done();
  });
}
