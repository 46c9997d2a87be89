import { requestSource } from "../auditSource.ts";
import { Type } from "typebox";
import { SESSION_COOKIE } from "../../portal/sessions.ts";
import { invitePage, signInPage } from "../../../web/pages/account.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import type { PortalRoutes } from "./context.ts";

const Email = SafeText({ minLength: 3, maxLength: 320 });
const Password = Type.String({ minLength: 1, maxLength: 4096 });

/** Only a path of this portal: a `next` that leaves it (another host, `//evil`, a backslash trick) is dropped. */
export function safeNext(next: string | undefined): string {
  return next && /^\/portal\/[^\\]*$/.test(next) && !next.startsWith("//") ? next : "/portal/";
}

/** Signing in and out, setting a password through an invitation or a reset link, and changing it. */
export function registerAccountRoutes(app: AppInstance, { deps, by, html, tags, startSession }: PortalRoutes): void {
  const SignInQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 500 })), ended: Type.Optional(Type.String({ maxLength: 8 })) });
  app.get("/portal/signin", { schema: { hide: true, querystring: SignInQuery }, config: { portal: "public" } }, (request, reply) =>
    html(reply, signInPage(safeNext(request.query.next), request.query.ended !== undefined, deps.sso?.name)),
  );
  app.get("/portal/invite", { schema: { hide: true }, config: { portal: "public" } }, (_request, reply) => html(reply, invitePage("invite")));
  app.get("/portal/reset", { schema: { hide: true }, config: { portal: "public" } }, (_request, reply) => html(reply, invitePage("reset")));

  app.post(
    "/portal/api/session",
    {
      schema: {
        tags,
        operationId: "portalSignIn",
        summary: "Sign in with email and password; sets the __Host-attestd_session cookie",
        body: Type.Object({ email: Email, password: Password }, { additionalProperties: false }),
        response: { 200: Type.Object({ email: Type.String(), role: Type.String() }), ...partBErrors(400, 401, 403, 429) },
      },
      config: { portal: "public" },
    },
    async (request, reply) => {
      const user = await deps.accounts.signIn(request.body.email, request.body.password, request.ip);
      await startSession(reply, user, "password");
      return { email: user.email, role: user.role };
    },
  );
  app.delete(
    "/portal/api/session",
    { schema: { tags, operationId: "portalSignOut", summary: "Sign out: ends the session on the server", response: { 204: Type.Null(), ...partBErrors(401, 403) } }, config: { portal: "viewer" } },
    async (request, reply) => {
      await deps.sessions.end(request.cookies[SESSION_COOKIE]!, by(request), request.actor!.tenantId);
      reply.clearCookie(SESSION_COOKIE, { path: "/", secure: true, httpOnly: true, sameSite: "strict" });
      return reply.code(204).send(null);
    },
  );
  app.get(
    "/portal/api/me",
    {
      schema: {
        tags,
        operationId: "portalWhoAmI",
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
        operationId: "portalAcceptInvite",
        summary: "Set a password with a one-time link's token (an invitation or a reset link); every session of the person ends",
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }), password: Password }, { additionalProperties: false }),
        response: { 200: Type.Object({ email: Type.String() }), ...partBErrors(400, 403, 410) },
      },
      config: { portal: "public" },
    },
    async (request) => ({ email: (await deps.accounts.acceptInvite(request.body.token, request.body.password, (actor) => deps.audit.as(actor, requestSource(request)))).email }),
  );
  app.post(
    "/portal/api/account/password",
    {
      schema: {
        tags,
        operationId: "portalChangePassword",
        summary:
          "Change your password (the current one required, under the sign-in rate limits): every session of yours ends, and this browser gets a new one in the answer's cookie",
        body: Type.Object({ currentPassword: Password, newPassword: Password }, { additionalProperties: false }),
        response: {
          200: Type.Object({ email: Type.String(), sessionsEnded: Type.Integer({ description: "your sessions ended, this one included" }) }),
          ...partBErrors(400, 401, 403, 429),
        },
      },
      config: { portal: "viewer" },
    },
    async (request, reply) => {
      const actor = request.actor!;
      const sessionsEnded = await deps.accounts.changePassword(actor, request.body.currentPassword, request.body.newPassword, request.ip, by(request));
      // the cookie this request came with names a session that just ended: the person goes on in a fresh one
      await startSession(reply, await deps.accounts.find({ userId: actor.userId }), "password");
      return { email: actor.email, sessionsEnded };
    },
  );
}
