-- Single sign-on (issue 26 item 4): operators' mappings and the provider identities portal users are linked to.
-- Mirrors sqlite/migrations/015_sso.sql.
CREATE TABLE sso_mappings (
  kind        TEXT NOT NULL CHECK (kind IN ('subject', 'email')),
  value       TEXT COLLATE "C" NOT NULL,
  tenant_id   TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  role        TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
  created_at  TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (kind, value)
);

CREATE TABLE sso_identities (
  issuer      TEXT COLLATE "C" NOT NULL,
  subject     TEXT COLLATE "C" NOT NULL,
  user_id     TEXT COLLATE "C" NOT NULL REFERENCES enroll_users (user_id),
  created_at  TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (issuer, subject),
  UNIQUE (issuer, user_id)
);
