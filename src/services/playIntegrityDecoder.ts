import { createHash } from "node:crypto";
import { importPKCS8, SignJWT } from "jose";
import type { PlayIntegrityEvidence } from "../attestation/types.ts";
import type { Clock, Rng } from "../clock.ts";
import type { GoogleServiceAccount, RegisteredPlayApp } from "../domain/playApps.ts";
import { boundedFetch, FetchRefused } from "../net/boundedFetch.ts";
import { abortablePause, backoffDelayMs, networkCause, retryAfterMs } from "../net/retry.ts";

/**
 * Google-side decoding of Play Integrity tokens (issue 23; mobile-attestation.md, "Per-tenant configuration"): for
 * an app whose response keys Google manages, the tenant registers a service account; attestd exchanges a JWT signed
 * with its key for an access token (OAuth 2.0 JWT bearer grant, RFC 7523, as Google does it) and asks
 * `decodeIntegrityToken` for the app's package to open the token. The answer's `tokenPayloadExternal` is the
 * payload the appraisal judges, as if attestd had decrypted and verified it itself.
 *
 * It never throws for Google: a token Google read and refused (400, 404) is `{opened: false, why: "not-opened",
 * reason}`, every other failure `why: "decode-failed"` (the verdict stays undecided), the reason in words a tenant
 * may read (no URL, no key material), the operator's detail (URL, status, body excerpt) in a warning.
 */

/** the scope of decodeIntegrityToken */
export const PLAY_INTEGRITY_SCOPE = "https://www.googleapis.com/auth/playintegrity";
const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** Google accepts assertions valid for at most an hour */
const ASSERTION_LIFETIME_S = 3600;
/** an access token is replaced this long before Google says it ends, so none is sent as it expires in flight */
const EXPIRY_MARGIN_S = 60;
/** A decoded payload is a few KiB; anything near this is not one. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** what a warning quotes of an error answer's body */
const EXCERPT_CHARS = 512;
/**
 * A Retry-After up to this is waited for (instead of the backoff, if longer); a longer one ends the retries at once:
 * the tenant's request is waiting, and Google has said that it will not be served sooner.
 */
const MAX_RETRY_AFTER_MS = 2000;
/** a longer token is not a Play Integrity token and is not sent to Google */
const MAX_TOKEN_CHARS = 64 * 1024;

/**
 * How one decode ended, for `attestd_play_decodes_total{result}`: `decoded`; `unreachable` (network, timeout);
 * `account-refused` (Google refused the service account: 401, 403, a refused grant); `token-refused` (400, 404: the
 * token or package); `google-error` (429 or 5xx after the retries); `bad-answer` (a redirect, an oversized or
 * malformed answer); `no-account` (the app has no service account); `shutdown`.
 */
export type PlayDecodeResult =
  | "decoded"
  | "unreachable"
  | "account-refused"
  | "token-refused"
  | "google-error"
  | "bad-answer"
  | "no-account"
  | "shutdown";

