import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { AppraisalResult } from "../attestation/types.ts";

/** Prometheus metrics of one process. A registry per instance keeps tests (several apps per process) apart. */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "attestd_http_requests_total",
    help: "HTTP requests by route, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: "attestd_http_request_duration_seconds",
    help: "HTTP request latency by route",
    labelNames: ["route"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly appraisals = new Counter({
    name: "attestd_appraisals_total",
    help: "Blob appraisals by format, status and verdict",
    labelNames: ["format", "status", "verdict"] as const,
    registers: [this.registry],
  });
  readonly appraisalSeconds = new Histogram({
    name: "attestd_appraisal_duration_seconds",
    help: "Time spent in the pure appraisal (parse, chain, signature, policy) by format",
    labelNames: ["format"] as const,
    buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
    registers: [this.registry],
  });

  readonly connectionsRefused = new Counter({
    name: "attestd_connections_refused_total",
    help: "Connections closed on arrival because their address already held --max-connections-per-address",
    registers: [this.registry],
  });
  readonly activityDropped = new Counter({
    name: "attestd_activity_dropped_total",
    help: "Activity-log entries given up on after their retries, by reason (refused, failed, overflow, shutdown); their error ids are in the service log",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly playDecodes = new Counter({
    name: "attestd_play_decodes_total",
    help: "Play Integrity tokens sent to Google's decodeIntegrityToken, by result (decoded, unreachable, account-refused, token-refused, google-error, bad-answer, no-account, shutdown); each failure's detail is a warning in the service log",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  readonly appAttestReceiptRefreshes = new Counter({
    name: "attestd_app_attest_receipt_refreshes_total",
    help: "App Attest receipts sent to Apple's receipt service for a fresh fraud-risk metric, by result (refreshed, not-modified, unreachable, credentials-refused, receipt-refused, apple-error, bad-answer, no-credentials, shutdown); no verdict depends on them; each failure's detail is a warning in the service log",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });

  readonly auditStreamFailures = new Counter({
    name: "attestd_audit_stream_failures_total",
    help: "Audit records that could not be written, by where (store, file, syslog); the change itself was made, and each record is in the service log with the error",
    labelNames: ["sink"] as const,
    registers: [this.registry],
  });

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "attestd_" });
  }

  /** a gauge whose value is read at scrape time */
  private gaugeReading(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  /** `attestd_android_trust_fresh`: alert on 0 (android-key answers CertificateInvalid) */
  trackAndroidTrust(fresh: () => boolean): void {
    this.gaugeReading(
      "attestd_android_trust_fresh",
      "1 when Google's attestation roots and status list are present and fresh, 0 when android-key fails closed",
      () => (fresh() ? 1 : 0),
    );
  }

  /**
   * `attestd_trust_refresh_held_total{source}`: copies of a trust source held back for losing too many entries
   * (--android-max-shrink). Counted by the source itself, which may hold one back before this registry exists.
   */
  trackTrustHeldBack(read: () => { source: string; count: number }[]): void {
    new Counter({
      name: "attestd_trust_refresh_held_total",
      help: "Copies of a trust source (android-roots, android-status) held back because they lost more than --android-max-shrink of the entries in force; the copy in force stays",
      labelNames: ["source"] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { source, count } of read()) this.inc({ source }, count);
      },
    });
  }

  /** `attestd_log_lines_dropped_total`: log lines the process could not write (a full disk, a stalled reader) */
  trackLogDrops(dropped: () => ReadonlyMap<string, number>): void {
    new Counter({
      name: "attestd_log_lines_dropped_total",
      help: "Log lines dropped because stdout could not take them, by reason: the write's errno (ENOSPC: the disk under the log is full) or backlog (a pipe nobody reads, 1 MiB held)",
      labelNames: ["reason"] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [reason, n] of dropped()) this.inc({ reason }, n);
      },
    });
  }

  /**
   * `attestd_trace_spans_dropped_total`: spans the OTLP exporter could not deliver or the queue had no room for
   * (docs/traces.md); registered only while tracing is on
   */
  trackTraceDrops(dropped: () => number): void {
    new Counter({
      name: "attestd_trace_spans_dropped_total",
      help: "Trace spans dropped: the OTLP collector was unreachable, refused or too slow, or the export queue (2048 spans) was full",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(dropped());
      },
    });
  }

  /** `attestd_activity_pending`: activity-log entries in memory, not yet written */
  /** webhook delivery attempts (src/services/webhookDelivery.ts) by what they left: delivered, retry, failed */
  readonly webhookAttempts = new Counter({
    name: "attestd_webhook_attempts_total",
    help: "Webhook delivery attempts by result: delivered (2xx), retry (to be attempted again), failed (given up)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  readonly webhookAttemptSeconds = new Histogram({
    name: "attestd_webhook_attempt_duration_seconds",
    help: "Time one webhook delivery attempt took, answer or not",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  /** `attestd_webhook_outbox_pending`: deliveries not yet delivered or given up, every tenant (read at each scrape) */
  trackWebhookBacklog(pending: () => Promise<number>): void {
    new Gauge({
      name: "attestd_webhook_outbox_pending",
      help: "Webhook deliveries in the outbox still to be delivered (due now or waiting for a retry), every instance's",
      registers: [this.registry],
      async collect() {
        // NaN while the store does not answer: no number rather than a stale one
        this.set(await pending().catch(() => Number.NaN));
      },
    });
  }

  trackActivityBacklog(pending: () => number): void {
    this.gaugeReading(
      "attestd_activity_pending",
      "Activity-log entries held in memory and not yet written (new, or waiting for a retry); a crash loses these",
      pending,
    );
  }

  // prom-client hashes the label set on every inc/observe; a request's labels repeat, so their children are kept
  private readonly requestChildren = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();

  observeRequest(route: string, method: string, status: number, seconds: number): void {
    const k = `${route} ${method} ${status}`;
    let c = this.requestChildren.get(k);
    if (!c) {
      c = {
        count: this.requests.labels({ route, method, status: String(status) }),
        time: this.latency.labels({ route }),
      };
      this.requestChildren.set(k, c);
    }
    c.count.inc();
    c.time.observe(seconds);
  }

  private readonly appraisalChildren = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();

  recordAppraisal(r: AppraisalResult, seconds: number): void {
    const { format } = r;
    const { status, verdict } = r.record;
    const k = `${format} ${status} ${verdict}`;
    let c = this.appraisalChildren.get(k);
    if (!c) {
      c = { count: this.appraisals.labels({ format, status, verdict }), time: this.appraisalSeconds.labels({ format }) };
      this.appraisalChildren.set(k, c);
    }
    c.count.inc();
    c.time.observe(seconds);
  }
}
