import { Type } from "typebox";
import type { PortalPasskey } from "../../domain/portal.ts";
import { PASSKEY_NAME_MAX, type AuthenticationResponseJSON, type RegistrationResponseJSON } from "../../portal/passkeys.ts";
import { accountPage } from "../../../web/pages/account.ts";
import { partBErrors, SafeText } from "../schemas/common.ts";
import type { AppInstance } from "../types.ts";
import { requestOrigin, type PortalRoutes } from "./context.ts";

/** base64url text of at most `max` characters */
const B64 = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: "^[A-Za-z0-9_-]+$" });

/**
 * What a browser's navigator.credentials answers, as @simplewebauthn/browser serialises it: bounded here, and
 * checked for meaning by @simplewebauthn/server. Credential ids are at most 1023 bytes (WebAuthn L3).
 */
const CredentialCommon = {
  id: B64(1400),
  rawId: B64(1400),
  type: Type.Literal("public-key"),
  authenticatorAttachment: Type.Optional(Type.String({ maxLength: 32 })),
  clientExtensionResults: Type.Object({}, { additionalProperties: true }),
};
const RegistrationResponse = Type.Object(
  {
    ...CredentialCommon,
    response: Type.Object({
      clientDataJSON: B64(4096),
      attestationObject: B64(32_768),
      authenticatorData: Type.Optional(B64(32_768)),
      transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 8 })),
      publicKeyAlgorithm: Type.Optional(Type.Integer()),
      publicKey: Type.Optional(B64(4096)),
    }),
  },
  { additionalProperties: false },
);
const AuthenticationResponse = Type.Object(
  {
    ...CredentialCommon,
    response: Type.Object({
      clientDataJSON: B64(4096),
      authenticatorData: B64(32_768),
      signature: B64(4096),
      userHandle: Type.Optional(B64(1024)),
    }),
  },
  { additionalProperties: false },
);

/** The options objects are WebAuthn's own (PublicKeyCredential*OptionsJSON), passed to the browser whole. */
const CreationOptions = Type.Object(
  { challenge: Type.String(), rp: Type.Object({ id: Type.Optional(Type.String()), name: Type.String() }), user: Type.Object({ id: Type.String(), name: Type.String(), displayName: Type.String() }) },
  { additionalProperties: true, description: "PublicKeyCredentialCreationOptionsJSON (WebAuthn L3)" },
);
const RequestOptions = Type.Object(
  { challenge: Type.String(), rpId: Type.Optional(Type.String()) },
  { additionalProperties: true, description: "PublicKeyCredentialRequestOptionsJSON (WebAuthn L3)" },
);

const PasskeyItem = Type.Object({
  credentialId: Type.String(),
  name: Type.String(),
  createdAt: Type.String(),
  lastUsedAt: Type.Union([Type.String(), Type.Null()]),
  backedUp: Type.Boolean({ description: "a synced passkey (a password manager's) rather than one bound to a device" }),
  transports: Type.Array(Type.String()),
});
const Name = SafeText({ minLength: 1, maxLength: PASSKEY_NAME_MAX });
const CredentialParams = Type.Object({ credentialId: B64(1400) });

const item = (p: PortalPasskey) => ({
  credentialId: p.credentialId,
  name: p.name,
  createdAt: p.createdAt,
  lastUsedAt: p.lastUsedAt,
  backedUp: p.backedUp,
  transports: p.transports,
});

// Bodies of WebAuthn answers are a few KiB; nothing bigger is read.
const bodyLimit = 64 * 1024;

/**
 * The Account page and passkeys (docs/portal.md, "Passkeys"): registering one while signed in, signing in with one
 * alone, renaming and deleting. Every ceremony is refused up front when the page is not at the configured public
 * URL, since the browser would fail it with no useful reason.
 */
