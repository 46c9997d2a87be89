-- App Attest (issue 25; mobile-attestation.md). `ios_apps`: a tenant's registered iOS apps, one per (tenant, app
-- id): the app id an attestation's RP ID hash must name, and the environments it accepts. `app_attest_keys`: the
-- keys a Yes attestation made known, one row per key id across tenants (a key is attested once, for one tenant).
-- `counter` is the last assertion counter stored, moved forward only by a compare-and-set in the transaction that
-- stores the assertion's verdict (src/store/README.md, "App Attest keys").
CREATE TABLE ios_apps (
  id           TEXT PRIMARY KEY,
  tenant_id    TEXT NOT NULL REFERENCES tenants (tenant_id),
  app_id       TEXT NOT NULL,
  environment  TEXT NOT NULL CHECK (environment IN ('production', 'development', 'both')),
  created_at   TEXT NOT NULL,
  UNIQUE (tenant_id, app_id)
) WITHOUT ROWID;

CREATE TABLE app_attest_keys (
  key_id            TEXT PRIMARY KEY,
  tenant_id         TEXT NOT NULL REFERENCES tenants (tenant_id),
  app_id            TEXT NOT NULL,
  public_key        TEXT NOT NULL,
  counter           INTEGER NOT NULL CHECK (counter >= 0),
  environment       TEXT NOT NULL CHECK (environment IN ('production', 'development')),
  receipt           TEXT NOT NULL,
  attested_at       TEXT NOT NULL,
  last_asserted_at  TEXT,
  revoked_at        TEXT
) WITHOUT ROWID;
CREATE INDEX app_attest_keys_by_tenant ON app_attest_keys (tenant_id, key_id);
