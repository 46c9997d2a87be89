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
