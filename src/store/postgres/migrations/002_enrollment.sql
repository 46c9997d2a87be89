-- Part B: users, API clients, access tokens, jti replay memory, resellers, profiles, transactions, devices, the
-- device job queue and tenant encryption keys. Mirrors src/store/sqlite/migrations/002_enrollment.sql; the
-- conventions of 001 apply (ISO TEXT times with COLLATE "C", JSON as json, BIGINT milliseconds, identity columns
-- where SQLite has AUTOINCREMENT).

CREATE TABLE enroll_users (
  user_id     TEXT COLLATE "C" PRIMARY KEY,
  tenant_id   TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  email       TEXT COLLATE "C" NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('registered', 'deregistered')),
  created_at  TEXT COLLATE "C" NOT NULL,
  updated_at  TEXT COLLATE "C" NOT NULL,
  -- SQLite lists in rowid order on equal keys; seq gives PostgreSQL the same tiebreak
  seq         BIGINT GENERATED ALWAYS AS IDENTITY,
  UNIQUE (tenant_id, email)
);

CREATE TABLE enroll_clients (
  client_id        TEXT COLLATE "C" PRIMARY KEY,
  tenant_id        TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  user_id          TEXT COLLATE "C" NOT NULL REFERENCES enroll_users (user_id),
  public_key       TEXT NOT NULL,
  identifier_hash  TEXT NOT NULL,
  read_only        BOOLEAN NOT NULL,
  rps              DOUBLE PRECISION NOT NULL,
  burst            INTEGER NOT NULL,
  restrictions     JSON,
  created_at       TEXT COLLATE "C" NOT NULL,
  seq              BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX enroll_clients_tenant ON enroll_clients (tenant_id);

-- Only the hash of each token's secret; a deleted client takes its tokens with it.
CREATE TABLE enroll_access_tokens (
  token_id       TEXT COLLATE "C" PRIMARY KEY,
  client_id      TEXT COLLATE "C" NOT NULL REFERENCES enroll_clients (client_id) ON DELETE CASCADE,
  token_hash     TEXT NOT NULL,
  expires_at_ms  BIGINT NOT NULL,
  created_at     TEXT COLLATE "C" NOT NULL
);
CREATE INDEX enroll_access_tokens_client ON enroll_access_tokens (client_id);
CREATE INDEX enroll_access_tokens_expiry ON enroll_access_tokens (expires_at_ms);

CREATE TABLE jti_seen (
  jti            TEXT COLLATE "C" PRIMARY KEY,
  expires_at_ms  BIGINT NOT NULL
);
CREATE INDEX jti_seen_expiry ON jti_seen (expires_at_ms);

CREATE TABLE reseller_associations (
  tenant_id    TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  reseller_id  TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  created_at   TEXT COLLATE "C" NOT NULL,
  seq          BIGINT GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (tenant_id, reseller_id)
);

CREATE TABLE enroll_profiles (
  profile_id   TEXT COLLATE "C" PRIMARY KEY,
  tenant_id    TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  name         TEXT COLLATE "C" NOT NULL,
  description  TEXT,
  mdm_url      TEXT,
  settings     JSON,
  created_at   TEXT COLLATE "C" NOT NULL,
  updated_at   TEXT COLLATE "C" NOT NULL,
  seq          BIGINT GENERATED ALWAYS AS IDENTITY,
  UNIQUE (tenant_id, name)
);
CREATE INDEX enroll_profiles_tenant ON enroll_profiles (tenant_id, created_at);

-- seq orders transactions (newest first) even when several share a timestamp.
CREATE TABLE enroll_transactions (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id  TEXT COLLATE "C" NOT NULL UNIQUE,
  tenant_id       TEXT COLLATE "C" NOT NULL,
  type            TEXT NOT NULL CHECK (type IN ('Post', 'Put', 'Delete')),
  state           TEXT NOT NULL CHECK (state IN ('Processing', 'Complete', 'Failed')),
  kind            TEXT NOT NULL CHECK (kind IN ('profile', 'devices')),
  profile_id      TEXT COLLATE "C" NOT NULL,
  profile_name    TEXT NOT NULL,
  created_at      TEXT COLLATE "C" NOT NULL,
  updated_at      TEXT COLLATE "C" NOT NULL
);
CREATE INDEX enroll_transactions_tenant ON enroll_transactions (tenant_id, seq);

-- The current state of each device of a tenant. applied_seq is the job item (or the queue position at an
-- assign/unassign) whose effect the row shows: an older item finishing later does not overwrite a newer state.
CREATE TABLE enroll_devices (
  tenant_id       TEXT COLLATE "C" NOT NULL,
  device_id       TEXT COLLATE "C" NOT NULL,
  profile_id      TEXT COLLATE "C",
  state           TEXT NOT NULL CHECK (state IN ('Processing', 'Enrolled', 'Failed')),
  user_id         TEXT,
  user_password   TEXT,
  transaction_id  TEXT COLLATE "C" NOT NULL,
  applied_seq     BIGINT NOT NULL,
  error_code      TEXT,
  error_message   TEXT,
  error_reason    TEXT,
  updated_at      TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, device_id)
);
CREATE INDEX enroll_devices_profile ON enroll_devices (tenant_id, profile_id, device_id);

