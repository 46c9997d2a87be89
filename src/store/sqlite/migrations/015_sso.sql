-- Single sign-on (issue 26 item 4; docs/sso.md). `sso_mappings`: an operator's mapping of an identity provider's
-- subject or verified email to a tenant and a role (admin or viewer: SSO never makes an operator).
-- `sso_identities`: the provider identity (issuer, subject) a portal user signed in with, linked at their first
-- SSO sign-in; one identity per user per issuer.
CREATE TABLE sso_mappings (
  kind        TEXT NOT NULL CHECK (kind IN ('subject', 'email')),
  value       TEXT NOT NULL,
  tenant_id   TEXT NOT NULL REFERENCES tenants (tenant_id),
  role        TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
  created_at  TEXT NOT NULL,
  PRIMARY KEY (kind, value)
) WITHOUT ROWID;

CREATE TABLE sso_identities (
  issuer      TEXT NOT NULL,
  subject     TEXT NOT NULL,
  user_id     TEXT NOT NULL REFERENCES enroll_users (user_id),
  created_at  TEXT NOT NULL,
  PRIMARY KEY (issuer, subject),
  UNIQUE (issuer, user_id)
) WITHOUT ROWID;
