import { importPKCS8, SignJWT } from "jose";
import type { Clock, Rng } from "../clock.ts";
import {
  verifyAppAttestReceipt,
  RECEIPT_MAX_BYTES,
  type AppAttestReceipt,
  type CredentialReference,
  type ReceiptFailureReason,
} from "../attestation/encoding/appAttestReceipt.ts";
import { boundedFetch, FetchRefused } from "../net/boundedFetch.ts";
import { abortablePause, backoffDelayMs, networkCause, retryAfterMs } from "../net/retry.ts";

/**
 * App Attest receipt refresh (issue 25 item 4; Apple's "Assessing fraud risk"): the receipt kept with an attested
 * key is POSTed (base64) to Apple's receipt service, `{base}/v1/attestationData`, with a developer JWT (ES256,
 * `kid` the key id, `iss` the team id, `iat`) as the `Authorization` header; Apple answers with a new receipt
 * (base64), type RECEIPT, whose field 17 is the fraud-risk metric. The answer is verified like any receipt (Apple
 * Root CA - G3, the app id, the key's credential certificate, type RECEIPT) before anything of it is used.
 *
 * Optional by design: it never throws and nothing fails closed on it. A refresh that did not happen is
 * `{refreshed: false, result, reason}`, the reason in words a tenant may read ("not refreshed: ..."), the
 * operator's detail (URL, status, an excerpt of the answer; never the JWT or the key) a warning. The verdict does
 * not depend on it; `detail` says what happened (`describeRefresh`).
 */

export const APPLE_RECEIPT_URL_PRODUCTION = "https://data.appattest.apple.com";
export const APPLE_RECEIPT_URL_DEVELOPMENT = "https://data-development.appattest.apple.com";
/** Apple's answer is a base64 receipt: 4/3 of the largest receipt, and some whitespace */
const MAX_ANSWER_BYTES = Math.ceil((RECEIPT_MAX_BYTES * 4) / 3) + 64;
const EXCERPT_CHARS = 512;
/** a Retry-After up to this is waited for; a longer one ends the retries (the caller is waiting) */
const MAX_RETRY_AFTER_MS = 2000;

/** The App Attest key a team made in Apple's developer account (a .p8 file: PKCS#8 P-256). */
export interface AppleDeveloperKey {
  /** the 10-character team id (the JWT's `iss`) */
  teamId: string;
  /** the key's 10-character id (the JWT's `kid`) */
  keyId: string;
  /** the .p8 file's text */
  privateKeyPem: string;
}

/**
 * How a refresh ended, for `attestd_app_attest_receipt_refreshes_total{result}`: `refreshed`; `not-modified` (304:
 * before the receipt's not-before time Apple has nothing newer); `unreachable` (network, timeout);
 * `credentials-refused` (401, 403, an unusable key); `receipt-refused` (400, 404 and other 4xx: Apple would not
 * refresh this receipt); `apple-error` (429 or 5xx after the retries); `bad-answer` (a redirect, an oversized
 * answer, or a receipt that does not verify); `no-credentials` (no developer key to sign with); `shutdown`.
 */
export type ReceiptRefreshResult =
  | "refreshed"
  | "not-modified"
  | "unreachable"
  | "credentials-refused"
  | "receipt-refused"
  | "apple-error"
  | "bad-answer"
  | "no-credentials"
  | "shutdown";

export type ReceiptRefresh =
  | {
      refreshed: true;
      result: "refreshed";
      /** the new receipt, to keep with the key in place of the old one */
      receipt: Uint8Array;
      record: AppAttestReceipt;
      /** field 17; undefined when Apple's receipt has none */
      riskMetric?: number;
    }
  | {
      refreshed: false;
      result: Exclude<ReceiptRefreshResult, "refreshed">;
      /** "not refreshed: ...", for a tenant's eyes */
      reason: string;
      /** why Apple's answer was refused, when it was a receipt that did not verify */
      receiptFailure?: ReceiptFailureReason;
    };

