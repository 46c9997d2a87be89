import { readFileSync } from "node:fs";
import { ConfigError, type Config } from "../config.ts";
import { fileProblem, pathMessage } from "../errors/operatorError.ts";

/**
 * What a deployment's single sign-on is configured as (docs/sso.md), apart from the relying party itself
 * (`sso.ts`), which loads openid-client: a deployment without --sso-issuer never loads it.
 */

/**
 * The cookie that carries a sign-in under way from /portal/sso/start to /portal/sso/callback: state, nonce and
 * PKCE verifier, signed. `__Host-` (HTTPS only, this host only); SameSite=Lax, since the provider sends the browser
 * back with a top-level GET from its own site, which a Strict cookie would not follow.
 */
export const SSO_COOKIE = "__Host-attestd_sso";
/** how long a person has at the provider before the sign-in must start again */
export const SSO_FLOW_TTL_MS = 10 * 60_000;

/** Mapping by claims (--sso-tenant-claim, --sso-role-claim and the values of each role). */
export interface SsoClaimMapping {
  tenantClaim: string;
  /** tenant names the claim may name; undefined: any tenant */
  tenants: string[] | undefined;
  roleClaim: string;
  adminValues: string[];
  viewerValues: string[];
}

/** One deployment's provider (src/config.ts, --sso-*). */
export interface SsoSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  redirectUrl: string;
  scopes: string[];
  /** the button's "Sign in with NAME" */
  name: string;
  allowHttpLoopback: boolean;
  claims: SsoClaimMapping | undefined;
}

/**
 * The provider settings of a deployment from its configuration, or undefined without --sso-issuer. The client secret
 * is read from its file here, at start-up: a missing or empty file stops the start with a message naming the flag.
 */
export function ssoSettingsFrom(config: Config, publicBaseUrl: string): SsoSettings | undefined {
  if (config.ssoIssuer === undefined || config.ssoClientId === undefined || config.ssoClientSecretFile === undefined) return undefined;
  let secret: string;
  try {
    secret = readFileSync(config.ssoClientSecretFile, "utf8").trim();
  } catch (e) {
    throw new ConfigError(pathMessage("--sso-client-secret-file", config.ssoClientSecretFile, fileProblem(e), "the client secret"));
  }
  if (secret.length === 0) throw new ConfigError(`--sso-client-secret-file ${config.ssoClientSecretFile} is empty`);
  return {
    issuer: config.ssoIssuer,
    clientId: config.ssoClientId,
    clientSecret: secret,
    redirectUrl: config.ssoRedirectUrl ?? `${publicBaseUrl}/portal/sso/callback`,
    scopes: config.ssoScopes,
    name: config.ssoName,
    allowHttpLoopback: config.ssoAllowHttpLoopback,
    claims:
      config.ssoTenantClaim !== undefined && config.ssoRoleClaim !== undefined
        ? { tenantClaim: config.ssoTenantClaim, tenants: config.ssoTenants, roleClaim: config.ssoRoleClaim, adminValues: config.ssoAdminValues, viewerValues: config.ssoViewerValues }
        : undefined,
  };
}
