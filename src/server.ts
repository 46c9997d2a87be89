import { hostname } from "node:os";
import type { FastifyBaseLogger } from "fastify";
import { cryptoRng, systemClock, type Clock, type Rng } from "./clock.ts";
import { publicBaseUrl, type Config } from "./config.ts";
import { createLogger, droppedLogLines, type LogFormat } from "./logging.ts";
import { buildApp } from "./http/app.ts";
import { Metrics } from "./http/metrics.ts";
import { checkState, type AppInstance, type ReadinessReport } from "./http/types.ts";
import { ActivityRecorder } from "./services/activityRecorder.ts";
import { AuditTrail } from "./services/auditTrail.ts";
import { auditSinks } from "./services/auditSinks.ts";
import { AuditReader } from "./services/auditReader.ts";
import { ApiKeyAuthenticator } from "./services/apiKeyAuth.ts";
import { createEnrollment, type Enrollment } from "./enrollment/enrollment.ts";
import type { WorkerOptions } from "./enrollment/jobWorker.ts";
import { registerPartB } from "./http/routes/svc/index.ts";
import { startNoncePurge } from "./nonces/nonceService.ts";
import { AttestationService } from "./services/attestationService.ts";
import { GooglePlayIntegrityDecoder } from "./services/playIntegrityDecoder.ts";
import { AppleReceiptRefresher } from "./services/appAttestReceiptRefresher.ts";
import { AppAttestReceiptRefreshes } from "./services/appAttestReceiptRefreshes.ts";
import { DeviceService } from "./services/deviceService.ts";
import { RateLimiter } from "./services/rateLimiter.ts";
import { openStores, servingStoreOptions } from "./store/openStores.ts";
import type { Stores } from "./store/types.ts";
import type { HttpsOptions } from "./tls/tlsPolicy.ts";
import { openTrust } from "./trust/openTrust.ts";
import { logSecrets, openSecrets, type OpenedSecrets } from "./secrets/openSecrets.ts";
import { registerPortal } from "./http/portal/index.ts";
import { PasswordHasher, type ScryptCost } from "./portal/passwords.ts";
import { PortalAccounts } from "./portal/accounts.ts";
import { PortalHistory } from "./portal/history.ts";
import { PortalPasskeys } from "./portal/passkeys.ts";
import { PortalSessions } from "./portal/sessions.ts";
import { ApiKeyAdmin } from "./services/apiKeyAdmin.ts";
import { ReferenceValueAdmin } from "./services/referenceValueAdmin.ts";
import { PlayAppRegistry } from "./services/playApps.ts";
import { TenantPolicies } from "./services/tenantPolicies.ts";
import { IosAppRegistry } from "./services/iosApps.ts";
import { AppAttestKeys } from "./services/appAttestKeys.ts";
import { appAttestReceiptCheck } from "./attestation/encoding/appAttestReceipt.ts";
import { PlayIntegrityOpener } from "./services/playIntegrityOpener.ts";
import { autoPlayThreads, CryptoThreads } from "./services/cryptoThreads.ts";
import { TenantDirectory } from "./services/tenantDirectory.ts";
import { EarIssuer } from "./results/earIssuer.ts";
import { EarKeyRing } from "./results/signingKeys.ts";
import type { EarAlgorithm } from "./domain/signingKeys.ts";
import { TenantAdmin } from "./services/tenantAdmin.ts";
import { TrustSources } from "./services/trustSources.ts";
import { WebhookRegistry } from "./services/webhooks.ts";
import { WebhookDeliverer } from "./services/webhookDelivery.ts";
import { WebhookTrustEvents } from "./services/webhookTrustEvents.ts";
import { PortalOverview } from "./portal/overview.ts";
import type { PortalSso } from "./portal/sso.ts";
import { ssoSettingsFrom } from "./portal/ssoSettings.ts";
import { SsoMappings } from "./portal/ssoMappings.ts";
import { startTracing, type Tracing } from "./tracing/sdk.ts";
import { tracedFetch } from "./tracing/spans.ts";
import { storesWithSpans } from "./tracing/storeSpans.ts";

