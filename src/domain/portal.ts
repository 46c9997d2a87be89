/**
 * The people who sign in to the portal and what keeps them signed in (../../docs/portal.md). A portal user of a
 * tenant is the same record as the Part B user of that email (`client create --user`): one email, one record.
 * Operators belong to no tenant.
 */

export type TenantRole = "admin" | "viewer";
export type PortalRole = TenantRole | "operator";

/** `invited`: a sign-in link is out, no password yet; `active`: can sign in; `disabled`: every session ended. */
export type PortalUserState = "invited" | "active" | "disabled";

export interface PortalUser {
  userId: string;
  /** lowercase; unique among portal users, so sign-in by email names one person */
  email: string;
  /** null for operators */
  tenantId: string | null;
  role: PortalRole;
  state: PortalUserState;
  /** scrypt$N$r$p$salt$hash (src/portal/passwords.ts); null until the invitation is accepted */
  passwordHash: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * A one-time link, an invitation or a reset link (both set the password): only the SHA-256 of its token is kept.
 * A user has one unused link at most; a newer one, a password set or a disable marks the others used.
 */
export interface PortalInvite {
  tokenHash: string;
  userId: string;
  createdAtMs: number;
  expiresAtMs: number;
  usedAtMs: number | null;
}

/** A signed-in browser: only the SHA-256 of the cookie's id is kept, so a read of the store cannot hijack one. */
export interface PortalSession {
  sessionHash: string;
  userId: string;
  /** random, per session; the CSRF token every state change must echo */
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
  /** absolute end (created + --portal-session-lifetime); idle expiry is lastSeenAtMs + --portal-idle-timeout */
  expiresAtMs: number;
  /** how the session was opened */
  method: "password" | "passkey" | "sso";
}

/**
 * A passkey (WebAuthn credential) of a portal user. The public key is all attestd keeps of it; the counter is the
 * authenticator's signature counter as last seen, so a copy of the credential that lags behind is refused.
 */
export interface PortalPasskey {
  /** base64url credential id, as the authenticator made it (unique across users) */
  credentialId: string;
  userId: string;
  /** COSE public key, base64url */
  publicKey: string;
  counter: number;
  /** the transports the browser reported at registration (usb, nfc, ble, internal, hybrid, ...) */
  transports: string[];
  /** true for a passkey that may be synced between devices (a password manager's), false for one bound to a device */
  backedUp: boolean;
  /** the person's name for it ("laptop", "phone") */
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** One WebAuthn ceremony begun: the challenge (only its SHA-256 is the key), single use, short-lived. */
export interface PasskeyChallenge {
  challengeHash: string;
  /** `register`: a signed-in user adds a passkey; `signin`: anyone signs in with one */
  purpose: "register" | "signin";
  /** the user registering; null for a sign-in (the passkey names its user) */
  userId: string | null;
  expiresAtMs: number;
}

/**
 * An operator's mapping for single sign-on (docs/sso.md): the identity provider's subject, or a verified email, to a
 * tenant and a role. Never to an operator: SSO makes tenant users only.
 */
export interface SsoMapping {
  kind: "subject" | "email";
  /** the subject as the provider gives it; an email lowercase */
  value: string;
  tenantId: string;
  role: TenantRole;
  createdAt: string;
}
