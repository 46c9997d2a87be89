import type { IosAppPolicy, IosEnvironment } from "../attestation/types.ts";
import { TenantReadCache } from "./tenantReadCache.ts";
import type { Clock, Rng } from "../clock.ts";
import { createPrivateKey } from "node:crypto";
import type { IosAppSummary, StoredIosApp } from "../domain/iosApps.ts";
import type { Tenant } from "../domain/tenants.ts";
import { randomId } from "../enrollment/ids.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { sealContext, type SecretBox } from "../secrets/secretBox.ts";
import { IOS_APP_DEVELOPER_KEY_PURPOSE } from "../store/sealedColumns.ts";
import type { AppAttestStore } from "../store/types.ts";
import type { AppleDeveloperKey } from "./appAttestReceiptRefresher.ts";

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

/** Apple's id of a developer key (the JWT's `kid`): 10 upper-case letters and digits, as the developer account shows it */
export const DEVELOPER_KEY_ID_RE = /^[A-Z0-9]{10}$/;
/** a .p8 file is about 250 bytes; this leaves room for whitespace and no more */
export const MAX_DEVELOPER_KEY_BYTES = 4096;

/**
 * The team's App Attest developer key (Apple developer account, Keys, with DeviceCheck / App Attest): its key id
 * and the .p8 file's text (PKCS#8 PEM, EC P-256). The team id is the app id's first part.
 */
export interface DeveloperKeyInput {
  keyId: string;
  privateKey: string;
}

export interface IosAppInput {
  appId: string;
  environment?: IosEnvironment;
  /** optional at registration; `setDeveloperKey` sets or replaces it later */
  developerKey?: DeveloperKeyInput;
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

/** The developer key checked and reduced to the PEM the refresher signs with; 400 when it is not a P-256 key id + .p8. */
function readDeveloperKey(k: DeveloperKeyInput): { keyId: string; privateKeyPem: string } {
  if (typeof k?.keyId !== "string" || !DEVELOPER_KEY_ID_RE.test(k.keyId)) {
    throw invalid("the developer key's id is the 10 upper-case letters and digits Apple shows beside the key");
  }
  if (typeof k.privateKey !== "string" || Buffer.byteLength(k.privateKey) > MAX_DEVELOPER_KEY_BYTES) {
    throw invalid(`the developer key is the text of Apple's .p8 file, at most ${MAX_DEVELOPER_KEY_BYTES} bytes`);
  }
  try {
    const key = createPrivateKey({ key: k.privateKey, format: "pem" });
    if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") throw new Error("not P-256");
    return { keyId: k.keyId, privateKeyPem: key.export({ format: "pem", type: "pkcs8" }) as string };
  } catch {
    throw invalid("the developer key is not an EC P-256 private key in PEM (the .p8 file Apple gives for the key)");
  }
}

/** What lists and answers show: the developer key as set (with its key id) or not; never the key. */
export function iosAppSummary({ sealedDeveloperKey: _sealed, developerKeyId, ...a }: StoredIosApp): IosAppSummary {
  return { ...a, developerKey: developerKeyId !== null ? { keyId: developerKeyId } : null };
}

/** the team id of an app id TEAMID.BUNDLEID */
export const teamIdOf = (appId: string): string => appId.slice(0, appId.indexOf("."));

/**
 * A tenant's registered iOS apps (issue 25), for the CLI (`attestd ios-app ...`), the admin API and the attestation
 * service, which judges the tenant's App Attest attestations against them.
 *
 * The one secret: the team's App Attest developer key an app may be registered with, for receipt refresh (the
 * fraud-risk metric). It is registered per app (not per team) so that it lives and goes with the registration that
 * uses it, within one tenant; its team id is the app id's own, so nothing can be mistyped apart. It is checked and
 * sealed here, bound to the registration's id, before the store sees it, and leaves this class only through
 * `developerKeyFor` (the refresher's): answers show "set" and its key id.
 */
export class IosAppRegistry {
  private readonly cache: TenantReadCache<IosAppPolicy[]>;

  constructor(
    private readonly store: AppAttestStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly secrets: SecretBox,
    cacheMs = IOS_APP_CACHE_MS,
  ) {
    this.cache = new TenantReadCache(clock, cacheMs);
  }

