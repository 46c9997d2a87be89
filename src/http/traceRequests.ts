import type { Context, Span } from "@opentelemetry/api";
import type { FastifyRequest } from "fastify";
import { context, incomingContext, SpanKind, SpanStatusCode, trace } from "../tracing/spans.ts";
import type { AppInstance } from "./types.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the request's server span and the context it is active in (traceRequests; only while tracing is on) */
    traceSpan: { span: Span; context: Context } | undefined;
  }
}

/**
 * One server span per request (docs/traces.md), registered only when tracing is on: with it off no hook is added
 * and a request pays nothing. The span continues the caller's trace when it sends a W3C `traceparent` (and
 * `tracestate`); it is named by the route template (`POST /v2/blobs`), never the path (a device id may be in it) or
 * the query (the nonce is). No `traceparent` goes back in the answer: the caller knows its own trace, and a trace id
 * handed to anyone who asks would let strangers correlate requests in our collector.
 *
 * The context is entered twice: in onRequest, for the hooks before the body, and again in preHandler, because the
 * body arrives on the socket's own async context, not the hook's; the handler, and the service spans it opens, run
 * inside the second.
 */
export function traceRequests(app: AppInstance): void {
  app.decorateRequest("traceSpan", undefined);
  const tracer = trace.getTracer("attestd");
  app.addHook("onRequest", (request, _reply, done) => {
    const route = request.routeOptions.url;
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
    const active = trace.setSpan(parent, span);
    request.traceSpan = { span, context: active };
    context.with(active, done);
  });
  app.addHook("preHandler", (request, _reply, done) => {
    if (request.traceSpan) context.with(request.traceSpan.context, done);
    else done();
  });
  const end = (request: FastifyRequest, status: number | undefined) => {
    const traced = request.traceSpan;
    if (!traced) return;
    request.traceSpan = undefined;
    if (status !== undefined) traced.span.setAttribute("http.response.status_code", status);
    if (request.errorCode) traced.span.setAttribute("attestd.error.code", request.errorCode);
    // a 4xx is the caller's mistake and the server worked (OpenTelemetry's HTTP conventions): only 5xx mark an error
    if (status === undefined || status >= 500) {
      traced.span.setAttribute("error.type", status === undefined ? "aborted" : String(status));
      traced.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    traced.span.end();
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