export interface Runtime {
  app: AppInstance;
  stores: Stores;
  log: FastifyBaseLogger;
  /** Part B's services, for callers that drive them directly (tests, the job worker's drain) */
  enrollment: Enrollment;
  /** the write-behind activity log (flush() before reading it back) */
  activity: ActivityRecorder;
  /**
   * Google-side decoding of Play Integrity tokens (--play-oauth-url, --play-api-url), for apps registered with a
   * service account; built here so the attestation service can be handed it (issue 23)
   */
  playDecoder: GooglePlayIntegrityDecoder;
  /**
   * App Attest receipt refresh with Apple (--app-attest-receipt-url, --app-attest-receipt-development-url), for
   * the fraud-risk metric kept with an attested key (issue 25); no verdict depends on it
   */
  receiptRefresher: AppleReceiptRefresher;
  /** the background refreshes of attested keys' receipts (issue 25), for tests that wait for them (`idle()`) */
  receiptRefreshes: AppAttestReceiptRefreshes;
  /** the portal's account services its routes use, for tests that drive them directly */
  portal: { accounts: PortalAccounts; sessions: PortalSessions; passkeys: PortalPasskeys; sso: PortalSso | undefined };
  /** OpenTelemetry traces, when --otlp-endpoint turned them on (src/tracing/, docs/traces.md) */
  tracing: Tracing | undefined;
  /** the audit trail (docs/audit.md): `audit.as(actor, from)` is what a change made outside HTTP is recorded by */
  audit: AuditTrail;
  /** stops accepting, lets in-flight requests finish, flushes the activity log, closes the stores */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: FastifyBaseLogger;
  clock?: Clock;
  rng?: Rng;
  /** open stores already (tests); otherwise opened from the config */
  stores?: Stores;
  https?: HttpsOptions;
  /**
   * the network the trust sources and the Play Integrity decoder use (tests inject one, so that no test reaches
   * Google)
   */
  fetch?: typeof fetch;
  /**
   * Part B's job worker: its options, and whether it starts with the runtime (tests that step it with
   * `enrollment.worker.drain()` keep it stopped, so "Processing" stays observable).
   */
  enrollment?: { worker?: WorkerOptions; startWorker?: boolean; tenantKeyBits?: number };
  /**
   * scrypt's parameters for portal passwords; PASSWORD_COST (OWASP's minimum) unless a test of something else
   * asks for cheaper ones. Not a flag: an operator has no business lowering it.
   */
  passwordCost?: ScryptCost;
  /**
   * the roots Apple's refreshed receipts must chain to (DER); Apple Root CA - G3 unless a test gives its stand-in's
   * CA (test/helpers/appleReceiptStandIn.ts). Not a flag: in production the receipt service is Apple's.
   */
  receiptRoots?: readonly Uint8Array[];
  /** the dev TLS's CA file (`serve` with --dev-tls): the portal's curl commands name it, as the start-up banner does */
  caFile?: string;
}