/** pino-compatible */
export interface DecoderLog {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface PlayIntegrityDecoderOptions {
  /** the OAuth 2.0 token endpoint (--play-oauth-url, whose default is Google's); also the assertion's `aud` */
  oauthUrl: string;
  /** the Play Integrity API's base (--play-api-url, whose default is Google's) */
  apiUrl: string;
  /** the network (tests: a stand-in on 127.0.0.1, or the offline fetch) */
  fetch: typeof fetch;
  /** the assertion's iat/exp and the access tokens' expiry */
  clock: Clock;
  log: DecoderLog;
  /** per request, answer and body together (--play-decode-timeout-ms) */
  timeoutMs: number;
  /** further attempts after a network failure, a timeout, 429 or 5xx (--play-decode-retries) */
  retries: number;
  /** the first pause between attempts, doubled after each (capped at 8×); default 200 ms */
  backoffMs?: number;
  /**
   * spreads each pause over its upper half, so the decodes that met the same outage do not come back in step;
   * without one the pauses are exact (tests)
   */
  rng?: Rng;
  /** largest answer accepted; default 64 KiB */
  maxAnswerBytes?: number;
  /** told how every decode ended (the metrics counter) */
  onOutcome?: (result: PlayDecodeResult) => void;
}

interface AccessToken {
  token: string;
  /** clock ms after which it is not used any more (already short of Google's expiry by the margin) */
  renewAtMs: number;
}

/** A failure on the way, said twice: `reason` for the tenant, `message` and `fields` for the operator's log. */
class DecodeFailure extends Error {
  constructor(
    readonly result: PlayDecodeResult,
    readonly reason: string,
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** which of Google's two services a request went to, as a tenant reads it */
type Service = { name: string; what: "token" | "decode" };
const SIGN_IN: Service = { name: "Google's sign-in service", what: "token" };
const PLAY_INTEGRITY: Service = { name: "Google's Play Integrity service", what: "decode" };

export class GooglePlayIntegrityDecoder {
  private readonly oauthUrl: string;
  private readonly apiUrl: string;
  private readonly backoffMs: number;
  private readonly maxAnswerBytes: number;
  /** per service account (its email and key): the access token in hand */
  private readonly tokens = new Map<string, AccessToken>();
  /** per service account: the grant under way, which concurrent decodes share */
  private readonly grants = new Map<string, Promise<AccessToken>>();
  private readonly aborter = new AbortController();

  constructor(private readonly opts: PlayIntegrityDecoderOptions) {
    this.oauthUrl = opts.oauthUrl;
    this.apiUrl = opts.apiUrl.replace(/\/+$/, "");
    this.backoffMs = opts.backoffMs ?? 200;
    this.maxAnswerBytes = opts.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  }

  /**
   * Opens `token` with Google for `app`'s package and service account. Never throws: a failure of any kind is
   * `decode-failed` with its reason, and a warning with the detail.
   */
  async decode(token: string, app: RegisteredPlayApp): Promise<PlayIntegrityEvidence> {
    const packageName = app.policy.packageName;
    const account = app.serviceAccount;
    try {
      if (!account) {
        throw new DecodeFailure("no-account", "the app has no Google service account to decode its tokens with", "the registration has no service account");
      }
      if (token.length === 0 || token.length > MAX_TOKEN_CHARS) {
        throw new DecodeFailure("token-refused", "the token is empty or too long to be a Play Integrity token", `token of ${token.length} characters not sent`);
      }
      const payload = await this.decodeWith(account, packageName, token);
      this.opts.onOutcome?.("decoded");
      return { opened: true, app: app.policy, payload, decodedBy: "google" };
    } catch (e) {
      const failure = this.asFailure(e);
      this.opts.log.warn(
        { package: packageName, serviceAccount: account?.clientEmail, tenantId: app.tenantId, result: failure.result, ...failure.fields },
        `Play Integrity decoding for ${packageName} failed: ${failure.message}`,
      );
      this.opts.onOutcome?.(failure.result);
      // Google read the token and refused it (not this package's, malformed): the token is at fault, as a token
      // another app's keys sealed is; anything else is the decoding that failed, and the verdict stays undecided
      return { opened: false, why: failure.result === "token-refused" ? "not-opened" : "decode-failed", reason: failure.reason };
    }
  }

  /** Aborts requests and pauses under way (shutdown); decodes from now on fail at once. */
  stop(): void {
    this.aborter.abort();
  }

  private async decodeWith(account: GoogleServiceAccount, packageName: string, token: string): Promise<unknown> {
    const url = `${this.apiUrl}/v1/${encodeURIComponent(packageName)}:decodeIntegrityToken`;
    const body = JSON.stringify({ integrity_token: token });
    const ask = (access: AccessToken) =>
      this.request(PLAY_INTEGRITY, url, {
        method: "POST",
        headers: { authorization: `Bearer ${access.token}`, "content-type": "application/json", accept: "application/json" },
        body,
      });
    let access = await this.accessToken(account);
    let res = await ask(access);
    if (res.status === 401) {
      // An access token Google no longer honours (revoked, or expired early): one fresh grant, one more try. A
      // second 401 is the account itself.
      this.forget(account, access);
      this.opts.log.debug({ package: packageName, serviceAccount: account.clientEmail }, "Play Integrity: access token refused (401); a fresh grant");
      access = await this.accessToken(account);
      res = await ask(access);
    }
    if (res.status !== 200) throw this.refusal(PLAY_INTEGRITY, url, res);
    const answer = parseJson(res.body);
    const payload = isObject(answer) ? answer.tokenPayloadExternal : undefined;
    if (!isObject(payload)) {
      throw new DecodeFailure(
        "bad-answer",
        "Google's Play Integrity service gave an answer that is not a decoded token",
        `the answer of ${url} has no tokenPayloadExternal object`,
        { url, status: res.status, body: excerpt(res.body) },
      );
    }
    return payload;
  }

  /** the account's access token in hand, else the grant under way, else a new grant */
  private accessToken(account: GoogleServiceAccount): Promise<AccessToken> {
    const key = accountKey(account);
    const held = this.tokens.get(key);
    if (held && this.opts.clock.nowMs() < held.renewAtMs) return Promise.resolve(held);
    let grant = this.grants.get(key);
    if (!grant) {
      grant = this.grant(account)
        .then((access) => {
          // tokens of accounts no longer used (a rotated key, a removed app) go as they expire
          const now = this.opts.clock.nowMs();
          for (const [k, t] of this.tokens) if (t.renewAtMs <= now) this.tokens.delete(k);
          this.tokens.set(key, access);
          return access;
        })
        .finally(() => this.grants.delete(key));
      this.grants.set(key, grant);
    }
    return grant;
  }

  /** drops `access` unless a newer token already replaced it (another decode's fresh grant) */
  private forget(account: GoogleServiceAccount, access: AccessToken): void {
    const key = accountKey(account);
    if (this.tokens.get(key) === access) this.tokens.delete(key);
  }

  /** RFC 7523 as Google does it: a JWT signed RS256 with the account's key, for the playintegrity scope */
  private async grant(account: GoogleServiceAccount): Promise<AccessToken> {
    const assertion = await this.assertion(account);
    const res = await this.request(SIGN_IN, this.oauthUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString(),
    });
    if (res.status !== 200) throw this.refusal(SIGN_IN, this.oauthUrl, res);
    const answer = parseJson(res.body);
    const token = isObject(answer) ? answer.access_token : undefined;
    const expiresIn = isObject(answer) ? answer.expires_in : undefined;
    const type = isObject(answer) ? answer.token_type : undefined;
    if (
      typeof token !== "string" ||
      !/^[\x21-\x7e]{1,4096}$/.test(token) ||
      typeof expiresIn !== "number" ||
      !Number.isFinite(expiresIn) ||
      expiresIn <= 0 ||
      (type !== undefined && (typeof type !== "string" || type.toLowerCase() !== "bearer"))
    ) {
      throw new DecodeFailure(
        "bad-answer",
        "Google's sign-in service gave an answer that is not an access token",
        `the answer of ${this.oauthUrl} is not {access_token, expires_in, token_type: Bearer}`,
        // never the body itself: it would hold the access token
        { url: this.oauthUrl, status: res.status },
      );
    }
    const margin = Math.min(EXPIRY_MARGIN_S, expiresIn / 2);
    return { token, renewAtMs: this.opts.clock.nowMs() + (expiresIn - margin) * 1000 };
  }

  private async assertion(account: GoogleServiceAccount): Promise<string> {
    let key: Awaited<ReturnType<typeof importPKCS8>>;
    try {
      key = await importPKCS8(account.privateKeyPem, "RS256");
    } catch (e) {
      throw new DecodeFailure(
        "account-refused",
        "the service account's private key could not be used (an RSA key in PKCS#8 PEM is expected)",
        // jose's message names the key's form, never its bytes
        `the service account's private_key is unusable: ${(e as Error).message}`,
      );
    }
    const iat = Math.floor(this.opts.clock.nowMs() / 1000);
    return new SignJWT({ scope: PLAY_INTEGRITY_SCOPE })
      .setProtectedHeader({ alg: "RS256", typ: "JWT", ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) })
      .setIssuer(account.clientEmail)
      .setAudience(this.oauthUrl)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ASSERTION_LIFETIME_S)
      .sign(key);
  }

