import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyCookie from "@fastify/cookie";
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { SESSION_COOKIE } from "../../portal/sessions.ts";
import { errorPage, type ErrorBody } from "../../../web/pages/error.ts";
import { contentSecurityPolicy } from "../contentSecurityPolicy.ts";
import { originForm, routeOf } from "../requestTarget.ts";
import type { AppInstance } from "../types.ts";
import { registerAccountRoutes } from "./account.ts";
import { allowed, type PortalDeps, type PortalRoutes } from "./context.ts";
import { requestSource } from "../auditSource.ts";
import { registerHistoryRoutes } from "./history.ts";
import { registerKeyRoutes } from "./keys.ts";
import { registerClientRoutes } from "./clients.ts";
import { registerAuditRoutes } from "./audit.ts";
import { registerEnrollmentRoutes } from "./enrollment.ts";
import { registerReferenceValueRoutes } from "./referenceValues.ts";
import { registerPasskeyRoutes } from "./passkeys.ts";
import { registerUserRoutes } from "./users.ts";
import { registerOperatorRoutes } from "./operator.ts";
import { registerOverviewRoutes } from "./overview.ts";
import { registerPinnedDeviceRoutes } from "./devices.ts";
import { registerPlayAppRoutes } from "./playApps.ts";
import { registerWebhookRoutes } from "./webhooks.ts";
import { registerPolicyRoutes } from "./policy.ts";
import { registerIosAppRoutes } from "./iosApps.ts";
import { registerSsoRoutes } from "./sso.ts";

/**
 * Strict: nothing inline, nothing from another origin, never framed. web/static/portal.js is the only script;
 * Pico's stylesheet and the portal's are files of this service.
 */
const CSP = contentSecurityPolicy();

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../web/static");
const require = createRequire(import.meta.url);

/** The only files the portal serves: its own and what it uses from node_modules (no CDN). */
const ASSETS: Record<string, { file: string; type: string }> = {
  "portal.js": { file: path.join(WEB, "portal.js"), type: "text/javascript; charset=utf-8" },
  "portal.css": { file: path.join(WEB, "portal.css"), type: "text/css; charset=utf-8" },
  // the tab's icon and the top bar's mark (linked from web/layout.ts)
  "favicon.svg": { file: path.join(WEB, "favicon.svg"), type: "image/svg+xml" },
  "vendor/pico.min.css": { file: require.resolve("@picocss/pico/css/pico.min.css"), type: "text/css; charset=utf-8" },
  // the package's single-file build (its ESM entry imports a tree of files); it sets window.SimpleWebAuthnBrowser
  "vendor/simplewebauthn-browser.js": {
    file: path.join(path.dirname(require.resolve("@simplewebauthn/browser")), "../dist/bundle/index.umd.min.js"),
    type: "text/javascript; charset=utf-8",
  },
  // the overview's chart (web/static/overview.js imports it); the UMD build, as the ESM one imports a bare specifier
  "overview.js": { file: path.join(WEB, "overview.js"), type: "text/javascript; charset=utf-8" },
  // (chart.js exports no subpath for it: found beside its CommonJS entry, dist/chart.cjs)
  "vendor/chart.umd.min.js": { file: path.join(path.dirname(require.resolve("chart.js")), "chart.umd.min.js"), type: "text/javascript; charset=utf-8" },
};

// each takes the matched route (requestTarget.ts `routeOf`), never the raw target
const isApi = (route: string) => route.startsWith("/portal/api/");
const isAsset = (route: string) => route.startsWith("/portal/assets/");

/** The origin the browser must be on for a request without a session (sign-in): this host over HTTPS. */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  return typeof origin === "string" && origin === `${request.protocol}://${request.headers.host}`;
}

/**
 * The portal (docs/portal.md): pages for people at /portal/, and the JSON admin API under /portal/api/ that
 * every state change goes through. Sessions, CSRF, roles and tenant scoping are decided here, once, before any
 * route runs; the routes (one file per page family) call the same services as the CLI.
 */
