import path from "node:path";
import type { ReferenceValue, TrustConfig } from "../attestation/types.ts";
import { vendorTrustProblems } from "../attestation/chain/vendorChain.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { ReferenceValueStore } from "../store/types.ts";
import { loadAndroidPolicies, type AndroidPolicies } from "./androidPolicyFile.ts";
import type { TenantPolicyVersion } from "../domain/tenantPolicy.ts";
import { appAttestTrustFacts, loadAppAttestTrust, type AppAttestTrustFacts } from "./appAttestRoots.ts";
import { loadAndroidTrust, type AndroidTrustHealth } from "./androidTrustSource.ts";
import type { SourceHealth, TrustLog } from "./refreshingSource.ts";
import { tenantTrust, type TrustTenant } from "./tenantTrust.ts";
import { VendorTrustSource } from "./vendorTrustSource.ts";

/**
 * Trust from the settings, built in one place for `attestd serve` and `attestd appraise`: the vendor trust, the
 * android-key trust (cached in `<dataDir>/android-trust`), the android policies of --android-policy and their
 * per-tenant combination, with what the server reports of them (readiness, the gauge, start-up warnings) and one
 * stop(). See src/trust/README.md.
 */

export type TrustSettings = Pick<
  Config,
  | "vendorRoots"
  | "revocations"
  | "referenceValues"
  | "androidRoots"
  | "appAttestRoots"
  | "androidStatus"
  | "allowedBootKeys"
  | "androidMaxAge"
  | "androidRefresh"
  | "androidMaxShrink"
  | "androidPolicy"
  | "androidMinPatchLevel"
  | "dataDir"
>;

export interface OpenTrustOptions {
  log: TrustLog;
  clock: Clock;
  /** the network the Android sources use (tests inject one: no test may reach Google's status list) */
  fetch?: typeof fetch;
  /**
   * A serving process: refresh timers run, and a URL is waited for SERVE_STARTUP_WAIT_MS at start-up while the
   * fetch goes on in the background. False for a one-shot (`attestd appraise`): no timers, and loading waits for a
   * URL up to the fetch timeout, because that single answer depends on it and no later refresh would pick it up.
   */
  serving: boolean;
  /** where `attestd refvals import` puts reference values; undefined (the offline CLI): the file's alone */
  referenceValues?: ReferenceValueStore;
}

export interface TrustCheck {
  name: string;
  ok: boolean;
  /** what anyone may be told: ok, stale, missing, or held (a new copy held back, the copy in force stays) */
  state: "ok" | "stale" | "missing" | "held";
  /** operators only: the sentence, which names the source's URL or file */
  detail: string;
}

export interface Trust {
  /**
   * The trust to appraise a tenant's blob with now: its own reference values and android-key policy (its stored
   * policy version when it has one, docs/policy.md) over the global ones; the same object while nothing changes
   * (keeps the caches warm).
   */
  forTenant(tenant: TrustTenant, stored?: TenantPolicyVersion): TrustConfig;
  /** the file's policies (--android-policy): the default under every tenant's, and the sections that seed the store */
  androidPolicies: AndroidPolicies;
  /**
   * Re-reads the stored reference values now (they are re-read every 10 s anyway): the instance that stored a
   * change applies it before answering, other instances within 10 s.
   */
  refreshReferenceValues(): Promise<void>;
  /** the sets of --reference-values (global; a stored global set of the same pair replaces one) */
  fileReferenceValues: readonly ReferenceValue[];
  /** whether --android-policy has an entry for this tenant (otherwise its default applies) */
  hasTenantPolicy(name: string): boolean;
  /**
   * The checks `android-roots` and `android-status`, each with its sentence (the facts, or why it is unusable), and
   * the names of the failing ones. Advisory: /readyz lists those under `degraded`, never answers 503 for them.
   */
  readiness(): { checks: TrustCheck[]; degraded: string[] };
  /** per refreshing source (android-roots, android-status), the copies held back since start: attestd_trust_refresh_held_total */
  heldBackCounts(): { source: string; count: number }[];
  /** android-key can give Success now (roots and status list present and fresh): the attestd_android_trust_fresh gauge */
  androidUsable(): boolean;
  /** the Google roots and status list as they stand: state, age, last read, last error (the portal's trust page) */
  androidHealth(): AndroidTrustHealth;
  /** one refresh of the Android sources now, the one the timer makes (or the one under way); never throws */
  refreshAndroid(): Promise<void>;
  /** configured vendor roots that cannot anchor a chain, one sentence each (appraisal skips them), for the start-up log */
  vendorProblems: readonly string[];
  /** no --vendor-roots: every vendor blob will be CertificateInvalid, for the start-up log */
  noVendorRoots: boolean;
  /** the vendor half as the portal's trust page shows it: the files named, what they hold (read once, at start-up) */
  vendorFacts: VendorTrustFacts;
  /** App Attest's root in force (Apple's, built in, or --app-attest-roots) and whether Apple's receipts are judged */
  appAttestFacts: AppAttestTrustFacts;
  /** stops the refresh timers and aborts a fetch under way (nothing to stop when not serving) */
  stop(): void;
}

