-- Signed webhooks (issue 26, docs/events.md). Mirrors sqlite/migrations/012_webhooks.sql.
CREATE TABLE webhook_endpoints (
  id            TEXT COLLATE "C" PRIMARY KEY,
  tenant_id     TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  url           TEXT NOT NULL,
  description   TEXT NOT NULL,
  events        JSON NOT NULL,
  verdicts      TEXT NOT NULL CHECK (verdicts IN ('all', 'non-yes')),
  enabled       BOOLEAN NOT NULL,
  secret        TEXT NOT NULL,
  created_at    TEXT COLLATE "C" NOT NULL,
  updated_at    TEXT COLLATE "C" NOT NULL
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, created_at);

-- The outbox: one row per (event, endpoint); claimed with FOR UPDATE SKIP LOCKED and a lease, so of several
-- instances one delivers each row. No foreign key to the endpoint (see the SQLite migration).
CREATE TABLE webhook_deliveries (
  id               TEXT COLLATE "C" PRIMARY KEY,
  event_id         TEXT COLLATE "C" NOT NULL,
  tenant_id        TEXT COLLATE "C" NOT NULL,
  endpoint_id      TEXT COLLATE "C" NOT NULL,
  event_type       TEXT NOT NULL,
  payload          TEXT NOT NULL,
  created_at       TEXT COLLATE "C" NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL,
  tries            INTEGER NOT NULL,
  next_attempt_ms  BIGINT NOT NULL,
  give_up_at_ms    BIGINT NOT NULL,
  lease_owner      TEXT,
  lease_until_ms   BIGINT,
  last_status      INTEGER,
  finished_at      TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, created_at, id);
-- the history's purge (--webhook-history-days) reads finished rows oldest first
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (created_at) WHERE state <> 'pending';

CREATE TABLE webhook_attempts (
  delivery_id  TEXT COLLATE "C" NOT NULL,
  attempt      INTEGER NOT NULL,
  at           TEXT NOT NULL,
  status       INTEGER,
  duration_ms  INTEGER NOT NULL,
  error        TEXT,
  response     TEXT,
  PRIMARY KEY (delivery_id, attempt)
);
