import { Type } from "typebox";
import { AppError } from "../../errors/AppError.ts";
import { catalog } from "../../errors/catalog.ts";
import { IOS_APP_CACHE_MS, MAX_DEVELOPER_KEY_BYTES, MAX_IOS_APP_ID } from "../../services/iosApps.ts";
import { iosAppsPage } from "../../../web/pages/iosApps.ts";
import { pickTenantPage } from "../../../web/layout.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { allowed, TenantQuery, type PortalRoutes } from "./context.ts";

/** the keys one page shows; the pager goes on from the last */
const KEYS_PAGE = 50;

const Environment = Type.Union([Type.Literal("production"), Type.Literal("development"), Type.Literal("both")], {
  description: "which App Attest environments' keys the app accepts (the AAGUID appattest or appattestdevelop)",
});

const IosAppItem = Type.Object({
  id: Type.String(),
  tenantId: Type.String(),
  appId: Type.String({ description: "TEAMID.BUNDLEID" }),
  environment: Environment,
  createdAt: Type.String(),
  developerKey: Type.Union([Type.Object({ keyId: Type.String() }), Type.Null()], {
    description: "the App Attest developer key registered for receipt refresh: its key id when set (the key itself is never shown), null when none",
  }),
});

const DeveloperKeyBody = Type.Object(
  {
    keyId: Type.String({ minLength: 1, maxLength: 20, description: "the key's 10-character id (Apple developer account, Keys)" }),
    privateKey: Type.String({ minLength: 1, maxLength: MAX_DEVELOPER_KEY_BYTES, description: "the text of the key's .p8 file (EC P-256, PKCS#8 PEM); sealed, never shown again" }),
  },
  { additionalProperties: false, description: "the team's App Attest developer key, for refreshing receipts (the fraud-risk metric); the team id is the app id's" },
);

const IosAppBody = Type.Object(
  {
    appId: SafeText({ minLength: 1, maxLength: MAX_IOS_APP_ID, description: "the app id, TEAMID.BUNDLEID (such as ABCDE12345.com.example.app)" }),
    environment: Type.Optional(Environment),
    developerKey: Type.Optional(DeveloperKeyBody),
  },
  { additionalProperties: false },
);

const KeyItem = Type.Object({
  tenantId: Type.String(),
  keyId: Type.String({ description: "base64 of the 32-byte key id (SHA-256 of the public key), as DCAppAttestService.generateKey gives it" }),
  appId: Type.String(),
  publicKey: Type.String({ description: "the EC P-256 public key, uncompressed point, base64" }),
  counter: Type.Integer({ description: "the last assertion counter stored (0 after the attestation)" }),
  environment: Type.Union([Type.Literal("production"), Type.Literal("development")]),
  receiptBytes: Type.Integer({ description: "the size of Apple's receipt kept with the key" }),
  attestedAt: Type.String(),
  lastAssertedAt: Type.Union([Type.String(), Type.Null()]),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
  riskMetric: Type.Union([Type.Integer(), Type.Null()], {
    description: "Apple's fraud-risk metric from the last refreshed receipt (keys attested for the app on the device in 30 days); null until one was read. Informational: no verdict depends on it",
  }),
  riskMetricAt: Type.Union([Type.String(), Type.Null()], { description: "when the metric was read" }),
  lastRefreshResult: Type.Union([Type.String(), Type.Null()], { description: "the last receipt refresh's outcome (refreshed, unreachable, ...); null before the first" }),
  lastRefreshReason: Type.Union([Type.String(), Type.Null()], { description: "why the last refresh did not refresh, in words a tenant may read" }),
  lastRefreshAt: Type.Union([Type.String(), Type.Null()]),
  refreshDueAt: Type.Union([Type.String(), Type.Null()], { description: "when the next refresh is due (if the app has a developer key); null: never" }),
});

/** A key id in a path: base64url (a standard base64 key id has "/" in it), 43 characters. */
const KeyIdParam = Type.Object({ keyId: Type.String({ pattern: "^[A-Za-z0-9_-]{43}$", description: "the key id, base64url without padding" }) });
const keyIdOf = (param: string) => Buffer.from(param, "base64url").toString("base64");

/**
 * A tenant's iOS apps and App Attest keys (issue 25): the page (`/portal/ios-apps`, the apps and their keys) and
 * the admin API over the same IosAppRegistry and AppAttestKeys
 * as `attestd ios-app ...` and `attestd ios-key ...`. A tenant's admin registers and removes its own tenant's apps
 * and revokes its keys, a viewer lists them, an operator acts on the ?tenant= one.
 */
