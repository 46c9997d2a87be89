import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Ajv } from "ajv";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Clock, Rng } from "../clock.ts";
import type { CatalogEntry } from "../errors/catalog.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError, isAppError } from "../errors/AppError.ts";
import type { ApiKeyAuthenticator, Principal } from "../services/apiKeyAuth.ts";
import type { AttestationService } from "../services/attestationService.ts";
import { isStoreUnavailable } from "../store/errors.ts";
import type { RateLimitStore } from "../store/types.ts";
import type { ActivityRecorder } from "./activityRecorder.ts";
import type { Metrics } from "./metrics.ts";
import { CONTENT_TYPES, negotiateFormat, type MediaFormat } from "./negotiate.ts";
import { partAErrorBody, partBErrorBody, renderXml } from "./render.ts";
import { sharedSchemas } from "./schemas/common.ts";
import { registerHealthRoutes, type ReadinessCheck } from "./routes/health.ts";
import { registerV2Routes } from "./routes/v2.ts";
import { registerVerdictRoutes } from "./routes/verdicts.ts";
import { registerTransactionRoutes } from "./routes/transaction.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** response format chosen from Accept (JSON when nothing acceptable: the 406 itself is JSON) */
    mediaFormat: MediaFormat;
    /** false when Accept allows neither JSON nor XML (answered 406 where the route checks it) */
    acceptable: boolean;
    /** the authenticated Part A caller */
    principal?: Principal;
    /** set by Part B authentication */
    tenantId?: string;
    clientId?: string;
    /** set when an error response is sent; written to the activity log */
    errorId?: string;
    errorCode?: string;
  }
  interface FastifyContextConfig {
    /** catalog entry for schema-validation failures on this route (default INVALID_REQUEST / RESOURCE_INVALID_PARAM) */
    invalidEntry?: CatalogEntry;
    /** catalog entry for a body over the route's bodyLimit */
    tooLargeEntry?: CatalogEntry;
  }
}

export interface AppLimits {
  maxBlobBytes: number;
  maxBatch: number;
  /** default token bucket per key when the key has none of its own */
  rps: number;
  burst: number;
}

export interface AppDeps {
  logger: FastifyBaseLogger | boolean;
  clock: Clock;
  rng: Rng;
  limits: AppLimits;
  attestation: AttestationService;
  auth: ApiKeyAuthenticator;
  rateLimits: RateLimitStore;
  activity: ActivityRecorder;
  metrics: Metrics;
  readiness: ReadinessCheck;
  /** addresses/CIDRs whose X-Forwarded-For is believed */
  trustedProxies: string[];
  /** registers Part B (/svc/v1) routes, when present */
  partB?: (app: AppInstance) => void | Promise<void>;
  /** TLS options for Fastify's https server; undefined = plain HTTP (tests use inject) */
  https?: { cert: string; key: string } | undefined;
}

export type AppInstance = FastifyInstance<any, any, any, FastifyBaseLogger, TypeBoxTypeProvider>;

export function isPartB(url: string): boolean {
  return url === "/svc" || url.startsWith("/svc/");
}

/** Sends a catalog error in the body shape of the request's part and the negotiated media type. */
export function sendError(request: FastifyRequest, reply: FastifyReply, err: AppError, rng: Rng): FastifyReply {
  // hex, not base64url: an id starting with "-" would read as an option in `attestd activity --error-id ID`
  const errorId = rng.bytes(12).toString("hex");
  request.errorId = errorId;
  request.errorCode = err.entry.code;
  reply.code(err.entry.status).headers(err.headers);
  if (isPartB(request.url)) {
    return reply.type(CONTENT_TYPES.json).send(partBErrorBody(err.entry, errorId, err.reason));
  }
  const reason = err.entry.status >= 500 ? `${err.reason} (error id ${errorId})` : err.reason;
  const body = partAErrorBody(err.entry, reason);
  if (request.mediaFormat === "xml") {
    // attestation-api.md: the XML error is flat, <error><result/><code/><message/><reason/></error>
    return reply.type(CONTENT_TYPES.xml).send(renderXml("error", { result: body.result, ...body.error }));
  }
  return reply.type(CONTENT_TYPES.json).send(body);
}

