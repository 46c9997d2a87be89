-- App Attest receipt refresh (issue 25): a key is due only when its app has a developer key, so the refresh sweep's
-- range (app_attest_keys_refresh_due) holds only keys it can refresh. Before this, every key was due from its
-- attestation on, and each sweep (one after every attestation) walked all the keys of apps without a developer key.
-- Setting an app's developer key makes its keys due (AppAttestStore.setIosAppDeveloperKey).
UPDATE app_attest_keys SET refresh_due_at = NULL
WHERE refresh_due_at IS NOT NULL
  AND NOT EXISTS (
    SELECT 1 FROM ios_apps a
    WHERE a.tenant_id = app_attest_keys.tenant_id AND a.app_id = app_attest_keys.app_id AND a.developer_key IS NOT NULL
  );