export interface VendorTrustFacts {
  /** --vendor-roots, when given; `roots` certificates were read from it, `problems` of them cannot anchor a chain */
  rootsFile?: string;
  roots: number;
  problems: readonly string[];
  /** --revocations, when given, with its entries */
  revocationsFile?: string;
  revocations: number;
}

/** How long `serve` waits for Google at start-up before going on with the disk cache (the fetch continues). */
const SERVE_STARTUP_WAIT_MS = 3000;
/** How often `serve` re-reads the reference values, so `attestd refvals import` reaches a running server. */
const REFERENCE_VALUES_REFRESH_MS = 10_000;

/**
 * Opens every trust source the settings name. Throws, with one line, only for local configuration: a vendor trust
 * file, the policy file, the boot-key allow-list, a damaged built-in roots file. Android roots and status-list
 * problems never throw: android-key fails closed, saying why, and readiness() reports them.
 */
export async function openTrust(c: TrustSettings, opts: OpenTrustOptions): Promise<Trust> {
  const { log, clock, serving } = opts;
  const vendor = await VendorTrustSource.open(c, opts.referenceValues);
  const policies = loadAndroidPolicies(c.androidPolicy, c.androidMinPatchLevel);
  const appAttest = loadAppAttestTrust(c.appAttestRoots);
  const android = await loadAndroidTrust({
    ...(c.androidRoots ? { rootsSource: c.androidRoots } : {}),
    ...(c.androidStatus ? { statusSource: c.androidStatus } : {}),
    ...(c.allowedBootKeys ? { allowedBootKeysFile: c.allowedBootKeys } : {}),
    cacheDir: path.join(c.dataDir, "android-trust"),
    maxAgeSeconds: c.androidMaxAge,
    maxShrinkPercent: c.androidMaxShrink,
    refreshSeconds: c.androidRefresh,
    policy: policies.default,
    now: () => new Date(clock.nowMs()),
    log,
    startupWaitMs: serving ? SERVE_STARTUP_WAIT_MS : Infinity,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  if (serving) {
    vendor.start(REFERENCE_VALUES_REFRESH_MS, (err) => log.warn({ err }, "reference values refresh failed"));
    android.start();
  }
  return {
    forTenant: tenantTrust(vendor, () => android.current(), policies, appAttest),
    refreshReferenceValues: () => vendor.refresh(),
    fileReferenceValues: vendor.fileValues,
    androidPolicies: policies,
    hasTenantPolicy: (name) => policies.tenants.has(name),
    readiness() {
      const h = android.health();
      const check = (name: string, s: SourceHealth): TrustCheck => {
        // a held-back copy leaves android-key usable (the copy in force stays) but wants the operator's eye
        const state = s.state !== "ok" ? s.state : s.heldBack ? "held" : "ok";
        return { name, ok: state === "ok", state, detail: s.summary };
      };
      const checks = [check("android-roots", h.roots), check("android-status", h.status)];
      return { checks, degraded: checks.filter((x) => !x.ok).map((x) => x.name) };
    },
    heldBackCounts() {
      const h = android.health();
      return [
        { source: "android-roots", count: h.roots.heldTotal },
        { source: "android-status", count: h.status.heldTotal },
      ].flatMap((x) => (x.count === undefined ? [] : [{ source: x.source, count: x.count }]));
    },
    androidUsable: () => android.current().fresh,
    androidHealth: () => android.health(),
    refreshAndroid: () => android.refresh(),
    vendorProblems: vendorTrustProblems(vendor.get()),
    noVendorRoots: vendor.get().rootsDer.length === 0,
    vendorFacts: {
      ...(c.vendorRoots ? { rootsFile: c.vendorRoots } : {}),
      roots: vendor.get().rootsDer.length,
      problems: vendorTrustProblems(vendor.get()),
      ...(c.revocations ? { revocationsFile: c.revocations } : {}),
      revocations: vendor.get().revocations.size,
    },
    appAttestFacts: appAttestTrustFacts(c.appAttestRoots, appAttest),
    stop() {
      vendor.stop();
      android.stop();
    },
  };
}
