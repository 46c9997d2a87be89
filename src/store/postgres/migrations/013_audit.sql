-- The audit trail (issue 26; docs/audit.md). Mirrors sqlite/migrations/013_audit.sql.
CREATE TABLE audit (
  id           TEXT COLLATE "C" PRIMARY KEY,
  time         TEXT COLLATE "C" NOT NULL,
  tenant_id    TEXT COLLATE "C",
  actor_kind   TEXT NOT NULL CHECK (actor_kind IN ('user', 'api-client', 'operator', 'system')),
  actor_id     TEXT COLLATE "C" NOT NULL,
  actor        TEXT NOT NULL,
  action       TEXT COLLATE "C" NOT NULL,
  target_kind  TEXT COLLATE "C" NOT NULL,
  target_id    TEXT COLLATE "C" NOT NULL,
  before_json  TEXT NOT NULL,
  after_json   TEXT NOT NULL,
  source       TEXT NOT NULL
);
CREATE INDEX audit_by_time ON audit (time, id);
CREATE INDEX audit_by_tenant ON audit (tenant_id, time, id);

-- One home for audit records: the device pin resets of migration 007 move into the trail (action
-- `device.pin-reset`, target the device), their `reset_by` kept as the actor's id (`cli` or a portal user id).
INSERT INTO audit (id, time, tenant_id, actor_kind, actor_id, actor, action, target_kind, target_id, before_json, after_json, source)
SELECT 'au_reset_' || id, reset_at, tenant_id,
       CASE WHEN reset_by LIKE 'u\_%' THEN 'user' ELSE 'operator' END, reset_by,
       json_build_object('kind', CASE WHEN reset_by LIKE 'u\_%' THEN 'user' ELSE 'operator' END, 'id', reset_by)::text,
       'device.pin-reset', 'device', device_id,
       json_build_object('pin', previous_pin)::text, '{"pin":null}',
       '{"kind":"system"}'
FROM attested_device_resets;
DROP TABLE attested_device_resets;
