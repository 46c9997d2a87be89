import type { IosAppPolicy, IosEnvironment } from "../attestation/types.ts";
import { TenantReadCache } from "./tenantReadCache.ts";
import type { Clock, Rng } from "../clock.ts";
import type { StoredIosApp } from "../domain/iosApps.ts";
import type { Tenant } from "../domain/tenants.ts";
import { randomId } from "../enrollment/ids.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { AppAttestStore } from "../store/types.ts";

/**
 * An App Attest app id: the Team ID (10 upper-case letters and digits) and the bundle id (letters, digits, hyphens
 * and dots: Apple's rule for CFBundleIdentifier), as Apple's RP ID for App Attest is `TEAMID.BUNDLEID`.
 */
export const IOS_APP_ID_RE = /^[A-Z0-9]{10}\.[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;
export const MAX_IOS_APP_ID = 255;
export const IOS_ENVIRONMENTS: readonly IosEnvironment[] = ["production", "development", "both"];
export const DEFAULT_IOS_ENVIRONMENT: IosEnvironment = "production";
/** as PLAY_APP_CACHE_MS: how long another instance (or the CLI) may take to reach an appraisal here */
export const IOS_APP_CACHE_MS = 5_000;

export interface IosAppInput {
  appId: string;
  environment?: IosEnvironment;
}

const invalid = (reason: string) => new AppError(catalog.PORTAL_INVALID_REQUEST, reason);

export function checkIosAppId(appId: unknown): string {
  if (typeof appId !== "string" || appId.length > MAX_IOS_APP_ID || !IOS_APP_ID_RE.test(appId)) {
    throw invalid(`the app id is TEAMID.BUNDLEID (a 10-character Team ID, a dot, the bundle id), at most ${MAX_IOS_APP_ID} characters`);
  }
  return appId;
}

export function checkIosEnvironment(environment: unknown): IosEnvironment {
  if (!IOS_ENVIRONMENTS.includes(environment as IosEnvironment)) throw invalid(`the environment is one of ${IOS_ENVIRONMENTS.join(", ")}`);
  return environment as IosEnvironment;
}

/**
 * A tenant's registered iOS apps (issue 25), for the CLI (`attestd ios-app ...`), the admin API and the attestation
 * service, which judges the tenant's App Attest attestations against them. Nothing here is secret.
 */
export class IosAppRegistry {
  private readonly cache: TenantReadCache<IosAppPolicy[]>;

  constructor(
    private readonly store: AppAttestStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    cacheMs = IOS_APP_CACHE_MS,
  ) {
    this.cache = new TenantReadCache(clock, cacheMs);
  }

  /** 400 PORTAL_INVALID_REQUEST for a bad field, 409 PORTAL_IOS_APP_EXISTS for an app id already registered. */
  async add(tenant: Tenant, input: IosAppInput, by: ChangeActor): Promise<StoredIosApp> {
    const app: StoredIosApp = {
      id: randomId(this.rng, "ia_"),
      tenantId: tenant.tenantId,
      appId: checkIosAppId(input.appId),
      environment: checkIosEnvironment(input.environment ?? DEFAULT_IOS_ENVIRONMENT),
      createdAt: new Date(this.clock.nowMs()).toISOString(),
    };
    if ((await this.store.addIosApp(app)) === "exists") {
      throw new AppError(catalog.PORTAL_IOS_APP_EXISTS, `the tenant has registered ${app.appId} already; remove it first to register it anew`);
    }
    this.forget(tenant.tenantId);
    await by.record({ tenantId: tenant.tenantId, action: "ios-app.added", target: { kind: "ios-app", id: app.id }, before: null, after: app });
    return app;
  }

  list(tenant: Tenant): Promise<StoredIosApp[]> {
    return this.store.listIosApps(tenant.tenantId);
  }

  async remove(tenant: Tenant, id: string, by: ChangeActor): Promise<boolean> {
    const before = (await this.store.listIosApps(tenant.tenantId)).find((a) => a.id === id) ?? null;
    const removed = await this.store.removeIosApp(tenant.tenantId, id);
    this.forget(tenant.tenantId);
    if (removed) await by.record({ tenantId: tenant.tenantId, action: "ios-app.removed", target: { kind: "ios-app", id }, before, after: null });
    return removed;
  }

  /** The tenant's apps as the appraisal needs them, read at most every IOS_APP_CACHE_MS per tenant. */
  async appsForAppraisal(tenantId: string): Promise<IosAppPolicy[]> {
    return this.cache.get(tenantId, async () => (await this.store.listIosApps(tenantId)).map((a) => ({ appId: a.appId, environment: a.environment })));
  }

  private forget(tenantId: string): void {
    this.cache.forget(tenantId);
  }
}
