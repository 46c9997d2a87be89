-- The portal (docs/portal.md): people who sign in, their one-time links and sessions; API key labels and last
-- use; verdict history filters.

-- Portal users are Part B's users (one email, one record): enroll_users gains the portal columns, and its
-- tenant_id becomes nullable for operators, who belong to no tenant. SQLite cannot drop a NOT NULL in place, so
-- the table is rebuilt (sqliteStore.ts runs migrations with foreign keys off and checks them before commit).
CREATE TABLE enroll_users_new (
  user_id        TEXT PRIMARY KEY,
  tenant_id      TEXT REFERENCES tenants (tenant_id),
  email          TEXT NOT NULL,
  state          TEXT NOT NULL CHECK (state IN ('registered', 'deregistered')),
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  portal_role    TEXT CHECK (portal_role IN ('admin', 'viewer', 'operator')),
  portal_state   TEXT CHECK (portal_state IN ('invited', 'active', 'disabled')),
  password_hash  TEXT,
  UNIQUE (tenant_id, email),
  CHECK ((portal_role IS NULL) = (portal_state IS NULL)),
  CHECK ((portal_role = 'operator') = (tenant_id IS NULL))
);
INSERT INTO enroll_users_new (user_id, tenant_id, email, state, created_at, updated_at)
  SELECT user_id, tenant_id, email, state, created_at, updated_at FROM enroll_users ORDER BY rowid;
DROP TABLE enroll_users;
ALTER TABLE enroll_users_new RENAME TO enroll_users;
-- sign-in is by email alone, so among portal users an email names one person
CREATE UNIQUE INDEX enroll_users_portal_email ON enroll_users (lower(email)) WHERE portal_role IS NOT NULL;

-- Only the SHA-256 of a link's token and of a session's cookie value is kept.
CREATE TABLE portal_invites (
  token_hash     TEXT PRIMARY KEY,
  user_id        TEXT NOT NULL REFERENCES enroll_users (user_id),
  created_at_ms  INTEGER NOT NULL,
  expires_at_ms  INTEGER NOT NULL,
  used_at_ms     INTEGER
) WITHOUT ROWID;

CREATE TABLE portal_sessions (
  session_hash    TEXT PRIMARY KEY,
  user_id         TEXT NOT NULL REFERENCES enroll_users (user_id),
  csrf_token      TEXT NOT NULL,
  created_at_ms   INTEGER NOT NULL,
  last_seen_at_ms INTEGER NOT NULL,
  expires_at_ms   INTEGER NOT NULL,
  method          TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX portal_sessions_user ON portal_sessions (user_id);

-- Passkeys (WebAuthn credentials): the public key, never a secret; the authenticator's signature counter as last
-- seen, so a copy that lags behind is refused. A credential id names one passkey across all users.
CREATE TABLE portal_passkeys (
  credential_id  TEXT PRIMARY KEY,
  user_id        TEXT NOT NULL REFERENCES enroll_users (user_id),
  public_key     TEXT NOT NULL,
  counter        INTEGER NOT NULL CHECK (counter >= 0),
  transports     TEXT NOT NULL,
  backed_up      INTEGER NOT NULL CHECK (backed_up IN (0, 1)),
  name           TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  last_used_at   TEXT
) WITHOUT ROWID;
CREATE INDEX portal_passkeys_user ON portal_passkeys (user_id, created_at);

-- A WebAuthn ceremony begun on one instance may finish on another: challenges live here, single use, minutes long.
CREATE TABLE portal_passkey_challenges (
  challenge_hash TEXT PRIMARY KEY,
  purpose        TEXT NOT NULL CHECK (purpose IN ('register', 'signin')),
  user_id        TEXT REFERENCES enroll_users (user_id),
  expires_at_ms  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX portal_passkey_challenges_expiry ON portal_passkey_challenges (expires_at_ms);

ALTER TABLE api_keys ADD COLUMN label TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;

-- Verdict history filters read the stored record; generated columns keep the request path's INSERT unchanged
-- and fill themselves for rows stored before this migration. Each index serves newest-first paging by
-- (created_at, object_id) under one filter, so a first page is an index range read however many rows a tenant has.
ALTER TABLE verdicts ADD COLUMN verdict TEXT GENERATED ALWAYS AS (json_extract(record, '$.verdict')) VIRTUAL;
ALTER TABLE verdicts ADD COLUMN status TEXT GENERATED ALWAYS AS (json_extract(record, '$.status')) VIRTUAL;
ALTER TABLE verdicts ADD COLUMN chip_id TEXT GENERATED ALWAYS AS (json_extract(record, '$.chipId')) VIRTUAL;
ALTER TABLE verdicts ADD COLUMN imei TEXT GENERATED ALWAYS AS (json_extract(record, '$.IMEI')) VIRTUAL;
CREATE INDEX verdicts_tenant_time ON verdicts (tenant_id, created_at, object_id);
CREATE INDEX verdicts_time ON verdicts (created_at, object_id);
CREATE INDEX verdicts_tenant_verdict_time ON verdicts (tenant_id, verdict, created_at, object_id);
CREATE INDEX verdicts_tenant_status_time ON verdicts (tenant_id, status, created_at, object_id);
CREATE INDEX verdicts_tenant_chip ON verdicts (tenant_id, chip_id, created_at, object_id) WHERE chip_id <> '';
CREATE INDEX verdicts_tenant_imei ON verdicts (tenant_id, imei, created_at, object_id) WHERE imei <> '';

CREATE INDEX activity_tenant_status_time ON activity (tenant_id, status, time);
