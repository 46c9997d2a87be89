/**
 * ApiKeyAuthenticator and ApiKeyAdmin together (issue 22, items 10 and 14): a revocation reaches this instance's
 * key cache before it is answered, another instance's within KEY_CACHE_MS, and an unknown key id takes the same
 * path (store calls, cache, secret comparison) as a known id with a wrong secret.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { cryptoRng, ManualClock } from "../../src/clock.ts";
import { AppError } from "../../src/errors/AppError.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { ApiKeyAdmin } from "../../src/services/apiKeyAdmin.ts";
import { ApiKeyAuthenticator, KEY_CACHE_MS, type Principal } from "../../src/services/apiKeyAuth.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import type { TenantStore } from "../../src/store/types.ts";
import { T0 } from "../helpers/clock.ts";
import { testActor } from "../helpers/audit.ts";

const caller = { ip: "192.0.2.1", referer: undefined };
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
const secret = () => randomBytes(32).toString("base64url");
const unknownKey = () => `atd_${Array.from(randomBytes(10), (b) => BASE32[b & 31]).join("")}_${secret()}`;
const withSecret = (key: string, s = secret()) => key.replace(/_[A-Za-z0-9_-]{43}$/, `_${s}`);

async function setup() {
  const store = new MemoryDurableStore();
  const clock = new ManualClock(T0);
  const tenant = await store.createTenant({ tenantId: "t_acme", name: "acme", customerId: "1000001", kind: "customer", createdAt: new Date(T0).toISOString() });
  return { store, clock, tenant };
}

/** How one authentication went: answered in the same tick or through a promise, and the catalog code if refused. */
async function attempt(auth: ApiKeyAuthenticator, key: string): Promise<{ path: "sync" | "async"; code: string | undefined }> {
  let result: Principal | Promise<Principal>;
  try {
    result = auth.authenticate(key, caller);
  } catch (e) {
    return { path: "sync", code: (e as AppError).entry.code };
  }
  if (!(result instanceof Promise)) return { path: "sync", code: undefined };
  try {
    await result;
    return { path: "async", code: undefined };
  } catch (e) {
    return { path: "async", code: (e as AppError).entry.code };
  }
}

/** A store that answers from the real one and records which lookups the authenticator made. */
function recording(inner: TenantStore): { store: TenantStore; calls: string[] } {
  const calls: string[] = [];
  const store = Object.create(inner) as TenantStore;
  store.getApiKey = (id) => (calls.push("getApiKey"), inner.getApiKey(id));
  store.getTenant = (id) => (calls.push("getTenant"), inner.getTenant(id));
  return { store, calls };
}

const REFUSED = catalog.A_AUTHORIZATION_FAIL.code;

describe("API key revocation reaches the key cache", () => {
  it("the instance that revokes refuses the key at once, with no time passing", async () => {
    const { store, clock, tenant } = await setup();
    const auth = new ApiKeyAuthenticator(store, clock);
    const admin = new ApiKeyAdmin(store, clock, cryptoRng, auth);
    const { key, record } = await admin.create(tenant, {}, testActor());
    assert.equal((await attempt(auth, key)).code, undefined);
    assert.deepEqual(await attempt(auth, key), { path: "sync", code: undefined }, "the key is cached");
    assert.equal(await admin.revoke(tenant, record.keyId, testActor()), true);
    assert.equal((await attempt(auth, key)).code, REFUSED);
  });

  it("an edit (limits, restrictions) is seen by the next request on the instance that made it", async () => {
    const { store, clock, tenant } = await setup();
    const auth = new ApiKeyAuthenticator(store, clock);
    const admin = new ApiKeyAdmin(store, clock, cryptoRng, auth);
    const { key, record } = await admin.create(tenant, {}, testActor());
    assert.equal(((await auth.authenticate(key, caller)) as Principal).key.rps, 0);
    await admin.update(tenant, record.keyId, { rps: 7 }, testActor());
    assert.equal((await auth.authenticate(key, caller)).key.rps, 7);
  });

  it("a store read in flight while the key is revoked does not put the old record back in the cache", async () => {
    const { store, clock, tenant } = await setup();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let gated = false;
    const slow = Object.create(store) as TenantStore;
    slow.getApiKey = async (id) => {
      const k = await store.getApiKey(id);
      if (gated) await gate;
      return k;
    };
    const auth = new ApiKeyAuthenticator(slow, clock);
    const admin = new ApiKeyAdmin(store, clock, cryptoRng, auth);
    const { key, record } = await admin.create(tenant, {}, testActor());
    gated = true;
    // started before the revocation: it read the key as active and may be admitted
    const inFlight = auth.authenticate(key, caller);
    await admin.revoke(tenant, record.keyId, testActor());
    gated = false;
    release();
    assert.equal((await inFlight).key.keyId, record.keyId);
    // started after it: refused, though the clock has not moved
    assert.equal((await attempt(auth, key)).code, REFUSED);
  });

  it(`another instance (its own cache, the same store) refuses the key within KEY_CACHE_MS (${KEY_CACHE_MS} ms)`, async () => {
    const { store, clock, tenant } = await setup();
    const here = new ApiKeyAuthenticator(store, clock);
    const there = new ApiKeyAuthenticator(store, clock);
    // the CLI's admin: another process, no cache of this one to reach
    const cli = new ApiKeyAdmin(store, clock, cryptoRng);
    const { key, record } = await new ApiKeyAdmin(store, clock, cryptoRng, here).create(tenant, {}, testActor());
    assert.equal((await attempt(there, key)).code, undefined);
    assert.equal(KEY_CACHE_MS <= 500, true, "the bound the docs and the portal state");
    clock.advance(KEY_CACHE_MS - 1);
    assert.equal((await attempt(there, key)).code, undefined, "still within its cache lifetime");
    await cli.revoke(undefined, record.keyId, testActor());
    clock.advance(1);
    assert.equal((await attempt(there, key)).code, REFUSED);
    assert.equal((await attempt(here, key)).code, REFUSED);
  });
});

describe("an unknown key id is answered as a known id with a wrong secret", () => {
  it("takes the same store lookups, the same cache and the same answer, first probe and repeated", async () => {
    const { store: inner, clock, tenant } = await setup();
    const { key } = await new ApiKeyAdmin(inner, clock, cryptoRng).create(tenant, {}, testActor());
    const probes = { known: () => withSecret(key), unknown: unknownKey() };
    const seen: Record<string, unknown[]> = {};
    for (const [kind, makeKey] of [["known", probes.known], ["unknown", () => probes.unknown]] as const) {
      const { store, calls } = recording(inner);
      const auth = new ApiKeyAuthenticator(store, clock);
      const rounds = [];
      for (let i = 0; i < 3; i++) {
        calls.length = 0;
        rounds.push({ ...(await attempt(auth, makeKey())), lookups: [...calls] });
      }
      seen[kind] = rounds;
    }
    assert.deepEqual(seen.unknown, seen.known);
    assert.deepEqual(seen.known, [
      { path: "async", code: REFUSED, lookups: ["getApiKey", "getTenant"] },
      { path: "sync", code: REFUSED, lookups: [] },
      { path: "sync", code: REFUSED, lookups: [] },
    ]);
  });
});
