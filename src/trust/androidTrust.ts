import path from "node:path";
import type { AndroidPolicy, AndroidTrust } from "../attestation/types.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { loadAndroidTrust, type AndroidTrustSource, type TrustLog } from "./androidTrustSource.ts";

export interface AndroidTrustHandle {
  current(): AndroidTrust;
  /** readiness checks: failing only when a source is configured and missing or stale */
  health(): { name: string; ok: boolean; detail?: string }[];
  stop(): void;
}

export type AndroidTrustConfig = Pick<
  Config,
  "androidRoots" | "androidStatus" | "allowedBootKeys" | "androidMaxAge" | "androidRefresh" | "dataDir"
>;

/**
 * The server's android-key trust: Google's roots and status list from the configured files or URLs, cached in
 * `<dataDir>/android-trust`, refreshed in the background. Nothing configured → android-key appraisal fails closed
 * and /readyz says so without failing (a deployment may use the vendor format only); once either source is
 * configured, /readyz fails while either is missing or stale.
 */
export async function openAndroidTrust(
  c: AndroidTrustConfig,
  log: TrustLog,
  clock: Clock,
  defaultPolicy: AndroidPolicy,
  start = true,
): Promise<AndroidTrustHandle> {
  const source: AndroidTrustSource = await loadAndroidTrust({
    ...(c.androidRoots ? { rootsSource: c.androidRoots } : {}),
    ...(c.androidStatus ? { statusSource: c.androidStatus } : {}),
    ...(c.allowedBootKeys ? { allowedBootKeysFile: c.allowedBootKeys } : {}),
    cacheDir: path.join(c.dataDir, "android-trust"),
    maxAgeSeconds: c.androidMaxAge,
    refreshSeconds: c.androidRefresh,
    policy: defaultPolicy,
    now: () => new Date(clock.nowMs()),
    log,
  });
  if (start) source.start();
  const configured = Boolean(c.androidRoots || c.androidStatus);
  return {
    current: () => source.current(),
    health: () => {
      const h = source.health();
      if (!configured) {
        return [{ name: "android-trust", ok: true, detail: "not configured: android-key appraisal fails closed" }];
      }
      // Once android-key is configured, both sources are needed: without either, every android-key blob fails closed.
      const part = (name: string, s: { state: string; configured: boolean; lastError?: string; ageSeconds?: number }) => ({
        name,
        ok: s.configured && s.state === "ok",
        detail: s.configured
          ? `${s.state}${s.ageSeconds !== undefined ? `, ${s.ageSeconds} s old` : ""}${s.lastError ? `, last error: ${s.lastError}` : ""}`
          : "not configured: android-key appraisal fails closed",
      });
      return [part("android-roots", h.roots), part("android-status", h.status)];
    },
    stop: () => source.stop(),
  };
}
