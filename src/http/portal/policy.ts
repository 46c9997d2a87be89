import { Type } from "typebox";
import { POLICY_CACHE_MS, type TenantPolicies } from "../../services/tenantPolicies.ts";
import { MAX_ALLOWED_APPS, MAX_BOOT_KEYS, MAX_DIGESTS_PER_APP } from "../../attestation/policy/tenantPolicyDocument.ts";
import type { TenantPolicyVersion } from "../../domain/tenantPolicy.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { partBErrors } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";
import { policyPage } from "../../../web/pages/policy.ts";
import { pickTenantPage } from "../../../web/layout.ts";


/**
 * The policy document as answers show it (docs/policy.md). Requests are checked by the one parser of
 * src/attestation/policy/tenantPolicyDocument.ts, whose errors name each faulty field, not by this schema.
 */
export const PolicyDocument = Type.Object(
  {
    android: Type.Optional(
      Type.Object({
        allowedApps: Type.Optional(
          Type.Array(
            Type.Object({
              packageName: Type.String({ description: "the app's package name" }),
              signatureDigests: Type.Optional(Type.Array(Type.String(), { maxItems: MAX_DIGESTS_PER_APP, description: "SHA-256 of the signing certificates, 64 hex digits; absent: any" })),
            }),
            { maxItems: MAX_ALLOWED_APPS, description: "only these apps pass; absent: any app" },
          ),
        ),
        minOsPatchLevel: Type.Optional(Type.String({ description: "YYYY-MM or YYYY-MM-DD: the oldest osPatchLevel that passes" })),
        requiredSecurityLevel: Type.Optional(Type.Union([Type.Literal("TrustedEnvironment"), Type.Literal("StrongBox")], { description: "the lowest security level that passes" })),
        factoryExpiry: Type.Optional(Type.Union([Type.Literal("accept"), Type.Literal("refuse")], { description: "expired factory intermediates of a pre-RKP chain" })),
        allowedBootKeys: Type.Optional(
          Type.Array(Type.Object({ key: Type.String(), label: Type.String(), models: Type.Optional(Type.Array(Type.String())) }), {
            maxItems: MAX_BOOT_KEYS,
            description: "verified-boot keys this tenant trusts besides the operator's allow-list",
          }),
        ),
      }),
    ),
    playIntegrity: Type.Optional(
      Type.Object({
        minDeviceVerdict: Type.Optional(Type.Union([Type.Literal("MEETS_BASIC_INTEGRITY"), Type.Literal("MEETS_DEVICE_INTEGRITY"), Type.Literal("MEETS_STRONG_INTEGRITY")], {
            description: "no registered app's device floor is below this",
          })),
      }),
    ),
    appAttest: Type.Optional(
      Type.Object({
        environments: Type.Optional(Type.Array(Type.Union([Type.Literal("production"), Type.Literal("development")]), { description: "the environments admitted at all" })),
      }),
    ),
  },
  { description: "a tenant's appraisal policy (docs/policy.md): every field optional; what it leaves out is the operator's default" },
);

const PolicyVersionItem = Type.Object({
  version: Type.Integer({ minimum: 1 }),
  createdAt: Type.String(),
  author: Type.String({ description: "who stored it: a portal user's email, operator:<user> at the CLI, or seed:--android-policy" }),
  document: PolicyDocument,
});

/** the body of PUT: the document, checked by the policy parser (unknown fields and bad values name their path) */
const PolicyBody = Type.Record(Type.String(), Type.Unknown(), {
  description: "the new policy document (docs/policy.md); every faulty field is named in the 400's data, e.g. `android.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD`",
});

const item = (v: TenantPolicyVersion) => ({ version: v.version, createdAt: v.createdAt, author: v.author, document: v.document });

/**
 * A tenant's appraisal policy (issue 26): the admin API over the same TenantPolicies as `attestd policy ...` and the
 * portal's Policy page. A tenant's viewer reads it, its admin changes it, an operator acts on the ?tenant= one.
 * A change is in force on this instance from its answer on, on every other within POLICY_CACHE_MS.
 */
export function registerPolicyRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  const policies: TenantPolicies = deps.policies;
  const bound = `${POLICY_CACHE_MS / 1000} s`;
  app.get("/portal/policy", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
    // an operator who has not picked a tenant picks one here
    if (request.actor!.role === "operator" && !request.query.tenant) {
      return html(reply, pickTenantPage(ctxOf(request), "Policy", "/portal/policy", (await deps.tenantAdmin.list()).map((t) => t.name)));
    }
    const tenant = (await scope(request, false)).tenant!;
    return html(reply, policyPage(ctxOf(request), await policies.current(tenant), await policies.versions(tenant), allowed(request.actor!, "admin")));
  });

  app.get(
    "/portal/api/policy",
    {
      schema: {
        tags,
        operationId: "portalGetPolicy",
        summary: "The tenant's policy version in force; 404 when it has none (the operator's defaults apply)",
        querystring: Type.Object(TenantQuery),
        response: { 200: PolicyVersionItem, ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const current = await policies.current((await scope(request, false)).tenant!);
      if (!current) throw new AppError(catalog.PORTAL_NOT_FOUND, "the tenant has no stored policy: the operator's defaults apply");
      return item(current);
    },
  );

  app.put(
    "/portal/api/policy",
    {
      schema: {
        tags,
        operationId: "portalSetPolicy",
        summary: `Store a new version of the tenant's policy (as \`attestd policy set\`): in force on this instance from the answer on, on every other within ${bound}`,
        querystring: Type.Object(TenantQuery),
        body: PolicyBody,
        response: { 200: PolicyVersionItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => item(await policies.set((await scope(request, false)).tenant!, request.body, by(request))),
  );

  app.get(
    "/portal/api/policy/versions",
    {
      schema: {
        tags,
        operationId: "portalListPolicyVersions",
        summary: "The tenant's policy versions, newest first",
        querystring: Type.Object({
          ...TenantQuery,
          before: Type.Optional(Type.Integer({ minimum: 1, description: "only versions below this number (the next page)" })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
        }),
        response: { 200: Type.Array(PolicyVersionItem), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => (await policies.versions((await scope(request, false)).tenant!, request.query)).map(item),
  );

  app.get(
    "/portal/api/policy/versions/:version",
    {
      schema: {
        tags,
        operationId: "portalGetPolicyVersion",
        summary: "One version of the tenant's policy",
        params: Type.Object({ version: Type.Integer({ minimum: 1, maximum: 2147483647 }) }),
        querystring: Type.Object(TenantQuery),
        response: { 200: PolicyVersionItem, ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => item(await policies.version((await scope(request, false)).tenant!, request.params.version)),
  );

  app.post(
    "/portal/api/policy/rollback",
    {
      schema: {
        tags,
        operationId: "portalRollbackPolicy",
        summary: `Store a new version with the document of an older one (as \`attestd policy rollback\`); in force as a change is, within ${bound}`,
        querystring: Type.Object(TenantQuery),
        body: Type.Object({ version: Type.Integer({ minimum: 1, maximum: 2147483647, description: "the version whose document to restore" }) }, { additionalProperties: false }),
        response: { 200: PolicyVersionItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => item(await policies.rollback((await scope(request, false)).tenant!, request.body.version, by(request))),
  );
}
