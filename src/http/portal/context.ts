import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { PortalRole } from "../../domain/portal.ts";
import type { Tenant } from "../../domain/tenants.ts";
import type { PortalAccounts } from "../../portal/accounts.ts";
import type { PortalHistory } from "../../portal/history.ts";
import type { Actor, PortalSessions } from "../../portal/sessions.ts";
import type { ApiKeyAdmin } from "../../services/apiKeyAdmin.ts";
import type { ReferenceValueAdmin } from "../../services/referenceValueAdmin.ts";
import type { ClientAdmin } from "../../enrollment/clients.ts";
import type { DeviceService } from "../../enrollment/devices.ts";
import type { ProfileService } from "../../enrollment/profiles.ts";
import type { TenantDirectory } from "../../services/tenantDirectory.ts";
import type { PageContext } from "../../../web/layout.ts";

/** What the portal's route files share; index.ts builds it and registers them (they never import index.ts). */

export interface PortalDeps {
  accounts: PortalAccounts;
  sessions: PortalSessions;
  history: PortalHistory;
  keys: ApiKeyAdmin;
  tenants: TenantDirectory;
  /** Part B's API clients (the ClientAdmin of `attestd client ...`) */
  clients: ClientAdmin;
  referenceValues: ReferenceValueAdmin;
  /** what the Enrollment page reads, through the services /svc/v1 uses */
  profiles: ProfileService;
  devices: DeviceService;
}

declare module "fastify" {
  interface FastifyRequest {
    /** the signed-in person on a portal route */
    actor?: Actor;
    csrfToken?: string;
  }
  interface FastifyContextConfig {
    /** who may use a portal route: "public" (sign-in pages), or the least role it needs */
    portal?: "public" | "viewer" | "admin" | "operator";
  }
}

/**
 * What every file of the portal's routes is given: the services, and the few decisions made once for all of them
 * (the tenant a request acts on, the page context, how an HTML page is sent).
 */
export interface PortalRoutes {
  deps: PortalDeps;
  /**
   * The tenant a request acts on: a tenant user's own, always (whatever the URL says); an operator's is the
   * ?tenant= one, or every tenant (undefined) where `all` allows it.
   */
  scope(request: FastifyRequest, all: boolean): Promise<{ tenant?: Tenant; tenantId?: string }>;
  /** what a page needs to know of who is looking */
  ctxOf(request: FastifyRequest): PageContext;
  html(reply: FastifyReply, body: string): FastifyReply;
  /** the portal's tag in /openapi.json */
  tags: string[];
}

/** `?tenant=NAME`: the tenant an operator acts on; ignored for tenant users, who only ever see their own. */
export const TenantQuery = { tenant: Type.Optional(Type.String({ maxLength: 100 })) };

const RANK: Record<PortalRole, number> = { viewer: 0, admin: 1, operator: 2 };

export function allowed(actor: Actor, need: "viewer" | "admin" | "operator"): boolean {
  if (need === "operator") return actor.role === "operator";
  return RANK[actor.role] >= RANK[need];
}
