-- App Attest receipt refresh (issue 25). Mirrors sqlite/migrations/017_app_attest_refresh_due.sql: a key is due only
-- when its app has a developer key.
UPDATE app_attest_keys SET refresh_due_at = NULL
WHERE refresh_due_at IS NOT NULL
  AND NOT EXISTS (
    SELECT 1 FROM ios_apps a
    WHERE a.tenant_id = app_attest_keys.tenant_id AND a.app_id = app_attest_keys.app_id AND a.developer_key IS NOT NULL
  );
