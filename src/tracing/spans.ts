import { context, createContextKey, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { AppError } from "../errors/AppError.ts";
import { PACKAGE_VERSION } from "../packageInfo.ts";

/**
 * The spans hot code opens. This module imports only `@opentelemetry/api`: the SDK is loaded by `sdk.ts`, and only
 * when --otlp-endpoint is set. With tracing off `inSpan` calls its function straight away, with no span object, no
 * context switch and no closure beyond the caller's own: the cost of a traced call is one boolean test
 * (docs/traces.md, "Cost"; the bench's tracing section measures it).
 *
 * What attributes may hold: formats, statuses, verdicts, error codes, route templates, host names. Never a nonce, a
 * key, a token, a device identifier, a tenant id or a URL's path or query (docs/traces.md, "Never recorded").
 */

let on = false;
/** the tracer of the provider in force, looked up once per start (the API's lookup is a map read each time) */
let current: Tracer | undefined;

/** whether spans are recorded and exported (sdk.ts sets it once the SDK is registered, and clears it at shutdown) */
export function tracingEnabled(): boolean {
  return on;
}

export function setTracingEnabled(value: boolean): void {
  on = value;
  current = undefined;
}

const tracer = (): Tracer => (current ??= trace.getTracer("attestd", PACKAGE_VERSION));

/** what an error is called in a span: the catalog code of an AppError, the class name of anything else */
export function errorType(err: unknown): string {
  if (err instanceof AppError) return err.entry.key;
  return err instanceof Error ? err.name : "Error";
}

/** A span that failed, by the kind of failure alone (an error's type, a status code): never a message. */
export function markFailed(span: Span, type: string): void {
  span.setAttribute("error.type", type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * Runs `fn` inside a child span of the active one, named `name`. A throw marks the span as an error (its type
 * only: the message may name an input) and is rethrown. `fn` gets the span to add attributes known only at the end.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span?: Span) => Promise<T>): Promise<T> {
  if (!on) return fn();
  return tracer().startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      markFailed(span, errorType(err));
      throw err;
    } finally {
      span.end();
    }
  });
}

/** `inSpan` for synchronous work (the appraisal: pure and CPU-bound) */
export function inSpanSync<T>(name: string, attributes: Attributes, fn: (span?: Span) => T): T {
  if (!on) return fn();
  return tracer().startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, (span) => {
    try {
      return fn(span);
    } catch (err) {
      markFailed(span, errorType(err));
      throw err;
    } finally {
      span.end();
    }
  });
}

/** set in the context of a store span: the store calls made inside it are its own work, not spans of their own */
const IN_STORE_SPAN = createContextKey("attestd.in-store-span");

/**
 * A store call's span, `store <operation>` with `db.operation.name`, as a child of the active span. Store methods
 * called inside it open no span of their own (`traceStoreCall`), so a use case that names its durable write (the
 * attestation service's `consume_nonce_save_verdict`) is one span, not that span around the store's methods.
 */
export function inStoreSpan<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  if (!on) return fn();
  const parent = context.active().setValue(IN_STORE_SPAN, true);
  return tracer().startActiveSpan(`store ${operation}`, { kind: SpanKind.INTERNAL, attributes: { "db.operation.name": operation } }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      markFailed(span, errorType(err));
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * One call of a store method (`src/tracing/storeSpans.ts` wraps every store so when tracing is on): a `store
 * <operation>` span when it is made for a traced request (a recording span is active) and not inside another store
 * span; otherwise the call alone. Work on timers (the activity log's flush, the nonce purge, the job worker's polls)
 * runs outside any request and makes no trace of its own. Synchronous methods end their span on return.
 */
export function traceStoreCall<T>(operation: string, call: () => T): T {
  if (!on) return call();
  const active = context.active();
  if (active.getValue(IN_STORE_SPAN) === true || !trace.getSpan(active)?.isRecording()) return call();
  return tracer().startActiveSpan(
    `store ${operation}`,
    { kind: SpanKind.INTERNAL, attributes: { "db.operation.name": operation } },
    active.setValue(IN_STORE_SPAN, true),
    (span) => {
      const failed = (err: unknown): never => {
        markFailed(span, errorType(err));
        span.end();
        throw err;
      };
      let result: T;
      try {
        result = call();
      } catch (err) {
        return failed(err);
      }
      if (result instanceof Promise) {
        return result.then((value: unknown) => {
          span.end();
          return value;
        }, failed) as T;
      }
      span.end();
      return result;
    },
  );
}

/**
 * A span per outbound request made through `fetch` (Google's attestation status list and roots, Play Integrity
 * decoding and its OAuth endpoint). It records the method, the host and the answer's status, never the path or the
 * query (a package name, a token's endpoint), and it adds no `traceparent`: these requests go to a third party,
 * which has no business learning our trace ids (docs/traces.md, "Propagation"). With tracing off it is `fetch`.
 */
export function tracedFetch(inner: typeof fetch): typeof fetch {
  const traced = (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    if (!on) return inner(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    return tracer().startActiveSpan(
      method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "http.request.method": method,
          "server.address": url.hostname,
          "server.port": Number(url.port) || (url.protocol === "https:" ? 443 : 80),
          "url.scheme": url.protocol.slice(0, -1),
        },
      },
      async (span) => {
        try {
          const res = await inner(input, init);
          span.setAttribute("http.response.status_code", res.status);
          if (res.status >= 400) {
            markFailed(span, String(res.status));
          }
          return res;
        } catch (err) {
          markFailed(span, errorType(err));
          throw err;
        } finally {
          span.end();
        }
      },
    );
  };
  return traced as typeof fetch;
}

/**
 * the context an incoming request's `traceparent`/`tracestate` name (W3C Trace Context), or the root: never whatever
 * context happens to be active, so a request's parent is its caller's span or nothing
 */
export function incomingContext(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

export { context, SpanKind, SpanStatusCode, trace };
