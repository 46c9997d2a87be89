import type { FastifyReply, FastifyRequest } from "fastify";
import type { Socket } from "node:net";
import type { AppDeps, AppInstance } from "./types.ts";

/**
 * Set on a connection once the answer to its current request is finished, cleared when its next request arrives.
 * A request answered before its body was read (a 401 or 404 needs no body) can still time out reading that body
 * (clientErrors.ts): its client has its answer, and a second, unasked-for one would only confuse it.
 */
export const ANSWERED = Symbol("attestd.answered");
type AnswerTracked = Socket & { [ANSWERED]?: boolean };

/** routes that are polled, not used: metrics count them, the activity log (and traces) would only fill with them */
export const UNLOGGED = new Set(["/healthz", "/readyz", "/metrics"]);

/** logged when a request's address could not be read even on arrival (its connection was already gone) */
export const UNKNOWN_ADDRESS = "unknown";

declare module "fastify" {
  interface FastifyRequest {
    /**
     * the caller's address as the request arrived (request.ip, so X-Forwarded-For from a trusted proxy counts):
     * once the client has closed its connection, request.ip has nothing left to read
     */
    arrivalAddress: string;
  }
}

/**
 * What is recorded of every answered request: the Prometheus request metrics, and one activity-log entry (the
 * write-behind ActivityRecorder service) naming the caller, the route, the status and any error id.
 */
export function recordResponses(app: AppInstance, deps: Pick<AppDeps, "clock" | "metrics" | "activity">): void {
  app.decorateRequest("arrivalAddress", UNKNOWN_ADDRESS);
  // Reading the address now also makes the socket keep it (node caches the peer name once read), so later reads
  // (key restrictions, the portal's sign-in throttle) see it too, even after the client hung up.
  app.addHook("onRequest", (request, _reply, done) => {
    request.arrivalAddress = request.ip ?? UNKNOWN_ADDRESS;
    const socket = request.raw.socket as AnswerTracked | null;
    if (socket) socket[ANSWERED] = false;
    done();
  });
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
      remoteAddress: request.arrivalAddress,
      reason: request.errorReason ?? null,
    });
  };
  // callback form, not async: it runs on every request and awaits nothing, so a promise would be pure cost
  app.addHook("onResponse", (request, reply, done) => {
    const socket = request.raw.socket as AnswerTracked | null;
    if (socket) socket[ANSWERED] = true;
    try {
      record(request, reply);
    } catch (err) {
      request.log.error({ err }, "recording the response failed");
    }
    done();
  });
}
