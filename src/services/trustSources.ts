import type { HeldBack, SourceHealth } from "../trust/refreshingSource.ts";
import type { Trust } from "../trust/openTrust.ts";

/** One trust source as the portal shows it. */
export interface TrustSourceView {
  name: "android-roots" | "android-status";
  label: string;
  state: SourceHealth["state"];
  /** whether the operator named a source (the built-in roots are not configured, and never stale) */
  configured: boolean;
  origin?: SourceHealth["origin"];
  /** when the data in use was obtained from its source */
  fetchedAt?: string;
  ageSeconds?: number;
  /** the last read of the source, successful or not */
  lastAttempt?: string;
  /** why the source is not simply fine, naming no URL, file or directory (everyone) */
  reason?: string;
  /** a new copy held back for losing too many entries; the copy in force stays (everyone: counts and times only) */
  heldBack?: HeldBack;
  /** certificates (roots) or entries (status list) */
  items?: number;
  /** a read is under way */
  pending?: boolean;
  /** operators only: the file or URL, the last error and the whole sentence (each may name the server's paths or URLs) */
  source?: string;
  lastError?: string;
  summary?: string;
}

export interface TrustSourcesView {
  /** android-key can answer Success now: both sources present and fresh */
  usable: boolean;
  maxAgeSeconds: number;
  sources: TrustSourceView[];
}

const LABELS = { "android-roots": "Google attestation roots", "android-status": "Google attestation status list" } as const;

/**
 * The trust sources' state for the portal (every user's overview, the operators' trust page), and "refresh now",
 * which is the refresh the timer makes (src/trust/README.md). Over the running service's Trust, so it reports what
 * the appraisal uses.
 */
export class TrustSources {
  constructor(private readonly trust: Pick<Trust, "androidHealth" | "refreshAndroid">) {}

  view(forOperator: boolean): TrustSourcesView {
    const h = this.trust.androidHealth();
    const one = (name: TrustSourceView["name"], s: SourceHealth): TrustSourceView => {
      const v: TrustSourceView = { name, label: LABELS[name], state: s.state, configured: s.configured };
      for (const k of ["origin", "fetchedAt", "ageSeconds", "lastAttempt", "reason", "heldBack", "items", "pending"] as const) {
        if (s[k] !== undefined) (v as unknown as Record<string, unknown>)[k] = s[k];
      }
      if (forOperator) {
        if (s.source !== undefined) v.source = s.source;
        if (s.lastError !== undefined) v.lastError = s.lastError;
        v.summary = s.summary;
      }
      return v;
    };
    return { usable: h.ok, maxAgeSeconds: h.maxAgeSeconds, sources: [one("android-roots", h.roots), one("android-status", h.status)] };
  }

  /** refreshes now (or joins the refresh under way) and answers the state after it */
  async refresh(): Promise<TrustSourcesView> {
    await this.trust.refreshAndroid();
    return this.view(true);
  }
}