export function registerPortal(deps: PortalDeps): (app: AppInstance) => Promise<void> {
  return async (app) => {
    await app.register(fastifyCookie);

    app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect("/portal/", 302));
    app.get("/portal", { schema: { hide: true } }, (_request, reply) => reply.redirect("/portal/", 302));

    app.addHook("onRequest", (request, reply, done) => {
      const route = routeOf(request);
      if (route.startsWith("/portal")) {
        reply.headers({
          "content-security-policy": CSP,
          "x-content-type-options": "nosniff",
          "referrer-policy": "same-origin",
          "x-frame-options": "DENY",
          "cache-control": isAsset(route) ? "public, max-age=3600" : "no-store",
        });
      }
      done();
    });

    // Who is asking, what they may do, and that a state change carries its CSRF token: before every portal route,
    // and before its input is validated, so a person without the right learns nothing of what a valid request is.
    const gate = async (request: FastifyRequest, reply: FastifyReply, need: NonNullable<FastifyContextConfig["portal"]>): Promise<boolean> => {
      const isWrite = !["GET", "HEAD"].includes(request.method);
      if (need === "public") {
        if (isWrite && !sameOrigin(request)) throw new AppError(catalog.PORTAL_CSRF, "the request did not come from this site");
        return false;
      }
      const resolved = await deps.sessions.resolve(request.cookies[SESSION_COOKIE]);
      if (!resolved) {
        // a cookie that names no live session: the person was signed in, and the sign-in page says why they are back
        const ended = request.cookies[SESSION_COOKIE] ? "&ended=1" : "";
        if (!isApi(routeOf(request))) {
          // origin-form: a target in absolute-form must not make the sign-in page send the person to another host
          void reply.redirect(`/portal/signin?next=${encodeURIComponent(originForm(request.url))}${ended}`, 302);
          return true;
        }
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
      return false;
    };
    // Every route passes this hook (the portal's routes share the root scope with the API's), so a route that is
    // not the portal's leaves at once, in Fastify's callback form: an async hook would cost each Part A request a
    // promise and a microtask hop. A portal route goes through `gate`, which says whether it answered (redirect).
    app.addHook("preValidation", (request, reply, done) => {
      const need = request.routeOptions.config?.portal;
      if (!need) return done();
      gate(request, reply, need).then((answered) => {
        if (!answered) done();
      }, done);
    });

    // A page (not the API) that fails answers with a page saying why, for a person; the API keeps its JSON body.
    // callback form for the same reason as the preValidation hook above: every response passes it
    app.addHook("onSend", (request, reply, payload, done) => {
      const route = routeOf(request);
      const page = request.method === "GET" && route.startsWith("/portal/") && !isApi(route) && !isAsset(route);
      if (!page || reply.statusCode < 400 || typeof payload !== "string" || !String(reply.getHeader("content-type")).startsWith("application/json")) {
        return done(null, payload);
      }
      let html: string;
      try {
        reply.type("text/html; charset=utf-8");
        const ctx = request.actor && request.csrfToken ? { actor: request.actor, csrf: request.csrfToken } : {};
        html = errorPage(ctx, reply.statusCode, JSON.parse(payload) as ErrorBody);
      } catch (err) {
        return done(err as Error);
      }
      done(null, html);
    });

    app.get("/portal/assets/*", { schema: { hide: true } }, (request, reply) => {
      const asset = ASSETS[(request.params as { "*": string })["*"]];
      if (!asset) throw new AppError(catalog.PORTAL_NOT_FOUND, "no such asset");
      return reply.type(asset.type).send(readFileSync(asset.file));
    });

    const routes: PortalRoutes = {
      deps,
      tags: ["portal"],
      by(request) {
        const actor = request.actor!;
        return deps.audit.as({ kind: "user", id: actor.userId, email: actor.email }, requestSource(request));
      },
      async scope(request, all) {
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
      },
      ctxOf(request) {
        const tenant = (request.query as { tenant?: string }).tenant;
        return { actor: request.actor!, csrf: request.csrfToken!, ...(request.actor!.tenantId === null && tenant ? { tenant } : {}) };
      },
      html: (reply, body) => reply.type("text/html; charset=utf-8").send(body),
      async startSession(reply, user, method) {
        const { sessionId } = await deps.sessions.open(user, method, (actor) => deps.audit.as(actor, requestSource(reply.request)));
        // the cookie outlives no session: its Max-Age is the session's absolute lifetime
        reply.setCookie(SESSION_COOKIE, sessionId, {
          path: "/",
          secure: true,
          httpOnly: true,
          sameSite: "strict",
          maxAge: Math.floor(deps.sessions.lifetimes.absoluteMs / 1000),
        });
      },
    };
    registerAccountRoutes(app, routes);
    registerHistoryRoutes(app, routes);
    registerKeyRoutes(app, routes);
    registerClientRoutes(app, routes);
    registerReferenceValueRoutes(app, routes);
    registerPlayAppRoutes(app, routes);
    registerWebhookRoutes(app, routes);
    registerIosAppRoutes(app, routes);
    registerPolicyRoutes(app, routes);
    registerEnrollmentRoutes(app, routes);
    registerPinnedDeviceRoutes(app, routes);
    registerPasskeyRoutes(app, routes);
    registerUserRoutes(app, routes);
    registerOverviewRoutes(app, routes);
    registerOperatorRoutes(app, routes);
    registerSsoRoutes(app, routes);
    registerAuditRoutes(app, routes);
  };
}