/** The key's credential certificate (DER) or its public key (uncompressed point): the new receipt must be for it. */
export type ReceiptRefreshRequest = CredentialReference & {
  /** the receipt kept with the key (the attestation's, or the last refresh's) */
  receipt: Uint8Array;
  /** the key's app id (TEAMID.BUNDLEID); the new receipt must name it */
  appId: string;
  /** the development service for keys attested in development (AAGUID appattestdevelop), else production */
  environment: "production" | "development";
  /** the tenant's Apple developer key; undefined: not refreshed */
  developerKey?: AppleDeveloperKey | undefined;
};

/** pino-compatible */
export interface RefresherLog {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface ReceiptRefresherOptions {
  /** the production service's base (--app-attest-receipt-url) */
  productionUrl: string;
  /** the development service's base (--app-attest-receipt-development-url) */
  developmentUrl: string;
  fetch: typeof fetch;
  /** the JWT's iat, and the time the new receipt is verified at */
  clock: Clock;
  log: RefresherLog;
  /** per request, answer and body together (--app-attest-receipt-timeout-ms) */
  timeoutMs: number;
  /** further attempts after a network failure, a timeout, 429 or 5xx (--app-attest-receipt-retries) */
  retries: number;
  /** the first pause between attempts, doubled after each (capped at 8×); default 200 ms */
  backoffMs?: number;
  rng?: Rng;
  /** trusted receipt roots (DER); default Apple Root CA - G3. Tests: their own CA's. */
  roots?: readonly Uint8Array[];
  onOutcome?: (result: ReceiptRefreshResult) => void;
}

class RefreshFailure extends Error {
  constructor(
    readonly result: Exclude<ReceiptRefreshResult, "refreshed">,
    readonly reason: string,
    message: string,
    readonly fields: Record<string, unknown> = {},
    readonly receiptFailure?: ReceiptFailureReason,
  ) {
    super(message);
  }
}

const SERVICE = "Apple's App Attest receipt service";

export class AppleReceiptRefresher {
  private readonly productionUrl: string;
  private readonly developmentUrl: string;
  private readonly backoffMs: number;
  private readonly aborter = new AbortController();

  constructor(private readonly opts: ReceiptRefresherOptions) {
    this.productionUrl = opts.productionUrl.replace(/\/+$/, "");
    this.developmentUrl = opts.developmentUrl.replace(/\/+$/, "");
    this.backoffMs = opts.backoffMs ?? 200;
  }

  /** Asks Apple for a newer receipt. Never throws. */
  async refresh(req: ReceiptRefreshRequest): Promise<ReceiptRefresh> {
    const base = req.environment === "development" ? this.developmentUrl : this.productionUrl;
    const url = `${base}/v1/attestationData`;
    try {
      if (!req.developerKey) {
        throw new RefreshFailure("no-credentials", "not refreshed: the app has no Apple developer key to ask Apple's receipt service with", "no developer key");
      }
      if (req.receipt.length === 0 || req.receipt.length > RECEIPT_MAX_BYTES) {
        throw new RefreshFailure("receipt-refused", "not refreshed: the kept receipt is empty or too large to be one", `receipt of ${req.receipt.length} bytes not sent`);
      }
      const jwt = await this.developerJwt(req.developerKey);
      const res = await this.request(url, {
        method: "POST",
        // Apple's own examples send the JWT as the header's whole value, without a scheme
        headers: { authorization: jwt, "content-type": "application/octet-stream", accept: "*/*" },
        body: Buffer.from(req.receipt).toString("base64"),
      });
      if (res.status === 304) {
        throw new RefreshFailure("not-modified", "not refreshed: Apple has no newer receipt before the kept one's not-before time", `${url} answered 304`, { url });
      }
      if (res.status !== 200) throw refusal(url, res);
      const bytes = decodeAnswer(res.body);
      if (!bytes) {
        throw new RefreshFailure("bad-answer", `not refreshed: ${SERVICE} gave an answer that is not a base64 receipt`, `the answer of ${url} is not base64`, { url, body: excerpt(res.body) });
      }
      const credential: CredentialReference =
        req.credentialCertificate !== undefined ? { credentialCertificate: req.credentialCertificate } : { credentialPublicKey: req.credentialPublicKey };
      const verified = verifyAppAttestReceipt(bytes, {
        appId: req.appId,
        ...credential,
        at: new Date(this.opts.clock.nowMs()),
        type: "RECEIPT",
        ...(this.opts.roots ? { roots: this.opts.roots } : {}),
      });
      if (!verified.ok) {
        throw new RefreshFailure(
          "bad-answer",
          `not refreshed: the receipt ${SERVICE} answered with does not verify (${verified.reason})`,
          `the receipt of ${url} does not verify: ${verified.message}`,
          { url, receiptFailure: verified.reason },
          verified.reason,
        );
      }
      this.opts.onOutcome?.("refreshed");
      const metric = verified.receipt.riskMetric;
      return { refreshed: true, result: "refreshed", receipt: bytes, record: verified.receipt, ...(metric !== undefined ? { riskMetric: metric } : {}) };
    } catch (e) {
      const failure = asFailure(e);
      if (failure.result === "not-modified" || failure.result === "no-credentials") {
        this.opts.log.debug({ appId: req.appId, result: failure.result, ...failure.fields }, `App Attest receipt refresh for ${req.appId}: ${failure.message}`);
      } else {
        this.opts.log.warn({ appId: req.appId, result: failure.result, ...failure.fields }, `App Attest receipt refresh for ${req.appId} failed: ${failure.message}`);
      }
      this.opts.onOutcome?.(failure.result);
      return {
        refreshed: false,
        result: failure.result,
        reason: failure.reason,
        ...(failure.receiptFailure ? { receiptFailure: failure.receiptFailure } : {}),
      };
    }
  }

