-- A tenant's appraisal policy (issue 26): immutable versions per tenant, the highest in force; insert only.
-- Mirrors sqlite/migrations/014_tenant_policies.sql (`document` is JSON text as written, not jsonb: kept verbatim).
CREATE TABLE tenant_policies (
  tenant_id   TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  version     INTEGER NOT NULL CHECK (version >= 1),
  created_at  TEXT COLLATE "C" NOT NULL,
  author      TEXT NOT NULL,
  document    TEXT NOT NULL,
  PRIMARY KEY (tenant_id, version)
);
