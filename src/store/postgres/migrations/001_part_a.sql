-- Part A: tenants, API keys, nonces, verdicts, activity log, reference values.
-- Mirrors src/store/sqlite/migrations/001_part_a.sql column for column. Differences, and why:
--  * Timestamps stay ISO 8601 TEXT (not timestamptz) so every backend returns exactly the string it was given
--    and `since` filters compare the same way. COLLATE "C" makes ORDER BY and >= bytewise, as in SQLite, whatever
--    the database's default collation is.
--  * JSON columns are `json`, not `jsonb`: json keeps key order, and the verdict record's eleven fields have a wire
--    order (attestation-api.md).
--  * Millisecond times are BIGINT (SQLite INTEGER is 64-bit too).
CREATE TABLE tenants (
  tenant_id           TEXT COLLATE "C" PRIMARY KEY,
  name                TEXT COLLATE "C" NOT NULL UNIQUE,
  customer_id         TEXT COLLATE "C" NOT NULL UNIQUE,
  kind                TEXT NOT NULL CHECK (kind IN ('customer', 'reseller')),
  state               TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'inactive', 'blocked')),
  enrollment_enabled  BOOLEAN NOT NULL,
  created_at          TEXT COLLATE "C" NOT NULL
);

CREATE TABLE api_keys (
  key_id        TEXT COLLATE "C" PRIMARY KEY,
  tenant_id     TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  secret_hash   TEXT NOT NULL,
  rps           DOUBLE PRECISION NOT NULL,
  burst         INTEGER NOT NULL,
  created_at    TEXT COLLATE "C" NOT NULL,
  revoked_at    TEXT,
  restrictions  JSON,
  -- SQLite lists a tenant's keys in insertion order on equal created_at (rowid); this column gives the same tiebreak.
  seq           BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at, seq);

-- Used nonces stay until expiry + retention so a late replay still answers NONCE_ALREADY_USED.
CREATE TABLE nonces (
  nonce          TEXT COLLATE "C" PRIMARY KEY,
  tenant_id      TEXT COLLATE "C" NOT NULL,
  created_at_ms  BIGINT NOT NULL,
  expires_at_ms  BIGINT NOT NULL,
  used_at_ms     BIGINT
);
CREATE INDEX nonces_expiry ON nonces (expires_at_ms);
CREATE INDEX nonces_outstanding ON nonces (tenant_id, expires_at_ms) WHERE used_at_ms IS NULL;

-- Per tenant, an upper bound of its outstanding (unused, unexpired) nonces. Unlike SQLite's exact counter it is
-- only raised by issue and only lowered by an exact recount at the cap, so consume never writes this row: with
-- several instances, consumes of one tenant would otherwise queue on it. The row lock also serialises one
-- tenant's issues, which is what keeps the cap exact. See attestd_issue_nonce.
CREATE TABLE nonce_issue_bounds (
  tenant_id  TEXT COLLATE "C" PRIMARY KEY,
  n          BIGINT NOT NULL
);

CREATE TABLE verdicts (
  object_id   TEXT COLLATE "C" PRIMARY KEY,
  tenant_id   TEXT COLLATE "C" NOT NULL,
  format      TEXT NOT NULL,
  record      JSON NOT NULL,
  reason      TEXT NOT NULL,
  detail      JSON NOT NULL,
  created_at  TEXT COLLATE "C" NOT NULL
);

CREATE TABLE activity (
  id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  time            TEXT COLLATE "C" NOT NULL,
  error_id        TEXT COLLATE "C",
  tenant_id       TEXT COLLATE "C",
  client_id       TEXT,
  method          TEXT NOT NULL,
  route           TEXT NOT NULL,
  status          INTEGER NOT NULL,
  code            TEXT,
  latency_ms      DOUBLE PRECISION NOT NULL,
  remote_address  TEXT NOT NULL
);
CREATE INDEX activity_time ON activity (time);
CREATE INDEX activity_tenant_time ON activity (tenant_id, time);
CREATE UNIQUE INDEX activity_error_id ON activity (error_id) WHERE error_id IS NOT NULL;

-- Reference values imported with `attestd refvals import`; merged with --reference-values at appraisal time.
CREATE TABLE reference_values (
  model             TEXT COLLATE "C" NOT NULL,
  firmware_version  TEXT COLLATE "C" NOT NULL,
  measurements      JSON NOT NULL,
  updated_at        TEXT NOT NULL,
  PRIMARY KEY (model, firmware_version)
);

-- Issue one nonce unless the tenant has p_max outstanding ones: one round trip, atomic across instances.
-- The upsert takes the tenant's row lock, so a tenant's issues run one at a time and the recount below sees every
-- nonce committed before it (READ COMMITTED gives each statement a fresh snapshot). Expired-but-unpurged nonces
-- are not counted, as the NonceStore contract requires.
CREATE FUNCTION attestd_issue_nonce(p_nonce TEXT, p_tenant TEXT, p_created BIGINT, p_expires BIGINT, p_max BIGINT, p_now BIGINT)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  bound BIGINT;
BEGIN
  INSERT INTO nonce_issue_bounds AS b (tenant_id, n) VALUES (p_tenant, 1)
    ON CONFLICT (tenant_id) DO UPDATE SET n = b.n + 1
    RETURNING n INTO bound;
  IF bound > p_max THEN
    -- the bound says "maybe at the cap": count exactly (at most p_max rows) and reset the bound to the truth
    SELECT count(*) INTO bound FROM (
      SELECT 1 FROM nonces WHERE tenant_id = p_tenant AND used_at_ms IS NULL AND expires_at_ms > p_now LIMIT p_max
    ) outstanding;
    IF bound >= p_max THEN
      UPDATE nonce_issue_bounds SET n = bound WHERE tenant_id = p_tenant;
      RETURN 'limit';
    END IF;
    UPDATE nonce_issue_bounds SET n = bound + 1 WHERE tenant_id = p_tenant;
  END IF;
  INSERT INTO nonces (nonce, tenant_id, created_at_ms, expires_at_ms) VALUES (p_nonce, p_tenant, p_created, p_expires);
  RETURN 'ok';
END
$$;

-- Consume one nonce: 'ok' | 'unknown' | 'expired' | 'used'. Of concurrent calls for one nonce the UPDATE's row lock
-- lets exactly one through; the others re-check the row after it commits, find it used, and the SELECT (a new
-- snapshot) tells them why. Another tenant's nonce answers 'unknown'.
CREATE FUNCTION attestd_consume_nonce(p_nonce TEXT, p_tenant TEXT, p_now BIGINT)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
BEGIN
  UPDATE nonces SET used_at_ms = p_now
    WHERE nonce = p_nonce AND tenant_id = p_tenant AND used_at_ms IS NULL AND expires_at_ms > p_now;
  IF FOUND THEN
    RETURN 'ok';
  END IF;
  SELECT tenant_id, used_at_ms INTO r FROM nonces WHERE nonce = p_nonce;
  IF NOT FOUND OR r.tenant_id <> p_tenant THEN
    RETURN 'unknown';
  END IF;
  IF r.used_at_ms IS NOT NULL THEN
    RETURN 'used';
  END IF;
  RETURN 'expired';
END
$$;