export function registerIosAppRoutes(app: AppInstance, { deps, scope, ctxOf, html, tags, by }: PortalRoutes): void {
  app.get(
    "/portal/ios-apps",
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          { ...TenantQuery, after: Type.Optional(Type.String({ maxLength: 44, description: "the keys' cursor: the last keyId of the page before" })) },
          { additionalProperties: false },
        ),
      },
      config: { portal: "viewer" },
    },
    async (request, reply) => {
      // an operator who has not picked a tenant picks one here
      if (request.actor!.role === "operator" && !request.query.tenant) {
        return html(reply, pickTenantPage(ctxOf(request), "iOS apps", "/portal/ios-apps", (await deps.tenantAdmin.list()).map((t) => t.name)));
      }
      const { tenant } = await scope(request, false);
      const after = request.query.after || undefined;
      const [apps, keys] = await Promise.all([deps.iosApps.list(tenant!), deps.appAttestKeys.list(tenant!.tenantId, { after, limit: KEYS_PAGE })]);
      return html(reply, iosAppsPage(ctxOf(request), apps, { ...keys, after }, allowed(request.actor!, "admin")));
    },
  );

  app.get(
    "/portal/api/ios-apps",
    {
      schema: {
        tags,
        operationId: "portalListIosApps",
        summary: "The tenant's registered iOS apps (App Attest)",
        querystring: Type.Object(TenantQuery),
        response: { 200: Type.Array(IosAppItem), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => deps.iosApps.list((await scope(request, false)).tenant!),
  );

  app.post(
    "/portal/api/ios-apps",
    {
      schema: {
        tags,
        operationId: "portalAddIosApp",
        summary: "Register an iOS app for App Attest (as `attestd ios-app add`)",
        querystring: Type.Object(TenantQuery),
        body: IosAppBody,
        response: { 200: IosAppItem, ...partBErrors(400, 401, 403, 404, 409) },
      },
      config: { portal: "admin" },
    },
    async (request) => deps.iosApps.add((await scope(request, false)).tenant!, request.body, by(request)),
  );

  app.delete(
    "/portal/api/ios-apps/:id",
    {
      schema: {
        tags,
        operationId: "portalRemoveIosApp",
        summary: `Remove an iOS app of the tenant: its attestations are refused by this instance from the 204 on, by every other within ${IOS_APP_CACHE_MS / 1000} s`,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 40 }) }),
        querystring: Type.Object(TenantQuery),
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request, reply) => {
      const { tenant } = await scope(request, false);
      if (!(await deps.iosApps.remove(tenant!, request.params.id, by(request)))) throw new AppError(catalog.PORTAL_NOT_FOUND, "no iOS app of that id for this tenant");
      return reply.code(204).send(null);
    },
  );

  const IdParam = Type.Object({ id: Type.String({ minLength: 1, maxLength: 40 }) });

  app.put(
    "/portal/api/ios-apps/:id/developer-key",
    {
      schema: {
        tags,
        operationId: "portalSetIosAppDeveloperKey",
        summary: "Set or replace an iOS app's App Attest developer key (as `attestd ios-app set-developer-key`): its keys' receipts are refreshed with Apple in the background",
        params: IdParam,
        querystring: Type.Object(TenantQuery),
        body: DeveloperKeyBody,
        response: { 200: IosAppItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => deps.iosApps.setDeveloperKey((await scope(request, false)).tenant!, request.params.id, request.body, by(request)),
  );

  app.delete(
    "/portal/api/ios-apps/:id/developer-key",
    {
      schema: {
        tags,
        operationId: "portalClearIosAppDeveloperKey",
        summary: "Remove an iOS app's developer key (as `attestd ios-app clear-developer-key`): its keys' receipts are no longer refreshed",
        params: IdParam,
        querystring: Type.Object(TenantQuery),
        response: { 200: IosAppItem, ...partBErrors(401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => deps.iosApps.setDeveloperKey((await scope(request, false)).tenant!, request.params.id, null, by(request)),
  );

  app.get(
    "/portal/api/app-attest-keys",
    {
      schema: {
        tags,
        operationId: "portalListAppAttestKeys",
        summary: "The App Attest keys the tenant's devices attested (as `attestd ios-key list`), by key id",
        querystring: Type.Object({
          ...TenantQuery,
          after: Type.Optional(Type.String({ maxLength: 44, description: "the last keyId of the page before" })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
        }),
        response: { 200: Type.Object({ items: Type.Array(KeyItem), next: Type.Union([Type.String(), Type.Null()]) }), ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      const { tenant } = await scope(request, false);
      return deps.appAttestKeys.list(tenant!.tenantId, { after: request.query.after, limit: request.query.limit ?? 100 });
    },
  );

  app.get(
    "/portal/api/app-attest-keys/:keyId",
    {
      schema: {
        tags,
        operationId: "portalGetAppAttestKey",
        summary: "One App Attest key of the tenant (as `attestd ios-key show`)",
        params: KeyIdParam,
        querystring: Type.Object(TenantQuery),
        response: { 200: KeyItem, ...partBErrors(400, 401, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request) => deps.appAttestKeys.get((await scope(request, false)).tenant!.tenantId, keyIdOf(request.params.keyId)),
  );

  app.post(
    "/portal/api/app-attest-keys/:keyId/revoke",
    {
      schema: {
        tags,
        operationId: "portalRevokeAppAttestKey",
        summary: "Revoke an App Attest key of the tenant (as `attestd ios-key revoke`): its later assertions are refused (rule revoked-key)",
        params: KeyIdParam,
        querystring: Type.Object(TenantQuery),
        response: { 200: KeyItem, ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "admin" },
    },
    async (request) => deps.appAttestKeys.revoke((await scope(request, false)).tenant!.tenantId, keyIdOf(request.params.keyId), by(request)),
  );
}
