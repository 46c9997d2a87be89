import type { Clock } from "../clock.ts";
import type { AppAttestRefreshOutcome, StoredAppAttestKey } from "../domain/iosApps.ts";
import type { AppAttestStore } from "../store/types.ts";
import { refreshDue, type AppleReceiptRefresher, type ReceiptRefresh } from "./appAttestReceiptRefresher.ts";
import type { IosAppRegistry } from "./iosApps.ts";

/** how often every instance looks for keys whose refresh is due (a new key's is also started at once: `nudge`) */
export const REFRESH_SWEEP_MS = 60_000;
/** refreshes under way at once, per instance: Apple's service is not this process's to flood */
export const REFRESH_CONCURRENCY = 2;
/** keys claimed per store round trip */
export const REFRESH_BATCH = 20;
/**
 * A claimed key's due time is moved this far on while its refresh runs, so that another instance does not take it;
 * an instance that dies mid-refresh leaves it to be taken again after this. Above a refresh's worst case (3
 * attempts of the 5 s timeout, with pauses) by far.
 */
export const REFRESH_LEASE_MS = 10 * 60_000;
/** after a failure (network, Apple, credentials), the next try */
export const REFRESH_RETRY_MS = 60 * 60_000;
/** after Apple refused the receipt itself (400, 404): it will likely refuse it again, so seldom */
export const REFRESH_REFUSED_RETRY_MS = 24 * 60 * 60_000;
/** a refreshed receipt without a not-before: the next refresh a day on (Apple's own not-before is a day) */
export const REFRESH_DEFAULT_NEXT_MS = 24 * 60 * 60_000;

export interface ReceiptRefreshesLog {
  warn(obj: object, msg: string): void;
}

export interface ReceiptRefreshesOptions {
  store: Pick<AppAttestStore, "claimAppAttestRefreshes" | "saveAppAttestRefresh">;
  developerKeys: Pick<IosAppRegistry, "developerKeyFor">;
  refresher: Pick<AppleReceiptRefresher, "refresh">;
  clock: Clock;
  log: ReceiptRefreshesLog;
  sweepMs?: number;
  concurrency?: number;
  batch?: number;
}

/**
 * App Attest receipt refresh, served (issue 25): in the background, never in a request's path, each attested key
 * whose app has a developer key has its receipt traded at Apple for a newer one (AppleReceiptRefresher), and the
 * new receipt, its fraud-risk metric and the time are stored with the key (AppAttestStore.saveAppAttestRefresh).
 *
 * When: a new key is due at once (the attestation service `nudge`s after storing a Yes attestation), then when
 * `refreshDue` says Apple can answer with something newer: at the refreshed receipt's not-before (Apple sets it a
 * day on), never after the receipt expired. A failed refresh is tried again an hour later (a day, when Apple
 * refused the receipt itself). Keys are claimed in the store with a lease (`claimAppAttestRefreshes`), so several
 * instances share the work without doing a key twice. At most `concurrency` refreshes run at once per instance;
 * `stop()` ends the sweeps and waits for those under way (the refresher's own `stop()` aborts their requests).
 *
 * No verdict waits for it or depends on it: an assertion's `detail.fraudRisk` reports what is stored
 * (`fraudRiskDetail`).
 */