  /** 400 PORTAL_INVALID_REQUEST for a bad field, 409 PORTAL_IOS_APP_EXISTS for an app id already registered. */
  async add(tenant: Tenant, input: IosAppInput, by: ChangeActor): Promise<IosAppSummary> {
    const id = randomId(this.rng, "ia_");
    const appId = checkIosAppId(input.appId);
    const environment = checkIosEnvironment(input.environment ?? DEFAULT_IOS_ENVIRONMENT);
    const key = input.developerKey !== undefined ? this.sealed(id, input.developerKey) : null;
    const app: StoredIosApp = {
      id,
      tenantId: tenant.tenantId,
      appId,
      environment,
      createdAt: new Date(this.clock.nowMs()).toISOString(),
      developerKeyId: key?.keyId ?? null,
      sealedDeveloperKey: key?.sealed ?? null,
    };
    if ((await this.store.addIosApp(app)) === "exists") {
      throw new AppError(catalog.PORTAL_IOS_APP_EXISTS, `the tenant has registered ${app.appId} already; remove it first to register it anew`);
    }
    this.forget(tenant.tenantId);
    const summary = iosAppSummary(app);
    await by.record({ tenantId: tenant.tenantId, action: "ios-app.added", target: { kind: "ios-app", id: app.id }, before: null, after: summary });
    return summary;
  }

  async list(tenant: Tenant): Promise<IosAppSummary[]> {
    return (await this.store.listIosApps(tenant.tenantId)).map(iosAppSummary);
  }

  /**
   * Sets (replaces) the app's developer key, or with null removes it: its keys' receipts are refreshed from the
   * next sweep on, or no longer. 400 for a bad key; PORTAL_NOT_FOUND when the tenant has no app of that id.
   */
  async setDeveloperKey(tenant: Tenant, id: string, key: DeveloperKeyInput | null, by: ChangeActor): Promise<IosAppSummary> {
    const sealed = key === null ? null : this.sealed(id, key);
    const before = (await this.store.listIosApps(tenant.tenantId)).find((a) => a.id === id);
    if (!(await this.store.setIosAppDeveloperKey(tenant.tenantId, id, sealed, new Date(this.clock.nowMs()).toISOString()))) {
      throw new AppError(catalog.PORTAL_NOT_FOUND, "no iOS app of that id for this tenant");
    }
    const app = (await this.store.listIosApps(tenant.tenantId)).find((a) => a.id === id);
    if (!app) throw new AppError(catalog.PORTAL_NOT_FOUND, "no iOS app of that id for this tenant");
    const summary = iosAppSummary(app);
    // the key by its id only (the trail's redaction drops any field named like a key, so the id is named apart)
    const named = (a: StoredIosApp) => ({ ...iosAppSummary(a), developerKeyId: a.developerKeyId });
    await by.record({
      tenantId: tenant.tenantId,
      action: key === null ? "ios-app.developer-key-cleared" : "ios-app.developer-key-set",
      target: { kind: "ios-app", id },
      before: before ? named(before) : null,
      after: named(app),
    });
    return summary;
  }

  /**
   * The developer key to ask Apple's receipt service with for a key of (tenant, app id), opened; undefined when
   * the app is not registered or has none. Read from the store each time: refreshes are few and in the background.
   */
  async developerKeyFor(tenantId: string, appId: string): Promise<AppleDeveloperKey | undefined> {
    const app = (await this.store.listIosApps(tenantId)).find((a) => a.appId === appId);
    if (!app || app.sealedDeveloperKey === null || app.developerKeyId === null) return undefined;
    const privateKeyPem = this.secrets.open(app.sealedDeveloperKey, sealContext(IOS_APP_DEVELOPER_KEY_PURPOSE, app.id));
    return { teamId: teamIdOf(app.appId), keyId: app.developerKeyId, privateKeyPem };
  }

  private sealed(id: string, input: DeveloperKeyInput): { keyId: string; sealed: string } {
    const k = readDeveloperKey(input);
    return { keyId: k.keyId, sealed: this.secrets.seal(k.privateKeyPem, sealContext(IOS_APP_DEVELOPER_KEY_PURPOSE, id)) };
  }

  async remove(tenant: Tenant, id: string, by: ChangeActor): Promise<boolean> {
    const found = (await this.store.listIosApps(tenant.tenantId)).find((a) => a.id === id);
    const before = found ? iosAppSummary(found) : null;
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
