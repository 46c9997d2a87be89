import type { FastifyBaseLogger } from "fastify";
import pino from "pino";
import type { AndroidTrust, TrustConfig, VendorTrust } from "./attestation/types.ts";
import { vendorTrustProblems } from "./attestation/chain/vendorChain.ts";
import { cryptoRng, systemClock, type Clock, type Rng } from "./clock.ts";
import type { Config } from "./config.ts";
import { ActivityRecorder } from "./http/activityRecorder.ts";
import { buildApp, type AppInstance } from "./http/app.ts";
import { Metrics } from "./http/metrics.ts";
import type { ReadinessReport } from "./http/routes/health.ts";
import { ApiKeyAuthenticator } from "./services/apiKeyAuth.ts";
import { createEnrollment } from "./enrollment/enrollment.ts";
import { registerPartB } from "./http/routes/svc/index.ts";
import { AttestationService } from "./services/attestationService.ts";
import { openStores, walCheckpointFailed } from "./store/openStores.ts";
import type { Tenant } from "./domain/tenants.ts";
import type { Stores } from "./store/types.ts";
import { loadAndroidPolicies, type AndroidPolicies } from "./trust/androidPolicyFile.ts";
import { openAndroidTrust, type AndroidTrustHandle } from "./trust/androidTrust.ts";
import { VendorTrustSource } from "./trust/vendorTrustSource.ts";

export interface Runtime {
  app: AppInstance;
  stores: Stores;
  log: FastifyBaseLogger;
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
}

/**
 * The trust for a tenant now. Objects are reused while nothing changes (the same TrustConfig per tenant policy
 * and trust generation) so the appraisal's per-trust caches stay warm between calls.
 */
export function tenantTrust(
  vendor: () => VendorTrust,
  android: () => AndroidTrust,
  policies: AndroidPolicies,
): (tenant: Pick<Tenant, "name">) => TrustConfig {
  let base: TrustConfig | undefined;
  let perTenant = new Map<string, TrustConfig>();
  return (tenant) => {
    const v = vendor();
    const a = android();
    if (!base || base.vendor !== v || base.android !== a) {
      base = { vendor: v, android: a };
      perTenant = new Map();
    }
    const own = policies.tenants.get(tenant.name);
    if (!own) return base;
    let t = perTenant.get(tenant.name);
    if (!t) {
      t = { vendor: v, android: { ...a, policy: { ...a.policy, ...own } } };
      perTenant.set(tenant.name, t);
    }
    return t;
  };
}

/**
 * The service logs to stdout; a CLI command whose stdout is its result (`attestd appraise`) passes fd 2, so a
 * warning never lands in front of the JSON a script reads.
 */
export function createLogger(level: string, fd: 1 | 2 = 1): FastifyBaseLogger {
  const options = { level, base: { service: "attestd", pid: process.pid } };
  return (fd === 1 ? pino(options) : pino(options, pino.destination({ fd: 2, sync: true }))) as unknown as FastifyBaseLogger;
}

/** The composition root: config → stores → trust → services → app. `main` only listens and handles signals. */
export async function createRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  const log = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  const rng = opts.rng ?? cryptoRng;
  const stores = opts.stores ?? (await openStores(config, { serving: true, onBackgroundError: walCheckpointFailed(log) }));
  const vendor = await VendorTrustSource.open(config, stores.durable);
  for (const problem of vendorTrustProblems(vendor.get())) log.warn({ problem }, "vendor root unusable; skipped");
  if (vendor.get().rootsDer.length === 0) log.warn("no --vendor-roots: every vendor blob will be CertificateInvalid");
  vendor.start(10_000, (err) => log.warn({ err }, "reference values refresh failed"));
  const policies = loadAndroidPolicies(config.androidPolicy, config.androidMinPatchLevel);
  const android: AndroidTrustHandle = await openAndroidTrust(config, log, clock, policies.default, true, {
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  const currentTrust = tenantTrust(() => vendor.get(), () => android.current(), policies);

  const metrics = new Metrics();
  metrics.trackAndroidTrust(() => android.current().fresh);
  const activity = new ActivityRecorder(stores.durable, log);
  const attestation = new AttestationService({
    nonces: stores.nonces,
    verdicts: stores.durable,
    nonceVerdicts: stores.nonceVerdicts,
    trust: currentTrust,
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
  });
  const auth = new ApiKeyAuthenticator(stores.durable, clock, enrollment.restrictionCheck);

  const readiness = async (): Promise<ReadinessReport> => {
    const critical = (await stores.health()).map((h) => ({
      name: h.name,
      ok: h.ok,
      ...(h.error ? { detail: h.error } : {}),
    }));
    // Android trust is advisory: every instance depends on the same Google endpoint, so taking them all out of
    // the load balancer would turn an android-key outage into a total one (vendor blobs and Part B too).
    // Readiness means "this instance cannot serve, another could" (docs/deployment.md).
    const advisory = android.health();
    return {
      ready: critical.every((c) => c.ok),
      degraded: advisory.filter((c) => !c.ok).map((c) => c.name),
      checks: [...critical, ...advisory],
    };
  };

  const app = await buildApp({
    logger: log,
    clock,
    rng,
    limits: { maxBlobBytes: config.maxBlobBytes, maxBatch: config.maxBatch, rps: config.rps, burst: config.burst },
    attestation,
    auth,
    rateLimits: stores.rateLimits,
    activity,
    metrics,
    readiness,
    trustedProxies: config.trustedProxies,
    partB: registerPartB({ enrollment, rateLimits: stores.rateLimits, clock, maxDevices: config.maxDevices }),
    https: opts.https,
  });

  const retainMs = config.nonceRetain * 1000;
  const purge = setInterval(() => {
    stores.nonces
      .purgeExpired(clock.nowMs(), retainMs)
      .then((n) => n > 0 && log.debug({ purged: n }, "expired nonces purged"))
      .catch((err: unknown) => log.warn({ err }, "nonce purge failed"));
  }, 60_000);
  purge.unref();
  enrollment.start();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      clearInterval(purge);
      vendor.stop();
      android.stop();
      await app.close();
      await enrollment.stop();
      await activity.close();
      await stores.close();
    })());

  return { app, stores, log, close };
}