export class AppAttestReceiptRefreshes {
  private readonly sweepMs: number;
  private readonly concurrency: number;
  private readonly batch: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly o: ReceiptRefreshesOptions) {
    this.sweepMs = o.sweepMs ?? REFRESH_SWEEP_MS;
    this.concurrency = o.concurrency ?? REFRESH_CONCURRENCY;
    this.batch = o.batch ?? REFRESH_BATCH;
  }

  /** sweeps now and every `sweepMs` (the timer does not keep the process alive) */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => this.nudge(), this.sweepMs);
    this.timer.unref();
    this.nudge();
  }

  /** a sweep soon (after a new key was stored); one runs at a time, a nudge during one asks for another after it */
  nudge(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.sweep();
        } while (this.again && !this.stopped);
      } finally {
        this.running = undefined;
      }
    })();
  }

  /** resolves when no sweep runs (tests) */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** no new sweep from now on; waits for the refreshes under way (abort them first with the refresher's stop) */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.idle();
  }

  /** claims the keys due now, batch by batch, and refreshes them, `concurrency` at once; answers how many it did */
  async sweep(): Promise<number> {
    let done = 0;
    while (!this.stopped) {
      const nowMs = this.o.clock.nowMs();
      let keys: StoredAppAttestKey[];
      try {
        keys = await this.o.store.claimAppAttestRefreshes(iso(nowMs), iso(nowMs + REFRESH_LEASE_MS), this.batch);
      } catch (err) {
        this.o.log.warn({ err }, "App Attest receipt refresh: reading the keys due failed; trying again at the next sweep");
        return done;
      }
      let next = 0;
      const worker = async () => {
        while (next < keys.length && !this.stopped) await this.refreshOne(keys[next++]!);
      };
      await Promise.all(Array.from({ length: Math.min(this.concurrency, keys.length) }, worker));
      done += keys.length;
      if (keys.length < this.batch) return done;
    }
    return done;
  }

  private async refreshOne(k: StoredAppAttestKey): Promise<void> {
    try {
      const developerKey = await this.o.developerKeys.developerKeyFor(k.tenantId, k.appId);
      const r = await this.o.refresher.refresh({
        receipt: new Uint8Array(Buffer.from(k.receipt, "base64")),
        appId: k.appId,
        credentialPublicKey: new Uint8Array(Buffer.from(k.publicKey, "base64")),
        environment: k.environment,
        developerKey,
      });
      // at shutdown the lease stands: another instance, or this one restarted, takes the key after it
      if (!r.refreshed && r.result === "shutdown") return;
      await this.o.store.saveAppAttestRefresh(outcomeOf(k, r, this.o.clock.nowMs()));
    } catch (err) {
      // a store that failed, a sealed key that does not open: the lease ends, the key is taken again
      this.o.log.warn({ err, appId: k.appId }, `App Attest receipt refresh for ${k.appId}: storing its outcome failed; tried again after the lease`);
    }
  }
}

/** What one refresh writes to its key: the new receipt and metric when refreshed, and when the next one is due. */
export function outcomeOf(k: Pick<StoredAppAttestKey, "tenantId" | "keyId">, r: ReceiptRefresh, nowMs: number): AppAttestRefreshOutcome {
  const at = iso(nowMs);
  if (r.refreshed) {
    const next = r.record.notBefore ? Math.max(r.record.notBefore.getTime(), nowMs) : nowMs + REFRESH_DEFAULT_NEXT_MS;
    return {
      tenantId: k.tenantId,
      keyId: k.keyId,
      result: r.result,
      reason: null,
      at,
      refreshed: { receipt: Buffer.from(r.receipt).toString("base64"), riskMetric: r.riskMetric ?? null },
      // refreshDue: Apple answers something newer from the not-before on, and nothing once the receipt expired
      refreshDueAt: refreshDue(r.record, next) ? iso(next) : null,
    };
  }
  const wait = r.result === "receipt-refused" ? REFRESH_REFUSED_RETRY_MS : REFRESH_RETRY_MS;
  return { tenantId: k.tenantId, keyId: k.keyId, result: r.result, reason: r.reason, at, refreshDueAt: iso(nowMs + wait) };
}

const INFORMATIONAL = "informational: the verdict does not depend on it";

/**
 * `detail.fraudRisk` of an App Attest verdict: whether Apple's fraud-risk metric is known for the key and when it
 * was read, else why not (not read yet; the last refresh's reason, such as no network). From what is stored with
 * the key; nothing here waits for Apple.
 */
export function fraudRiskDetail(
  key: Pick<StoredAppAttestKey, "riskMetric" | "riskMetricAt" | "lastRefreshResult" | "lastRefreshReason" | "lastRefreshAt"> | undefined,
): Record<string, unknown> {
  if (!key) {
    return {
      known: false,
      note: `not read yet: the key's receipt is refreshed with Apple in the background after its attestation, when the app has a developer key registered; ${INFORMATIONAL}`,
    };
  }
  const last =
    key.lastRefreshResult !== null && key.lastRefreshResult !== "refreshed"
      ? { lastRefresh: { result: key.lastRefreshResult, at: key.lastRefreshAt, reason: key.lastRefreshReason } }
      : {};
  if (key.riskMetric !== null) {
    return {
      known: true,
      riskMetric: key.riskMetric,
      readAt: key.riskMetricAt,
      ...last,
      note: `Apple's fraud-risk metric: ${key.riskMetric} (keys attested for this app on the device in the last 30 days), read ${key.riskMetricAt}; ${INFORMATIONAL}`,
    };
  }
  if (key.lastRefreshReason) return { known: false, ...last, note: `${key.lastRefreshReason}; ${INFORMATIONAL}` };
  if (key.lastRefreshResult === "refreshed") return { known: false, note: `the receipt was refreshed but carries no fraud-risk metric; ${INFORMATIONAL}` };
  return {
    known: false,
    note: `not read yet: the key's receipt is refreshed with Apple in the background, when the app has a developer key registered; ${INFORMATIONAL}`,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
