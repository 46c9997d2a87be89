-- The portal overview's counts: verdicts and requests per tenant and UTC hour, kept beside the rows they count and
-- in the same statement. Mirrors sqlite/migrations/004_portal_stats.sql (007 once merged); here `slot` matters: a
-- verdict's counter row is one of 8 (chosen from its objectId), so concurrent commits of one tenant's verdicts do
-- not queue on one row lock.
CREATE TABLE verdict_stats (
  tenant_id  TEXT COLLATE "C" NOT NULL,
  hour       TEXT COLLATE "C" NOT NULL,
  verdict    TEXT COLLATE "C" NOT NULL,
  status     TEXT COLLATE "C" NOT NULL,
  reason     TEXT COLLATE "C" NOT NULL,
  slot       SMALLINT NOT NULL,
  n          BIGINT NOT NULL,
  PRIMARY KEY (tenant_id, hour, verdict, status, reason, slot)
);
CREATE INDEX verdict_stats_hour ON verdict_stats (hour);
INSERT INTO verdict_stats (tenant_id, hour, verdict, status, reason, slot, n)
  SELECT tenant_id, substr(created_at, 1, 13), COALESCE(verdict, ''), COALESCE(status, ''),
         CASE WHEN verdict = 'Yes' THEN '' ELSE substr(reason, 1, 200) END, 0, COUNT(*)
  FROM verdicts GROUP BY 1, 2, 3, 4, 5;

CREATE TABLE activity_stats (
  tenant_id  TEXT COLLATE "C" NOT NULL,
  hour       TEXT COLLATE "C" NOT NULL,
  method     TEXT COLLATE "C" NOT NULL,
  route      TEXT COLLATE "C" NOT NULL,
  status     INTEGER NOT NULL,
  code       TEXT COLLATE "C" NOT NULL,
  n          BIGINT NOT NULL,
  PRIMARY KEY (tenant_id, hour, method, route, status, code)
);
CREATE INDEX activity_stats_hour ON activity_stats (hour);
INSERT INTO activity_stats (tenant_id, hour, method, route, status, code, n)
  SELECT COALESCE(tenant_id, ''), substr(time, 1, 13), method, route, status, COALESCE(code, ''), COUNT(*)
  FROM activity GROUP BY 1, 2, 3, 4, 5, 6;
