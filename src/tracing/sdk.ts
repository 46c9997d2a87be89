import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config.ts";
import { PACKAGE_VERSION } from "../packageInfo.ts";
import { parseOtlpHeaders } from "./otlpHeaders.ts";
import { setTracingEnabled, tracingEnabled } from "./spans.ts";

/** what `serve` holds while tracing is on: shutdown exports what is queued (bounded), then turns tracing off */
export interface Tracing {
  /** spans the exporter could not deliver (collector down, refused, timed out) or the queue had no room for */
  dropped(): number;
  /** exports what is queued now (tests, the bench) */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** spans held for export; beyond it new spans are dropped (and counted), so a dead collector costs bounded memory */
export const MAX_QUEUED_SPANS = 2048;
/** how long one export may take before it counts as failed */
export const EXPORT_TIMEOUT_MS = 10_000;
/** how long shutdown waits for the last export */
const SHUTDOWN_FLUSH_MS = 2_000;

/**
 * Turns tracing on when --otlp-endpoint is set, and only then loads the OpenTelemetry SDK (dynamic imports): with it
 * unset nothing of the SDK is loaded and every span call in `spans.ts` is a boolean test. The SDK registers
 * globally (tracer provider, AsyncLocalStorage context, W3C Trace Context propagator), so one process traces with
 * one configuration at a time; a second start while one is on is refused.
 */
export async function startTracing(config: Pick<Config, "otlpEndpoint" | "otlpHeaders" | "traceSampleRatio" | "serviceName">, log: FastifyBaseLogger): Promise<Tracing | undefined> {
  if (!config.otlpEndpoint) return undefined;
  if (tracingEnabled()) throw new Error("tracing is already on in this process");
  const [api, core, hooks, resources, sdk, exporterModule, semconv] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/core"),
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/semantic-conventions"),
  ]);

  let dropped = 0;
  let failing = false;
  // the SDK reports a full queue and failed exports through its diagnostic logger; each outage is logged once
  // (and its end once), never per span, and never with the headers (they may carry the collector's credentials)
  const noteDrop = (count: number, why: string) => {
    dropped += count;
    if (failing) return;
    failing = true;
    log.warn({ dropped: count, why }, "traces: spans are being dropped (the OTLP collector is unreachable or too slow); logged once until export succeeds again");
  };
  api.diag.setLogger(
    {
      error: (message) => noteDrop(0, message.slice(0, 200)),
      warn: (message) => {
        const m = /Dropped (\d+) spans/.exec(message);
        if (m) noteDrop(Number(m[1]), "the export queue is full");
      },
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true },
  );

  const otlp = new exporterModule.OTLPTraceExporter({
    url: tracesUrl(config.otlpEndpoint),
    headers: parseOtlpHeaders(config.otlpHeaders),
    timeoutMillis: EXPORT_TIMEOUT_MS,
  });
  // counts what a failed export loses, and says once when exports work again
  const exporter: import("@opentelemetry/sdk-trace").SpanExporter = {
    export(spans, done) {
      otlp.export(spans, (result) => {
        if (result.code === core.ExportResultCode.SUCCESS) {
          if (failing) log.info({ dropped }, "traces: the OTLP collector accepts spans again");
          failing = false;
        } else {
          noteDrop(spans.length, result.error?.message?.slice(0, 200) ?? "export failed");
        }
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };

  const processor = new sdk.BatchSpanProcessor({
    exporter,
    maxQueueSize: MAX_QUEUED_SPANS,
    maxExportBatchSize: 512,
    scheduledDelayMillis: 1000,
    exportTimeoutMillis: EXPORT_TIMEOUT_MS,
  });
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      [semconv.ATTR_SERVICE_NAME]: config.serviceName,
      [semconv.ATTR_SERVICE_VERSION]: PACKAGE_VERSION,
    }),
    // parent-based: a caller's sampled flag decides; a request without one is kept at the ratio
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(config.traceSampleRatio) }),
    spanProcessors: [processor],
  });
  const contextManager = new hooks.AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  setTracingEnabled(true);
  log.info({ endpoint: redactedEndpoint(config.otlpEndpoint), sampleRatio: config.traceSampleRatio, serviceName: config.serviceName }, "traces: exporting over OTLP/HTTP");

  let closing: Promise<void> | undefined;
  return {
    dropped: () => dropped,
    flush: () => provider.forceFlush({ timeoutMillis: SHUTDOWN_FLUSH_MS }),
    shutdown: () =>
      (closing ??= (async () => {
        setTracingEnabled(false);
        await Promise.race([provider.shutdown().catch(() => {}), new Promise((r) => setTimeout(r, SHUTDOWN_FLUSH_MS).unref())]);
        api.trace.disable();
        api.propagation.disable();
        api.context.disable();
        api.diag.disable();
      })()),
  };
}

/**
 * The OTLP/HTTP traces URL of --otlp-endpoint: a collector's base URL (http://collector:4318) gets the standard
 * `/v1/traces` path; a URL that already ends with it is used as it is.
 */
export function tracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (!url.pathname.endsWith("/v1/traces")) url.pathname = url.pathname.replace(/\/+$/, "") + "/v1/traces";
  return url.toString();
}

/** the endpoint as logged: scheme, host and path, never a query (a collector's token may ride there) */
function redactedEndpoint(endpoint: string): string {
  const url = new URL(tracesUrl(endpoint));
  return `${url.protocol}//${url.host}${url.pathname}`;
}
