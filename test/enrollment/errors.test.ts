import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { accessTokenRequest, signClientJwt } from "../../src/enrollment/clientJwt.ts";
import { catalog, catalogEntries, type CatalogEntry } from "../../src/errors/catalog.ts";
import { encryptForTenant } from "../../src/enrollment/tenantKeys.ts";
import { fromPgError } from "../../src/store/errors.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { assertPartBError, Harness, imeiFrom14, type Session } from "./harness.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * Every Part B error over HTTP, with its exact status, code and message, an errorId in the body, and that errorId
 * found in the activity log with the request. The last test checks the table reaches every Part B catalog entry
 * (the three SEG codes have no operation yet: enrollment-api.md).
 */

interface Ctx {
  h: Harness;
  s: Session;
  profileId: string;
  other: Tenant;
}

interface Case {
  entry: CatalogEntry;
  what: string;
  run: (c: Ctx) => Promise<LightMyRequestResponse>;
  /** whether the request is attributed to the caller's tenant and client in the activity log */
  attributed?: boolean;
}

const MAX_DEVICES = 5;
const imei = (n: number) => imeiFrom14(String(35_000_000_000_000 + n));

const cases: Case[] = [
  {
    entry: catalog.B_AUTHORIZATION_FAIL,
    what: "no x-vendor-apitoken header",
    attributed: false,
    run: ({ h }) => h.app.inject({ method: "GET", url: "/svc/v1/resellers" }),
  },
  {
    entry: catalog.ACCESS_TOKEN_BAD_REQUEST,
    what: "an unparseable x-vendor-apitoken",
    attributed: false,
    run: ({ h }) => h.app.inject({ method: "GET", url: "/svc/v1/resellers", headers: { "x-vendor-apitoken": "not.a.jwt" } }),
  },
  {
    entry: catalog.BAD_REQUEST_ACCESS_TOKEN_CLAIM_NOT_POPULATED,
    what: "an empty accessToken claim",
    attributed: false,
    run: async ({ h, s }) => {
      const jwt = await signClientJwt(s.keys.Private, { accessToken: "", publicKey: s.keys.Public }, { nowMs: h.clock.nowMs() });
      return h.app.inject({ method: "GET", url: "/svc/v1/resellers", headers: { "x-vendor-apitoken": jwt } });
    },
  },
  {
    entry: catalog.BAD_REQUEST_CLIENTIDENTIFIER_CLAIM_NOT_POPULATED,
    what: "an empty clientIdentifier claim",
    attributed: false,
    run: async ({ h, s }) => {
      const jwt = await signClientJwt(
        s.keys.Private,
        { clientIdentifier: "", publicKey: s.keys.Public },
        { nowMs: h.clock.nowMs(), expiresInSec: 300 },
      );
      return h.requestToken({ clientIdentifierJwt: jwt, base64EncodedStringPublicKey: s.keys.Public });
    },
  },
  {
    entry: catalog.B_FORBIDDEN,
    what: "a read-only client writing",
    run: async ({ h, s }) => {
      const ro = await h.session({ tenant: s.tenant, readOnly: true, email: "reader@example.com" });
      return ro.call("POST", "/svc/v1/enroll/profiles", { name: "nope" });
    },
  },
  {
    entry: catalog.TENANT_BLOCKED,
    what: "a blocked tenant",
    run: async ({ h }) => {
      const t = await h.session();
      await h.sqlite.setTenantState(t.tenant.name, "blocked");
      return t.call("GET", "/svc/v1/resellers");
    },
  },
  {
    entry: catalog.TENANT_INACTIVE,
    what: "an inactive tenant",
    run: async ({ h }) => {
      const t = await h.session();
      await h.sqlite.setTenantState(t.tenant.name, "inactive");
      return t.call("GET", "/svc/v1/resellers");
    },
  },
  {
    entry: catalog.RESELLER_BLOCKED,
    what: "a reseller not enabled for enrollment (the default)",
    run: async ({ h }) => {
      const { keys } = await h.client(await h.tenant({ kind: "reseller" }));
      return h.requestToken(await accessTokenRequest(keys, { nowMs: h.clock.nowMs() }));
    },
  },
  {
    entry: catalog.USER_AUTHENTICATION_FAIL,
    what: "a deregistered user",
    run: async ({ h }) => {
      const t = await h.session({ email: "leaver@example.com" });
      await h.enrollment.clients.deregisterUser(t.tenant, "leaver@example.com", testActor());
      return t.call("GET", "/svc/v1/resellers");
    },
  },
  {
    entry: catalog.RESOURCE_INVALID_PARAM,
    what: "pageSize 0",
    run: ({ s }) => s.call("GET", "/svc/v1/enroll/profiles/status?pageNum=0&pageSize=0"),
  },
  {
    entry: catalog.TOO_MANY_DEVICES,
    what: "more devices than --max-devices",
    run: ({ s, profileId }) =>
      s.call("POST", "/svc/v1/enroll/devices", {
        profileId,
        devices: Array.from({ length: MAX_DEVICES + 1 }, (_, i) => ({ deviceId: imei(i) })),
      }),
  },
  {
    entry: catalog.TENANT_MISMATCH,
    what: "another tenant's customerId",
    run: ({ s, profileId, other }) =>
      s.call("POST", "/svc/v1/enroll/devices", { customerId: other.customerId, profileId, devices: [{ deviceId: imei(1) }] }),
  },
  {
    entry: catalog.CUSTOMER_ID_INVALID,
    what: "a customerId that is not digits",
    run: ({ s, profileId }) =>
      s.call("POST", "/svc/v1/enroll/devices", { customerId: "12ab", profileId, devices: [{ deviceId: imei(1) }] }),
  },
  {
    entry: catalog.TENANT_NOT_FOUND,
    what: "a customerId no tenant has",
    run: ({ s, profileId }) =>
      s.call("POST", "/svc/v1/enroll/devices", { customerId: "987654321987", profileId, devices: [{ deviceId: imei(1) }] }),
  },
  {
    entry: catalog.BULK_ENROLL_PROFILE_INVALID,
    what: "a profile with a non-https mdmUrl",
    run: ({ s }) => s.call("POST", "/svc/v1/enroll/profiles", { name: "Kiosks", mdmUrl: "http://mdm.example.com" }),
  },
  {
    entry: catalog.BULK_ENROLL_REQUEST_INVALID,
    what: "a device upload without a devices list",
    run: ({ s, profileId }) => s.call("POST", "/svc/v1/enroll/devices", { profileId }),
  },
  {
    entry: catalog.BULK_ENROLL_DEVICE_INVALID,
    what: "an IMEI with a wrong check digit",
    run: ({ s, profileId }) => {
      const good = imei(7);
      const bad = good.slice(0, 14) + String((Number(good[14]) + 1) % 10);
      return s.call("POST", "/svc/v1/enroll/devices", { profileId, devices: [{ deviceId: bad }] });
    },
  },
  {
    entry: catalog.BULK_ENROLL_PROFILE_NAME_CONFLICT,
    what: "a second profile with the same name",
    run: ({ s }) => s.call("POST", "/svc/v1/enroll/profiles", { name: "Field tablets" }),
  },
  {
    entry: catalog.RESOURCE_NOT_FOUND,
    what: "an unknown /svc/ path",
    attributed: false,
    run: ({ h }) => h.app.inject({ method: "GET", url: "/svc/v1/nothing/here" }),
  },
  {
    entry: catalog.USER_NOT_FOUND,
    what: "an unknown userId",
    run: ({ s, profileId }) =>
      s.call("POST", "/svc/v1/enroll/devices", { profileId, devices: [{ deviceId: imei(2), userId: "ghost@example.com" }] }),
  },
  {
    entry: catalog.DEVICE_NOT_FOUND,
    what: "unassigning a device that is not enrolled",
    run: ({ s }) => s.call("POST", "/svc/v1/enroll/devices/unassign", { deviceIds: ["SERIAL0001"] }),
  },
  {
    entry: catalog.PROFILE_NOT_FOUND,
    what: "reading an unknown profile",
    run: ({ s }) => s.call("GET", "/svc/v1/enroll/profiles/pr_aaaaaaaaaaaaaaaa"),
  },
  {
    entry: catalog.BULK_ENROLL_PROFILE_NOT_FOUND,
    what: "uploading devices to an unknown profile",
    run: ({ s }) => s.call("POST", "/svc/v1/enroll/devices", { profileId: "pr_aaaaaaaaaaaaaaaa", devices: [{ deviceId: imei(3) }] }),
  },
  {
    entry: catalog.BULK_ENROLL_CONFIGURATION_DEVICE_NOT_FOUND,
    what: "assigning devices that are not registered",
    run: ({ s, profileId }) => s.call("POST", "/svc/v1/enroll/devices/assign", { profileId, deviceIds: [imei(4)] }),
  },
  {
    entry: catalog.RESELLER_NOT_FOUND,
    what: "associating an unknown reseller",
    run: ({ s }) => s.call("POST", "/svc/v1/resellers/associate", { resellerId: "t_nobody" }),
  },
  {
    entry: catalog.RESELLER_ASSOCIATION_ALREADY_EXISTS,
    what: "associating the same reseller twice",
    run: async ({ h, s }) => {
      const r = await h.tenant({ kind: "reseller" });
      const first = await s.call("POST", "/svc/v1/resellers/associate", { resellerId: r.tenantId });
      assert.equal(first.statusCode, 200, first.body);
      return s.call("POST", "/svc/v1/resellers/associate", { resellerId: r.tenantId });
    },
  },
  {
    entry: catalog.API_KEY_RESTRICTION_INVALID,
    what: "a restriction with a malformed CIDR",
    run: ({ s }) => s.call("POST", `/svc/v1/apikeys/${s.client.clientId}/restrictions`, { ipAddresses: ["203.0.113.0/33"] }),
  },
  {
    entry: catalog.RSA_DECRYPTION_FAIL,
    what: "a userPassword not encrypted to the tenant key",
    run: async ({ h, s, profileId }) => {
      // encrypted to some other tenant's key: well-formed, undecryptable here
      const otherKey = await h.enrollment.tenantKeys.publicKey((await h.tenant()).tenantId);
      await h.enrollment.tenantKeys.publicKey(s.tenant.tenantId);
      return s.call("POST", "/svc/v1/enroll/devices", {
        profileId,
        devices: [{ deviceId: imei(5), userId: `ops@${s.tenant.name}.example`, userPassword: encryptForTenant(otherKey, "pw") }],
      });
    },
  },
  {
    entry: catalog.TOO_MANY_REQUESTS,
    what: "a client over its rate",
    run: async ({ h }) => {
      const slow = await h.session({ rps: 1, burst: 2 });
      // the token request took one token; one more call empties the bucket
      assert.equal((await slow.call("GET", "/svc/v1/resellers")).statusCode, 200);
      const res = await slow.call("GET", "/svc/v1/resellers");
      assert.equal(res.headers["retry-after"], "1");
      return res;
    },
  },
  {
    entry: catalog.SERVICE_UNAVAILABLE,
    what: "a store whose disk is full (PostgreSQL's 53100)",
    run: async ({ h, s }) => {
      const original = h.store.listResellerAssociations;
      h.store.listResellerAssociations = async () => {
        throw fromPgError(Object.assign(new Error('could not extend file "base/16384/2619": No space left on device'), { code: "53100", severity: "ERROR" }));
      };
      try {
        const res = await s.call("GET", "/svc/v1/resellers");
        assert.equal(res.headers["retry-after"], "10", "a full disk is not freed within a second");
        assert.doesNotMatch(res.body, /extend file|base\/16384|No space/, "the driver's message stays in the log");
        return res;
      } finally {
        h.store.listResellerAssociations = original;
      }
    },
  },
  {
    entry: catalog.INTERNAL_SERVER_ERROR,
    what: "an unexpected store failure",
    run: async ({ h, s }) => {
      const original = h.store.listResellerAssociations;
      h.store.listResellerAssociations = async () => {
        throw new Error("store exploded");
      };
      try {
        const res = await s.call("GET", "/svc/v1/resellers");
        assert.equal(res.json().data, "store exploded", "500 data carries the exception message, nothing more");
        return res;
      } finally {
        h.store.listResellerAssociations = original;
      }
    },
  },
];

