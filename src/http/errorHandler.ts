import type { FastifyReply, FastifyRequest } from "fastify";
import type { Rng } from "../clock.ts";
import { catalog, type CatalogEntry } from "../errors/catalog.ts";
import { AppError, isAppError } from "../errors/AppError.ts";
import { isStoreUnavailable } from "../errors/storeUnavailable.ts";
import { CONTENT_TYPES } from "./negotiate.ts";
import { pathOf, routeOf } from "./requestTarget.ts";
import { readableValidation } from "./validationMessage.ts";
import { partAErrorBody, partBErrorBody, renderXml, type PartAErrorBody, type PartBErrorBody } from "./render.ts";
import type { AppInstance } from "./types.ts";

/**
 * Every error response of the app, from one handler: which part's body a URL gets, the translation of what
 * Fastify itself raises (and of an unreachable store) into catalog errors, and the rule that anything else is a
 * 500 with an error id, logged with its stack and never sent. The bodies themselves are in render.ts.
 */

/** the Retry-After of a 503 for a store whose disk refuses writes (StoreUnavailableError.storage) */
export const STORAGE_RETRY_AFTER_S = 10;

/** bounds what one activity-log entry keeps of a reason (an exception message may be long) */
const MAX_LOGGED_REASON = 500;

/**
 * The response header that names an error answer's errorId, on every error of every API (Part A, Part B, the
 * admin API). Part A's body shape is fixed by attestation-api.md (result, error.code/message/reason, JSON or XML),
 * so there the header is the only carrier; Part B's and the admin API's bodies carry it as `errorId` too.
 */
export const ERROR_ID_HEADER = "X-Error-Id";

/** Part B and the portal answer errors with Part B's body (errorId, code, message, data). `url`: a route or a path. */
export function isPartB(url: string): boolean {
  return url === "/svc" || url.startsWith("/svc/") || isPortal(url);
}

function isPortal(url: string): boolean {
  return url === "/portal" || url.startsWith("/portal/");
}

/**
 * The id an error response carries (the X-Error-Id header everywhere; Part B's body too; a Part A 5xx also names it
 * in its reason) and the activity log keeps.
 */
export function newErrorId(rng: Rng): string {
  // hex, not base64url: an id starting with "-" would read as an option in `attestd activity --error-id ID`
  return rng.bytes(12).toString("hex");
}

/** The JSON body of `err` answering a request for `url`: Part B's shape under /svc/ and the portal, else Part A's. */
export function errorBody(url: string, err: AppError, errorId: string): PartAErrorBody | PartBErrorBody {
  if (isPartB(url)) return partBErrorBody(err.entry, errorId, err.reason);
  return partAErrorBody(err.entry, err.entry.status >= 500 ? `${err.reason} (error id ${errorId})` : err.reason);
}

/** Sends a catalog error in the body shape of the request's part and the negotiated media type. */
function sendError(request: FastifyRequest, reply: FastifyReply, err: AppError, rng: Rng): FastifyReply {
  const errorId = newErrorId(rng);
  request.errorId = errorId;
  request.errorCode = err.entry.code;
  request.errorReason = err.loggedReason.slice(0, MAX_LOGGED_REASON);
  reply.code(err.entry.status).headers(err.headers).header(ERROR_ID_HEADER, errorId);
  const body = errorBody(routeOf(request), err, errorId);
  if ("result" in body && request.mediaFormat === "xml") {
    // attestation-api.md: the XML error is flat, <error><result/><code/><message/><reason/></error>
    return reply.type(CONTENT_TYPES.xml).send(renderXml("error", { result: body.result, ...body.error }));
  }
  return reply.type(CONTENT_TYPES.json).send(body);
}

/** The top-level property the first validation error is about (`/deviceId`, or a missing required one). */
function invalidField(validation: unknown): string | undefined {
  const first = (validation as { instancePath?: string; params?: { missingProperty?: string } }[] | undefined)?.[0];
  if (!first) return undefined;
  const top = first.instancePath?.split("/")[1];
  return top || first.params?.missingProperty;
}

