import path from "node:path";
import type { AndroidPolicy, AndroidTrust } from "../attestation/types.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { loadAndroidTrust, type AndroidTrustSource, type TrustLog } from "./androidTrustSource.ts";

export interface AndroidTrustHandle {
  current(): AndroidTrust;
  /**
   * Readiness checks `android-roots` and `android-status`, each with a detail sentence (the facts, or why it is
   * unusable). They are advisory: the server lists a failing one under `degraded`, never makes /readyz 503 for it.
   */
  health(): { name: string; ok: boolean; detail: string }[];
  stop(): void;
}

export type AndroidTrustConfig = Pick<
  Config,
  "androidRoots" | "androidStatus" | "allowedBootKeys" | "androidMaxAge" | "androidRefresh" | "dataDir"
>;

export interface OpenAndroidTrustOptions {
  /** the network, for tests: a spawned or in-process test server must never reach Google by accident */
  fetch?: typeof fetch;
}

/** How long `serve` waits for Google at start-up before going on with the disk cache (the fetch continues). */
const SERVE_STARTUP_WAIT_MS = 3000;

/**
 * The server's android-key trust: Google's roots built in (or from --android-roots), the status list from
 * --android-status (Google's URL by default), cached in `<dataDir>/android-trust`, refreshed in the background.
 *
 * `start` false is a one-shot use (`attestd appraise`): no refresh timer, and loading waits for a URL up to the
 * fetch timeout instead of the short start-up wait, because that single answer depends on it and there is no
 * later refresh to pick it up.
 */
export async function openAndroidTrust(
  c: AndroidTrustConfig,
  log: TrustLog,
  clock: Clock,
  defaultPolicy: AndroidPolicy,
  start = true,
  extra: OpenAndroidTrustOptions = {},
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
    startupWaitMs: start ? SERVE_STARTUP_WAIT_MS : Infinity,
    ...(extra.fetch ? { fetch: extra.fetch } : {}),
  });
  if (start) source.start();
  return {
    current: () => source.current(),
    health: () => {
      const h = source.health();
      return [
        { name: "android-roots", ok: h.roots.state === "ok", detail: h.roots.summary },
        { name: "android-status", ok: h.status.state === "ok", detail: h.status.summary },
      ];
    },
    stop: () => source.stop(),
  };
}
