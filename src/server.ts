import type { FastifyBaseLogger } from "fastify";
import { cryptoRng, systemClock, type Clock, type Rng } from "./clock.ts";
import type { Config } from "./config.ts";
import { createLogger, type LogFormat } from "./logging.ts";
import { buildApp } from "./http/app.ts";
import { Metrics } from "./http/metrics.ts";
import type { AppInstance, ReadinessReport } from "./http/types.ts";
import { ActivityRecorder } from "./services/activityRecorder.ts";
import { ApiKeyAuthenticator } from "./services/apiKeyAuth.ts";
import { createEnrollment, type Enrollment } from "./enrollment/enrollment.ts";
import type { WorkerOptions } from "./enrollment/jobWorker.ts";
import { registerPartB } from "./http/routes/svc/index.ts";
import { startNoncePurge } from "./nonces/nonceService.ts";
import { AttestationService } from "./services/attestationService.ts";
import { DeviceService } from "./services/deviceService.ts";
import { RateLimiter } from "./services/rateLimiter.ts";
import { openStores, walCheckpointFailed } from "./store/openStores.ts";
import type { Stores } from "./store/types.ts";
import { openTrust } from "./trust/openTrust.ts";
import { registerPortal } from "./http/portal/index.ts";
import { PortalAccounts } from "./portal/accounts.ts";
import { PortalHistory } from "./portal/history.ts";
import { PortalSessions } from "./portal/sessions.ts";
import { ApiKeyAdmin } from "./services/apiKeyAdmin.ts";
import { ReferenceValueAdmin } from "./services/referenceValueAdmin.ts";
import { TenantDirectory } from "./services/tenantDirectory.ts";

export interface Runtime {
  app: AppInstance;
  stores: Stores;
  log: FastifyBaseLogger;
  /** Part B's services, for callers that drive them directly (tests, the job worker's drain) */
  enrollment: Enrollment;
  /** the write-behind activity log (flush() before reading it back) */
  activity: ActivityRecorder;
  /** stops accepting, lets in-flight requests finish, flushes the activity log, closes the stores */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: FastifyBaseLogger;
  clock?: Clock;
  rng?: Rng;
  /** open stores already (tests); otherwise opened from the config */
  stores?: Stores;
  https?: { cert: string; key: string };
  /** the network the trust sources use (tests inject one, so that no test reaches Google's status list) */
  fetch?: typeof fetch;
  /**
   * Part B's job worker: its options, and whether it starts with the runtime (tests that step it with
   * `enrollment.worker.drain()` keep it stopped, so "Processing" stays observable).
   */
  enrollment?: { worker?: WorkerOptions; startWorker?: boolean; tenantKeyBits?: number };
}

/** The composition root: config → stores → trust → services → app. `main` only listens and handles signals. */
export async function createRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  const log = opts.logger ?? createLogger({ level: config.logLevel, format: config.logFormat as LogFormat });
  const clock = opts.clock ?? systemClock;
  const rng = opts.rng ?? cryptoRng;
  const stores = opts.stores ?? (await openStores(config, { serving: true, onBackgroundError: walCheckpointFailed(log) }));
  const trust = await openTrust(config, {
    log,
    clock,
    serving: true,
    referenceValues: stores.durable,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  for (const problem of trust.vendorProblems) log.warn({ problem }, "vendor root unusable; skipped");
  if (trust.noVendorRoots) log.warn("no --vendor-roots: every vendor blob will be CertificateInvalid");

  const metrics = new Metrics();
  metrics.trackAndroidTrust(() => trust.androidUsable());
  const activity = new ActivityRecorder(stores.durable, log);
  const rateLimiter = new RateLimiter(stores.rateLimits, clock, { rps: config.rps, burst: config.burst });
  const attestation = new AttestationService({
    nonces: stores.nonces,
    verdicts: stores.durable,
    nonceVerdicts: stores.nonceVerdicts,
    trust: trust.forTenant,
    clock,
    rng,
    limits: { nonceTtlMs: config.nonceTtl * 1000, maxOutstandingNonces: config.maxOutstandingNonces },
    onAppraisal: (r, s) => metrics.recordAppraisal(r, s),
  });
  const enrollment = createEnrollment({
    tenants: stores.durable,
    store: stores.enrollment,
    jti: stores.jti,
    clock,
    rng,
    log,
    maxDevices: config.maxDevices,
    ...(opts.enrollment?.worker ? { worker: opts.enrollment.worker } : {}),
    ...(opts.enrollment?.tenantKeyBits ? { tenantKeyBits: opts.enrollment.tenantKeyBits } : {}),
  });
  const auth = new ApiKeyAuthenticator(stores.durable, clock, enrollment.restrictionCheck);
  const portalSessions = new PortalSessions(stores.durable, clock, rng);

  const readiness = async (): Promise<ReadinessReport> => {
    const critical = (await stores.health()).map((h) => ({
      name: h.name,
      ok: h.ok,
      ...(h.error ? { detail: h.error } : {}),
    }));
    // Android trust is advisory: every instance depends on the same Google endpoint, so taking them all out of
    // the load balancer would turn an android-key outage into a total one (vendor blobs and Part B too).
    // Readiness means "this instance cannot serve, another could" (docs/deployment.md).
    const advisory = trust.readiness();
    return {
      ready: critical.every((c) => c.ok),
      degraded: advisory.degraded,
      checks: [...critical, ...advisory.checks],
    };
  };

  const app = await buildApp({
    logger: log,
    clock,
    rng,
    limits: { maxBlobBytes: config.maxBlobBytes, maxBatch: config.maxBatch },
    attestation,
    devices: new DeviceService(stores.durable, clock),
    auth,
    rateLimiter,
    activity,
    metrics,
    readiness,
    trustedProxies: config.trustedProxies,
    partB: registerPartB({ enrollment, rateLimiter, maxDevices: config.maxDevices }),
    portal: registerPortal({
      accounts: new PortalAccounts(stores.durable, clock, rng, rateLimiter),
      sessions: portalSessions,
      history: new PortalHistory(stores.durable),
      keys: new ApiKeyAdmin(stores.durable, clock, rng),
      tenants: new TenantDirectory(stores.durable),
      clients: enrollment.clients,
      referenceValues: new ReferenceValueAdmin(stores.durable, clock, {
        fileValues: trust.fileReferenceValues,
        changed: () => trust.refreshReferenceValues(),
      }),
      profiles: enrollment.profiles,
      devices: enrollment.devices,
    }),
    https: opts.https,
  });

  const stopPurge = startNoncePurge(stores.nonces, clock, config.nonceRetain * 1000, log);
  // housekeeping off the request path: keys' last use in batches, ended portal sessions removed
  const housekeeping = setInterval(() => {
    auth.flushLastUsed().catch((err: unknown) => log.warn({ err }, "recording API keys' last use failed"));
    portalSessions.purge().catch((err: unknown) => log.warn({ err }, "portal session purge failed"));
  }, 30_000);
  housekeeping.unref();
  if (opts.enrollment?.startWorker !== false) enrollment.start();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      stopPurge();
      clearInterval(housekeeping);
      trust.stop();
      await app.close();
      await auth.flushLastUsed().catch((err: unknown) => log.warn({ err }, "recording API keys' last use failed"));
      await enrollment.stop();
      await activity.close();
      await stores.close();
    })());

  return { app, stores, log, enrollment, activity, close };
}
