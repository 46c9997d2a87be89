import type { FastifyRequest } from "fastify";

/**
 * What a hook or handler may decide by when it asks "which URL is this?". `request.url` is the raw request target:
 * in absolute-form (`GET https://host/portal/signin HTTP/1.1`, RFC 9112 §3.2.2) it starts with the scheme, and
 * percent-encoded (`/%70ortal/`) it does not start with the path the router decoded, yet the router (find-my-way)
 * matches both to the route. A prefix test on `request.url` then misses the route it answers for.
 */

/**
 * The request target in origin-form (path and query): an absolute-form target loses its scheme and authority.
 * What a redirect may send a person back to: never another host.
 */
export function originForm(url: string): string {
  if (url.charCodeAt(0) === 47) return url;
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    // not a URL at all: the router found no route for it either
    return "/";
  }
}

/** The path of a request target, without its query. */
export function pathOf(url: string): string {
  const target = originForm(url);
  const q = target.indexOf("?");
  return q < 0 ? target : target.slice(0, q);
}

/**
 * What decides by URL: the route the router matched (`/portal/api/keys/:keyId`), whatever form the target took;
 * with no route (a 404), the target's path.
 */
export function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? pathOf(request.url);
}

/**
 * How many Host fields the request carried. node:http keeps only the first in `headers.host`, so two that disagree
 * would let a check of one (the portal's same-origin test) and a proxy's reading of the other differ.
 */
export function hostFieldCount(rawHeaders: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") n++;
  }
  return n;
}
