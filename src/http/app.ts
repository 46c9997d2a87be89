import fastifySwagger from "@fastify/swagger";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { LogController } from "fastify";
import { METHODS } from "node:http";
import { registerApiDocs } from "./apiDocs.ts";
import { clientErrorHandler } from "./clientErrors.ts";
import { capConnectionsPerAddress, serverTimeoutOptions } from "./connectionLimits.ts";
import { frameworkErrorHandler, partInvalidEntry, setErrorHandlers } from "./errorHandler.ts";
import { AppError } from "../errors/AppError.ts";
import { negotiateFormat } from "./negotiate.ts";
import { openapiOptions } from "./openapi.ts";
import { recordResponses } from "./recordResponses.ts";
import { traceRequests } from "./traceRequests.ts";
import { hostFieldCount, routeOf } from "./requestTarget.ts";
import { validatorCompiler } from "./validation.ts";
import { allowedMethodsOf } from "./routes/guards.ts";
import { registerDeviceRoutes } from "./routes/devices.ts";
import { registerHealthRoutes } from "./routes/health.ts";
import { registerTransactionRoutes } from "./routes/transaction.ts";
import { registerV2Routes } from "./routes/v2.ts";
import { registerVerdictRoutes } from "./routes/verdicts.ts";
import { registerWellKnownRoutes } from "./routes/wellKnown.ts";
import { sharedSchemas } from "./schemas/common.ts";
import type { AppDeps, AppInstance } from "./types.ts";

/**
 * The composition of the Fastify app from injected services: server options, validation and body parsing, the
 * OpenAPI document, the hooks every request passes, the error handlers, and the routes. It opens nothing itself;
 * what each piece does is in the file it comes from.
 */
export async function buildApp(deps: AppDeps): Promise<AppInstance> {
  let requestSeq = 0;
  const limits = deps.connections;
  // node:http server options Fastify has no option of its own for: the header timeout and how often it is checked
  const serverOptions = serverTimeoutOptions(limits);
  // the 405 paths are known once the routes are registered; node's refusals only come once the server listens
  let routed: AppInstance | undefined;
  const allowedMethods = (path: string) => (routed ? allowedMethodsOf(routed, path) : undefined);
  const app = Fastify({
    ...(typeof deps.logger === "boolean" ? { logger: deps.logger } : { loggerInstance: deps.logger }),
    // https.createServer takes node:http's options beside the TLS ones; a plain server gets them as `http`
    ...(deps.https ? { https: { ...deps.https, ...serverOptions } } : { https: null, http: serverOptions }),
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    clientErrorHandler: clientErrorHandler({ ...deps, allowedMethods }),
    trustProxy: deps.trustedProxies.length > 0 ? deps.trustedProxies : false,
    // Bodies are bounded per route; this is the ceiling for routes that set nothing.
    bodyLimit: 1024 * 1024,
    // a path parameter longer than this is refused before any route runs; the longest a route takes is a deviceId
    // (128), so longer ones still reach the schema and its catalog error
    routerOptions: { maxParamLength: 256 },
    // ...and a too long one, or a path that is not valid percent-encoding, gets the part's catalog 400 (errorHandler.ts)
    frameworkErrors: frameworkErrorHandler(deps.rng),
    return503OnClosing: true,
    forceCloseConnections: "idle",
    // Requests are logged once, by the activity log and metrics, not by Fastify per request.
    logController: new LogController({ disableRequestLogging: true }),
    // log correlation only: a counter is unique per process (the pid is in every log line) and costs no CSPRNG draw
    genReqId: () => (++requestSeq).toString(36),
  }).withTypeProvider<TypeBoxTypeProvider>();
  routed = app;

  capConnectionsPerAddress(app.server, limits.maxConnectionsPerAddress, deps.trustedProxies, () => deps.metrics.connectionsRefused.inc());
  // Every method node's parser accepts is routed, so a path that exists answers 405 to the ones it does not take
  // (guards.ts `methodNotAllowed`) instead of 404 (attestation-api.md). CONNECT never reaches a request handler.
  for (const method of METHODS) {
    if (method !== "CONNECT" && !app.supportedMethods.includes(method)) app.addHttpMethod(method);
  }

  for (const schema of sharedSchemas) app.addSchema(schema);
  app.setValidatorCompiler(validatorCompiler());
  // Blobs arrive as raw bytes; the per-route bodyLimit bounds them before they are buffered.
  app.addContentTypeParser("application/octet-stream", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
  // Any other type arrives as bytes too: /v2/nonces ignores its body whatever it is, and elsewhere the route's
  // own checks (415 on /v2/blobs, schema validation on JSON routes) refuse it with a catalog error.
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  // first of the hooks, so that every later one runs inside the request's span (only when tracing is on)
  if (deps.tracing) traceRequests(app);
  await app.register(fastifySwagger, openapiOptions);
  await registerApiDocs(app, deps.apiDocs);

  app.decorateRequest("mediaFormat", "json");
  app.decorateRequest("acceptable", true);
  // This hook runs on every request and does nothing asynchronous, so it takes Fastify's callback form: an async
  // hook would cost a promise and a microtask hop each time.
  app.addHook("onRequest", (request, _reply, done) => {
    try {
      // RFC 9112 §3.2: one Host, or 400 (the part's plain one, whatever a route's own invalid-input code). node:http
      // keeps the first of two; a proxy in front may have read the other.
      if (hostFieldCount(request.raw.rawHeaders) > 1) {
        throw new AppError(partInvalidEntry(routeOf(request)), "The request has more than one Host header");
      }
      const format = negotiateFormat(request.headers.accept, request.routeOptions.config?.offersEar === true);
      request.mediaFormat = format ?? "json";
      request.acceptable = format !== undefined;
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
  recordResponses(app, deps);
  setErrorHandlers(app, deps.rng);

  registerHealthRoutes(app, deps);
  registerV2Routes(app, deps);
  registerVerdictRoutes(app, deps);
  registerTransactionRoutes(app, deps);
  registerWellKnownRoutes(app, deps);
  registerDeviceRoutes(app, deps);
  if (deps.partB) await deps.partB(app);
  if (deps.portal) await deps.portal(app);

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  return app;
}
