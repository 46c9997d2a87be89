import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyCookie from "@fastify/cookie";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { PortalRole } from "../../domain/portal.ts";
import type { Tenant } from "../../domain/tenants.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import type { PortalAccounts } from "../../portal/accounts.ts";
import type { PortalHistory, VerdictFilter, ActivityView } from "../../portal/history.ts";
import { SESSION_COOKIE, ABSOLUTE_MS, type Actor, type PortalSessions } from "../../portal/sessions.ts";
import type { ApiKeyAdmin } from "../../services/apiKeyAdmin.ts";
import type { TenantDirectory } from "../../services/tenantDirectory.ts";
import * as pages from "../../../web/pages.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";

export interface PortalDeps {
  accounts: PortalAccounts;
  sessions: PortalSessions;
  history: PortalHistory;
  keys: ApiKeyAdmin;
  tenants: TenantDirectory;
}

declare module "fastify" {
  interface FastifyRequest {
    /** the signed-in person on a portal route */
    actor?: Actor;
    csrfToken?: string;
  }
  interface FastifyContextConfig {
    /** who may use a portal route: "public" (sign-in pages), or the least role it needs */
    portal?: "public" | "viewer" | "admin" | "operator";
  }
}

/**
 * Strict: nothing inline, nothing from another origin, never framed. web/static/portal.js is the only script;
 * Pico's stylesheet and the portal's are files of this service.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../web/static");
const require = createRequire(import.meta.url);

/** The only files the portal serves: its own two and Pico's stylesheet from node_modules (no CDN). */
const ASSETS: Record<string, { file: string; type: string }> = {
  "portal.js": { file: path.join(WEB, "portal.js"), type: "text/javascript; charset=utf-8" },
  "portal.css": { file: path.join(WEB, "portal.css"), type: "text/css; charset=utf-8" },
  "vendor/pico.min.css": { file: require.resolve("@picocss/pico/css/pico.min.css"), type: "text/css; charset=utf-8" },
};

const RANK: Record<PortalRole, number> = { viewer: 0, admin: 1, operator: 2 };

function allowed(actor: Actor, need: "viewer" | "admin" | "operator"): boolean {
  if (need === "operator") return actor.role === "operator";
  return RANK[actor.role] >= RANK[need];
}

const isApi = (url: string) => url.startsWith("/portal/api/");

/** The origin the browser must be on for a request without a session (sign-in): this host over HTTPS. */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  return typeof origin === "string" && origin === `${request.protocol}://${request.headers.host}`;
}

const Email = Type.String({ minLength: 3, maxLength: 320 });
const Password = Type.String({ minLength: 1, maxLength: 4096 });
const TenantQuery = { tenant: Type.Optional(Type.String({ maxLength: 100 })) };
const VerdictQuery = Type.Object(
  {
    ...TenantQuery,
    verdict: Type.Optional(Type.Union([Type.Literal("Yes"), Type.Literal("No"), Type.Literal("Unknown"), Type.Literal("")])),
    status: Type.Optional(Type.String({ maxLength: 64 })),
    format: Type.Optional(Type.String({ maxLength: 32 })),
    device: Type.Optional(Type.String({ maxLength: 128 })),
    from: Type.Optional(Type.String({ maxLength: 40 })),
    to: Type.Optional(Type.String({ maxLength: 40 })),
    after: Type.Optional(Type.String({ maxLength: 400 })),
  },
  { additionalProperties: false },
);
const ActivityQuery = Type.Object(
  {
    ...TenantQuery,
    errorId: Type.Optional(Type.String({ maxLength: 64 })),
    status: Type.Optional(Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Literal("")])),
    code: Type.Optional(Type.String({ maxLength: 64 })),
    route: Type.Optional(Type.String({ maxLength: 200 })),
    from: Type.Optional(Type.String({ maxLength: 40 })),
    to: Type.Optional(Type.String({ maxLength: 40 })),
    after: Type.Optional(Type.String({ maxLength: 400 })),
  },
  { additionalProperties: false },
);
const KeyBody = Type.Object(
  {
    label: Type.Optional(Type.String({ maxLength: 100 })),
    rps: Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000 })),
    burst: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
  },
  { additionalProperties: false },
);

function verdictFilter(q: Record<string, unknown>): VerdictFilter {
  const f: VerdictFilter = {};
  if (q.verdict) f.verdict = q.verdict as VerdictFilter["verdict"] & string;
  for (const k of ["status", "format", "device", "from", "to"] as const) if (typeof q[k] === "string" && q[k] !== "") f[k] = q[k] as string;
  return f;
}