  /**
   * One request with its bounded retries: a network failure, a timeout, 429 and 5xx are tried again after a pause
   * doubling from `backoffMs` (or Google's Retry-After, up to 2 s; a longer one ends the retries), up to `retries`
   * times; any other answer is returned at once (a 4xx is not going to change), a redirect or an oversized answer
   * fails at once.
   */
  private async request(service: Service, url: string, init: RequestInit): Promise<{ status: number; body: Buffer }> {
    const attempts = this.opts.retries + 1;
    for (let attempt = 1; ; attempt++) {
      if (this.aborter.signal.aborted) throw shutdown();
      let failure: DecodeFailure;
      let retryAfter: number | undefined;
      try {
        const res = await boundedFetch(url, init, {
          fetch: this.opts.fetch,
          timeoutMs: this.opts.timeoutMs,
          maxBytes: this.maxAnswerBytes,
          signal: this.aborter.signal,
        });
        if (res.status !== 429 && res.status < 500) return res;
        failure = this.refusal(service, url, res, attempt);
        retryAfter = retryAfterMs(res.headers.get("retry-after"), this.opts.clock.nowMs());
      } catch (e) {
        if (this.aborter.signal.aborted) throw shutdown();
        if (e instanceof FetchRefused) {
          const reason =
            e.kind === "redirect"
              ? `${service.name} answered with a redirect, which attestd refuses`
              : `${service.name} gave an answer larger than ${this.maxAnswerBytes / 1024} KiB, which attestd refuses`;
          throw new DecodeFailure("bad-answer", reason, `${url}: ${e.message}`, { url });
        }
        const cause = networkCause(e);
        if (!cause) throw e;
        failure = new DecodeFailure(
          "unreachable",
          `${service.name} could not be reached (${cause.public})${attempt > 1 ? ` on ${attempt} attempts` : ""}`,
          `${url} could not be reached: ${cause.text}`,
          { url, attempts: attempt },
        );
      }
      if (attempt >= attempts || (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_MS)) throw failure;
      this.opts.log.debug({ url, attempt, ...failure.fields }, `Play Integrity: ${failure.message}; trying again`);
      await abortablePause(Math.max(backoffDelayMs(attempt, this.backoffMs, this.opts.rng), retryAfter ?? 0), this.aborter.signal);
    }
  }

