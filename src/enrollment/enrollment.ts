import type { FastifyBaseLogger } from "fastify";
import { restrictionCheck } from "../auth/restrictions.ts";
import type { Clock, Rng } from "../clock.ts";
import type { SecretBox } from "../secrets/secretBox.ts";
import type { EnrollmentStore, JtiStore, TenantStore } from "../store/types.ts";
import { ClientAdmin } from "./clients.ts";
import { DeviceService } from "./devices.ts";
import { DeviceJobWorker, type WorkerOptions } from "./jobWorker.ts";
import { ProfileService } from "./profiles.ts";
import { ResellerService } from "./resellers.ts";
import { RestrictionService } from "./restrictions.ts";
import { TenantKeyService } from "./tenantKeys.ts";
import { TokenService } from "./tokens.ts";

export interface EnrollmentDeps {
  tenants: TenantStore;
  store: EnrollmentStore;
  jti: JtiStore;
  clock: Clock;
  rng: Rng;
  log: FastifyBaseLogger;
  /** largest device list in one request (config.maxDevices) */
  maxDevices: number;
  worker?: WorkerOptions;
  /** accepted `aud` values of client JWTs (config.tokenAudience) */
  tokenAudiences: readonly string[];
  /** seals the tenants' private keys at rest (src/secrets/openSecrets.ts) */
  secrets: SecretBox;
  /** RSA modulus of new tenant encryption keys */
  tenantKeyBits?: number;
}

export interface Enrollment {
  tenants: TenantStore;
  store: EnrollmentStore;
  tokens: TokenService;
  profiles: ProfileService;
  devices: DeviceService;
  resellers: ResellerService;
  restrictions: RestrictionService;
  tenantKeys: TenantKeyService;
  clients: ClientAdmin;
  worker: DeviceJobWorker;
  /** for Part A's ApiKeyAuthenticator: the same restriction rules as Part B clients */
  restrictionCheck: typeof restrictionCheck;
  /** starts the job worker and the expired-token purge */
  start(): void;
  stop(): Promise<void>;
}

/** Builds the Part B services over the stores; the composition root (server.ts) and the tests call it. */
export function createEnrollment(d: EnrollmentDeps): Enrollment {
  const tenantKeys = new TenantKeyService(d.store, d.clock, d.secrets, d.tenantKeyBits);
  const worker = new DeviceJobWorker(d.store, d.clock, d.rng, d.log, d.worker ?? {});
  let purge: NodeJS.Timeout | undefined;
  return {
    tenants: d.tenants,
    store: d.store,
    tokens: new TokenService(d.tenants, d.store, d.jti, d.clock, d.rng, d.tokenAudiences),
    profiles: new ProfileService(d.store, d.clock, d.rng),
    devices: new DeviceService(d.tenants, d.store, tenantKeys, d.clock, d.rng, d.maxDevices),
    resellers: new ResellerService(d.tenants, d.store, d.clock),
    restrictions: new RestrictionService(d.tenants, d.store),
    tenantKeys,
    clients: new ClientAdmin(d.store, d.clock, d.rng),
    worker,
    restrictionCheck,
    start() {
      worker.start();
      purge ??= setInterval(() => {
        d.store
          .purgeExpiredAccessTokens(d.clock.nowMs())
          .catch((err: unknown) => d.log.warn({ err }, "access token purge failed"));
      }, 60_000);
      purge.unref();
    },
    async stop() {
      if (purge) clearInterval(purge);
      purge = undefined;
      await worker.stop();
    },
  };
}