function activityView(q: Record<string, unknown>): ActivityView {
  const f: ActivityView = {};
  if (typeof q.status === "number") f.status = q.status;
  for (const k of ["errorId", "code", "route", "from", "to"] as const) if (typeof q[k] === "string" && q[k] !== "") f[k] = q[k] as string;
  return f;
}

/**
 * The portal (docs/portal.md): pages for people at /portal/, and the JSON admin API under /portal/api/ that
 * every state change goes through. Sessions, CSRF, roles and tenant scoping are decided here, once, before any
 * route runs; the routes call the same services as the CLI.
 */
export function registerPortal(deps: PortalDeps): (app: AppInstance) => Promise<void> {
  return async (app) => {
    await app.register(fastifyCookie);

    app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect("/portal/", 302));
    app.get("/portal", { schema: { hide: true } }, (_request, reply) => reply.redirect("/portal/", 302));

    app.addHook("onRequest", (request, reply, done) => {
      if (request.url.startsWith("/portal")) {
        reply.headers({
          "content-security-policy": CSP,
          "x-content-type-options": "nosniff",
          "referrer-policy": "same-origin",
          "x-frame-options": "DENY",
          "cache-control": request.url.startsWith("/portal/assets/") ? "public, max-age=3600" : "no-store",
        });
      }
      done();
    });

    // Who is asking, what they may do, and that a state change carries its CSRF token: before every portal route.
    app.addHook("preHandler", async (request, reply) => {
      const need = request.routeOptions.config?.portal;
      if (!need) return;
      const isWrite = !["GET", "HEAD"].includes(request.method);
      if (need === "public") {
        if (isWrite && !sameOrigin(request)) throw new AppError(catalog.PORTAL_CSRF, "the request did not come from this site");
        return;
      }
      const resolved = await deps.sessions.resolve(request.cookies[SESSION_COOKIE]);
      if (!resolved) {
        if (!isApi(request.url)) return reply.redirect(`/portal/signin?next=${encodeURIComponent(request.url)}`, 302);
        throw new AppError(catalog.PORTAL_SIGNED_OUT, "Sign in first");
      }
      request.actor = resolved.actor;
      request.csrfToken = resolved.session.csrfToken;
      request.clientId = resolved.actor.userId;
      if (resolved.actor.tenantId) request.tenantId = resolved.actor.tenantId;
      if (isWrite) {
        const token = request.headers["x-csrf-token"];
        if (!deps.sessions.csrfValid(resolved.session, typeof token === "string" ? token : undefined)) {
          throw new AppError(catalog.PORTAL_CSRF, "the CSRF token is missing or wrong; reload the page");
        }
      }
      if (!allowed(resolved.actor, need)) throw new AppError(catalog.PORTAL_FORBIDDEN, `this needs the ${need} role`);
      return undefined;
    });

    /**
     * The tenant a request acts on: a tenant user's own, always (whatever the URL says); an operator's is the
     * ?tenant= one, or every tenant (undefined) where `all` allows it.
     */
    async function scope(request: FastifyRequest, all: boolean): Promise<{ tenant?: Tenant; tenantId?: string }> {
      const actor = request.actor!;
      if (actor.tenantId) {
        const tenant = await deps.tenants.byId(actor.tenantId);
        if (!tenant) throw new AppError(catalog.PORTAL_NOT_FOUND, "the tenant no longer exists");
        return { tenant, tenantId: tenant.tenantId };
      }
      const name = (request.query as { tenant?: string }).tenant;
      if (name) {
        const tenant = await deps.tenants.byName(name);
        if (!tenant) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant "${name}"`);
        return { tenant, tenantId: tenant.tenantId };
      }
      if (all) return {};
      throw new AppError(catalog.PORTAL_INVALID_REQUEST, "operators name the tenant: ?tenant=NAME");
    }

    const ctxOf = (request: FastifyRequest) => {
      const tenant = (request.query as { tenant?: string }).tenant;
      return { actor: request.actor!, csrf: request.csrfToken!, ...(request.actor!.tenantId === null && tenant ? { tenant } : {}) };
    };
    const html = (reply: FastifyReply, body: string) => reply.type("text/html; charset=utf-8").send(body);

    // ---- assets ----
    app.get("/portal/assets/*", { schema: { hide: true } }, (request, reply) => {
      const asset = ASSETS[(request.params as { "*": string })["*"]];
      if (!asset) throw new AppError(catalog.PORTAL_NOT_FOUND, "no such asset");
      return reply.type(asset.type).send(readFileSync(asset.file));
    });

    // ---- pages ----
    const SignInQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 500 })) });
    app.get("/portal/signin", { schema: { hide: true, querystring: SignInQuery }, config: { portal: "public" } }, (request, reply) => {
      const next = request.query.next;
      // only a path of this portal: never an open redirect
      return html(reply, pages.signInPage(next && /^\/portal\/[^\\]*$/.test(next) && !next.startsWith("//") ? next : "/portal/"));
    });
    app.get("/portal/invite", { schema: { hide: true }, config: { portal: "public" } }, (_request, reply) => html(reply, pages.invitePage()));

    app.get("/portal/", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
      const { tenantId } = await scope(request, true);
      const recent = await deps.history.verdicts(tenantId, {});
      const failed = await deps.history.activity(tenantId, { status: 401 });
      return html(reply, pages.overviewPage(ctxOf(request), recent.items, failed.items));
    });
    app.get("/portal/verdicts", { schema: { hide: true, querystring: VerdictQuery }, config: { portal: "viewer" } }, async (request, reply) => {
      const { tenantId } = await scope(request, true);
      const f = verdictFilter(request.query);
      const page = await deps.history.verdicts(tenantId, f, request.query.after);
      return html(reply, pages.verdictsPage(ctxOf(request), f, page.items, page.next));
    });
    const ObjectParams = Type.Object({ objectId: Type.String({ minLength: 1, maxLength: 128 }) });
    app.get(
      "/portal/verdicts/:objectId",
      { schema: { hide: true, params: ObjectParams, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } },
      async (request, reply) => {
        const { tenantId } = await scope(request, true);
        const v = await deps.history.verdict(tenantId, request.params.objectId);
        if (!v) throw new AppError(catalog.PORTAL_NOT_FOUND, "no such verdict for this tenant");
        return html(reply, pages.verdictDetailPage(ctxOf(request), v));
      },
    );
    app.get("/portal/activity", { schema: { hide: true, querystring: ActivityQuery }, config: { portal: "viewer" } }, async (request, reply) => {
      const { tenantId } = await scope(request, true);
      const f = activityView(request.query);
      const page = await deps.history.activity(tenantId, f, request.query.after);
      return html(reply, pages.activityPage(ctxOf(request), f, page.items, page.next));
    });
    app.get("/portal/keys", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
      const { tenant } = await scope(request, false);
      return html(reply, pages.keysPage(ctxOf(request), await deps.keys.list(tenant!), allowed(request.actor!, "admin")));
    });

    // ---- the admin API ----
    const tags = ["portal"];
    app.post(
      "/portal/api/session",
      {
        schema: {
          tags,
          summary: "Sign in with email and password; sets the __Host-attestd_session cookie",
          body: Type.Object({ email: Email, password: Password }, { additionalProperties: false }),
          response: { 200: Type.Object({ email: Type.String(), role: Type.String() }), ...partBErrors(400, 401, 403, 429) },
        },
        config: { portal: "public" },
      },
      async (request, reply) => {
        const user = await deps.accounts.signIn(request.body.email, request.body.password, request.ip);
        const { sessionId } = await deps.sessions.open(user, "password");
        reply.setCookie(SESSION_COOKIE, sessionId, { path: "/", secure: true, httpOnly: true, sameSite: "strict", maxAge: ABSOLUTE_MS / 1000 });
        return { email: user.email, role: user.role };
      },
    );
    app.delete(
      "/portal/api/session",
      { schema: { tags, summary: "Sign out: ends the session on the server", response: { 204: Type.Null(), ...partBErrors(401, 403) } }, config: { portal: "viewer" } },
      async (request, reply) => {
        await deps.sessions.end(request.cookies[SESSION_COOKIE]!);
        reply.clearCookie(SESSION_COOKIE, { path: "/", secure: true, httpOnly: true, sameSite: "strict" });
        return reply.code(204).send(null);
      },
    );
    app.get(
      "/portal/api/me",
      {
        schema: {
          tags,
          summary: "Who is signed in",
          response: { 200: Type.Object({ email: Type.String(), role: Type.String(), tenantId: Type.Union([Type.String(), Type.Null()]) }), ...partBErrors(401) },
        },
        config: { portal: "viewer" },
      },
      async (request) => ({ email: request.actor!.email, role: request.actor!.role, tenantId: request.actor!.tenantId }),
    );
    app.post(
      "/portal/api/invite",
      {
        schema: {
          tags,
          summary: "Set a password with a one-time sign-in link's token",
          body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }), password: Password }, { additionalProperties: false }),
          response: { 200: Type.Object({ email: Type.String() }), ...partBErrors(400, 403, 410) },
        },
        config: { portal: "public" },
      },
      async (request) => ({ email: (await deps.accounts.acceptInvite(request.body.token, request.body.password)).email }),
    );

    const VerdictItem = Type.Object({
      objectId: Type.String(),
      tenantId: Type.String(),
      format: Type.String(),
      reason: Type.String(),
      createdAt: Type.String(),
      record: Type.Ref("VerdictRecord"),
      detail: Type.Record(Type.String(), Type.Unknown()),
    });
    app.get(
      "/portal/api/verdicts",
      {
        schema: {
          tags,
          summary: "Verdict history, newest first; filters and an opaque `after` cursor",
          querystring: VerdictQuery,
          response: { 200: Type.Object({ items: Type.Array(VerdictItem), next: Type.Optional(Type.String()) }), ...partBErrors(400, 401, 404) },
        },
        config: { portal: "viewer" },
      },
      async (request) => {
        const { tenantId } = await scope(request, true);
        return deps.history.verdicts(tenantId, verdictFilter(request.query), request.query.after);
      },
    );
    app.get(
      "/portal/api/verdicts/:objectId",
      {
        schema: { tags, summary: "One verdict of the tenant, with its deciding rule and detail", params: ObjectParams, querystring: Type.Object(TenantQuery), response: { 200: VerdictItem, ...partBErrors(401, 404) } },
        config: { portal: "viewer" },
      },
      async (request) => {
        const { tenantId } = await scope(request, true);
        const v = await deps.history.verdict(tenantId, request.params.objectId);
        if (!v) throw new AppError(catalog.PORTAL_NOT_FOUND, "no such verdict for this tenant");
        return v;
      },
    );
    const ActivityItem = Type.Object({
      seq: Type.Number(),
      time: Type.String(),
      errorId: Type.Union([Type.String(), Type.Null()]),
      tenantId: Type.Union([Type.String(), Type.Null()]),
      clientId: Type.Union([Type.String(), Type.Null()]),
      method: Type.String(),
      route: Type.String(),
      status: Type.Integer(),
      code: Type.Union([Type.String(), Type.Null()]),
      latencyMs: Type.Number(),
      remoteAddress: Type.String(),
    });
    app.get(
      "/portal/api/activity",
      {
        schema: {
          tags,
          summary: "The activity log, newest first; filters (exact errorId) and an opaque `after` cursor",
          querystring: ActivityQuery,
          response: { 200: Type.Object({ items: Type.Array(ActivityItem), next: Type.Optional(Type.String()) }), ...partBErrors(400, 401, 404) },
        },
        config: { portal: "viewer" },
      },
      async (request) => {
        const { tenantId } = await scope(request, true);
        return deps.history.activity(tenantId, activityView(request.query), request.query.after);
      },
    );

    const KeyItem = Type.Object({
      keyId: Type.String(),
      tenantId: Type.String(),
      label: Type.Union([Type.String(), Type.Null()]),
      rps: Type.Number(),
      burst: Type.Number(),
      createdAt: Type.String(),
      revokedAt: Type.Union([Type.String(), Type.Null()]),
      lastUsedAt: Type.Union([Type.String(), Type.Null()]),
      restrictions: Type.Union([Type.Object({ ipAddresses: Type.Array(Type.String()), referers: Type.Array(Type.String()) }), Type.Null()]),
    });
    app.get(
      "/portal/api/keys",
      { schema: { tags, summary: "The tenant's Part A API keys (never their secrets)", querystring: Type.Object(TenantQuery), response: { 200: Type.Array(KeyItem), ...partBErrors(400, 401, 404) } }, config: { portal: "viewer" } },
      async (request) => deps.keys.list((await scope(request, false)).tenant!),
    );
    app.post(
      "/portal/api/keys",
      {
        schema: {
          tags,
          summary: "Create an API key: the key is in this answer only; attestd keeps its hash",
          querystring: Type.Object(TenantQuery),
          body: KeyBody,
          response: { 200: Type.Object({ key: Type.String(), keyId: Type.String() }), ...partBErrors(400, 401, 403, 404) },
        },
        config: { portal: "admin" },
      },
      async (request) => {
        const { tenant } = await scope(request, false);
        const made = await deps.keys.create(tenant!, request.body);
        return { key: made.key, keyId: made.record.keyId };
      },
    );
    app.delete(
      "/portal/api/keys/:keyId",
      {
        schema: {
          tags,
          summary: "Revoke an API key of the tenant; requests with it are refused at once",
          params: Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 32 }) }),
          querystring: Type.Object(TenantQuery),
          response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
        },
        config: { portal: "admin" },
      },
      async (request, reply) => {
        const { tenant } = await scope(request, false);
        if (!(await deps.keys.revoke(tenant, request.params.keyId))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no active key of that id for this tenant");
        return reply.code(204).send(null);
      },
    );
  };
}
