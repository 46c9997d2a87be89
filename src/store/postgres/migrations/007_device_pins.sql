-- Per-device memory (docs/devices.md). Mirrors src/store/sqlite/migrations/007_device_pins.sql column for column,
-- with 001's conventions (ISO TEXT times with COLLATE "C", JSON as json, identity seq for SQLite's rowid order).
CREATE TABLE attested_devices (
  tenant_id       TEXT COLLATE "C" NOT NULL,
  device_id       TEXT COLLATE "C" NOT NULL,
  first_seen      TEXT COLLATE "C" NOT NULL,
  last_seen       TEXT COLLATE "C" NOT NULL,
  seen_count      INTEGER NOT NULL,
  last_appraisal  JSON NOT NULL,
  latest_facts    JSON,
  pin             JSON,
  resets          INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, device_id)
);

CREATE TABLE attested_device_resets (
  id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id     TEXT COLLATE "C" NOT NULL,
  device_id     TEXT COLLATE "C" NOT NULL,
  reset_at      TEXT COLLATE "C" NOT NULL,
  reset_by      TEXT NOT NULL,
  previous_pin  JSON
);
CREATE INDEX attested_device_resets_device ON attested_device_resets (tenant_id, device_id, id);
