import assert from "node:assert/strict";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import pino from "pino";
import { ApiKeyAuthenticator } from "../../src/services/apiKeyAuth.ts";
import { AttestationService } from "../../src/services/attestationService.ts";
import { generateApiKey } from "../../src/auth/apiKeys.ts";
import { ManualClock, cryptoRng } from "../../src/clock.ts";
import { accessTokenRequest, apiToken, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { createEnrollment, type Enrollment } from "../../src/enrollment/enrollment.ts";
import { ActivityRecorder } from "../../src/services/activityRecorder.ts";
import { RateLimiter } from "../../src/services/rateLimiter.ts";
import { buildApp } from "../../src/http/app.ts";
import { Metrics } from "../../src/http/metrics.ts";
import { registerPartB } from "../../src/http/routes/svc/index.ts";
import type { AppInstance } from "../../src/http/types.ts";
import type { ApiClient } from "../../src/domain/enrollment.ts";
import { MemoryRateLimitStore } from "../../src/store/memory/memoryRateLimitStore.ts";
import { SqliteEnrollmentStore, SqliteJtiStore } from "../../src/store/sqlite/sqliteEnrollmentStore.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import type { Tenant, TenantKind } from "../../src/domain/tenants.ts";

export const T0 = Date.parse("2026-03-01T12:00:00.000Z");
const log = pino({ level: "silent" });

export interface Session {
  tenant: Tenant;
  client: ApiClient;
  keys: ClientKeys;
  token: string;
  /** one request with a fresh x-vendor-apitoken */
  call(method: InjectOptions["method"], url: string, body?: unknown, extra?: Partial<InjectOptions>): Promise<LightMyRequestResponse>;
}

/**
 * The Part B app as server.ts builds it (buildApp + registerPartB + the real services over SQLite ":memory:"),
 * with a pinned clock and the job worker not started: tests drive it with `worker.drain()` so "Processing" is
 * observable. Part A's nonce route is live for the restriction tests; appraisal is not configured.
 */
export class Harness {
  readonly clock = new ManualClock(T0);
  readonly sqlite = new SqliteStore({ file: ":memory:" });
  readonly store = new SqliteEnrollmentStore(this.sqlite.db);
  readonly activity = new ActivityRecorder(this.sqlite, log);
  readonly enrollment: Enrollment;
  app!: AppInstance;
  private tenantCount = 0;

  constructor(readonly maxDevices = 1000) {
    this.enrollment = createEnrollment({
      tenants: this.sqlite,
      store: this.store,
      jti: new SqliteJtiStore(this.sqlite.db),
      clock: this.clock,
      rng: cryptoRng,
      log,
      maxDevices,
      tenantKeyBits: 2048,
      env: {},
    });
  }

  static async start(maxDevices?: number): Promise<Harness> {
    const h = new Harness(maxDevices);
    const rateLimiter = new RateLimiter(new MemoryRateLimitStore(), h.clock, { rps: 1000, burst: 1000 });
    h.app = await buildApp({
      logger: log,
      clock: h.clock,
      rng: cryptoRng,
      limits: { maxBlobBytes: 65536, maxBatch: 10 },
      attestation: new AttestationService({
        nonces: h.sqlite,
        verdicts: h.sqlite,
        trust: () => {
          throw new Error("appraisal is not configured in the enrollment tests");
        },
        clock: h.clock,
        rng: cryptoRng,
        limits: { nonceTtlMs: 300_000, maxOutstandingNonces: 1000 },
      }),
      auth: new ApiKeyAuthenticator(h.sqlite, h.clock, h.enrollment.restrictionCheck),
      rateLimiter,
      activity: h.activity,
      metrics: new Metrics(),
      readiness: async () => ({ ready: true, checks: [] }),
      trustedProxies: [],
      partB: registerPartB({ enrollment: h.enrollment, rateLimiter, maxDevices: h.maxDevices }),
    });
    await h.app.ready();
    return h;
  }

  async close(): Promise<void> {
    await this.enrollment.stop();
    await this.app.close();
    await this.activity.close();
    await this.sqlite.close();
  }

  async tenant(o: { name?: string; kind?: TenantKind; customerId?: string; enrollment?: boolean } = {}): Promise<Tenant> {
    const n = ++this.tenantCount;
    const name = o.name ?? `tenant${n}`;
    await this.sqlite.createTenant({
      tenantId: `t_${name}`,
      name,
      customerId: o.customerId ?? String(5_000_000_000 + n),
      kind: o.kind ?? "customer",
      createdAt: new Date(this.clock.nowMs()).toISOString(),
    });
    if (o.enrollment !== undefined) await this.sqlite.setEnrollmentEnabled(name, o.enrollment);
    return (await this.sqlite.getTenantByName(name))!;
  }

  async client(
    tenant: Tenant,
    o: { email?: string; readOnly?: boolean; rps?: number; burst?: number } = {},
  ): Promise<{ client: ApiClient; keys: ClientKeys }> {
    return this.enrollment.clients.createClient(tenant, {
      email: o.email ?? `ops@${tenant.name}.example`,
      readOnly: o.readOnly ?? false,
      rps: o.rps ?? 1000,
      burst: o.burst ?? 1000,
    });
  }

  requestToken(body: unknown, extra: Partial<InjectOptions> = {}): Promise<LightMyRequestResponse> {
    return this.app.inject({ method: "POST", url: "/svc/v1/auth/accesstoken", payload: body as object, ...extra });
  }

  async accessToken(keys: ClientKeys, validityMinutes = 30): Promise<string> {
    const res = await this.requestToken(await accessTokenRequest(keys, { nowMs: this.clock.nowMs(), validityMinutes }));
    assert.equal(res.statusCode, 200, res.body);
    return res.json().accessToken as string;
  }

  async callWith(
    keys: ClientKeys,
    token: string,
    method: InjectOptions["method"],
    url: string,
    body?: unknown,
    extra: Partial<InjectOptions> = {},
  ): Promise<LightMyRequestResponse> {
    const header = await apiToken(keys, token, { nowMs: this.clock.nowMs() });
    return this.app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body as object }),
      ...extra,
      headers: { "x-vendor-apitoken": header, ...(extra.headers ?? {}) },
    });
  }

  async session(o: { tenant?: Tenant; readOnly?: boolean; rps?: number; burst?: number; email?: string } = {}): Promise<Session> {
    const tenant = o.tenant ?? (await this.tenant());
    const { client, keys } = await this.client(tenant, o);
    const token = await this.accessToken(keys);
    return {
      tenant,
      client,
      keys,
      token,
      call: (method, url, body, extra) => this.callWith(keys, token, method, url, body, extra),
    };
  }

  async partAKey(tenant: Tenant): Promise<{ key: string; keyId: string }> {
    const k = generateApiKey(cryptoRng);
    await this.sqlite.createApiKey({
      keyId: k.keyId,
      tenantId: tenant.tenantId,
      secretHash: k.secretHash,
      rps: 1000,
      burst: 1000,
      createdAt: new Date(this.clock.nowMs()).toISOString(),
    });
    return { key: k.key, keyId: k.keyId };
  }

  /** The activity entry written for an error response (the recorder is write-behind, so this flushes and polls). */
  async activityFor(errorId: string): Promise<ActivityEntry | undefined> {
    for (let i = 0; i < 50; i++) {
      await this.activity.flush();
      const [e] = await this.sqlite.queryActivity({ errorId });
      if (e) return e;
      await new Promise((r) => setTimeout(r, 10));
    }
    return undefined;
  }
}

/** Asserts a Part B error body: status, code, message and a non-empty errorId; returns the body. */
export function assertPartBError(
  res: LightMyRequestResponse,
  entry: { status: number; code: string; message: string },
  note = "",
): { errorId: string; code: string; message: string; data?: string } {
  const body = res.json();
  assert.equal(res.statusCode, entry.status, `${note} ${res.body}`);
  assert.equal(body.code, entry.code, `${note} ${res.body}`);
  assert.equal(body.message, entry.message, `${note} ${res.body}`);
  assert.match(body.errorId, /^\S{8,}$/, note);
  assert.ok(!/\bat .+:\d+:\d+\)?$/m.test(res.body), `no stack trace in ${res.body}`);
  return body;
}

/** Valid IMEIs with Luhn check digits: 35 + 12-digit counter. */
export { imeiFrom14 } from "../../src/enrollment/deviceIds.ts";