export function registerPasskeyRoutes(app: AppInstance, { deps, ctxOf, html, tags, startSession, by }: PortalRoutes): void {
  const passkeys = deps.passkeys;

  app.get("/portal/account", { schema: { hide: true }, config: { portal: "viewer" } }, async (request, reply) => {
    const me = await deps.accounts.find({ userId: request.actor!.userId });
    return html(reply, accountPage(ctxOf(request), await passkeys.list(request.actor!.userId), passkeys.rp.origin, me.passwordHash !== null));
  });

  app.get(
    "/portal/api/passkeys",
    { schema: { tags, operationId: "portalListPasskeys", summary: "Your passkeys", response: { 200: Type.Array(PasskeyItem), ...partBErrors(401) } }, config: { portal: "viewer" } },
    async (request) => (await passkeys.list(request.actor!.userId)).map(item),
  );
  app.post(
    "/portal/api/passkeys/options",
    {
      schema: {
        tags,
        operationId: "portalPasskeyRegistrationOptions",
        summary: "Begin registering a passkey: options for navigator.credentials.create() (the challenge is single use, 2 minutes)",
        response: { 200: CreationOptions, ...partBErrors(400, 401, 403) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      passkeys.checkOrigin(requestOrigin(request));
      return passkeys.registrationOptions(request.actor!);
    },
  );
  app.post(
    "/portal/api/passkeys",
    {
      bodyLimit,
      schema: {
        tags,
        operationId: "portalRegisterPasskey",
        summary: "Finish registering a passkey with the authenticator's answer",
        body: Type.Object({ name: Type.Optional(SafeText({ maxLength: PASSKEY_NAME_MAX })), credential: RegistrationResponse }, { additionalProperties: false }),
        response: { 200: PasskeyItem, ...partBErrors(400, 401, 403, 409) },
      },
      config: { portal: "viewer" },
    },
    async (request) => {
      passkeys.checkOrigin(requestOrigin(request));
      return item(await passkeys.finishRegistration(request.actor!, request.body.credential as RegistrationResponseJSON, request.body.name, by(request)));
    },
  );
  app.patch(
    "/portal/api/passkeys/:credentialId",
    {
      schema: {
        tags,
        operationId: "portalRenamePasskey",
        summary: "Rename one of your passkeys",
        params: CredentialParams,
        body: Type.Object({ name: Name }, { additionalProperties: false }),
        response: { 204: Type.Null(), ...partBErrors(400, 401, 403, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request, reply) => {
      await passkeys.rename(request.actor!.userId, request.params.credentialId, request.body.name, by(request), request.actor!.tenantId);
      return reply.code(204).send(null);
    },
  );
  app.delete(
    "/portal/api/passkeys/:credentialId",
    {
      schema: {
        tags,
        operationId: "portalDeletePasskey",
        summary: "Delete one of your passkeys (sessions and other passkeys stay)",
        params: CredentialParams,
        response: { 204: Type.Null(), ...partBErrors(401, 403, 404) },
      },
      config: { portal: "viewer" },
    },
    async (request, reply) => {
      await passkeys.remove(request.actor!.userId, request.params.credentialId, by(request), request.actor!.tenantId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/portal/api/session/passkey/options",
    {
      schema: {
        tags,
        operationId: "portalPasskeySignInOptions",
        summary: "Begin signing in with a passkey: options for navigator.credentials.get() (rate-limited per address)",
        response: { 200: RequestOptions, ...partBErrors(400, 403, 429) },
      },
      config: { portal: "public" },
    },
    async (request) => {
      passkeys.checkOrigin(requestOrigin(request));
      return passkeys.signInOptions(request.ip);
    },
  );
  app.post(
    "/portal/api/session/passkey",
    {
      bodyLimit,
      schema: {
        tags,
        operationId: "portalSignInWithPasskey",
        summary: "Sign in with a passkey alone; sets the __Host-attestd_session cookie",
        body: AuthenticationResponse,
        response: { 200: Type.Object({ email: Type.String(), role: Type.String() }), ...partBErrors(400, 401, 403) },
      },
      config: { portal: "public" },
    },
    async (request, reply) => {
      passkeys.checkOrigin(requestOrigin(request));
      const user = await passkeys.finishSignIn(request.body as AuthenticationResponseJSON);
      await startSession(reply, user, "passkey");
      return { email: user.email, role: user.role };
    },
  );
}
