-- App Attest receipt refresh (issue 25; docs/app-attest.md "Refreshing"). `ios_apps`: the team's App Attest
-- developer key registered for the app (its 10-character key id, and the .p8 PEM sealed by the service:
-- sealedColumns.ts), both NULL when none. `app_attest_keys`: Apple's fraud-risk metric from the last refreshed
-- receipt and when it was read, the last refresh attempt (outcome, reason, time), and when the next is due
-- (NULL: never). Keys stored before this migration are due at once; only keys of apps with a developer key are
-- ever refreshed.
ALTER TABLE ios_apps ADD COLUMN developer_key_id TEXT;
ALTER TABLE ios_apps ADD COLUMN developer_key TEXT;

ALTER TABLE app_attest_keys ADD COLUMN risk_metric INTEGER;
ALTER TABLE app_attest_keys ADD COLUMN risk_metric_at TEXT;
ALTER TABLE app_attest_keys ADD COLUMN last_refresh_result TEXT;
ALTER TABLE app_attest_keys ADD COLUMN last_refresh_reason TEXT;
ALTER TABLE app_attest_keys ADD COLUMN last_refresh_at TEXT;
ALTER TABLE app_attest_keys ADD COLUMN refresh_due_at TEXT;
UPDATE app_attest_keys SET refresh_due_at = attested_at;
CREATE INDEX app_attest_keys_refresh_due ON app_attest_keys (refresh_due_at) WHERE refresh_due_at IS NOT NULL AND revoked_at IS NULL;
