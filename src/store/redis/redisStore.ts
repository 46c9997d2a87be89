import { Redis, type RedisOptions } from "ioredis";
import { StoreUnavailableError } from "../../errors/storeUnavailable.ts";
import { connectPatiently, serverAddress } from "../connectAttempts.ts";
import { fromRedisError } from "../errors.ts";
import type { NonceConsumeOutcome, NonceIssueOutcome, NonceRecord } from "../../nonces/types.ts";
import type { JtiStore, NonceStore, RateDecision, RateLimitStore } from "../types.ts";
import { CONSUME_NONCE, ISSUE_NONCE, PURGE_NONCES, REMEMBER_JTI, TAKE_TOKEN, type LuaScript } from "./scripts.ts";

export interface RedisStoreOptions {
  /**
   * redis://[user:pass@]host:port[/db][?keyPrefix=P] or rediss:// for TLS. Other query parameters are ioredis
   * options (e.g. family=6); keyPrefix is ours (see `prefix`), so several deployments can share one Redis.
   */
  url: string;
  /** every key starts with it; one deployment, one prefix (default: the URL's keyPrefix, else "attestd:") */
  prefix?: string;
  /**
   * How long a used or expired nonce is remembered after its expiry (--nonce-retain). The purge removes them on
   * schedule; this is the keys' TTL as well, so Redis memory stays bounded even if no instance purges.
   */
  nonceRetainMs?: number;
  /**
   * per-command time limit, past which the request fails with 503 instead of waiting; also the first connection
   * attempt's at open (connectAttempts.ts: later attempts wait longer)
   */
  timeoutMs?: number;
  /** told when a first connection timed out and is tried again (connectAttempts.ts) */
  onConnectRetry?: ((message: string) => void) | undefined;
}

/**
 * Takes `keyPrefix` out of a redis:// URL. It must not reach ioredis: ioredis would prefix the keys it knows of
 * on top of ours, but not the keys the purge script builds itself.
 */
