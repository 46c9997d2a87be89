import { Type } from "typebox";
import type { PlayAppSummary } from "../../domain/playApps.ts";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { DEFAULT_MAX_AGE_SECONDS, MAX_AGE_BOUNDS, MAX_CERT_DIGESTS, MAX_PACKAGE_NAME, MAX_SERVICE_ACCOUNT_BYTES, PLAY_APP_CACHE_MS } from "../../services/playApps.ts";
import { playAppsPage } from "../../../web/pages/playApps.ts";
import { pickTenantPage } from "../../../web/layout.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";

const Floor = Type.Union([Type.Literal("MEETS_BASIC_INTEGRITY"), Type.Literal("MEETS_DEVICE_INTEGRITY"), Type.Literal("MEETS_STRONG_INTEGRITY")], {
  description: "the lowest device verdict that passes",
});

/** A registration as every answer shows it: the policy and how its tokens open, never a key. */
const PlayAppItem = Type.Object({
  id: Type.String(),
  tenantId: Type.String(),
  policy: Type.Object({
    packageName: Type.String(),
    certDigests: Type.Array(Type.String(), { description: "SHA-256 of the accepted signing certificates, lowercase hex; empty: any" }),
    deviceFloor: Floor,
    maxAgeSeconds: Type.Integer(),
    require: Type.Object({ licensed: Type.Boolean(), playProtect: Type.Boolean(), appAccessRisk: Type.Boolean() }),
  }),
  opensWith: Type.Union([Type.Literal("response-keys"), Type.Literal("service-account")]),
  serviceAccountEmail: Type.Optional(Type.String()),
  createdAt: Type.String(),
});

/** the answer's shape: the policy's readonly digests as the schema's (mutable) array */
const item = (a: PlayAppSummary) => ({ ...a, policy: { ...a.policy, certDigests: [...a.policy.certDigests] } });

const Base64Key = (what: string) => Type.String({ minLength: 1, maxLength: 4096, description: `${what}, base64 as the Play Console shows it` });

const PlayAppBody = Type.Object(
  {
    packageName: SafeText({ minLength: 1, maxLength: MAX_PACKAGE_NAME, description: "the app's package name (application id), such as com.example.app" }),
    certDigests: Type.Optional(
      Type.Array(SafeText({ maxLength: 95 }), {
        maxItems: MAX_CERT_DIGESTS,
        description: "SHA-256 of the app's signing certificates: 64 hex digits, or colon-separated pairs as the Play Console shows them; none: any certificate",
      }),
    ),
    deviceFloor: Type.Optional(Floor),
    maxAgeSeconds: Type.Optional(
      Type.Integer({ minimum: MAX_AGE_BOUNDS.min, maximum: MAX_AGE_BOUNDS.max, description: `how old a token may be, in seconds (default ${DEFAULT_MAX_AGE_SECONDS})` }),
    ),
    require: Type.Optional(
      Type.Object(
        {
          licensed: Type.Optional(Type.Boolean({ description: "appLicensingVerdict must be LICENSED" })),
          playProtect: Type.Optional(Type.Boolean({ description: "playProtectVerdict must be NO_ISSUES" })),
          appAccessRisk: Type.Optional(Type.Boolean({ description: "no app that captures the screen or controls the device may be running" })),
        },
        { additionalProperties: false, description: "which optional signals decide (all false by default; recorded either way)" },
      ),
    ),
    responseKeys: Type.Optional(
      Type.Object(
        { decryptionKey: Base64Key("the response decryption key (AES-256)"), verificationKey: Base64Key("the response verification key (EC P-256)") },
        { additionalProperties: false, description: "the Play Console's response keys: attestd opens the tokens itself" },
      ),
    ),
    serviceAccount: Type.Optional(
      Type.String({ minLength: 1, maxLength: MAX_SERVICE_ACCOUNT_BYTES, description: "the text of a Google service-account key file (JSON): Google decodes the tokens" }),
    ),
  },
  { additionalProperties: false, description: "exactly one of responseKeys and serviceAccount; both are sealed and never shown again" },
);

/**
 * A tenant's Google Play apps (issue 23): the page, and the admin API over the same PlayAppRegistry as `attestd
 * play-app ...`. A tenant's admin registers and removes its own tenant's apps, a viewer lists them, an operator
 * acts on the ?tenant= one. No answer carries a key: they go in with the POST and stay sealed in the store.
 */
export function registerPlayAppRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  app.get("/portal/play-apps", { schema: { hide: true, querystring: Type.Object(TenantQuery) }, config: { portal: "viewer" } }, async (request, reply) => {
    // an operator who has not picked a tenant picks one here
    if (request.actor!.role === "operator" && !request.query.tenant) {
      return html(reply, pickTenantPage(ctxOf(request), "Play apps", "/portal/play-apps", (await deps.tenantAdmin.list()).map((t) => t.name)));
    }
    const { tenant } = await scope(request, false);
    return html(reply, playAppsPage(ctxOf(request), await deps.playApps.list(tenant!), allowed(request.actor!, "admin")));
  });

  app.get(
    "/portal/api/play-apps",
    {
      schema: {
        tags,
        operationId: "portalListPlayApps",
        summary: "The tenant's registered Google Play apps: their policies, never their keys",
        querystring: Type.Object(TenantQuery),
        response: { 200: Type.Array(PlayAppItem), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => (await deps.playApps.list((await scope(request, false)).tenant!)).map(item),
  );

  app.post(
    "/portal/api/play-apps",
    {
      schema: {
        tags,
        operationId: "portalAddPlayApp",
        summary:
          "Register a Google Play app (as `attestd play-app add`): its policy, and its response keys or a service account, which are sealed and never shown again",
        querystring: Type.Object(TenantQuery),
        body: PlayAppBody,
        response: { 200: PlayAppItem, ...partBErrors(400, 401, 403, 404, 409) },
      },
      config: { portal: "admin" },
    },
    async (request) => {
      const added = item(await deps.playApps.add((await scope(request, false)).tenant!, request.body, by(request)));
      deps.trust.forgetAppsCount(); // the trust page's count of apps decoded by Google
      return added;
    },
  );

  app.delete(
    "/portal/api/play-apps/:id",
    {
      schema: {
        tags,
        operationId: "portalRemovePlayApp",
        summary: `Remove a Play app of the tenant: its tokens are refused by this instance from the 204 on, by every other within ${PLAY_APP_CACHE_MS / 1000} s`,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 40 }) }),
        querystring: Type.Object(TenantQuery),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const { tenant } = await scope(request, false);
      if (!(await deps.playApps.remove(tenant!, request.params.id, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no Play app of that id for this tenant");
      deps.trust.forgetAppsCount();
      return reply.code(204).send(null);
    },
  );
}
