-- Signed webhooks (issue 26, docs/events.md). A tenant's endpoints: `events` a JSON array of event types,
-- `secret` the sealed JSON of its signing secrets (src/services/webhooks.ts, sealedColumns.ts).
CREATE TABLE webhook_endpoints (
  id            TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL REFERENCES tenants (tenant_id),
  url           TEXT NOT NULL,
  description   TEXT NOT NULL,
  events        TEXT NOT NULL,
  verdicts      TEXT NOT NULL CHECK (verdicts IN ('all', 'non-yes')),
  enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  secret        TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, created_at);

-- The outbox: one row per (event, endpoint), written in the transaction of the event's own write. No foreign key to
-- the endpoint: a removal racing a verdict must not fail the verdict; the worker fails a delivery whose endpoint is gone.
CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  event_id         TEXT NOT NULL,
  tenant_id        TEXT NOT NULL,
  endpoint_id      TEXT NOT NULL,
  event_type       TEXT NOT NULL,
  payload          TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL,
  tries            INTEGER NOT NULL,
  next_attempt_ms  INTEGER NOT NULL,
  give_up_at_ms    INTEGER NOT NULL,
  lease_owner      TEXT,
  lease_until_ms   INTEGER,
  last_status      INTEGER,
  finished_at      TEXT
) WITHOUT ROWID;
-- the worker's claim reads pending rows by due time; a delivered or failed row leaves the index
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, created_at, id);
-- the history's purge (--webhook-history-days) reads finished rows oldest first
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (created_at) WHERE state <> 'pending';

CREATE TABLE webhook_attempts (
  delivery_id  TEXT NOT NULL,
  attempt      INTEGER NOT NULL,
  at           TEXT NOT NULL,
  status       INTEGER,
  duration_ms  INTEGER NOT NULL,
  error        TEXT,
  response     TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