  /** Aborts requests and pauses under way (shutdown); refreshes from now on end at once. */
  stop(): void {
    this.aborter.abort();
  }

  /** ES256, kid = key id, iss = team id, iat: what Apple's receipt service takes */
  private async developerJwt(key: AppleDeveloperKey): Promise<string> {
    let signingKey: Awaited<ReturnType<typeof importPKCS8>>;
    try {
      signingKey = await importPKCS8(key.privateKeyPem, "ES256");
    } catch (e) {
      throw new RefreshFailure(
        "credentials-refused",
        "not refreshed: the app's Apple developer key could not be used (a P-256 key in PKCS#8 PEM, Apple's .p8 file, is expected)",
        // jose's message names the key's form, never its bytes
        `the developer key is unusable: ${(e as Error).message}`,
      );
    }
    return new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: key.keyId })
      .setIssuer(key.teamId)
      .setIssuedAt(Math.floor(this.opts.clock.nowMs() / 1000))
      .sign(signingKey);
  }

  /**
   * One request with its bounded retries: a network failure, a timeout, 429 and 5xx are tried again after a pause
   * doubling from `backoffMs` (or Apple's Retry-After, up to 2 s; a longer one ends the retries), up to `retries`
   * times; any other answer is returned at once; a redirect or an oversized answer fails at once.
   */
  private async request(url: string, init: RequestInit): Promise<{ status: number; body: Buffer }> {
    const attempts = this.opts.retries + 1;
    for (let attempt = 1; ; attempt++) {
      if (this.aborter.signal.aborted) throw shutdown();
      let failure: RefreshFailure;
      let retryAfter: number | undefined;
      try {
        const res = await boundedFetch(url, init, {
          fetch: this.opts.fetch,
          timeoutMs: this.opts.timeoutMs,
          maxBytes: MAX_ANSWER_BYTES,
          signal: this.aborter.signal,
        });
        if (res.status !== 429 && res.status < 500) return res;
        failure = refusal(url, res, attempt);
        retryAfter = retryAfterMs(res.headers.get("retry-after"), this.opts.clock.nowMs());
      } catch (e) {
        if (this.aborter.signal.aborted) throw shutdown();
        if (e instanceof FetchRefused) {
          throw new RefreshFailure("bad-answer", `not refreshed: ${SERVICE} ${e.kind === "redirect" ? "answered with a redirect, which attestd refuses" : "gave an oversized answer"}`, `${url}: ${e.message}`, { url });
        }
        const cause = networkCause(e);
        if (!cause) throw e;
        failure = new RefreshFailure(
          "unreachable",
          `not refreshed: ${SERVICE} could not be reached (${cause.public})${attempt > 1 ? ` on ${attempt} attempts` : ""}`,
          `${url} could not be reached: ${cause.text}`,
          { url, attempts: attempt },
        );
      }
      if (attempt >= attempts || (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_MS)) throw failure;
      this.opts.log.debug({ url, attempt, ...failure.fields }, `App Attest receipt refresh: ${failure.message}; trying again`);
      await abortablePause(Math.max(backoffDelayMs(attempt, this.backoffMs, this.opts.rng), retryAfter ?? 0), this.aborter.signal);
    }
  }
}