describe("Part B errors over HTTP", () => {
  const ctx = {} as Ctx;
  const reached = new Set<string>();
  const errorIds = new Set<string>();

  before(async () => {
    ctx.h = await Harness.start(MAX_DEVICES);
    ctx.s = await ctx.h.session();
    const created = await ctx.s.call("POST", "/svc/v1/enroll/profiles", { name: "Field tablets" });
    assert.equal(created.statusCode, 200, created.body);
    ctx.profileId = created.json().profileId;
    ctx.other = await ctx.h.tenant();
  });
  after(() => ctx.h.close());

  for (const c of cases) {
    it(`${c.entry.status} ${c.entry.code} ${c.entry.message}: ${c.what}`, async () => {
      const res = await c.run(ctx);
      const body = assertPartBError(res, c.entry, c.what);
      assert.ok(!errorIds.has(body.errorId), "errorIds are unique");
      errorIds.add(body.errorId);
      assert.equal(res.headers["x-error-id"], body.errorId, "the X-Error-Id header names the body's errorId");

      const logged = await ctx.h.activityFor(body.errorId);
      assert.ok(logged, `errorId ${body.errorId} is in the activity log`);
      assert.equal(logged.status, c.entry.status);
      assert.equal(logged.code, c.entry.code);
      assert.match(logged.method, /^(GET|POST|PUT|DELETE)$/);
      assert.match(logged.route, /^\/svc\/|^unmatched$/);
      assert.equal(logged.remoteAddress, "127.0.0.1");
      assert.ok(logged.latencyMs >= 0);
      if (c.attributed !== false) {
        assert.ok(logged.tenantId, "the refused request is attributed to its tenant");
        assert.ok(logged.clientId?.startsWith("cl_"), "and to its client");
      }
      reached.add(c.entry.key);
    });
  }

  it("reaches every Part B catalog entry except the SEG profile codes", () => {
    const expected = catalogEntries
      .filter(
        (e) =>
          (e.part === "B" && !e.key.startsWith("SEG_")) ||
          e === catalog.TOO_MANY_REQUESTS ||
          e === catalog.INTERNAL_SERVER_ERROR ||
          e === catalog.SERVICE_UNAVAILABLE,
      )
      .map((e) => e.key)
      .sort();
    assert.deepEqual([...reached].sort(), expected);
  });
});
