import { TRUST_STATES_OK, type TrustState } from "../domain/trustStates.ts";
import type { HeldBack, SourceHealth } from "../trust/refreshingSource.ts";
import type { Trust } from "../trust/openTrust.ts";
import type { PlayDecodeResult } from "./playIntegrityDecoder.ts";

/**
 * The sources, in the order the pages list them. A new source is one more name here and one more reader in
 * TrustSources.view: the pages, the API schema and the states need nothing else.
 */
export const TRUST_SOURCE_NAMES = [
  "android-roots",
  "android-status",
  "vendor-roots",
  "vendor-revocations",
  "play-integrity",
  "app-attest-roots",
  "app-attest-receipt-root",
] as const;
export type TrustSourceName = (typeof TRUST_SOURCE_NAMES)[number];

/** One trust source as the portal shows it. */
export interface TrustSourceView {
  name: TrustSourceName;
  label: string;
  /** the one word (src/domain/trustStates.ts) */
  state: TrustState;
  /** what depends on it, in a few words ("android-key appraisal") */
  usedBy: string;
  /** whether the operator named a source (the built-in roots are not configured, and never stale) */
  configured: boolean;
  origin?: SourceHealth["origin"];
  /** when the data in use was obtained from its source */
  fetchedAt?: string;
  ageSeconds?: number;
  /** the last read of the source (Play Integrity: the last call to Google), successful or not */
  lastAttempt?: string;
  /** why the source is not simply fine, naming no URL, file or directory (everyone) */
  reason?: string;
  /** a new copy held back for losing too many entries; the copy in force stays (everyone: counts and times only) */
  heldBack?: HeldBack;
  /** certificates (roots), entries (status list, revocations), apps with a service account (Play Integrity) */
  items?: number;
  /** what `items` counts, e.g. "certificates" */
  itemsAre?: string;
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

/** What the server knows of Google-side Play Integrity decoding (src/services/playIntegrityDecoder.ts). */
export interface PlayDecodingFacts {
  oauthUrl: string;
  apiUrl: string;
  /** registered Play apps, of every tenant, that open their tokens through Google with a service account */
  appsWithServiceAccount(): Promise<number>;
}

const LABELS: Record<TrustSourceName, string> = {
  "android-roots": "Google attestation roots",
  "android-status": "Google attestation status list",
  "vendor-roots": "Vendor roots",
  "vendor-revocations": "Vendor revocations",
  "play-integrity": "Play Integrity decoding by Google",
  "app-attest-roots": "Apple App Attestation root",
  "app-attest-receipt-root": "Apple receipt root (Apple Root CA - G3)",
};

/**
 * Decodes that say Google (or the way to it) is not working, as opposed to one token Google refused (that is the
 * token's doing) or an app without an account.
 */
const PLAY_FAILURES: ReadonlySet<PlayDecodeResult> = new Set(["unreachable", "account-refused", "google-error", "bad-answer"]);
const PLAY_FAILURE_WORDS: Partial<Record<PlayDecodeResult, string>> = {
  unreachable: "Google could not be reached (network or timeout)",
  "account-refused": "Google refused a service account",
  "google-error": "Google answered with an error (429 or 5xx) after the retries",
  "bad-answer": "Google's answer was not usable",
};

/** how long the count of apps with a service account is reused (it is read from every tenant) */
const APPS_COUNT_MS = 30_000;

/** the refreshing sources' state as one word: held wins over current, as /readyz says it (openTrust.readiness) */
export function androidState(s: SourceHealth): TrustState {
  if (s.state !== "ok") return s.state;
  if (s.heldBack) return "held";
  return s.origin === "built-in" ? "built in" : "current";
}

/**
 * The trust sources' state for the portal (every user's overview, the operators' trust page), and "refresh now",
 * which is the refresh the timer makes (src/trust/README.md). Over the running service's Trust, so it reports what
 * the appraisal uses.
 */
export class TrustSources {
  private lastDecode: { at: string; result: PlayDecodeResult } | undefined;
  private lastDecodeFailure: { at: string; result: PlayDecodeResult } | undefined;
  private appsCount: { at: number; count: number } | undefined;

  constructor(
    private readonly trust: Pick<Trust, "androidHealth" | "refreshAndroid" | "vendorFacts" | "appAttestFacts">,
    private readonly play?: PlayDecodingFacts,
    private readonly now: () => number = Date.now,
  ) {}

