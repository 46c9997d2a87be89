/** One line of the activity log (every request; errors with the errorId their body carried). */

export interface ActivityEntry {
  time: string;
  errorId: string | null;
  tenantId: string | null;
  clientId: string | null;
  method: string;
  route: string;
  status: number;
  code: string | null;
  latencyMs: number;
  remoteAddress: string;
  /**
   * for an error answer, its real reason: the catalog error's reason, or the one behind a deliberately vague
   * answer (AppError.privateReason). For the operator only (`attestd activity`), never a client or tenant.
   */
  reason: string | null;
}

/**
 * Which requests an activity-log view lists: `api` the APIs' (Part A, Part B, the portal's admin API under
 * /portal/api/, and anything unmatched), `portal` the portal's own pages and assets (`/`, `/portal`, `/portal/...`
 * outside /portal/api/), `all` both. The portal's Activity page shows `api` unless asked otherwise.
 */
export type ActivityKind = "api" | "portal" | "all";
export const ACTIVITY_KINDS = ["api", "portal", "all"] as const satisfies readonly ActivityKind[];

/** Whether a logged route (a route pattern, or "unmatched") is one of the portal's pages rather than an API's. */
export function isPortalPageRoute(route: string): boolean {
  return route === "/" || route === "/portal" || (route.startsWith("/portal/") && !route.startsWith("/portal/api/"));
}
