import { createHash } from "node:crypto";

/**
 * The Lua scripts behind RedisStore. Each runs atomically on the Redis server, which is what makes single use,
 * the per-tenant cap and the shared token bucket exact across any number of attestd instances.
 *
 * Key layout under the store's prefix P (all keys of one deployment share it; tests use a unique one per run):
 *   P n:<nonce>       hash  t = tenant, e = expiresAtMs, u = usedAtMs (absent while unused)
 *   P out:<tenant>    zset  the tenant's unused nonces, score expiresAtMs: the cap counts its unexpired members
 *   P exp             zset  every stored nonce, score expiresAtMs: the purge walks it
 *   P rl:<bucket>     hash  tk = tokens, ts = last update ms
 *   P jti:<...>       string with TTL: one replay-set member
 * The purge builds keys from the prefix inside the script, so this layout assumes one Redis primary (standalone
 * or Sentinel), not Redis Cluster; docs/deployment.md says so.
 */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
  readonly keys: number;
}

function script(keys: number, source: string): LuaScript {
  return { source, keys, sha: createHash("sha1").update(source).digest("hex") };
}

/**
 * KEYS: nonce key, tenant's out zset, exp zset. ARGV: tenant, expiresAtMs, nowMs, maxOutstanding, nonce, retainMs.
 * Returns "ok" | "limit". Expired members are trimmed from the tenant's set first, so they never count.
 */
export const ISSUE_NONCE = script(
  3,
  `
local now = tonumber(ARGV[3])
local expires = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 'limit' end
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('ERR nonce already stored') end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'e', ARGV[2])
-- the key outlives its expiry by the retention window (NONCE_EXPIRED / NONCE_ALREADY_USED for late posts); the purge
-- normally removes it first, the TTL only bounds memory if no instance is purging
redis.call('PEXPIRE', KEYS[1], math.max(1000, expires - now + tonumber(ARGV[6])))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5])
local ttl = math.max(1000, expires - now + 1000)
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[5])
return 'ok'
`,
);

/**
 * KEYS: nonce key, tenant's out zset. ARGV: tenant, nowMs, nonce. Returns "ok" | "unknown" | "expired" | "used",
 * checked in the order SqliteStore answers them; another tenant's nonce is "unknown".
 */
export const CONSUME_NONCE = script(
  2,
  `
local v = redis.call('HMGET', KEYS[1], 't', 'e', 'u')
if not v[1] or v[1] ~= ARGV[1] then return 'unknown' end
if v[3] then return 'used' end
if tonumber(v[2]) <= tonumber(ARGV[2]) then return 'expired' end
redis.call('HSET', KEYS[1], 'u', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[3])
return 'ok'
`,
);

/**
 * KEYS: exp zset. ARGV: cutoffMs, batch size, key prefix. Deletes up to `batch` nonces that expired at or before
 * the cutoff (and their entries in the tenants' sets); returns how many. The caller loops while a full batch
 * comes back, so no single call blocks Redis for long.
 */
export const PURGE_NONCES = script(
  1,
  `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local key = ARGV[3] .. 'n:' .. id
  local t = redis.call('HGET', key, 't')
  if t then redis.call('ZREM', ARGV[3] .. 'out:' .. t, id) end
  redis.call('DEL', key)
end
if #ids > 0 then redis.call('ZREM', KEYS[1], unpack(ids)) end
return #ids
`,
);

/**
 * KEYS: bucket hash. ARGV: ratePerSec, burst, nowMs. Returns {allowed 0|1, remaining, retryAfterMs, resetMs}.
 * The arithmetic is takeToken's (src/store/memory/memoryRateLimitStore.ts) line for line, with one addition: the
 * stored time never moves backwards, so an instance whose clock lags a few ms cannot make the next caller refill
 * the same interval twice. With one clock (every test, and a single instance) the two are identical.
 * Tokens are stored with %.17g: Redis would otherwise turn the Lua number into a 14-digit string and drift.
 * A missing key is a full bucket, so the key expires once it would have refilled (plus slack), bounding memory.
 */
export const TAKE_TOKEN = script(
  1,
  `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'tk', 'ts')
local tokens = tonumber(b[1])
local updated = tonumber(b[2])
if tokens == nil or updated == nil then tokens = burst; updated = now end
local elapsed = math.max(0, now - updated)
tokens = math.min(burst, tokens + (elapsed * rate) / 1000)
local function refill(t) return math.ceil((t * 1000) / rate) end
local allowed = 0
local remaining = 0
local retry = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
  remaining = math.floor(tokens)
else
  retry = refill(1 - tokens)
end
local reset = refill(burst - tokens)
redis.call('HSET', KEYS[1], 'tk', string.format('%.17g', tokens), 'ts', string.format('%.17g', math.max(now, updated)))
redis.call('PEXPIRE', KEYS[1], reset + 60000)
return {allowed, remaining, retry, reset}
`,
);

/**
 * KEYS: jti key. ARGV: expiresAtMs, nowMs. Returns 1 when the jti was not remembered (or its entry had expired at
 * nowMs) and is now, 0 for a replay. The decision uses the caller's clock, like every other store; the key's TTL
 * only reclaims memory once the entry can no longer matter.
 */
export const REMEMBER_JTI = script(
  1,
  `
local seen = redis.call('GET', KEYS[1])
if seen and tonumber(seen) > tonumber(ARGV[2]) then return 0 end
local ttl = tonumber(ARGV[1]) - tonumber(ARGV[2])
if ttl > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', math.floor(ttl) + 1000) else redis.call('DEL', KEYS[1]) end
return 1
`,
);
