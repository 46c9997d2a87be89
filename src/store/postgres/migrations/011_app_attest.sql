-- App Attest (issue 25): a tenant's iOS apps and the keys Yes attestations made known. Mirrors
-- sqlite/migrations/011_app_attest.sql.
CREATE TABLE ios_apps (
  id           TEXT COLLATE "C" PRIMARY KEY,
  tenant_id    TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  app_id       TEXT COLLATE "C" NOT NULL,
  environment  TEXT NOT NULL CHECK (environment IN ('production', 'development', 'both')),
  created_at   TEXT COLLATE "C" NOT NULL,
  UNIQUE (tenant_id, app_id)
);

CREATE TABLE app_attest_keys (
  key_id            TEXT COLLATE "C" PRIMARY KEY,
  tenant_id         TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  app_id            TEXT COLLATE "C" NOT NULL,
  public_key        TEXT NOT NULL,
  counter           BIGINT NOT NULL CHECK (counter >= 0),
  environment       TEXT NOT NULL CHECK (environment IN ('production', 'development')),
  receipt           TEXT NOT NULL,
  attested_at       TEXT COLLATE "C" NOT NULL,
  last_asserted_at  TEXT COLLATE "C",
  revoked_at        TEXT COLLATE "C"
);
CREATE INDEX app_attest_keys_by_tenant ON app_attest_keys (tenant_id, key_id);
