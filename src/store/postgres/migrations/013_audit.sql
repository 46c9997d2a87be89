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
