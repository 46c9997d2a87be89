-- App Attest receipt refresh (issue 25). Mirrors sqlite/migrations/016_app_attest_receipts.sql.
ALTER TABLE ios_apps ADD COLUMN developer_key_id TEXT COLLATE "C";
ALTER TABLE ios_apps ADD COLUMN developer_key TEXT;

ALTER TABLE app_attest_keys ADD COLUMN risk_metric BIGINT;
ALTER TABLE app_attest_keys ADD COLUMN risk_metric_at TEXT COLLATE "C";
ALTER TABLE app_attest_keys ADD COLUMN last_refresh_result TEXT;
ALTER TABLE app_attest_keys ADD COLUMN last_refresh_reason TEXT;
ALTER TABLE app_attest_keys ADD COLUMN last_refresh_at TEXT COLLATE "C";
ALTER TABLE app_attest_keys ADD COLUMN refresh_due_at TEXT COLLATE "C";
UPDATE app_attest_keys SET refresh_due_at = attested_at;
CREATE INDEX app_attest_keys_refresh_due ON app_attest_keys (refresh_due_at) WHERE refresh_due_at IS NOT NULL AND revoked_at IS NULL;
