-- The audit trail (issue 26; docs/audit.md): one row per change of state made through the services. Never updated
-- or deleted by attestd. The actor, source, before and after are JSON text (secrets removed before they get here:
-- src/domain/audit.ts, redactSecrets); actor_kind / actor_id / target_* are copied out for the filters.
CREATE TABLE audit (
  id           TEXT PRIMARY KEY,
  time         TEXT NOT NULL,
  tenant_id    TEXT,
  actor_kind   TEXT NOT NULL CHECK (actor_kind IN ('user', 'api-client', 'operator', 'system')),
  actor_id     TEXT NOT NULL,
  actor        TEXT NOT NULL,
  action       TEXT NOT NULL,
  target_kind  TEXT NOT NULL,
  target_id    TEXT NOT NULL,
  before_json  TEXT NOT NULL,
  after_json   TEXT NOT NULL,
  source       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX audit_by_time ON audit (time, id);
CREATE INDEX audit_by_tenant ON audit (tenant_id, time, id);

-- One home for audit records: the device pin resets of migration 007 move into the trail (action
-- `device.pin-reset`, target the device), their `reset_by` kept as the actor's id (`cli` or a portal user id).
INSERT INTO audit (id, time, tenant_id, actor_kind, actor_id, actor, action, target_kind, target_id, before_json, after_json, source)
SELECT 'au_reset_' || id, reset_at, tenant_id,
       CASE WHEN reset_by LIKE 'u\_%' ESCAPE '\' THEN 'user' ELSE 'operator' END, reset_by,
       json_object('kind', CASE WHEN reset_by LIKE 'u\_%' ESCAPE '\' THEN 'user' ELSE 'operator' END, 'id', reset_by),
       'device.pin-reset', 'device', device_id,
       json_object('pin', json(COALESCE(previous_pin, 'null'))), json_object('pin', json('null')),
       json_object('kind', 'system')
FROM attested_device_resets;
DROP TABLE attested_device_resets;
