import { createHmac, timingSafeEqual } from "node:crypto";
import * as oidc from "openid-client";
import type { Clock, Rng } from "../clock.ts";
import type { PortalUser, SsoMapping, TenantRole } from "../domain/portal.ts";
import { randomId } from "../enrollment/ids.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { AuditActor } from "../domain/audit.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import type { PortalStore, SsoStore, TenantStore } from "../store/types.ts";
import { SSO_FLOW_TTL_MS, type SsoSettings } from "./ssoSettings.ts";

/** What the state cookie holds, signed. */
interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  /** ms since the epoch, attestd's clock */
  exp: number;
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/**
 * The portal's OpenID Connect relying party (docs/sso.md), through openid-client: authorization code flow with PKCE
 * (S256), `state` and `nonce` in a signed, HttpOnly, short-lived cookie, the provider found by discovery, and the ID
 * token validated by the library (signature against the provider's JWKS, issuer, audience, expiry, nonce). Who the
 * person is then decided here: an operator's mapping (subject, or verified email) or the claims name a tenant and a
 * role; a person mapped to none is refused, and SSO never makes an operator.
 */
export class PortalSso {
  private discovered: Promise<oidc.Configuration> | undefined;
  private readonly stateKey: Buffer;

  constructor(
    private readonly store: SsoStore & PortalStore & Pick<TenantStore, "getTenantByName">,
    private readonly clock: Clock,
    private readonly rng: Rng,
    readonly settings: SsoSettings,
  ) {
    // every instance of a deployment has the client secret, and nobody else: the key the state cookie is signed with
    this.stateKey = createHmac("sha256", settings.clientSecret).update("attestd sso state cookie v1").digest();
  }

  get name(): string {
    return this.settings.name;
  }

  /** The provider's metadata, read once (and again after a failure, so a provider that was down is tried afresh). */
  private configuration(): Promise<oidc.Configuration> {
    if (!this.discovered) {
      const { issuer, clientId, clientSecret, allowHttpLoopback } = this.settings;
      this.discovered = oidc
        .discovery(new URL(issuer), clientId, { client_secret: clientSecret }, oidc.ClientSecretPost(clientSecret), {
          // The ID token's signature is checked against the provider's JWKS too. openid-client skips it by default for
          // a token from the token endpoint (OIDC Core 3.1.3.7 lets TLS vouch for the issuer instead); checking it
          // costs one JWKS fetch, cached, and holds even where TLS is intercepted by a proxy attestd trusts.
          execute: allowHttpLoopback ? [oidc.enableNonRepudiationChecks, oidc.allowInsecureRequests] : [oidc.enableNonRepudiationChecks],
          timeout: 10,
        })
        .catch((err: unknown) => {
          this.discovered = undefined;
          throw new AppError(catalog.PORTAL_SSO_UNAVAILABLE, `the identity provider's discovery failed: ${messageOf(err)}`);
        });
    }
    return this.discovered;
  }