  /** what an answer other than 200 means, in the tenant's words and the operator's */
  private refusal(service: Service, url: string, res: { status: number; body: Buffer }, attempt?: number): DecodeFailure {
    const { status } = res;
    const fields = { url, status, body: excerpt(res.body), ...(attempt ? { attempts: attempt } : {}) };
    const message = `${url} answered HTTP ${status}`;
    const onAttempts = attempt && attempt > 1 ? ` on ${attempt} attempts` : "";
    if (status === 429) {
      return new DecodeFailure("google-error", `${service.name} is limiting requests (429)${onAttempts}: the Cloud project's Play Integrity quota may be used up`, message, fields);
    }
    if (status >= 500) return new DecodeFailure("google-error", `${service.name} failed (${status})${onAttempts}`, message, fields);
    if (service.what === "token") {
      // Google's token endpoint says why in a short code (invalid_grant, invalid_client...): safe to repeat
      const code = oauthErrorCode(res.body);
      return new DecodeFailure(
        "account-refused",
        `Google refused the service account (${status}${code ? ` ${code}` : ""}): its key may be deleted or disabled, or this server's clock may be wrong`,
        message,
        fields,
      );
    }
    if (status === 401) return new DecodeFailure("account-refused", "Google refused the service account (401)", message, fields);
    if (status === 403) {
      return new DecodeFailure(
        "account-refused",
        "Google refused the service account (403): the Play Integrity API may not be enabled for its Cloud project, or the project is not linked to this app in the Play Console",
        message,
        fields,
      );
    }
    if (status === 400) return new DecodeFailure("token-refused", "Google answered 400: the token is not for this package or is malformed", message, fields);
    if (status === 404) return new DecodeFailure("token-refused", "Google answered 404: it knows no app of this package name", message, fields);
    return new DecodeFailure("token-refused", `Google answered ${status} and did not decode the token`, message, fields);
  }

  private asFailure(e: unknown): DecodeFailure {
    if (e instanceof DecodeFailure) return e;
    // a bug, not Google: still closed, and the operator sees the stack
    return new DecodeFailure("bad-answer", "the token could not be decoded with Google (an internal error; the operator's log has the detail)", `unexpected error: ${(e as Error)?.message ?? String(e)}`, { err: e });
  }
}

function shutdown(): DecodeFailure {
  return new DecodeFailure("shutdown", "attestd was shutting down and did not finish decoding the token with Google", "aborted at shutdown");
}

/** the service account as a map key: its email and key together, so a rotated key gets its own access token */
function accountKey(account: GoogleServiceAccount): string {
  return createHash("sha256").update(account.clientEmail).update("\0").update(account.privateKeyPem).digest("base64url");
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `{"error": "invalid_grant"}`'s code, when it is one (never free text, which could carry anything) */
function oauthErrorCode(body: Buffer): string | undefined {
  const answer = parseJson(body);
  const code = isObject(answer) ? answer.error : undefined;
  return typeof code === "string" && /^[a-z_]{1,40}$/.test(code) ? code : undefined;
}

/** an error answer's start, for the operator: printable, short */
function excerpt(body: Buffer): string {
  return body.toString("utf8", 0, Math.min(body.length, EXCERPT_CHARS * 4)).replace(/[\x00-\x1f\x7f]+/g, " ").slice(0, EXCERPT_CHARS);
}
