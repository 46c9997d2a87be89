-- The portal overview's counts (docs/portal.md, "Overview"): verdicts and requests per tenant and UTC hour, kept
-- beside the rows they count and in the same transaction, so the overview reads a few hundred rows however many
-- millions a tenant has (src/store/README.md, "Overview counts"). Number 007 once merged with the other portal
-- branches. Rows stored before this migration are counted here, once.

-- hour: the first 13 characters of created_at ("2026-11-22T10", UTC). reason: '' for Yes (the overview lists only
-- why verdicts failed), else the deciding rule's first 200 characters. slot: PostgreSQL spreads one busy counter
-- over several rows so concurrent commits do not queue on one row lock; SQLite has one writer and always writes 0.
CREATE TABLE verdict_stats (
  tenant_id  TEXT NOT NULL,
  hour       TEXT NOT NULL,
  verdict    TEXT NOT NULL,
  status     TEXT NOT NULL,
  reason     TEXT NOT NULL,
  slot       INTEGER NOT NULL,
  n          INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, hour, verdict, status, reason, slot)
) WITHOUT ROWID;
-- operators' view of every tenant reads by hour alone
CREATE INDEX verdict_stats_hour ON verdict_stats (hour);
INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n)
  SELECT tenant_id, substr(created_at, 1, 13), COALESCE(verdict, ''), COALESCE(status, ''),
         CASE WHEN verdict = 'Yes' THEN '' ELSE substr(reason, 1, 200) END, 0, COUNT(*)
  FROM verdicts GROUP BY 1, 2, 3, 4, 5;

-- tenant_id '' for requests of no tenant (refused before one was known), code '' for none.
CREATE TABLE activity_stats (
  tenant_id  TEXT NOT NULL,
  hour       TEXT NOT NULL,
  method     TEXT NOT NULL,
  route      TEXT NOT NULL,
  status     INTEGER NOT NULL,
  code       TEXT NOT NULL,
  n          INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, hour, method, route, status, code)
) WITHOUT ROWID;
CREATE INDEX activity_stats_hour ON activity_stats (hour);
INSERT INTO activity_stats (tenant_id, hour, method, route, status, code, n)
  SELECT COALESCE(tenant_id, ''), substr(time, 1, 13), method, route, status, COALESCE(code, ''), COUNT(*)
  FROM activity GROUP BY 1, 2, 3, 4, 5, 6;
