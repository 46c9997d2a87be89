import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import type { Clock, Rng } from "../clock.ts";
import type { CatalogEntry } from "../errors/catalog.ts";
import type { ActivityRecorder } from "../services/activityRecorder.ts";
import type { ApiKeyAuthenticator, Principal } from "../services/apiKeyAuth.ts";
import type { AttestationService } from "../services/attestationService.ts";
import type { EarIssuer } from "../results/earIssuer.ts";
import type { DeviceService } from "../services/deviceService.ts";
import type { RateLimiter } from "../services/rateLimiter.ts";
import type { ConnectionLimits } from "./connectionLimits.ts";
import type { Metrics } from "./metrics.ts";
import type { MediaFormat } from "./negotiate.ts";
import type { HttpsOptions } from "../tls/tlsPolicy.ts";

/**
 * What a route is given: the app type, the services and limits buildApp is built from, the readiness contract,
 * and what the app adds to every request and route config. It imports no route and no part of the app, so routes
 * depend on it and app.ts on them, never in a circle.
 */

declare module "fastify" {
  interface FastifyRequest {
    /** response format chosen from Accept (JSON when nothing acceptable: the 406 itself is JSON) */
    mediaFormat: MediaFormat;
    /** false when Accept allows neither JSON nor XML, nor an EAR where the route offers one (406 where the route checks it) */
    acceptable: boolean;
    /** the authenticated Part A caller */
    principal?: Principal;
    /** set by Part B authentication */
    tenantId?: string;
    clientId?: string;
    /** set when an error response is sent; written to the activity log */
    errorId?: string;
    errorCode?: string;
    /** the error's real reason (AppError.loggedReason), for the activity log only */
    errorReason?: string;
  }
  interface FastifyContextConfig {
    /** catalog entry for schema-validation failures on this route (default INVALID_REQUEST / RESOURCE_INVALID_PARAM) */
    invalidEntry?: CatalogEntry;
    /** catalog entry for a body over the route's bodyLimit */
    tooLargeEntry?: CatalogEntry;
    /** the route can answer with a signed result: Accept may choose application/eat+jwt (mediaFormat "ear") */
    offersEar?: boolean;
    /**
     * per top-level field (a query, params or body property, by name), the entry that overrides invalidEntry when
     * that field fails validation (errorHandler.ts, `invalidField`)
     */
    fieldEntries?: Readonly<Record<string, CatalogEntry>>;
  }
}

export interface AppLimits {
  maxBlobBytes: number;
  maxBatch: number;
}

export interface ReadinessReport {
  /** false → 503: a check this instance cannot serve without (its stores) is failing */
  ready: boolean;
  /**
   * Names of failing checks that do not make the instance unready (Android trust: every instance shares Google's
   * endpoint, so routing away would not help). Optional for checkers that have none; the answer always has it.
   */
  degraded?: string[];
  /**
   * `state` is a word anyone may be told (absent: "ok" or "failing" after `ok`); `detail` names hosts, files and
   * URLs, so /readyz never sends it: the server logs it when a check's state changes (src/server.ts).
   */
  checks: { name: string; ok: boolean; state?: string; detail?: string }[];
}
export type ReadinessCheck = () => Promise<ReadinessReport>;

/** A check's state as /readyz and the log say it: its own word, or "ok" / "failing" (a store's ping). */
export function checkState(c: ReadinessReport["checks"][number]): string {
  return c.state ?? (c.ok ? "ok" : "failing");
}

export interface AppDeps {
  logger: FastifyBaseLogger | boolean;
  clock: Clock;
  rng: Rng;
  limits: AppLimits;
  attestation: AttestationService;
  /** signed results (EARs) of stored verdicts, and the keys to verify them */
  results: EarIssuer;
  /** named devices' history and pins (per-device memory) */
  devices: DeviceService;
  auth: ApiKeyAuthenticator;
  /** Part A's per-key buckets (Part B is given the same limiter through its own deps) */
  rateLimiter: RateLimiter;
  activity: ActivityRecorder;
  metrics: Metrics;
  readiness: ReadinessCheck;
  /** addresses/CIDRs whose X-Forwarded-For is believed (and whose connections the per-address cap does not count) */
  trustedProxies: string[];
  /** timeouts and the per-address connection cap of the server (connectionLimits.ts) */
  connections: ConnectionLimits;
  /** serve Swagger UI at /docs (`--api-docs`); /openapi.json is served either way */
  apiDocs: boolean;
  /** registers Part B (/svc/v1) routes, when present */
  partB?: (app: AppInstance) => void | Promise<void>;
  /** registers the portal (/portal/, /portal/api/), when present */
  portal?: (app: AppInstance) => void | Promise<void>;
  /** a server span per request (traceRequests.ts): true only when the OpenTelemetry SDK was started (--otlp-endpoint) */
  tracing?: boolean;
  /** TLS options for Fastify's https server; undefined = plain HTTP (tests use inject) */
  https?: HttpsOptions | undefined;
}

export type AppInstance = FastifyInstance<any, any, any, FastifyBaseLogger, TypeBoxTypeProvider>;