  /** the decoder's outcomes (server.ts wires its onOutcome here): the Play Integrity source's last call to Google */
  notePlayDecode(result: PlayDecodeResult): void {
    if (result === "no-account" || result === "shutdown") return;
    const at = new Date(this.now()).toISOString();
    this.lastDecode = { at, result };
    if (PLAY_FAILURES.has(result)) this.lastDecodeFailure = { at, result };
  }

  async view(forOperator: boolean): Promise<TrustSourcesView> {
    const h = this.trust.androidHealth();
    const android = (name: "android-roots" | "android-status", s: SourceHealth): TrustSourceView => {
      const v: TrustSourceView = { name, label: LABELS[name], state: androidState(s), usedBy: "android-key appraisal", configured: s.configured };
      for (const k of ["origin", "fetchedAt", "ageSeconds", "lastAttempt", "reason", "heldBack", "items", "pending"] as const) {
        if (s[k] !== undefined) (v as unknown as Record<string, unknown>)[k] = s[k];
      }
      v.itemsAre = name === "android-roots" ? "certificates" : "entries";
      if (forOperator) {
        if (s.source !== undefined) v.source = s.source;
        if (s.lastError !== undefined) v.lastError = s.lastError;
        v.summary = s.summary;
      }
      return v;
    };
    const sources = [android("android-roots", h.roots), android("android-status", h.status), ...this.vendor(forOperator), await this.playIntegrity(forOperator), ...this.appAttest(forOperator)];
    return { usable: h.ok, maxAgeSeconds: h.maxAgeSeconds, sources };
  }

  /** --vendor-roots and --revocations: files read once, at start-up (a change needs a restart) */
  private vendor(forOperator: boolean): TrustSourceView[] {
    const f = this.trust.vendorFacts;
    const usable = f.roots - f.problems.length;
    const rootsState: TrustState = !f.rootsFile ? "missing" : usable > 0 ? "current" : "failed";
    const roots: TrustSourceView = {
      name: "vendor-roots",
      label: LABELS["vendor-roots"],
      state: rootsState,
      usedBy: "vendor-format appraisal",
      configured: f.rootsFile !== undefined,
      items: f.roots,
      itemsAre: "certificates",
      ...(rootsState === "missing"
        ? { reason: "no vendor roots are configured: every vendor-format blob is CertificateInvalid" }
        : rootsState === "failed"
          ? { reason: "no configured vendor root can anchor a chain: every vendor-format blob is CertificateInvalid" }
          : f.problems.length
            ? { reason: `${f.problems.length} of ${f.roots} configured roots cannot anchor a chain and are skipped` }
            : {}),
    };
    const revocations: TrustSourceView = {
      name: "vendor-revocations",
      label: LABELS["vendor-revocations"],
      state: f.revocationsFile ? "current" : "not set",
      usedBy: "vendor-format appraisal",
      configured: f.revocationsFile !== undefined,
      items: f.revocations,
      itemsAre: "entries",
      ...(f.revocationsFile ? {} : { reason: "no revocation list is configured: no vendor certificate is treated as revoked" }),
    };
    if (forOperator) {
      if (f.rootsFile) roots.source = f.rootsFile;
      if (f.problems.length) roots.lastError = f.problems.join("; ");
      roots.summary = f.rootsFile
        ? `${f.roots} certificates read from ${f.rootsFile} at start-up${f.problems.length ? `; ${f.problems.length} cannot anchor a chain` : ""}`
        : "no --vendor-roots: every vendor-format blob is CertificateInvalid";
      if (f.revocationsFile) revocations.source = f.revocationsFile;
      revocations.summary = f.revocationsFile ? `${f.revocations} entries read from ${f.revocationsFile} at start-up` : "no --revocations";
    }
    return [roots, revocations];
  }

