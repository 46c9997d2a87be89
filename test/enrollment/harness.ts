import assert from "node:assert/strict";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { ManualClock } from "../../src/clock.ts";
import { accessTokenRequest, apiToken, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import type { Enrollment } from "../../src/enrollment/enrollment.ts";
import type { ActivityRecorder } from "../../src/services/activityRecorder.ts";
import type { AppInstance } from "../../src/http/types.ts";
import type { ApiClient } from "../../src/domain/enrollment.ts";
import type { SqliteEnrollmentStore } from "../../src/store/sqlite/sqliteEnrollmentStore.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import type { ActivityEntry } from "../../src/domain/activity.ts";
import type { Tenant, TenantKind } from "../../src/domain/tenants.ts";
import { T0 } from "../helpers/clock.ts";
import { createApiKeyFor, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { testActor } from "../helpers/audit.ts";

export interface Session {
  tenant: Tenant;
  client: ApiClient;
  keys: ClientKeys;
  token: string;
  /** one request with a fresh x-vendor-apitoken */
  call(method: InjectOptions["method"], url: string, body?: unknown, extra?: Partial<InjectOptions>): Promise<LightMyRequestResponse>;
}

/**
 * The Part B app as attestd runs it: the real runtime (test/helpers/runtime.ts: createRuntime over SQLite in a
 * temporary directory, every route), with a pinned clock and the job worker not started: tests drive it with
 * `worker.drain()` so "Processing" is observable.
 */
export class Harness {
  readonly clock = new ManualClock(T0);
  sqlite!: SqliteStore;
  store!: SqliteEnrollmentStore;
  activity!: ActivityRecorder;
  enrollment!: Enrollment;
  app!: AppInstance;
  private test!: TestRuntime;
  private tenantCount = 0;

  private constructor(readonly maxDevices: number) {}

  static async start(maxDevices = 1000): Promise<Harness> {
    const h = new Harness(maxDevices);
    h.test = await startTestRuntime(
      { maxDevices, maxBatch: 10, rps: 1000, burst: 1000 },
      { clock: h.clock, enrollment: { startWorker: false, tenantKeyBits: 2048 } },
    );
    const { runtime } = h.test;
    h.sqlite = runtime.stores.durable as SqliteStore;
    h.store = runtime.stores.enrollment as SqliteEnrollmentStore;
    h.activity = runtime.activity;
    h.enrollment = runtime.enrollment;
    h.app = runtime.app;
    return h;
  }

  close(): Promise<void> {
    return this.test.close();
  }

  /** the runtime's data directory, for operator commands run beside it */
  get dataDir(): string {
    return this.test.dir;
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
    }, testActor());
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

  partAKey(tenant: Tenant): Promise<{ key: string; keyId: string }> {
    return createApiKeyFor(this.sqlite, tenant, { at: this.clock.nowMs() });
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
