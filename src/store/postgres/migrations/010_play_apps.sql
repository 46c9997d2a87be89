-- A tenant's registered Google Play apps (issue 23): the policy in plain columns, `secret` sealed by
-- src/services/playApps.ts (sealedColumns.ts). Mirrors sqlite/migrations/010_play_apps.sql.
CREATE TABLE play_apps (
  id                       TEXT COLLATE "C" PRIMARY KEY,
  tenant_id                TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  package_name             TEXT COLLATE "C" NOT NULL,
  cert_digests             JSON NOT NULL,
  device_floor             TEXT NOT NULL CHECK (device_floor IN ('MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY', 'MEETS_STRONG_INTEGRITY')),
  max_age_seconds          INTEGER NOT NULL CHECK (max_age_seconds > 0),
  require_licensed         BOOLEAN NOT NULL,
  require_play_protect     BOOLEAN NOT NULL,
  require_app_access_risk  BOOLEAN NOT NULL,
  opens_with               TEXT NOT NULL CHECK (opens_with IN ('response-keys', 'service-account')),
  service_account_email    TEXT,
  secret                   TEXT NOT NULL,
  created_at               TEXT COLLATE "C" NOT NULL,
  UNIQUE (tenant_id, package_name)
);
