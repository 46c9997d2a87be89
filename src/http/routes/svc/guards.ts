import type { FastifyReply, FastifyRequest } from "fastify";
import type { Caller } from "../../../auth/restrictions.ts";
import type { Enrollment } from "../../../enrollment/enrollment.ts";
import type { PartBPrincipal } from "../../../enrollment/tokens.ts";
import { catalog } from "../../../errors/catalog.ts";
import { AppError } from "../../../errors/AppError.ts";
import type { ApiClient } from "../../../domain/enrollment.ts";
import type { RateLimiter } from "../../../services/rateLimiter.ts";
import { enforceRateLimit } from "../guards.ts";
import type { AuditTrail, ChangeActor } from "../../../services/auditTrail.ts";
import { requestSource } from "../../auditSource.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the authenticated Part B caller */
    partB?: PartBPrincipal;
  }
}

export interface PartBDeps {
  enrollment: Enrollment;
  rateLimiter: RateLimiter;
  maxDevices: number;
  /** the audit trail Part B's changes are recorded in, the API client as their actor (docs/audit.md) */
  audit: AuditTrail;
}

/** The API client of a token-protected request as the audit trail names it, and where the request came from. */
export function clientActor(deps: PartBDeps, request: FastifyRequest): ChangeActor {
  return deps.audit.as({ kind: "api-client", id: request.partB!.client.clientId }, requestSource(request));
}

export function callerOf(request: FastifyRequest): Caller {
  const referer = request.headers.referer;
  return { ip: request.ip, referer: typeof referer === "string" ? referer : undefined };
}

/** Per-client token bucket (the client's --rps / burst), with the same headers as Part A. */
export async function rateLimitClient(deps: PartBDeps, client: ApiClient, reply: FastifyReply): Promise<void> {
  enforceRateLimit(reply, await deps.rateLimiter.forClient(client));
}

/**
 * onRequest hooks of every token-protected route: x-vendor-apitoken → rate limit → role. They run before the body
 * is read, so an unauthenticated caller cannot make the server parse a large body; refused writes still spend tokens.
 */
export function partBGuards(deps: PartBDeps) {
  const authenticate = async (request: FastifyRequest) => {
    const header = request.headers["x-vendor-apitoken"];
    request.partB = await deps.enrollment.tokens.authenticate(
      typeof header === "string" ? header : undefined,
      callerOf(request),
      request,
    );
  };
  // read-only clients may read: every method but GET/HEAD changes something
  const authorize = async (request: FastifyRequest) => {
    if (request.partB!.client.readOnly && request.method !== "GET" && request.method !== "HEAD") {
      throw new AppError(catalog.B_FORBIDDEN, "This client is read-only");
    }
  };
  const rateLimit = async (request: FastifyRequest, reply: FastifyReply) => {
    await rateLimitClient(deps, request.partB!.client, reply);
  };
  return [authenticate, rateLimit, authorize];
}

/**
 * preValidation for listings: an empty query parameter (`?type=&state=`, as the spec's examples send them) means
 * the parameter was not given, so its default applies instead of Ajv coercing "" to 0.
 */
export async function emptyQueryMeansAbsent(request: FastifyRequest): Promise<void> {
  const q = request.query as Record<string, unknown> | undefined;
  if (q) for (const k of Object.keys(q)) if (q[k] === "") delete q[k];
}