  /**
   * App Attest's trust, read once at start-up (src/trust/appAttestRoots.ts): the root the attestations chain to
   * (Apple's, built in, or --app-attest-roots), and Apple Root CA - G3, which Apple's receipts chain to and which
   * is used only while Apple's root is the one in force (appAttestReceiptsChecked).
   */
  private appAttest(forOperator: boolean): TrustSourceView[] {
    const f = this.trust.appAttestFacts;
    const own = f.rootsFile !== undefined;
    const roots: TrustSourceView = {
      name: "app-attest-roots",
      label: LABELS["app-attest-roots"],
      state: own ? "current" : "built in",
      usedBy: "app-attest appraisal",
      configured: own,
      ...(own ? {} : { origin: "built-in" as const }),
      items: f.subjects.length,
      itemsAre: "certificates",
      ...(own ? { reason: "--app-attest-roots replaces Apple's App Attestation root: App Attest verdicts vouch for keys of that PKI, not Apple's" } : {}),
    };
    const receipts = f.receiptsChecked;
    const receiptRoot: TrustSourceView = {
      name: "app-attest-receipt-root",
      label: LABELS["app-attest-receipt-root"],
      state: receipts ? "built in" : "not set",
      usedBy: "App Attest receipt checks (only while Apple's App Attestation root is in force)",
      configured: false,
      ...(receipts
        ? { origin: "built-in" as const, items: 1, itemsAre: "certificates" }
        : { reason: "Apple's App Attestation root is replaced (--app-attest-roots): those attestations' receipts are not Apple's, so they are kept with the key, not checked (receipt: not-checked)" }),
    };
    if (forOperator) {
      roots.source = f.rootsFile ?? f.builtInFile;
      roots.summary = own
        ? `${f.subjects.length} certificates read from ${f.rootsFile} at start-up: ${f.subjects.join("; ")}`
        : `Apple's App Attestation Root CA is built in, its fingerprint checked at start-up: ${f.subjects.join("; ")}`;
      // a constant of the pure appraisal, not a file: where it lives in the code
      if (receipts) receiptRoot.source = "attestd's code (src/attestation/chain/appleRootCaG3.ts)";
      receiptRoot.summary = receipts
        ? "Apple Root CA - G3 is built in, its fingerprint checked at start-up: the receipt in every App Attest attestation is checked against it (the receipt refresh with Apple is not served yet)"
        : "not used: with --app-attest-roots no receipt is checked (docs/app-attest.md, \"Where it applies\")";
    }
    return [roots, receiptRoot];
  }

  /**
   * Google-side decoding of Play Integrity tokens: "not set" while no app uses a service account (apps with their
   * own response keys are opened here, without Google); "failed" when the last call to Google failed; else current.
   */
  private async playIntegrity(forOperator: boolean): Promise<TrustSourceView> {
    const apps = await this.appsWithServiceAccount();
    const failedLast = this.lastDecode !== undefined && PLAY_FAILURES.has(this.lastDecode.result);
    const state: TrustState = apps === 0 ? "not set" : failedLast ? "failed" : "current";
    const v: TrustSourceView = {
      name: "play-integrity",
      label: LABELS["play-integrity"],
      state,
      usedBy: "play-integrity tokens of apps registered with a service account",
      configured: apps > 0,
      ...(this.lastDecode ? { lastAttempt: this.lastDecode.at } : {}),
      ...(state === "not set"
        ? { reason: "no registered Play app uses a service account: tokens are opened with the apps' own response keys, without Google" }
        : failedLast
          ? { reason: `the last decode failed: ${PLAY_FAILURE_WORDS[this.lastDecode!.result]}; such tokens stay undecided until Google answers` }
          : {}),
    };
    if (forOperator) {
      v.items = apps;
      v.itemsAre = "apps with a service account";
      if (this.play) v.source = `${this.play.oauthUrl} (tokens) · ${this.play.apiUrl} (decodeIntegrityToken)`;
      if (this.lastDecodeFailure) v.lastError = `${PLAY_FAILURE_WORDS[this.lastDecodeFailure.result]} (${this.lastDecodeFailure.at})`;
      v.summary =
        apps === 0
          ? "no app of any tenant opens its tokens through Google"
          : `${apps} app(s) open their tokens through Google; ${this.lastDecode ? `the last decode (${this.lastDecode.at}) ${failedLast ? "failed" : "worked"}` : "none decoded since start"}`;
    }
    return v;
  }

  private async appsWithServiceAccount(): Promise<number> {
    if (!this.play) return 0;
    const now = this.now();
    if (this.appsCount && now - this.appsCount.at < APPS_COUNT_MS) return this.appsCount.count;
    const count = await this.play.appsWithServiceAccount();
    this.appsCount = { at: now, count };
    return count;
  }

  /** a registration changed: the next view counts the apps again */
  forgetAppsCount(): void {
    this.appsCount = undefined;
  }

  /** refreshes now (or joins the refresh under way) and answers the state after it */
  async refresh(): Promise<TrustSourcesView> {
    await this.trust.refreshAndroid();
    this.forgetAppsCount();
    return this.view(true);
  }
}

/** whether what depends on the source works in this state */
export const stateWorks = (s: TrustState): boolean => TRUST_STATES_OK.includes(s);