/**
 * Whether asking Apple now can give a newer receipt: the kept one has not expired, and its not-before, when it has
 * one (refreshed receipts), has passed. Before it Apple answers 304; after expiry it refreshes nothing.
 */
export function refreshDue(kept: Pick<AppAttestReceipt, "notBefore" | "expiresAt">, nowMs: number): boolean {
  return nowMs < kept.expiresAt.getTime() && (kept.notBefore === undefined || nowMs >= kept.notBefore.getTime());
}

/**
 * What `detail` says of a refresh: the metric when there is one, and in every case a sentence that the verdict
 * did not depend on it.
 */
export function describeRefresh(r: ReceiptRefresh): { refreshed: boolean; result: ReceiptRefreshResult; riskMetric?: number; note: string } {
  if (r.refreshed) {
    return {
      refreshed: true,
      result: r.result,
      ...(r.riskMetric !== undefined ? { riskMetric: r.riskMetric } : {}),
      note: r.riskMetric !== undefined
        ? `Apple's fraud-risk metric: ${r.riskMetric} (keys attested for this app on the device in the last 30 days); informational, the verdict does not depend on it`
        : "the receipt was refreshed but carries no fraud-risk metric; the verdict does not depend on it",
    };
  }
  return { refreshed: false, result: r.result, note: `${r.reason}; the verdict does not depend on it` };
}

function refusal(url: string, res: { status: number; body: Buffer }, attempt?: number): RefreshFailure {
  const { status } = res;
  const fields = { url, status, body: excerpt(res.body), ...(attempt ? { attempts: attempt } : {}) };
  const message = `${url} answered HTTP ${status}`;
  const onAttempts = attempt && attempt > 1 ? ` on ${attempt} attempts` : "";
  if (status === 429) return new RefreshFailure("apple-error", `not refreshed: ${SERVICE} is limiting requests (429)${onAttempts}`, message, fields);
  if (status >= 500) return new RefreshFailure("apple-error", `not refreshed: ${SERVICE} failed (${status})${onAttempts}`, message, fields);
  if (status === 401 || status === 403) {
    return new RefreshFailure(
      "credentials-refused",
      `not refreshed: Apple refused the developer key (${status}): the key id, team id or key may be wrong or revoked, or this server's clock may be off`,
      message,
      fields,
    );
  }
  return new RefreshFailure("receipt-refused", `not refreshed: Apple would not refresh the receipt (${status})`, message, fields);
}

/** Apple's answer: the receipt in base64 (standard alphabet), surrounding whitespace ignored */
function decodeAnswer(body: Buffer): Uint8Array | undefined {
  const text = body.toString("latin1").trim();
  if (text.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.length > RECEIPT_MAX_BYTES ? undefined : new Uint8Array(bytes);
}

function shutdown(): RefreshFailure {
  return new RefreshFailure("shutdown", "not refreshed: attestd was shutting down", "aborted at shutdown");
}

function asFailure(e: unknown): RefreshFailure {
  if (e instanceof RefreshFailure) return e;
  // a bug, not Apple: still no verdict depends on it, and the operator sees the stack
  return new RefreshFailure("bad-answer", "not refreshed: an internal error (the operator's log has the detail)", `unexpected error: ${(e as Error)?.message ?? String(e)}`, { err: e });
}

/** an error answer's start, for the operator: printable, short */
function excerpt(body: Buffer): string {
  return body.toString("utf8", 0, Math.min(body.length, EXCERPT_CHARS * 4)).replace(/[\x00-\x1f\x7f]+/g, " ").slice(0, EXCERPT_CHARS);
}
