-- Per-device memory (docs/devices.md): the devices a relying party names (`deviceId`), per tenant, with their
-- history and their pin (trust on first use). The JSON columns hold the records of src/domain/devices.ts.
CREATE TABLE attested_devices (
  tenant_id       TEXT NOT NULL,
  device_id       TEXT NOT NULL,
  first_seen      TEXT NOT NULL,
  last_seen       TEXT NOT NULL,
  seen_count      INTEGER NOT NULL,
  -- DeviceAppraisalSummary: the latest stored appraisal, whatever its outcome
  last_appraisal  TEXT NOT NULL,
  -- LatestDeviceFacts: of the latest appraisal that authenticated any
  latest_facts    TEXT,
  -- DevicePin; NULL until a Yes pins the device, and again after a reset
  pin             TEXT,
  resets          INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, device_id)
) WITHOUT ROWID;

-- The audit trail of pin resets (`attestd device reset`, later the portal): who, when, and the pin cleared.
CREATE TABLE attested_device_resets (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id     TEXT NOT NULL,
  device_id     TEXT NOT NULL,
  reset_at      TEXT NOT NULL,
  reset_by      TEXT NOT NULL,
  previous_pin  TEXT
);
CREATE INDEX attested_device_resets_device ON attested_device_resets (tenant_id, device_id, id);
