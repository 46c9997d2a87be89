import { Type } from "typebox";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { SSO_COOKIE } from "../../portal/ssoSettings.ts";
import { ssoLandingPage } from "../../../web/pages/account.ts";
import { ssoPage } from "../../../web/pages/ssoMappings.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { safeNext } from "./account.ts";
import { requestSource } from "../auditSource.ts";
import type { PortalRoutes } from "./context.ts";

const FlowCookie = { path: "/", secure: true, httpOnly: true, sameSite: "lax" } as const;

const MappingView = Type.Object({
  kind: Type.Union([Type.Literal("subject"), Type.Literal("email")]),
  value: Type.String(),
  tenant: Type.String(),
  role: Type.Union([Type.Literal("admin"), Type.Literal("viewer")]),
  createdAt: Type.String(),
});
const Kind = Type.Union([Type.Literal("subject"), Type.Literal("email")]);

/**
 * Single sign-on through the deployment's OpenID Connect provider (docs/sso.md): /portal/sso/start sends the
 * browser to the provider, /portal/sso/callback takes it back and opens the same session a password opens; and the
 * operators' mappings on the Single sign-on page (/portal/sso) and under /portal/api/sso/mappings, the same service
 * as `attestd sso ...`.
 */
export function registerSsoRoutes(app: AppInstance, { deps, html, tags, startSession, by, ctxOf }: PortalRoutes): void {
  const configured = () => {
    if (!deps.sso) throw new AppError(catalog.PORTAL_NOT_FOUND, "single sign-on is not configured (--sso-issuer)");
    return deps.sso;
  };

  app.get(
    "/portal/sso/start",
    { schema: { hide: true, querystring: Type.Object({ next: Type.Optional(Type.String({ maxLength: 500 })) }) }, config: { portal: "public" } },
    async (request, reply) => {
      const { url, cookie, maxAgeSeconds } = await configured().begin(safeNext(request.query.next));
      reply.setCookie(SSO_COOKIE, cookie, { ...FlowCookie, maxAge: maxAgeSeconds });
      return reply.redirect(url, 302);
    },
  );

  app.get(
    "/portal/sso/callback",
    { schema: { hide: true, querystring: Type.Record(Type.String(), Type.String({ maxLength: 4096 })) }, config: { portal: "public" } },
    async (request, reply) => {
      const sso = configured();
      const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
      const cookie = request.cookies[SSO_COOKIE];
      // the flow is over, whatever its outcome: a second use of the same answer finds no cookie
      reply.clearCookie(SSO_COOKIE, FlowCookie);
      // what a first sign-in changes (the person made, linked, their role) is the person's own change in the audit trail
      const { user, next } = await sso.finish(query, cookie, (actor) => deps.audit.as(actor, requestSource(request)));
      await startSession(reply, user, "sso");
      // A page, not a redirect: the browser came here from the provider's site, and a SameSite=Strict session cookie
      // is not sent on a redirect that continues that cross-site navigation. The page's own link is same-site.
      return html(reply, ssoLandingPage(next));
    },
  );

  app.get("/portal/sso", { schema: { hide: true }, config: { portal: "operator" } }, async (request, reply) => {
    const [mappings, tenants] = await Promise.all([deps.ssoMappings.list(), deps.tenantAdmin.list()]);
    const s = deps.sso?.settings;
    const provider = s && { name: s.name, issuer: s.issuer, claims: s.claims !== undefined };
    return html(reply, ssoPage(ctxOf(request), { mappings, provider, tenants: tenants.map((t) => t.name) }));
  });

  app.get(
    "/portal/api/sso/mappings",
    {
      schema: { tags, operationId: "portalListSsoMappings", summary: "Single sign-on: the operators' mappings of provider identities to a tenant and role", response: { 200: Type.Array(MappingView), ...partBErrors(401, 403) } },
      config: { portal: "operator" },
    },
    async () => deps.ssoMappings.list(),
  );
  app.put(
    "/portal/api/sso/mappings",
    {
      schema: {
        tags,
        operationId: "portalPutSsoMapping",
        summary: "Single sign-on: map a provider subject, or a verified email, to a tenant and role (admin or viewer), replacing its mapping",
        body: Type.Object(
          { kind: Kind, value: SafeText({ minLength: 1, maxLength: 255 }), tenant: SafeText({ minLength: 1, maxLength: 100 }), role: Type.Union([Type.Literal("admin"), Type.Literal("viewer")]) },
          { additionalProperties: false },
        ),
        response: { 200: MappingView, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request) => {
      const b = request.body;
      return deps.ssoMappings.map(b.kind === "subject" ? { subject: b.value } : { email: b.value }, b.tenant, b.role, by(request));
    },
  );
  app.delete(
    "/portal/api/sso/mappings/:kind/:value",
    {
      schema: {
        tags,
        operationId: "portalDeleteSsoMapping",
        summary: "Single sign-on: remove a mapping; the person is refused at their next sign-in through the provider",
        params: Type.Object({ kind: Kind, value: SafeText({ minLength: 1, maxLength: 255 }) }),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request, reply) => {
      const p = request.params;
      if (!(await deps.ssoMappings.unmap(p.kind === "subject" ? { subject: p.value } : { email: p.value }, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, `no mapping for ${p.kind} ${p.value}`);
      return reply.code(204).send(null);
    },
  );
}
