import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { AppError, isAppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { SafeText } from "../schemas/common.ts";
import type { PortalRole, PortalSession, PortalUser } from "../../domain/portal.ts";
import type { Tenant } from "../../domain/tenants.ts";
import type { PortalAccounts } from "../../portal/accounts.ts";
import type { PortalHistory } from "../../portal/history.ts";
import type { PortalPasskeys } from "../../portal/passkeys.ts";
import type { PortalSso } from "../../portal/sso.ts";
import type { SsoMappings } from "../../portal/ssoMappings.ts";
import type { Actor, PortalSessions } from "../../portal/sessions.ts";
import type { ApiKeyAdmin } from "../../services/apiKeyAdmin.ts";
import type { ReferenceValueAdmin } from "../../services/referenceValueAdmin.ts";
import type { PlayAppRegistry } from "../../services/playApps.ts";
import type { WebhookRegistry } from "../../services/webhooks.ts";
import type { IosAppRegistry } from "../../services/iosApps.ts";
import type { AppAttestKeys } from "../../services/appAttestKeys.ts";
import type { TenantPolicies } from "../../services/tenantPolicies.ts";
import type { ClientAdmin } from "../../enrollment/clients.ts";
import type { DeviceService } from "../../enrollment/devices.ts";
import type { DeviceService as PinnedDevices } from "../../services/deviceService.ts";
import type { ProfileService } from "../../enrollment/profiles.ts";
import type { PortalOverview } from "../../portal/overview.ts";
import type { TenantAdmin } from "../../services/tenantAdmin.ts";
import type { TenantDirectory } from "../../services/tenantDirectory.ts";
import type { TrustSources } from "../../services/trustSources.ts";
import type { AuditTrail, ChangeActor } from "../../services/auditTrail.ts";
import type { AuditReader } from "../../services/auditReader.ts";
import type { PageContext } from "../../../web/layout.ts";
import type { ApiAccess } from "../../../web/pages/quickStart.ts";

/** What the portal's route files share; index.ts builds it and registers them (they never import index.ts). */

export interface PortalDeps {
  accounts: PortalAccounts;
  sessions: PortalSessions;
  passkeys: PortalPasskeys;
  history: PortalHistory;
  keys: ApiKeyAdmin;
  tenants: TenantDirectory;
  /** Part B's API clients (the ClientAdmin of `attestd client ...`) */
  clients: ClientAdmin;
  referenceValues: ReferenceValueAdmin;
  /** a tenant's Google Play apps (the same PlayAppRegistry as `attestd play-app ...`) */
  playApps: PlayAppRegistry;
  /** a tenant's webhook endpoints and deliveries (the same WebhookRegistry as `attestd webhook ...`) */
  webhooks: WebhookRegistry;
  /** a tenant's iOS apps and App Attest keys (the same services as `attestd ios-app ...`, `attestd ios-key ...`) */
  iosApps: IosAppRegistry;
  appAttestKeys: AppAttestKeys;
  /** a tenant's appraisal policy versions (the same TenantPolicies as `attestd policy ...`) */
  policies: TenantPolicies;
  /** what the Enrollment page reads, through the services /svc/v1 uses */
  profiles: ProfileService;
  devices: DeviceService;
  /** named devices' history and pin reset (the same DeviceService as `attestd device show|reset`) */
  pinnedDevices: PinnedDevices;
  overview: PortalOverview;
  /** operators: tenants (the same service as `attestd tenant ...`) and the trust sources */
  tenantAdmin: TenantAdmin;
  trust: TrustSources;
  /** where tenants' programs reach the attestation API, for the commands the quick start and a new key show */
  api: ApiAccess;
  /** single sign-on through the deployment's OpenID Connect provider, when --sso-issuer is set (docs/sso.md) */
  sso?: PortalSso | undefined;
  /** operators' SSO mappings (the same service as `attestd sso ...`) */
  ssoMappings: SsoMappings;
  /** the audit trail every change is recorded in (docs/audit.md), and read back by the Audit trail page */
  audit: AuditTrail;
  auditLog: AuditReader;
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
  /** opens a session for a person who just proved who they are, and sets its cookie */
  startSession(reply: FastifyReply, user: PortalUser, method: PortalSession["method"]): Promise<void>;
  /** the portal's tag in /openapi.json */
  tags: string[];
  /** the signed-in person as the audit trail names them, and where the request came from: what a change is made by */
  by(request: FastifyRequest): ChangeActor;
}

/** The origin the browser says it is on (Origin, sent with every fetch that writes), else this host's. */
export function requestOrigin(request: FastifyRequest): string {
  const origin = request.headers.origin;
  return typeof origin === "string" ? origin : `${request.protocol}://${request.headers.host}`;
}

/**
 * The services shared with the API (Part B's, the device history's) answer their own not-found codes; the portal
 * answers its own for the same record.
 */
export async function portalNotFound<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isAppError(e) && e.entry.status === 404) throw new AppError(catalog.PORTAL_NOT_FOUND, e.reason);
    throw e;
  }
}

/** `?tenant=NAME`: the tenant an operator acts on; ignored for tenant users, who only ever see their own. */
export const TenantQuery = { tenant: Type.Optional(SafeText({ maxLength: 100 })) };

const RANK: Record<PortalRole, number> = { viewer: 0, admin: 1, operator: 2 };

export function allowed(actor: Actor, need: "viewer" | "admin" | "operator"): boolean {
  if (need === "operator") return actor.role === "operator";
  return RANK[actor.role] >= RANK[need];
}
