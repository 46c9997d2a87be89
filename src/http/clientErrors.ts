import { METHODS, STATUS_CODES, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import { ERROR_ID_HEADER, errorBody, isPartB, newErrorId } from "./errorHandler.ts";
import { CONTENT_TYPES } from "./negotiate.ts";
import { ANSWERED, UNKNOWN_ADDRESS } from "./recordResponses.ts";
import { pathOf } from "./requestTarget.ts";
import type { AppDeps } from "./types.ts";

/**
 * The refusals node:http makes before Fastify sees a request (its `clientError` event): a request that did not
 * arrive within the timeouts (408), headers over node's 16 KiB (431), a request line or header that is not HTTP
 * (400). They get the catalog's body, Part A's or Part B's by the path when the request line can be read, always
 * JSON (the Accept header may not have been read), and the connection is closed. Each is in the activity log with
 * its error id and in the request metrics, as any other answer.
 */

type TrackedSocket = Socket & { [ANSWERED]?: boolean; _httpMessage?: ServerResponse | null };

/** what node:http attaches to a parse error: the bytes it could not parse (llhttp errors only) */
type ClientError = Error & { code?: string; rawPacket?: unknown };

/** methods node's parser knows: the only ones a metrics label may carry (anything else is "OTHER") */
const KNOWN_METHODS = new Set(METHODS);

/** `METHOD /path` from the start of the unparsed bytes, when they begin with something shaped like a request line */
function requestLine(raw: unknown): { method: string; path: string } | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) (\/[^ \r\n?#]{0,2048})/.exec(raw.subarray(0, 2100).toString("latin1"));
  return m ? { method: m[1]!, path: m[2]! } : undefined;
}

export interface ClientErrorDeps extends Pick<AppDeps, "rng" | "clock" | "activity" | "metrics"> {
  /** the methods a path answers, when it answers 405 to the others (guards.ts `methodNotAllowed`) */
  allowedMethods: (path: string) => readonly string[] | undefined;
}

/** Fastify's `clientErrorHandler`. */
export function clientErrorHandler(deps: ClientErrorDeps) {
  return function onClientError(err: ClientError, socket: Socket): void {
    // the client is gone already: nobody to answer
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    // The request in flight on this connection, if node got as far as its headers (node's own clientError answer
    // checks the same field): once its answer has begun, another one would corrupt the stream.
    const inFlight = (socket as TrackedSocket)._httpMessage ?? undefined;
    if (!socket.writable || inFlight?.headersSent || (socket as TrackedSocket)[ANSWERED]) {
      socket.destroy(err);
      return;
    }
    const line = requestLine(err.rawPacket) ?? (inFlight?.req ? { method: inFlight.req.method ?? "", path: pathOf(inFlight.req.url ?? "/") } : undefined);
    const path = line?.path ?? "/";
    const allowed = line ? deps.allowedMethods(line.path) : undefined;
    let refusal: AppError;
    if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
      refusal = new AppError(catalog.REQUEST_TIMEOUT, "The request did not arrive in time");
    } else if (err.code === "HPE_HEADER_OVERFLOW") {
      refusal = new AppError(catalog.HEADERS_TOO_LARGE, "The request headers are too large");
    } else if (err.code === "HPE_INVALID_METHOD" && allowed) {
      refusal = new AppError(catalog.METHOD_NOT_ALLOWED, `Only ${allowed.join(", ")} is allowed on ${path}`, { Allow: allowed.join(", ") });
    } else {
      refusal = new AppError(isPartB(path) ? catalog.RESOURCE_INVALID_PARAM : catalog.INVALID_REQUEST, "The request is not valid HTTP/1.1");
    }

    const errorId = newErrorId(deps.rng);
    const payload = JSON.stringify(errorBody(path, refusal, errorId));
    const status = refusal.entry.status;
    const headers = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      `Content-Type: ${CONTENT_TYPES.json}`,
      `Content-Length: ${Buffer.byteLength(payload)}`,
      "Connection: close",
      `${ERROR_ID_HEADER}: ${errorId}`,
      ...Object.entries(refusal.headers).map(([k, v]) => `${k}: ${v}`),
    ];
    socket.end(`${headers.join("\r\n")}\r\n\r\n${payload}`, () => socket.destroy());

    const method = line && KNOWN_METHODS.has(line.method) ? line.method : "OTHER";
    deps.metrics.observeRequest("unmatched", method, status, 0);
    deps.activity.record({
      time: new Date(deps.clock.nowMs()).toISOString(),
      errorId,
      tenantId: null,
      clientId: null,
      method,
      route: "unmatched",
      status,
      code: refusal.entry.code,
      latencyMs: 0,
      remoteAddress: socket.remoteAddress ?? UNKNOWN_ADDRESS,
      reason: refusal.loggedReason,
    });
  };
}