/** The plain 400 of the part a route or path belongs to: the portal's, Part B's or Part A's. */
export function partInvalidEntry(route: string): CatalogEntry {
  return isPortal(route) ? catalog.PORTAL_INVALID_REQUEST : isPartB(route) ? catalog.RESOURCE_INVALID_PARAM : catalog.INVALID_REQUEST;
}

/** Translates what Fastify itself raises (parsing, limits, validation) into catalog errors. */
function toAppError(err: unknown, request: FastifyRequest): AppError | undefined {
  if (isAppError(err)) return err;
  if (isStoreUnavailable(err)) {
    // Never answer without the check the store would have made: 503, retry soon. The log names backend and cause.
    request.log.warn({ backend: err.backend, cause: err.message, storage: err.storage }, "store unavailable");
    // a full disk is not freed within a second: the client comes back later (or to another instance, since
    // readiness has gone not-ready), not at once
    return err.storage
      ? new AppError(catalog.SERVICE_UNAVAILABLE, "A backing store cannot take writes now; retry later", { "Retry-After": String(STORAGE_RETRY_AFTER_S) })
      : new AppError(catalog.SERVICE_UNAVAILABLE, "A backing store is unreachable; retry later", { "Retry-After": "1" });
  }
  const e = err as { code?: string; statusCode?: number; validation?: unknown; message?: string };
  const partB = isPartB(routeOf(request));
  const invalid = request.routeOptions.config?.invalidEntry ?? partInvalidEntry(routeOf(request));
  if (e.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    return new AppError(request.routeOptions.config?.tooLargeEntry ?? invalid, "The request body is too large");
  }
  if (e.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return partB
      ? new AppError(invalid, "Content-Type must be application/json")
      : new AppError(catalog.UNSUPPORTED_MEDIA_TYPE, "Unsupported Content-Type");
  }
  if (e.validation) {
    const field = invalidField(e.validation);
    const entry = (field !== undefined ? request.routeOptions.config?.fieldEntries?.[field] : undefined) ?? invalid;
    if (isPortal(routeOf(request))) {
      // people read the portal's refusals: the field and what it may be, not the validator's keywords
      const context = (err as { validationContext?: string }).validationContext;
      const schema = context ? (request.routeOptions.schema as Record<string, unknown> | undefined)?.[context] : undefined;
      return new AppError(entry, readableValidation(e.validation, context, schema));
    }
    return new AppError(entry, e.message ?? "Invalid request");
  }
  if (typeof e.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError(invalid, e.message ?? "Invalid request");
  }
  return undefined;
}

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route or hook runs (a path segment longer than
 * `maxParamLength`, a path that is not valid percent-encoding) answered as every other refusal, with the 400 of the
 * part the path belongs to and an errorId, instead of Fastify's own body and code.
 */
export function frameworkErrorHandler(rng: Rng): (err: { code?: string }, request: FastifyRequest, reply: FastifyReply) => void {
  return (err, request, reply) => {
    const reason = err.code === "FST_ERR_MAX_PARAM_LENGTH" ? "A path segment is longer than 256 characters" : "The path is not valid percent-encoding";
    sendError(request, reply, new AppError(partInvalidEntry(routeOf(request)), reason), rng);
  };
}

/** Installs the error handler and the 404 for unknown routes; `rng` draws the error ids. */
export function setErrorHandlers(app: AppInstance, rng: Rng): void {
  app.setErrorHandler((err, request, reply) => {
    const known = toAppError(err, request);
    if (known) return sendError(request, reply, known, rng);
    const internal = new AppError(
      catalog.INTERNAL_SERVER_ERROR,
      // Part B's data carries the exception message (enrollment-api.md); Part A names only the error id.
      isPartB(routeOf(request)) ? String((err as Error)?.message ?? "internal error").slice(0, 200) : "Unexpected failure",
    );
    sendError(request, reply, internal, rng);
    request.log.error({ err, errorId: request.errorId, route: request.routeOptions.url }, "internal error");
    return reply;
  });

  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request.url);
    const entry = isPartB(path) ? catalog.RESOURCE_NOT_FOUND : catalog.A_NOT_FOUND;
    return sendError(request, reply, new AppError(entry, `No route for ${request.method} ${path}`), rng);
  });
}