/** Translates what Fastify itself raises (parsing, limits, validation) into catalog errors. */
function toAppError(err: unknown, request: FastifyRequest): AppError | undefined {
  if (isAppError(err)) return err;
  if (isStoreUnavailable(err)) {
    // Never answer without the check the store would have made: 503, retry soon. The log names backend and cause.
    request.log.warn({ backend: err.backend, cause: err.message }, "store unavailable");
    return new AppError(catalog.SERVICE_UNAVAILABLE, "A backing store is unreachable; retry later", { "Retry-After": "1" });
  }
  const e = err as { code?: string; statusCode?: number; validation?: unknown; message?: string };
  const partB = isPartB(request.url);
  const invalid = request.routeOptions.config?.invalidEntry ?? (partB ? catalog.RESOURCE_INVALID_PARAM : catalog.INVALID_REQUEST);
  if (e.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    return new AppError(request.routeOptions.config?.tooLargeEntry ?? invalid, "The request body is too large");
  }
  if (e.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return partB
      ? new AppError(invalid, "Content-Type must be application/json")
      : new AppError(catalog.UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type");
  }
  if (e.validation) return new AppError(invalid, e.message ?? "Invalid request");
  if (typeof e.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError(invalid, e.message ?? "Invalid request");
  }
  return undefined;
}

export async function buildApp(deps: AppDeps): Promise<AppInstance> {
  let requestSeq = 0;
  const app = Fastify({
    ...(typeof deps.logger === "boolean" ? { logger: deps.logger } : { loggerInstance: deps.logger }),
    https: deps.https ?? null,
    trustProxy: deps.trustedProxies.length > 0 ? deps.trustedProxies : false,
    // Bodies are bounded per route; this is the ceiling for routes that set nothing.
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    forceCloseConnections: "idle",
    // Requests are logged once, by the activity log and metrics, not by Fastify per request.
    logController: new LogController({ disableRequestLogging: true }),
    // log correlation only: a counter is unique per process (the pid is in every log line) and costs no CSPRNG draw
    genReqId: () => (++requestSeq).toString(36),
  }).withTypeProvider<TypeBoxTypeProvider>();

  for (const schema of sharedSchemas) app.addSchema(schema);
  // Query strings and params are text, so their numbers and booleans are coerced; JSON bodies are typed already,
  // and coercing them would let 42 pass as "42" or null as "" where a schema asks for a string.
  const ajvBody = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false });
  const ajvText = new Ajv({ coerceTypes: "array", useDefaults: true, removeAdditional: false, allErrors: false });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === "body" ? ajvBody : ajvText).compile(schema));
  // Blobs arrive as raw bytes; the per-route bodyLimit bounds them before they are buffered.
  app.addContentTypeParser("application/octet-stream", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
  // Any other type arrives as bytes too: /v2/nonces ignores its body whatever it is, and elsewhere the route's
  // own checks (415 on /v2/blobs, schema validation on JSON routes) refuse it with a catalog error.
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  await app.register(fastifySwagger, {
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "attestd",
        version: "2.0",
        description: "Device attestation (Part A, /v2 and /api/v1) and enrollment (Part B, /svc/v1).",
      },
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "x-vendor-attest-api-key" },
          apiToken: { type: "apiKey", in: "header", name: "x-vendor-apitoken" },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) ?? `def-${i}` },
  });
  await app.register(fastifySwaggerUi, { routePrefix: "/docs" });

  app.decorateRequest("mediaFormat", "json");
  app.decorateRequest("acceptable", true);
  // These two hooks run on every request and do nothing asynchronous, so they take Fastify's callback form: an
  // async hook would cost a promise and a microtask hop each time.
  app.addHook("onRequest", (request, _reply, done) => {
    try {
      const format = negotiateFormat(request.headers.accept);
      request.mediaFormat = format ?? "json";
      request.acceptable = format !== undefined;
    } catch (err) {
      return done(err as Error);
    }
    done();
  });

  app.addHook("onResponse", (request, reply, done) => {
    try {
      recordResponse(request, reply);
    } catch (err) {
      request.log.error({ err }, "recording the response failed");
    }
    done();
  });
  const recordResponse = (request: FastifyRequest, reply: FastifyReply): void => {
    const route = request.routeOptions.url ?? "unmatched";
    deps.metrics.observeRequest(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
    if (route === "/healthz" || route === "/readyz" || route === "/metrics") return;
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
    });
  };

  app.setErrorHandler((err, request, reply) => {
    const known = toAppError(err, request);
    if (known) return sendError(request, reply, known, deps.rng);
    const internal = new AppError(
      catalog.INTERNAL_SERVER_ERROR,
      // Part B's data carries the exception message (enrollment-api.md); Part A names only the error id.
      isPartB(request.url) ? String((err as Error)?.message ?? "internal error").slice(0, 200) : "Unexpected failure",
    );
    sendError(request, reply, internal, deps.rng);
    request.log.error({ err, errorId: request.errorId, route: request.routeOptions.url }, "internal error");
    return reply;
  });

  app.setNotFoundHandler((request, reply) => {
    const entry = isPartB(request.url) ? catalog.RESOURCE_NOT_FOUND : catalog.A_NOT_FOUND;
    return sendError(request, reply, new AppError(entry, `No route for ${request.method} ${request.url.split("?")[0]}`), deps.rng);
  });

  registerHealthRoutes(app, deps);
  registerV2Routes(app, deps);
  registerVerdictRoutes(app, deps);
  registerTransactionRoutes(app, deps);
  if (deps.partB) await deps.partB(app);

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  return app;
}

