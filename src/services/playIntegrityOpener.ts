import { looksLikePlayIntegrityToken, openTokenWithKeys, openWithApps } from "../attestation/encoding/playIntegrityToken.ts";
import type { PlayIntegrityEvidence } from "../attestation/types.ts";
import type { RegisteredPlayApp } from "../domain/playApps.ts";
import type { OpenWithKeys } from "./cryptoThreads.ts";

/** The apps a tenant registered, with their secrets (PlayAppRegistry.appsForAppraisal). */
export interface PlayAppSource {
  appsForAppraisal(tenantId: string): Promise<RegisteredPlayApp[]>;
}

/** Google's decodeIntegrityToken for an app registered with a service account (GooglePlayIntegrityDecoder). */
export interface PlayTokenDecoder {
  decode(token: string, app: RegisteredPlayApp): Promise<PlayIntegrityEvidence>;
}

/**
 * Google is asked for at most this many service-account apps per token: the token does not say which app it is
 * for, and each question is a round trip to Google (with retries) while the device's request waits.
 */
export const MAX_GOOGLE_APPS_ASKED = 4;

/**
 * Opens a Play Integrity token for a tenant before appraisal (the appraisal stays pure and synchronous; opening is
 * async: jose, and Google over the network). The app's response keys are tried first, locally (no round trip), then
 * Google's decoding for the apps registered with a service account. The first that opens it wins; otherwise the
 * evidence says why, preferring `decode-failed` (Google could not be asked: the verdict stays undecided) over
 * `not-opened` (every way that was tried refused the token). Undefined for a body that is not a token's.
 */
export class PlayIntegrityOpener {
  constructor(
    private readonly apps: PlayAppSource,
    private readonly google: PlayTokenDecoder,
    /** opens with one app's response keys: inline by default, or on CryptoThreads' threads */
    private readonly openWithKeys: OpenWithKeys = openTokenWithKeys,
  ) {}

  async open(tenantId: string, blob: Uint8Array): Promise<PlayIntegrityEvidence | undefined> {
    if (!looksLikePlayIntegrityToken(blob)) return undefined;
    const token = Buffer.from(blob).toString("latin1").trim();
    const apps = await this.apps.appsForAppraisal(tenantId);
    const local = await openWithApps(token, apps, this.openWithKeys);
    if (local.opened || local.why === "no-app") return local;
    const byGoogle = apps.filter((a) => a.serviceAccount && !a.responseKeys).slice(0, MAX_GOOGLE_APPS_ASKED);
    if (byGoogle.length === 0) return local;
    const refusals: string[] = [];
    let undecided: PlayIntegrityEvidence | undefined;
    for (const app of byGoogle) {
      const decoded = await this.google.decode(token, app);
      if (decoded.opened) return decoded;
      if (decoded.why === "decode-failed") undecided ??= decoded;
      else refusals.push(`${app.policy.packageName}: ${decoded.reason}`);
    }
    if (undecided) return undecided;
    const withKeys = apps.some((a) => a.responseKeys) ? [local.reason] : [];
    return { opened: false, why: "not-opened", reason: [...withKeys, ...refusals].join("; ") };
  }
}