/** The composition root: config → stores → trust → services → app. `main` only listens and handles signals. */
export async function createRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  // before anything is opened: an unreadable client secret file stops the start with nothing to close
  const ssoSettings = ssoSettingsFrom(config, publicBaseUrl(config));
  const log = opts.logger ?? createLogger({ level: config.logLevel, format: config.logFormat as LogFormat });
  const clock = opts.clock ?? systemClock;
  const rng = opts.rng ?? cryptoRng;
  const opened = opts.stores ?? (await openStores(config, servingStoreOptions(log)));
  // before anything is served: a missing or wrong key stops start-up here, and plaintext secrets are sealed now
  let secrets: OpenedSecrets;
  try {
    secrets = await openSecrets(opened.secrets, config, rng);
  } catch (err) {
    await opened.close();
    throw err;
  }
  logSecrets(log, secrets);
  // before the first outbound request (the trust sources' start-up fetch), so that it is traced too
  const tracing = await startTracing(config, log);
  // each call out gets a client span while tracing is on, and no traceparent (docs/traces.md, "Propagation")
  const network = tracing ? tracedFetch(opts.fetch ?? globalThis.fetch) : opts.fetch;
  // and each store call a traced request makes gets a span, whichever service makes it
  const stores = tracing ? storesWithSpans(opened) : opened;
  const trust = await openTrust(config, {
    log,
    clock,
    serving: true,
    referenceValues: stores.durable,
    ...(network ? { fetch: network } : {}),
  });
  for (const problem of trust.vendorProblems) log.warn({ problem }, "vendor root unusable; skipped");
  if (trust.noVendorRoots) log.warn("no --vendor-roots: every vendor blob will be CertificateInvalid");

  // the result-signing key: made on the first start of any instance, then shared through the store
  const earKeys = await EarKeyRing.open(stores.signingKeys, clock, secrets.box, {
    alg: config.earAlg as EarAlgorithm,
    refreshMs: config.earKeyRefresh * 1000,
    onRefreshError: (err) => log.warn({ err }, "re-reading the result-signing keys failed; signing with the last ones read"),
  });
  earKeys.start();

  const metrics = new Metrics();
  metrics.trackAndroidTrust(() => trust.androidUsable());
  metrics.trackTrustHeldBack(() => trust.heldBackCounts());
  metrics.trackLogDrops(droppedLogLines);
  if (tracing) metrics.trackTraceDrops(tracing.dropped);
  const activity = new ActivityRecorder(stores.durable, log, {
    onDropped: (reason, count) => metrics.activityDropped.inc({ reason }, count),
  });
  metrics.trackActivityBacklog(() => activity.pending);
  // every source the appraisal trusts, as the portal shows them; the decoder reports its calls to Google here
  const trustSources = new TrustSources(trust, {
    oauthUrl: config.playOauthUrl,
    apiUrl: config.playApiUrl,
    appsWithServiceAccount: async () => {
      let count = 0;
      for (const t of await stores.durable.listTenants()) count += (await stores.durable.listPlayApps(t.tenantId)).filter((a) => a.opensWith === "service-account").length;
      return count;
    },
  });
  const playDecoder = new GooglePlayIntegrityDecoder({
    oauthUrl: config.playOauthUrl,
    apiUrl: config.playApiUrl,
    fetch: network ?? globalThis.fetch,
    clock,
    log,
    timeoutMs: config.playDecodeTimeoutMs,
    retries: config.playDecodeRetries,
    rng,
    onOutcome: (result) => {
      metrics.playDecodes.inc({ result });
      trustSources.notePlayDecode(result);
    },
  });
  const receiptRefresher = new AppleReceiptRefresher({
    productionUrl: config.appAttestReceiptUrl,
    developmentUrl: config.appAttestReceiptDevelopmentUrl,
    fetch: network ?? globalThis.fetch,
    clock,
    log,
    timeoutMs: config.appAttestReceiptTimeoutMs,
    retries: config.appAttestReceiptRetries,
    rng,
    ...(opts.receiptRoots ? { roots: opts.receiptRoots } : {}),
    onOutcome: (result) => metrics.appAttestReceiptRefreshes.inc({ result }),
  });
  const rateLimiter = new RateLimiter(stores.rateLimits, clock, { rps: config.rps, burst: config.burst });
  // every change of state is recorded here (docs/audit.md), and streamed to --audit-file / --audit-syslog
  const audit = new AuditTrail(stores.durable, clock, rng, {
    sinks: auditSinks(config),
    log,
    onFailure: (sink) => metrics.auditStreamFailures.inc({ sink }),
  });
  // a tenant's Play apps, one registry per process: the portal's changes drop its cache at once, and the attestation
  // service opens the tenant's Play Integrity tokens with appsForAppraisal (issue 23)
  const playApps = new PlayAppRegistry(stores.durable, clock, rng, secrets.box);
  // signed webhooks (issue 26, docs/events.md): endpoints, the outbox rows events carry, and this instance's worker
  const webhookTargets = { allowPrivate: config.webhookAllowPrivate === true, allowHosts: config.webhookAllowHosts, allowHttp: config.webhookAllowHttp === true };
  const webhooks = new WebhookRegistry(stores.durable, clock, rng, secrets.box, { targets: webhookTargets, retryPeriodMs: config.webhookRetryPeriod * 1000 });
  const instanceName = `${hostname()}:${process.pid}:${rng.bytes(4).toString("hex")}`;
  const webhookDeliverer = new WebhookDeliverer(stores.durable, webhooks, clock, rng, {
    owner: instanceName,
    targets: webhookTargets,
    timeoutMs: config.webhookTimeoutMs,
    pollMs: config.webhookPollMs,
    retryBaseMs: config.webhookRetryBaseMs,
    retryMaxMs: config.webhookRetryMaxMs,
    onAttempt: (result, seconds) => {
      metrics.webhookAttempts.inc({ result });
      metrics.webhookAttemptSeconds.observe(seconds);
    },
    onError: (err) => log.warn({ err }, "webhook delivery pass failed; retrying"),
  });
  metrics.trackWebhookBacklog(() => stores.durable.countPendingWebhookDeliveries());
  // started on the first token: a deployment with no Play app pays nothing for them
  const cryptoThreads = new CryptoThreads(config.playThreads === "auto" ? autoPlayThreads(undefined, config.workers) : Number(config.playThreads));
  // a tenant's iOS apps and the App Attest keys its devices attested (issue 25)
  const iosApps = new IosAppRegistry(stores.durable, clock, rng, secrets.box);
  // Apple's receipts are judged only while Apple's App Attestation root is the one in force (appAttestReceiptsChecked),
  // the fact the portal's trust page shows on its receipt-root row
  const appAttestKeys = new AppAttestKeys(
    stores.durable,
    iosApps,
    clock,
    trust.appAttestFacts.receiptsChecked ? appAttestReceiptCheck() : undefined,
    cryptoThreads.size > 0 ? cryptoThreads.checkAssertionSignature : undefined,
  );
  // a tenant's stored appraisal policy (issue 26, docs/policy.md): seeded once from --android-policy, read by the
  // appraisal through a per-tenant cache (POLICY_CACHE_MS), changed by the portal, the admin API and the CLI
  const policies = new TenantPolicies(stores.durable, clock);
  const seeded = await policies.seedFromFile(trust.androidPolicies);
  if (seeded.length) log.info({ tenants: seeded }, "tenant policies seeded from --android-policy as version 1");
  // in the background: each attested key of an app with a developer key has its receipt refreshed for the metric
  const receiptRefreshes = new AppAttestReceiptRefreshes({ store: stores.durable, developerKeys: iosApps, refresher: receiptRefresher, clock, log });
  const attestation = new AttestationService({
    nonces: stores.nonces,
    verdicts: stores.durable,
    nonceVerdicts: stores.nonceVerdicts,
    nonceAppAttest: stores.nonceAppAttest,
    trust: trust.forTenant,
    policies,
    clock,
    rng,
    limits: { nonceTtlMs: config.nonceTtl * 1000, maxOutstandingNonces: config.maxOutstandingNonces },
    onAppraisal: (r, s) => metrics.recordAppraisal(r, s),
    playIntegrity: new PlayIntegrityOpener(playApps, playDecoder, cryptoThreads.open),
    appAttest: { keys: appAttestKeys, store: stores.durable, onKeyAttested: () => receiptRefreshes.nudge() },
    webhooks,
  });
  const enrollment = createEnrollment({
    tenants: stores.durable,
    store: stores.enrollment,
    jti: stores.jti,
    clock,
    rng,
    log,
    maxDevices: config.maxDevices,
    tokenAudiences: config.tokenAudience,
    secrets: secrets.box,
    ...(opts.enrollment?.worker ? { worker: opts.enrollment.worker } : {}),
    ...(opts.enrollment?.tenantKeyBits ? { tenantKeyBits: opts.enrollment.tenantKeyBits } : {}),
  });
  const auth = new ApiKeyAuthenticator(stores.durable, clock, enrollment.restrictionCheck);
  const publicUrl = publicBaseUrl(config);
  const portal = {
    accounts: new PortalAccounts(stores.durable, clock, rng, rateLimiter, publicUrl, new PasswordHasher(opts.passwordCost)),
    sessions: new PortalSessions(stores.durable, clock, rng, { idleMs: config.portalIdleTimeout * 1000, absoluteMs: config.portalSessionLifetime * 1000 }),
    passkeys: new PortalPasskeys(stores.durable, clock, rng, rateLimiter, { origin: new URL(publicUrl).origin, name: "attestd" }),
    // loaded only when configured: openid-client is not read at all by a deployment without single sign-on
    sso: ssoSettings ? new (await import("./portal/sso.ts")).PortalSso(stores.durable, clock, rng, ssoSettings) : undefined,
  };
  const devices = new DeviceService(stores.durable, clock, webhooks);

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
    const report = {
      ready: critical.every((c) => c.ok),
      degraded: advisory.degraded,
      checks: [...critical, ...advisory.checks],
    };
    logReadinessChanges(report.checks);
    return report;
  };
  // /readyz says no more than name and state; the operator reads why here, once per change (it is polled every
  // few seconds, so a line per poll would bury the log)
  const lastStates = new Map<string, string>();
  const logReadinessChanges = (checks: ReadinessReport["checks"]): void => {
    for (const c of checks) {
      const state = checkState(c);
      const before = lastStates.get(c.name);
      if (before === state || (before === undefined && c.ok)) {
        lastStates.set(c.name, state);
        continue;
      }
      lastStates.set(c.name, state);
      const fields = { check: c.name, state, ...(before ? { before } : {}), ...(c.detail ? { detail: c.detail } : {}) };
      if (c.ok) log.info(fields, `readiness: ${c.name} is ${state} again`);
      else log.warn(fields, `readiness: ${c.name} is ${state}${c.detail ? `: ${c.detail}` : ""}`);
    }
  };

  const app = await buildApp({
    logger: log,
    clock,
    rng,
    limits: { maxBlobBytes: config.maxBlobBytes, maxBatch: config.maxBatch },
    attestation,
    results: new EarIssuer(earKeys, clock),
    devices,
    auth,
    rateLimiter,
    activity,
    metrics,
    readiness,
    trustedProxies: config.trustedProxies,
    apiDocs: config.apiDocs,
    connections: {
      headersTimeoutMs: config.headersTimeoutMs,
      requestTimeoutMs: config.requestTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
      keepAliveTimeoutMs: config.keepAliveTimeoutMs,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress,
    },
    partB: registerPartB({ enrollment, rateLimiter, maxDevices: config.maxDevices, audit }),
    portal: registerPortal({
      ...portal,
      history: new PortalHistory(stores.durable),
      keys: new ApiKeyAdmin(stores.durable, clock, rng, auth, webhooks),
      webhooks,
      tenants: new TenantDirectory(stores.durable),
      clients: enrollment.clients,
      referenceValues: new ReferenceValueAdmin(stores.durable, clock, {
        fileValues: trust.fileReferenceValues,
        changed: () => trust.refreshReferenceValues(),
      }),
      playApps,
      iosApps,
      appAttestKeys,
      policies,
      profiles: enrollment.profiles,
      devices: enrollment.devices,
      pinnedDevices: devices,
      overview: new PortalOverview(stores.durable, trustSources, clock),
      tenantAdmin: new TenantAdmin(stores.durable, clock, rng),
      trust: trustSources,
      api: { baseUrl: publicUrl, ...(opts.caFile ? { caFile: opts.caFile } : {}) },
      ssoMappings: new SsoMappings(stores.durable, clock),
      audit,
      auditLog: new AuditReader(stores.durable),
    }),
    https: opts.https,
    tracing: tracing !== undefined,
  });

  const stopPurge = startNoncePurge(stores.nonces, clock, config.nonceRetain * 1000, log);
  // housekeeping off the request path: keys' last use in batches, ended portal sessions and passkey ceremonies removed
  const housekeeping = setInterval(() => {
    auth.flushLastUsed().catch((err: unknown) => log.warn({ err }, "recording API keys' last use failed"));
    portal.sessions.purge().catch((err: unknown) => log.warn({ err }, "portal session purge failed"));
    portal.passkeys.purge().catch((err: unknown) => log.warn({ err }, "passkey challenge purge failed"));
    // finished webhook deliveries past --webhook-history-days, a bounded batch each time
    stores.durable
      .purgeWebhookDeliveries(new Date(clock.nowMs() - config.webhookHistoryDays * 86_400_000).toISOString(), 1_000)
      .catch((err: unknown) => log.warn({ err }, "webhook delivery history purge failed"));
  }, 30_000);
  housekeeping.unref();
  if (opts.enrollment?.startWorker !== false) enrollment.start();
  webhookDeliverer.start();
  const trustEvents = new WebhookTrustEvents(() => trustSources.view(false), (type, data) => webhooks.trustEvent(type, data), instanceName, (err) =>
    log.warn({ err }, "watching the trust sources for webhooks failed"),
  );
  trustEvents.start(30_000);
  receiptRefreshes.start();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      stopPurge();
      clearInterval(housekeeping);
      earKeys.stop();
      trust.stop();
      // after the requests in flight finished: their decodes are let finish too
      await app.close();
      await trustEvents.stop();
      await webhookDeliverer.stop();
      playDecoder.stop();
      await cryptoThreads.close();
      // the refreshes under way are aborted (their keys' leases stand), then waited for
      receiptRefresher.stop();
      await receiptRefreshes.stop();
      await auth.flushLastUsed().catch((err: unknown) => log.warn({ err }, "recording API keys' last use failed"));
      await enrollment.stop();
      await activity.close();
      await audit.close();
      await stores.close();
      // last: the spans of the requests that just finished are exported (bounded wait)
      await tracing?.shutdown();
    })());

  return { app, stores, log, enrollment, activity, playDecoder, receiptRefresher, receiptRefreshes, portal, tracing, audit, close };
}
