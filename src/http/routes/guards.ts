import type { FastifyReply, FastifyRequest } from "fastify";
import { catalog } from "../../errors/catalog.ts";
import { AppError } from "../../errors/AppError.ts";
import type { RateLimitDecision } from "../../services/rateLimiter.ts";
import type { AppDeps, AppInstance } from "../types.ts";

/**
 * What answers a Part A request before its handler runs: the key, rate-limit and Accept guard, the 405 for a
 * method a path does not support; and the rate-limit answer both parts give (Part B's guards are in svc/guards.ts).
 */

/**
 * Writes the RateLimit-Policy / RateLimit headers of a decision (attestation-api.md), and refuses with 429 and
 * Retry-After when the bucket was empty. The headers go on the reply first, so the 429 carries them too.
 */
export function enforceRateLimit(reply: FastifyReply, d: RateLimitDecision): void {
  reply.header("RateLimit-Policy", `${d.burst};w=${Math.max(1, Math.ceil(d.burst / d.rps))}`);
  reply.header("RateLimit", `limit=${d.burst}, remaining=${d.remaining}, reset=${Math.ceil(d.resetMs / 1000)}`);
  if (!d.allowed) {
    throw new AppError(catalog.TOO_MANY_REQUESTS, `Rate limit of ${d.rps} requests/s (burst ${d.burst}) exceeded`, {
      "Retry-After": String(Math.max(1, Math.ceil(d.retryAfterMs / 1000))),
    });
  }
}

/**
 * The guard of every Part A route, one hook so the checks keep the spec's order (key 401/403 → rate limit 429 →
 * Accept 406) without a promise hop between them.
 */
export function partAGuards(deps: Pick<AppDeps, "auth" | "rateLimiter">) {
  return async function partAGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers["x-vendor-attest-api-key"];
    const principal = await deps.auth.authenticate(typeof header === "string" ? header : undefined, {
      ip: request.ip,
      referer: typeof request.headers.referer === "string" ? request.headers.referer : undefined,
    });
    request.principal = principal;
    enforceRateLimit(reply, await deps.rateLimiter.forApiKey(principal.key));
    if (!request.acceptable) {
      const types = request.routeOptions.config?.offersEar
        ? "application/json, application/xml or application/eat+jwt"
        : "application/json or application/xml";
      throw new AppError(catalog.NOT_ACCEPTABLE, `Accept must allow ${types}`);
    }
  };
}

/** per app: the methods of each path that answers 405 to the others (a path pattern as a matcher) */
const allowedByApp = new WeakMap<AppInstance, { match: RegExp; allowed: readonly string[] }[]>();

/** `/api/v1/verdicts/:objectId` → a matcher of concrete paths (a parameter is one non-empty segment) */
function pathMatcher(url: string): RegExp {
  const parts = url.split("/").map((p) => (p.startsWith(":") ? "[^/]+" : p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  return new RegExp(`^${parts.join("/")}$`);
}

/**
 * Answers 405 with Allow for every method a path does not support: every method the HTTP parser knows (WebDAV's
 * PROPFIND, TRACE, ... included; app.ts makes Fastify route them all), so no method gets a 404 on a path that
 * exists. The path is also remembered for `allowedMethodsOf`, which answers methods node's parser itself refuses.
 */
export function methodNotAllowed(app: AppInstance, url: string, allowed: string[]): void {
  const others = app.supportedMethods.filter((m) => !allowed.includes(m) && !(m === "HEAD" && allowed.includes("GET")));
  let paths = allowedByApp.get(app);
  if (!paths) allowedByApp.set(app, (paths = []));
  paths.push({ match: pathMatcher(url), allowed });
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

/** The methods `path` allows, when it is a path `methodNotAllowed` covers; undefined otherwise. */
export function allowedMethodsOf(app: AppInstance, path: string): readonly string[] | undefined {
  return allowedByApp.get(app)?.find((p) => p.match.test(path))?.allowed;
}
