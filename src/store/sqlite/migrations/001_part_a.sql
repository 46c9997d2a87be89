-- Part A: tenants, API keys, nonces, verdicts, activity log.
CREATE TABLE tenants (
  tenant_id           TEXT PRIMARY KEY,
  name                TEXT NOT NULL UNIQUE,
  customer_id         TEXT NOT NULL UNIQUE,
  kind                TEXT NOT NULL CHECK (kind IN ('customer', 'reseller')),
  state               TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'inactive', 'blocked')),
  enrollment_enabled  INTEGER NOT NULL,
  created_at          TEXT NOT NULL
);

CREATE TABLE api_keys (
  key_id        TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL REFERENCES tenants (tenant_id),
  secret_hash   TEXT NOT NULL,
  rps           REAL NOT NULL,
  burst         INTEGER NOT NULL,
  created_at    TEXT NOT NULL,
  revoked_at    TEXT,
  restrictions  TEXT
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

-- Used nonces stay until expiry + retention so a late replay still answers NONCE_ALREADY_USED.
CREATE TABLE nonces (
  nonce          TEXT PRIMARY KEY,
  tenant_id      TEXT NOT NULL,
  created_at_ms  INTEGER NOT NULL,
  expires_at_ms  INTEGER NOT NULL,
  used_at_ms     INTEGER
) WITHOUT ROWID;
CREATE INDEX nonces_expiry ON nonces (expires_at_ms);
CREATE INDEX nonces_outstanding ON nonces (tenant_id, expires_at_ms) WHERE used_at_ms IS NULL;

-- Unused (possibly expired, not yet purged) nonces per tenant: keeps the cap check O(1) off the boundary.
CREATE TABLE nonce_unused_counts (
  tenant_id  TEXT PRIMARY KEY,
  n          INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE verdicts (
  object_id   TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL,
  format      TEXT NOT NULL,
  record      TEXT NOT NULL,
  reason      TEXT NOT NULL,
  detail      TEXT NOT NULL,
  created_at  TEXT NOT NULL
);

CREATE TABLE activity (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  time            TEXT NOT NULL,
  error_id        TEXT,
  tenant_id       TEXT,
  client_id       TEXT,
  method          TEXT NOT NULL,
  route           TEXT NOT NULL,
  status          INTEGER NOT NULL,
  code            TEXT,
  latency_ms      REAL NOT NULL,
  remote_address  TEXT NOT NULL
);
CREATE INDEX activity_time ON activity (time);
CREATE INDEX activity_tenant_time ON activity (tenant_id, time);
CREATE UNIQUE INDEX activity_error_id ON activity (error_id) WHERE error_id IS NOT NULL;

-- Reference values imported with `attestd refvals import`; merged with --reference-values at appraisal time.
CREATE TABLE reference_values (
  model             TEXT NOT NULL,
  firmware_version  TEXT NOT NULL,
  measurements      TEXT NOT NULL,
  updated_at        TEXT NOT NULL,
  PRIMARY KEY (model, firmware_version)
) WITHOUT ROWID;
