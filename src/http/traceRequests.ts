import type { Span } from "@opentelemetry/api";
import type { FastifyRequest } from "fastify";
import { context, incomingContext, markFailed, SpanKind, trace } from "../tracing/spans.ts";
import { PACKAGE_VERSION } from "../packageInfo.ts";
import { UNLOGGED } from "./recordResponses.ts";
import type { AppInstance } from "./types.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the request's server span (traceRequests; only while tracing is on) */
    traceSpan: Span | undefined;
  }
}

/**
 * One server span per request (docs/traces.md), registered only when tracing is on: with it off no hook is added
 * and a request pays nothing. The span continues the caller's trace when it sends a W3C `traceparent` (and
 * `tracestate`); it is named by the route template (`POST /v2/blobs`), never the path (a device id may be in it) or
 * the query (the nonce is). The polled routes (/healthz, /readyz, /metrics) are not traced. No `traceparent` goes
 * back in the answer: the caller knows its own trace, and a trace id handed to anyone who asks would let strangers
 * correlate requests in our collector.
 *
 * The span's context is entered once, in onRequest, the first hook: everything after it runs inside, the body
 * parser included (Fastify binds it to an AsyncResource made there, so a body that arrives in later packets keeps
 * the context; traces.test.ts sends one so), then the handler and the service spans it opens.
 */
export function traceRequests(app: AppInstance): void {
  app.decorateRequest("traceSpan", undefined);
  const tracer = trace.getTracer("attestd", PACKAGE_VERSION);
  app.addHook("onRequest", (request, _reply, done) => {
    const route = request.routeOptions.url;
    // a load balancer's and Prometheus's polls: a trace every few seconds that says nothing
    if (route !== undefined && UNLOGGED.has(route)) return done();
    const parent = incomingContext(request.headers);
    const span = tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": request.method,
          ...(route ? { "http.route": route } : {}),
          "url.scheme": request.protocol,
          "network.protocol.version": request.raw.httpVersion,
        },
      },
      parent,
    );
    request.traceSpan = span;
    context.with(trace.setSpan(parent, span), done);
  });
  const end = (request: FastifyRequest, status: number | undefined) => {
    const span = request.traceSpan;
    if (!span) return;
    request.traceSpan = undefined;
    if (status !== undefined) span.setAttribute("http.response.status_code", status);
    if (request.errorCode) span.setAttribute("attestd.error.code", request.errorCode);
    // a 4xx is the caller's mistake and the server worked (OpenTelemetry's HTTP conventions): only 5xx mark an error
    if (status === undefined || status >= 500) {
      markFailed(span, status === undefined ? "aborted" : String(status));
    }
    span.end();
  };
  app.addHook("onResponse", (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook("onRequestAbort", (request, done) => {
    end(request, undefined);
    done();
  });
}