/**
 * The guard of every Part A route, one hook so the checks keep the spec's order (key 401/403 → rate limit 429 →
 * Accept 406) without a promise hop between them.
 */
export function partAGuards(deps: AppDeps) {
  return async function partAGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers["x-vendor-attest-api-key"];
    const principal = await deps.auth.authenticate(typeof header === "string" ? header : undefined, {
      ip: request.ip,
      referer: typeof request.headers.referer === "string" ? request.headers.referer : undefined,
    });
    request.principal = principal;
    const key = principal.key;
    const rps = key.rps > 0 ? key.rps : deps.limits.rps;
    const burst = key.burst > 0 ? key.burst : deps.limits.burst;
    const d = await deps.rateLimits.take(`key:${key.keyId}`, rps, burst, deps.clock.nowMs());
    reply.header("RateLimit-Policy", `${burst};w=${Math.max(1, Math.ceil(burst / rps))}`);
    reply.header("RateLimit", `limit=${burst}, remaining=${d.remaining}, reset=${Math.ceil(d.resetMs / 1000)}`);
    if (!d.allowed) {
      throw new AppError(catalog.TOO_MANY_REQUESTS, `Rate limit of ${rps} requests/s (burst ${burst}) exceeded`, {
        "Retry-After": String(Math.max(1, Math.ceil(d.retryAfterMs / 1000))),
      });
    }
    if (!request.acceptable) {
      throw new AppError(catalog.NOT_ACCEPTABLE, "Accept must allow application/json or application/xml");
    }
  };
}

/** Answers 405 with Allow for every method a path does not support. */
export function methodNotAllowed(app: AppInstance, url: string, allowed: string[]): void {
  const others = ["GET", "PUT", "DELETE", "PATCH", "POST", "OPTIONS"].filter((m) => !allowed.includes(m));
  app.route({
    method: others,
    url,
    schema: { hide: true },
    handler: async () => {
      throw new AppError(catalog.METHOD_NOT_ALLOWED, `Only ${allowed.join(", ")} is allowed on ${url}`, {
        Allow: allowed.join(", "),
      });
    },
  });
}

export function sendBody(request: FastifyRequest, reply: FastifyReply, root: string, body: Record<string, unknown>) {
  if (request.mediaFormat === "xml") return reply.type(CONTENT_TYPES.xml).send(renderXml(root, body));
  return reply.type(CONTENT_TYPES.json).send(body);
}