  /** The provider's authorization URL to send the browser to, and the signed cookie that binds the answer to it. */
  async begin(next: string): Promise<{ url: string; cookie: string; maxAgeSeconds: number }> {
    const config = await this.configuration();
    const flow: Flow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next,
      exp: this.clock.nowMs() + SSO_FLOW_TTL_MS,
    };
    const scopes = new Set(["openid", ...this.settings.scopes]);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUrl,
      scope: [...scopes].join(" "),
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: "S256",
      state: flow.state,
      nonce: flow.nonce,
    });
    return { url: url.href, cookie: this.seal(flow), maxAgeSeconds: SSO_FLOW_TTL_MS / 1000 };
  }

  private seal(flow: Flow): string {
    const body = b64(JSON.stringify(flow));
    return `${body}.${b64(createHmac("sha256", this.stateKey).update(body).digest())}`;
  }

  private open(cookie: string | undefined): Flow {
    const fail = (why: string) => new AppError(catalog.PORTAL_SSO_FAILED, why);
    if (typeof cookie !== "string" || cookie.length > 4096) throw fail("no sign-in under way in this browser: start again from the sign-in page");
    const [body, mac] = cookie.split(".");
    const want = createHmac("sha256", this.stateKey).update(body ?? "").digest();
    const got = Buffer.from(mac ?? "", "base64url");
    if (!body || got.length !== want.length || !timingSafeEqual(got, want)) throw fail("the sign-in's cookie is not one this service made");
    const flow = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Flow;
    if (!(this.clock.nowMs() < flow.exp)) throw fail("the sign-in took too long: start again from the sign-in page");
    return flow;
  }

  /**
   * The provider's answer at the redirect URL: the code exchanged (with the PKCE verifier) and the ID token
   * validated, then the person found or made. `query` is the callback's query string as received.
   */
  async finish(query: string, cookie: string | undefined, as: (actor: AuditActor) => ChangeActor): Promise<{ user: PortalUser; next: string }> {
    const flow = this.open(cookie);
    const config = await this.configuration();
    const current = new URL(this.settings.redirectUrl);
    current.search = query;
    let claims: oidc.IDToken;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        pkceCodeVerifier: flow.verifier,
        idTokenExpected: true,
      });
      claims = tokens.claims()!;
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (err instanceof TypeError && /fetch failed/.test(err.message)) {
        throw new AppError(catalog.PORTAL_SSO_UNAVAILABLE, `the identity provider could not be reached: ${messageOf(err)}`);
      }
      throw new AppError(catalog.PORTAL_SSO_FAILED, `the provider's answer did not validate: ${messageOf(err)}`);
    }
    return { user: await this.person(claims, as), next: flow.next };
  }

  /**
   * Who a validated ID token is, as a portal user (docs/sso.md, "Mapping people"):
   * - the mapping: an operator's for the subject, else for the email (only when the provider says it is verified),
   *   else the claims; none refuses the person (removing a mapping withdraws access at the next sign-in);
   * - an identity signed in before is its linked user, who must still be of the mapping's tenant;
   * - a first sign-in links to the portal user of the verified email if there is one (of the mapping's tenant,
   *   never an operator), else makes a tenant user of that email. Without a verified email nobody is linked or made.
   */
  private async person(claims: oidc.IDToken, as: (actor: AuditActor) => ChangeActor): Promise<PortalUser> {
    const record = (user: PortalUser, action: string, before: unknown, after: unknown) =>
      as({ kind: "user", id: user.userId, email: user.email }).record({ tenantId: user.tenantId, action, target: { kind: "portal-user", id: user.userId }, before, after });
    const refuse = (why: string) => new AppError(catalog.PORTAL_SSO_REFUSED, why);
    const email = typeof claims.email === "string" && claims.email_verified === true ? claims.email.trim().toLowerCase() : undefined;
    const mapping = await this.mappingFor(claims, email);
    const linkedId = await this.store.getSsoIdentity(claims.iss, claims.sub);
    const now = new Date(this.clock.nowMs()).toISOString();
    if (linkedId) {
      const user = await this.store.getPortalUser(linkedId);
      if (!user || user.state === "disabled") throw refuse("your portal account is disabled: ask an operator");
      if (!mapping) throw refuse(`${user.email} is no longer mapped to a tenant: ask an operator`);
      return this.align(user, mapping, now, record);
    }
    if (!mapping) throw refuse(`the provider signed in ${email ?? `subject ${claims.sub}`}, whom attestd maps to no tenant: ask an operator to map you`);
    if (!email) throw refuse("the provider gave no verified email (email_verified): attestd names portal users by email");
    let user = await this.store.getPortalUserByEmail(email);
    if (!user) {
      const made = await this.store.createPortalUser({ userId: randomId(this.rng, "u_"), email, tenantId: mapping.tenantId, role: mapping.role, at: now });
      if (made.outcome !== "ok") throw refuse(`${email} is another portal user's`);
      user = made.user;
      await record(user, "portal.user.created-by-sso", null, { email, tenantId: user.tenantId, role: user.role });
    }
    if (user.role === "operator") throw refuse(`${email} is an operator: operators sign in with their password or passkey`);
    if (user.state === "disabled") throw refuse("your portal account is disabled: ask an operator");
    if (user.tenantId !== mapping.tenantId) throw refuse(`${email} is a portal user of another tenant`);
    if ((await this.store.linkSsoIdentity(claims.iss, claims.sub, user.userId, now)) !== "ok") {
      throw refuse(`${email} is linked to another identity of this provider`);
    }
    await record(user, "portal.sso.identity-linked", null, { issuer: claims.iss, subject: claims.sub });
    return this.align(user, mapping, now, record);
  }

  /** The user with the mapping's role, and active (a person made or invited here has no password: SSO is their way in). */
  private async align(
    user: PortalUser,
    mapping: { tenantId: string; role: TenantRole },
    now: string,
    record: (user: PortalUser, action: string, before: unknown, after: unknown) => Promise<void>,
  ): Promise<PortalUser> {
    if (user.tenantId !== mapping.tenantId) throw new AppError(catalog.PORTAL_SSO_REFUSED, `${user.email} is mapped to another tenant than their portal account's`);
    const change: { role?: TenantRole; state?: "active" } = {};
    if (user.role !== mapping.role) change.role = mapping.role;
    if (user.state === "invited") change.state = "active";
    if (change.role || change.state) {
      await this.store.updatePortalUser(user.userId, change, now);
      // the mapping decides the role at every sign-in: a change of it is recorded as the person's
      await record(user, "portal.user.aligned-by-sso", { role: user.role, state: user.state }, { role: change.role ?? user.role, state: change.state ?? user.state });
      return { ...user, ...change };
    }
    return user;
  }

  private async mappingFor(claims: oidc.IDToken, email: string | undefined): Promise<Pick<SsoMapping, "tenantId" | "role"> | undefined> {
    const bySubject = await this.store.getSsoMapping("subject", claims.sub);
    if (bySubject) return bySubject;
    const byEmail = email ? await this.store.getSsoMapping("email", email) : undefined;
    if (byEmail) return byEmail;
    const c = this.settings.claims;
    if (!c) return undefined;
    const tenantName = claims[c.tenantClaim];
    if (typeof tenantName !== "string" || (c.tenants && !c.tenants.includes(tenantName))) return undefined;
    const raw = claims[c.roleClaim];
    const values = (Array.isArray(raw) ? raw : [raw]).filter((v): v is string => typeof v === "string");
    // the higher role wins when the claim carries both (a person in both groups)
    const role: TenantRole | undefined = values.some((v) => c.adminValues.includes(v)) ? "admin" : values.some((v) => c.viewerValues.includes(v)) ? "viewer" : undefined;
    if (!role) return undefined;
    const tenant = await this.store.getTenantByName(tenantName);
    return tenant ? { tenantId: tenant.tenantId, role } : undefined;
  }
}

/** An error's message, bounded, for a reason shown to the person (never a token: the library's messages name claims). */
function messageOf(err: unknown): string {
  const e = err as { error?: unknown; error_description?: unknown; cause?: { claim?: unknown } } | undefined;
  let m = err instanceof Error ? err.message : String(err);
  // the provider's own error (invalid_grant for a spent code), or the claim that did not validate (aud, exp, iss)
  if (typeof e?.error === "string") m = `${e.error}${typeof e.error_description === "string" ? ` (${e.error_description})` : ""}`;
  else {
    // openid-client wraps oauth4webapi's error, whose message names the check (the aud, exp, iss or nonce claim,
    // the signature): the innermost error's message says most
    for (let c: unknown = e?.cause, depth = 0; c instanceof Error && depth < 3; c = c.cause, depth++) m = c.message;
  }
  return m.length > 200 ? `${m.slice(0, 200)}…` : m;
}
