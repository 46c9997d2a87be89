-- A tenant's registered Google Play apps (issue 23; mobile-attestation.md, "Per-tenant configuration"): the policy
-- a token of the app is appraised by, in plain columns, and how its tokens are opened (`secret`: the Play Console's
-- response keys or a Google service account, as JSON), sealed with the operator's key (sealedColumns.ts) by
-- src/services/playApps.ts. One registration per (tenant, package): a token names its package, and two
-- registrations of one package would leave it open which policy decides.
CREATE TABLE play_apps (
  id                       TEXT PRIMARY KEY,
  tenant_id                TEXT NOT NULL REFERENCES tenants (tenant_id),
  package_name             TEXT NOT NULL,
  cert_digests             TEXT NOT NULL,
  device_floor             TEXT NOT NULL CHECK (device_floor IN ('MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY', 'MEETS_STRONG_INTEGRITY')),
  max_age_seconds          INTEGER NOT NULL CHECK (max_age_seconds > 0),
  require_licensed         INTEGER NOT NULL CHECK (require_licensed IN (0, 1)),
  require_play_protect     INTEGER NOT NULL CHECK (require_play_protect IN (0, 1)),
  require_app_access_risk  INTEGER NOT NULL CHECK (require_app_access_risk IN (0, 1)),
  opens_with               TEXT NOT NULL CHECK (opens_with IN ('response-keys', 'service-account')),
  service_account_email    TEXT,
  secret                   TEXT NOT NULL,
  created_at               TEXT NOT NULL,
  UNIQUE (tenant_id, package_name)
) WITHOUT ROWID;
