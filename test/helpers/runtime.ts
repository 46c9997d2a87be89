import type { FastifyBaseLogger } from "fastify";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { generateApiKey } from "../../src/auth/apiKeys.ts";
import { ManualClock, cryptoRng } from "../../src/clock.ts";
import { loadConfig, type Config } from "../../src/config.ts";
import { createLogger } from "../../src/logging.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../../src/server.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { TenantStore } from "../../src/store/types.ts";
import { T0 } from "./clock.ts";


/**
 * The network of an in-process runtime unless a test gives one: always down, at once. The default
 * --android-status is Google's URL; a test must neither depend on reaching it nor hang on it, so by default a
 * runtime behaves as an offline machine with an empty disk cache (android-key fails closed, /readyz degraded).
 */
export const offlineFetch: typeof fetch = async (input) => {
  // what undici throws when DNS fails, as on a machine without a network
  const host = new URL(String(input instanceof Request ? input.url : input)).hostname;
  throw new TypeError("fetch failed", { cause: Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" }) });
};

export interface TestRuntime {
  runtime: Runtime;
  clock: ManualClock;
  dir: string;
  config: Config;
  tenant: Tenant;
  key: string;
  /** a new tenant with its own key */
  addTenant(name: string, opts?: { rps?: number; burst?: number }): Promise<{ tenant: Tenant; key: string; keyId: string }>;
  close(): Promise<void>;
}

/**
 * A real runtime (SQLite in a temp dir, every route, pinned clock, no network) driven through app.inject.
 * `settings` are given as flags would be (camelCase), so the same validation applies as on the command line.
 */
export async function startTestRuntime(
  settings: Record<string, unknown> = {},
  opts: {
    clock?: ManualClock;
    dir?: string;
    fetch?: typeof fetch;
    logger?: FastifyBaseLogger;
    enrollment?: RuntimeOptions["enrollment"];
    /** portal passwords' scrypt cost; cheap unless given (test/portal/accounts.test.ts holds the production one) */
    passwordCost?: RuntimeOptions["passwordCost"];
    /** the roots refreshed App Attest receipts must chain to (a stand-in's CA: test/helpers/appleReceiptStandIn.ts) */
    receiptRoots?: RuntimeOptions["receiptRoots"];
  } = {},
): Promise<TestRuntime> {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), "attestd-test-"));
  const config = loadConfig({ dataDir: dir, insecureHttp: true, logLevel: "silent", ...settings }, {});
  const clock = opts.clock ?? new ManualClock(T0);
  const runtime = await createRuntime(config, {
    clock,
    logger: opts.logger ?? createLogger({ level: "silent" }),
    fetch: opts.fetch ?? offlineFetch,
    passwordCost: opts.passwordCost ?? { N: 2 ** 10, r: 8, p: 1 },
    ...(opts.enrollment ? { enrollment: opts.enrollment } : {}),
    ...(opts.receiptRoots ? { receiptRoots: opts.receiptRoots } : {}),
  });
  await runtime.app.ready();
  const addTenant = async (name: string, o: { rps?: number; burst?: number } = {}) => {
    const tenant =
      (await runtime.stores.durable.getTenantByName(name)) ??
      (await runtime.stores.durable.createTenant({
        tenantId: "t_" + name,
        name,
        customerId: String(1_000_000 + Math.floor(Math.random() * 8_000_000)),
        kind: "customer",
        createdAt: new Date(T0).toISOString(),
      }));
    return { tenant, ...(await createApiKeyFor(runtime.stores.durable, tenant, { at: T0, rps: o.rps ?? 1000, burst: o.burst ?? 1000 })) };
  };
  const first = await addTenant("acme");
  return {
    runtime,
    clock,
    dir,
    config,
    tenant: first.tenant,
    key: first.key,
    addTenant,
    close: async () => {
      await runtime.close();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const KEY_HEADER = "x-vendor-attest-api-key";

/** A Part A API key for `tenant`, written straight to the store (the CLI's `key create` without a process). */
export async function createApiKeyFor(
  store: TenantStore,
  tenant: Tenant,
  o: { at: number; rps?: number; burst?: number },
): Promise<{ key: string; keyId: string }> {
  const k = generateApiKey(cryptoRng);
  await store.createApiKey({
    keyId: k.keyId,
    tenantId: tenant.tenantId,
    secretHash: k.secretHash,
    rps: o.rps ?? 1000,
    burst: o.burst ?? 1000,
    createdAt: new Date(o.at).toISOString(),
  });
  return { key: k.key, keyId: k.keyId };
}