function splitKeyPrefix(raw: string): { url: string; keyPrefix: string | undefined } {
  if (!/^rediss?:\/\//i.test(raw)) return { url: raw, keyPrefix: undefined };
  const u = new URL(raw);
  const keyPrefix = u.searchParams.get("keyPrefix") ?? undefined;
  if (keyPrefix === undefined) return { url: raw, keyPrefix };
  u.searchParams.delete("keyPrefix");
  return { url: u.toString(), keyPrefix };
}

const DEFAULT_TIMEOUT_MS = 2_000;

/** A connect or its first command that got no answer in time (as opposed to a refusal or an error reply). */
function timedOut(err: unknown): boolean {
  const e = err as NodeJS.ErrnoException | undefined;
  return e?.code === "ETIMEDOUT" || /ETIMEDOUT|timed out/i.test(e?.message ?? "");
}

/**
 * Nonces, rate-limit buckets (and the jti replay set) in Redis, shared by every instance. Each operation is one Lua
 * script, so it is atomic on the server.
 *
 * Failure behaviour is chosen for an API that must never answer without checking: no offline queue (a command
 * while disconnected fails at once), no automatic resend of a command whose connection dropped (a consume that
 * may already have run must not run twice and answer NONCE_ALREADY_USED to its own caller), a per-command timeout
 * for a Redis that accepts but does not answer. Every such failure is a StoreUnavailableError (→ 503). The client
 * keeps reconnecting in the background, so the service recovers by itself when Redis is back.
 */
export class RedisStore implements NonceStore, RateLimitStore, JtiStore {
  readonly kind = "redis";
  readonly redis: Redis;
  private readonly prefix: string;
  private readonly retainMs: number;
  /** the last connection error, for /readyz detail */
  private lastError: Error | undefined;

  private constructor(opts: RedisStoreOptions, connectTimeoutMs: number) {
    const { url, keyPrefix } = splitKeyPrefix(opts.url);
    this.prefix = opts.prefix ?? keyPrefix ?? "attestd:";
    this.retainMs = opts.nonceRetainMs ?? 86_400_000;
    const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const options: RedisOptions = {
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      connectTimeout: connectTimeoutMs,
      commandTimeout: timeout,
      // reconnect forever, backing off to one attempt every 2 s: recovery needs no restart
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
      enableAutoPipelining: true,
      keepAlive: 10_000,
      connectionName: "attestd",
    };
    this.redis = new Redis(url, options);
    // ioredis emits 'error' on every failed (re)connect; without a listener it prints each one. The state is kept
    // for /readyz and the failing commands report it to their callers.
    this.redis.on("error", (err: Error) => {
      this.lastError = err;
    });
    this.redis.on("ready", () => {
      this.lastError = undefined;
    });
  }

  /**
   * Connects (failing start-up with a clear message if Redis is unreachable) and returns the store. A connection
   * that timed out is tried again with more time (connectAttempts.ts); a refusal, an unknown host or an auth error
   * fails at once.
   */
  static async open(opts: RedisStoreOptions): Promise<RedisStore> {
    const attempts = { firstTimeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, onRetry: opts.onConnectRetry };
    return connectPatiently(
      `redis at ${serverAddress(opts.url, 6379)}`,
      attempts,
      async (connectTimeoutMs) => {
        const store = new RedisStore(opts, connectTimeoutMs);
        try {
          await store.redis.connect();
          return store;
        } catch (err) {
          store.redis.disconnect();
          // connect() only says "Connection is closed."; the error event before it says why (ECONNREFUSED, auth, ...)
          throw new StoreUnavailableError("redis", store.lastError ?? err);
        }
      },
      (err) => timedOut((err as StoreUnavailableError).cause),
    );
  }

  private key(...parts: string[]): string {
    return this.prefix + parts.join("");
  }

  /** EVALSHA, loading the script on NOSCRIPT (first use, or after a Redis restart or SCRIPT FLUSH). */
  private async run(s: LuaScript, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      try {
        return await this.redis.evalsha(s.sha, s.keys, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
        return await this.redis.eval(s.source, s.keys, ...keys, ...args);
      }
    } catch (err) {
      throw fromRedisError(err);
    }
  }

  async ping(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (err) {
      throw fromRedisError(this.redis.status === "ready" ? err : (this.lastError ?? err));
    }
  }

  async close(): Promise<void> {
    if (this.redis.status === "end") return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect(); // not connected: nothing to say goodbye to
    }
  }

  // ---- nonces ----
  async issue(n: NonceRecord, maxOutstanding: number, nowMs: number): Promise<NonceIssueOutcome> {
    const outcome = await this.run(
      ISSUE_NONCE,
      [this.key("n:", n.nonce), this.key("out:", n.tenantId), this.key("exp")],
      [n.tenantId, n.expiresAtMs, nowMs, maxOutstanding, n.nonce, this.retainMs],
    );
    return outcome as NonceIssueOutcome;
  }

  async consume(nonce: string, tenantId: string, nowMs: number): Promise<NonceConsumeOutcome> {
    const outcome = await this.run(CONSUME_NONCE, [this.key("n:", nonce), this.key("out:", tenantId)], [tenantId, nowMs, nonce]);
    return outcome as NonceConsumeOutcome;
  }

  async purgeExpired(nowMs: number, retainMs: number): Promise<number> {
    const batch = 1_000;
    let total = 0;
    for (;;) {
      const n = (await this.run(PURGE_NONCES, [this.key("exp")], [nowMs - retainMs, batch, this.prefix])) as number;
      total += n;
      if (n < batch) return total;
    }
  }

  // ---- rate limits ----
  async take(bucket: string, ratePerSec: number, burst: number, nowMs: number): Promise<RateDecision> {
    const [allowed, remaining, retryAfterMs, resetMs] = (await this.run(
      TAKE_TOKEN,
      [this.key("rl:", bucket)],
      [ratePerSec, burst, nowMs],
    )) as [number, number, number, number];
    return { allowed: allowed === 1, remaining, retryAfterMs, resetMs };
  }

  // ---- jti replay set ----
  async remember(jti: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    return (await this.run(REMEMBER_JTI, [this.key("jti:", jti)], [expiresAtMs, nowMs])) === 1;
  }
}
