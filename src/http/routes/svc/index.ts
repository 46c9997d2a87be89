import type { AppInstance } from "../../types.ts";
import { registerApiKeyRoutes } from "./apikeys.ts";
import { registerAuthRoutes } from "./auth.ts";
import { registerDeviceRoutes } from "./devices.ts";
import type { PartBDeps } from "./guards.ts";
import { registerProfileRoutes } from "./profiles.ts";
import { registerResellerRoutes } from "./resellers.ts";
import { registerTenantRoutes } from "./tenant.ts";

export type { PartBDeps } from "./guards.ts";

/**
 * The `partB` plugin for buildApp: every /svc/v1 route (enrollment-api.md). Error bodies, the activity log and
 * the 404 for unknown /svc/ paths come from buildApp itself; these routes set request.tenantId / clientId.
 */
export function registerPartB(deps: PartBDeps): (app: AppInstance) => void {
  return (app) => {
    registerAuthRoutes(app, deps);
    registerProfileRoutes(app, deps);
    registerDeviceRoutes(app, deps);
    registerResellerRoutes(app, deps);
    registerApiKeyRoutes(app, deps);
    registerTenantRoutes(app, deps);
  };
}
