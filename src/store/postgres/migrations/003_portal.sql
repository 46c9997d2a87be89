-- The portal (docs/portal.md): people who sign in, their one-time links and sessions; API key labels and last
-- use; verdict history filters. Mirrors sqlite/migrations/003_portal.sql.

-- Portal users are Part B's users (one email, one record); operators belong to no tenant.
ALTER TABLE enroll_users ALTER COLUMN tenant_id DROP NOT NULL;
ALTER TABLE enroll_users ADD COLUMN portal_role TEXT CHECK (portal_role IN ('admin', 'viewer', 'operator'));
ALTER TABLE enroll_users ADD COLUMN portal_state TEXT CHECK (portal_state IN ('invited', 'active', 'disabled'));
ALTER TABLE enroll_users ADD COLUMN password_hash TEXT;
ALTER TABLE enroll_users ADD CONSTRAINT enroll_users_portal_pair CHECK ((portal_role IS NULL) = (portal_state IS NULL));
ALTER TABLE enroll_users ADD CONSTRAINT enroll_users_operator_tenant CHECK ((portal_role = 'operator') = (tenant_id IS NULL));
CREATE UNIQUE INDEX enroll_users_portal_email ON enroll_users (lower(email)) WHERE portal_role IS NOT NULL;

CREATE TABLE portal_invites (
  token_hash     TEXT COLLATE "C" PRIMARY KEY,
  user_id        TEXT COLLATE "C" NOT NULL REFERENCES enroll_users (user_id),
  created_at_ms  BIGINT NOT NULL,
  expires_at_ms  BIGINT NOT NULL,
  used_at_ms     BIGINT
);

CREATE TABLE portal_sessions (
  session_hash    TEXT COLLATE "C" PRIMARY KEY,
  user_id         TEXT COLLATE "C" NOT NULL REFERENCES enroll_users (user_id),
  csrf_token      TEXT NOT NULL,
  created_at_ms   BIGINT NOT NULL,
  last_seen_at_ms BIGINT NOT NULL,
  expires_at_ms   BIGINT NOT NULL,
  method          TEXT NOT NULL
);
CREATE INDEX portal_sessions_user ON portal_sessions (user_id);

-- Passkeys (WebAuthn credentials) and the challenges of ceremonies under way (any instance may finish one).
CREATE TABLE portal_passkeys (
  credential_id  TEXT COLLATE "C" PRIMARY KEY,
  user_id        TEXT COLLATE "C" NOT NULL REFERENCES enroll_users (user_id),
  public_key     TEXT NOT NULL,
  counter        BIGINT NOT NULL CHECK (counter >= 0),
  transports     JSONB NOT NULL,
  backed_up      BOOLEAN NOT NULL,
  name           TEXT NOT NULL,
  created_at     TEXT COLLATE "C" NOT NULL,
  last_used_at   TEXT COLLATE "C"
);
CREATE INDEX portal_passkeys_user ON portal_passkeys (user_id, created_at);

CREATE TABLE portal_passkey_challenges (
  challenge_hash TEXT COLLATE "C" PRIMARY KEY,
  purpose        TEXT NOT NULL CHECK (purpose IN ('register', 'signin')),
  user_id        TEXT COLLATE "C" REFERENCES enroll_users (user_id),
  expires_at_ms  BIGINT NOT NULL
);
CREATE INDEX portal_passkey_challenges_expiry ON portal_passkey_challenges (expires_at_ms);

ALTER TABLE api_keys ADD COLUMN label TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT COLLATE "C";

-- Generated from the stored record, so the request path's INSERT is unchanged and old rows are filled in.
ALTER TABLE verdicts ADD COLUMN verdict TEXT COLLATE "C" GENERATED ALWAYS AS (record ->> 'verdict') STORED;
ALTER TABLE verdicts ADD COLUMN status TEXT COLLATE "C" GENERATED ALWAYS AS (record ->> 'status') STORED;
ALTER TABLE verdicts ADD COLUMN chip_id TEXT COLLATE "C" GENERATED ALWAYS AS (record ->> 'chipId') STORED;
ALTER TABLE verdicts ADD COLUMN imei TEXT COLLATE "C" GENERATED ALWAYS AS (record ->> 'IMEI') STORED;
CREATE INDEX verdicts_tenant_time ON verdicts (tenant_id, created_at, object_id);
CREATE INDEX verdicts_time ON verdicts (created_at, object_id);
CREATE INDEX verdicts_tenant_verdict_time ON verdicts (tenant_id, verdict, created_at, object_id);
CREATE INDEX verdicts_tenant_status_time ON verdicts (tenant_id, status, created_at, object_id);
CREATE INDEX verdicts_tenant_chip ON verdicts (tenant_id, chip_id, created_at, object_id) WHERE chip_id <> '';
CREATE INDEX verdicts_tenant_imei ON verdicts (tenant_id, imei, created_at, object_id) WHERE imei <> '';

CREATE INDEX activity_tenant_status_time ON activity (tenant_id, status, time);
