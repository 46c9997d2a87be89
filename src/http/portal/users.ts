import { Type } from "typebox";
import { summarisePerson } from "../../portal/accounts.ts";
import { usersPage } from "../../../web/pages/users.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import type { PortalRoutes } from "./context.ts";

const Role = Type.Union([Type.Literal("admin"), Type.Literal("viewer")]);
const PeopleQuery = Type.Object(
  {
    tenant: Type.Optional(SafeText({ maxLength: 100, description: "only this tenant's people" })),
    operators: Type.Optional(Type.Boolean({ description: "only the operators" })),
  },
  { additionalProperties: false },
);
const Person = Type.Object({
  userId: Type.String(),
  email: Type.String(),
  tenant: Type.Union([Type.String(), Type.Null()], { description: "the tenant's name; null for operators" }),
  role: Type.Union([Role, Type.Literal("operator")]),
  state: Type.Union([Type.Literal("invited"), Type.Literal("active"), Type.Literal("disabled")]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const UserParams = Type.Object({ userId: Type.String({ minLength: 1, maxLength: 64 }) });

/**
 * The Users page and its admin API: the same PortalAccounts operations as `attestd user invite | reset-link |
 * set-role | disable | enable | list-portal`, one to one. Operators see and run everyone; a tenant admin sees the
 * people of their own tenant and may give them a reset link, nothing more.
 */
export function registerUserRoutes(app: AppInstance, { deps, ctxOf, html, tags, scope, by }: PortalRoutes): void {
  const accounts = deps.accounts;

  app.get("/portal/users", { schema: { hide: true, querystring: PeopleQuery }, config: { portal: "admin" } }, async (request, reply) => {
    if (request.actor!.role === "operator") {
      const tenants = (await deps.tenantAdmin.list()).map((t) => t.name);
      return html(reply, usersPage(ctxOf(request), await accounts.list(request.query), request.query, tenants));
    }
    // whatever the query says, an admin's list is their own tenant's
    const { tenant } = await scope(request, false);
    const filter = { tenant: tenant!.name };
    return html(reply, usersPage(ctxOf(request), await accounts.list(filter), filter));
  });

  app.get(
    "/portal/api/users",
    {
      schema: {
        tags,
        operationId: "portalListUsers",
        summary: "People who sign in to the portal: a tenant's, the operators, or everyone (operators only)",
        querystring: PeopleQuery,
        response: { 200: Type.Array(Person), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request) => accounts.list(request.query),
  );
  app.post(
    "/portal/api/users",
    {
      schema: {
        tags,
        operationId: "portalInviteUser",
        summary: "Invite a person: the one-time sign-in link (24 h) is in this answer only (operators only)",
        body: Type.Union([
          Type.Object({ email: SafeText({ maxLength: 320 }), tenant: SafeText({ minLength: 1, maxLength: 100 }), role: Role }, { additionalProperties: false }),
          Type.Object({ email: SafeText({ maxLength: 320 }), role: Type.Literal("operator") }, { additionalProperties: false }),
        ]),
        response: { 200: Type.Object({ user: Person, link: Type.String(), expiresAt: Type.String() }), ...partBErrors(400, 401, 403, 404, 409) },
      },
      config: { portal: "operator" },
    },
    async (request) => {
      const inv = await accounts.invite(request.body, by(request));
      return { user: summarisePerson(inv.user, "tenant" in request.body ? request.body.tenant : null), link: inv.link, expiresAt: inv.expiresAt };
    },
  );
  app.post(
    "/portal/api/users/:userId/reset-link",
    {
      schema: {
        tags,
        operationId: "portalUserResetLink",
        summary:
          "A one-time link (24 h) where the person sets a new password, in this answer only; their earlier links stop working, and using it ends every session of theirs (operators for anyone, a tenant admin for their own tenant's people; not for a disabled person)",
        params: UserParams,
        response: { 200: Type.Object({ email: Type.String(), link: Type.String(), expiresAt: Type.String() }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const link = await accounts.resetLink({ userId: request.params.userId }, by(request), request.actor!);
      return { email: link.user.email, link: link.link, expiresAt: link.expiresAt };
    },
  );
  app.patch(
    "/portal/api/users/:userId",
    {
      schema: {
        tags,
        operationId: "portalSetUserRole",
        summary: "Change a tenant user's role; it applies at their next request (operators only)",
        params: UserParams,
        body: Type.Object({ role: Role }, { additionalProperties: false }),
        response: { 204: Type.Null(), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request, reply) => {
      await accounts.setRole({ userId: request.params.userId }, request.body.role, by(request));
      return reply.code(204).send(null);
    },
  );
  app.post(
    "/portal/api/users/:userId/disable",
    {
      schema: {
        tags,
        operationId: "portalDisableUser",
        summary: "Disable a person: every session of theirs ends at once (operators only; not yourself)",
        params: UserParams,
        response: { 200: Type.Object({ sessionsEnded: Type.Integer() }), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request) => ({ sessionsEnded: await accounts.disable({ userId: request.params.userId }, by(request), request.actor!) }),
  );
  app.post(
    "/portal/api/users/:userId/enable",
    {
      schema: {
        tags,
        operationId: "portalEnableUser",
        summary: "Let a disabled person sign in again (operators only)",
        params: UserParams,
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "operator" },
    },
    async (request, reply) => {
      await accounts.enable({ userId: request.params.userId }, by(request));
      return reply.code(204).send(null);
    },
  );
}