-- The durable job queue: one item per uploaded device. A worker leases items (lease_owner, lease_until_ms) and
-- finishes each in one transaction that also writes the device, so a crash at any point leaves the item either
-- untouched (it is leased again after expiry) or finished exactly once.
CREATE TABLE enroll_jobs (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id  TEXT COLLATE "C" NOT NULL REFERENCES enroll_transactions (transaction_id),
  tenant_id       TEXT COLLATE "C" NOT NULL,
  device_id       TEXT COLLATE "C" NOT NULL,
  profile_id      TEXT COLLATE "C" NOT NULL,
  user_id         TEXT,
  user_password   TEXT,
  state           TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  outcome         TEXT CHECK (outcome IN ('Enrolled', 'Failed')),
  error_code      TEXT,
  error_message   TEXT,
  error_reason    TEXT,
  lease_owner     TEXT,
  lease_until_ms  BIGINT NOT NULL DEFAULT 0,
  attempts        INTEGER NOT NULL DEFAULT 0,
  updated_at      TEXT COLLATE "C" NOT NULL
);
CREATE INDEX enroll_jobs_claim ON enroll_jobs (lease_until_ms, seq) WHERE state = 'pending';
CREATE INDEX enroll_jobs_owner ON enroll_jobs (lease_owner) WHERE state = 'pending';
CREATE INDEX enroll_jobs_transaction ON enroll_jobs (transaction_id, seq);
CREATE INDEX enroll_jobs_pending_device ON enroll_jobs (tenant_id, device_id) WHERE state = 'pending';

-- One row per finished job item (the primary key makes a second finish impossible): the device's history.
CREATE TABLE enroll_device_history (
  item_seq        BIGINT PRIMARY KEY REFERENCES enroll_jobs (seq),
  tenant_id       TEXT COLLATE "C" NOT NULL,
  device_id       TEXT COLLATE "C" NOT NULL,
  transaction_id  TEXT COLLATE "C" NOT NULL,
  outcome         TEXT NOT NULL,
  applied         BOOLEAN NOT NULL,
  at              TEXT COLLATE "C" NOT NULL
);
CREATE INDEX enroll_device_history_device ON enroll_device_history (tenant_id, device_id);

-- Per-tenant RSA key pair for fields the client encrypts (userPassword): base64 SPKI DER / base64 PKCS#8 DER.
CREATE TABLE tenant_encryption_keys (
  tenant_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES tenants (tenant_id),
  public_key   TEXT NOT NULL,
  private_key  TEXT NOT NULL,
  created_at   TEXT COLLATE "C" NOT NULL
);
