-- The portal's enrollment pages (docs/portal.md, "Enrollment clients" and "Reference values"). Mirrors
-- sqlite/migrations/004_portal_enrollment.sql.

-- A revoked enrollment client stays listed (who had access, and until when) but can no longer authenticate; its
-- access tokens are deleted when it is revoked. `attestd client delete` still removes a client outright.
ALTER TABLE enroll_clients ADD COLUMN revoked_at TEXT COLLATE "C";

-- A tenant's own reference values: they apply to that tenant's appraisals only, and replace a global set
-- (reference_values) of the same model and firmware for that tenant. The global sets stay the operator's.
CREATE TABLE tenant_reference_values (
  tenant_id         TEXT COLLATE "C" NOT NULL REFERENCES tenants (tenant_id),
  model             TEXT COLLATE "C" NOT NULL,
  firmware_version  TEXT COLLATE "C" NOT NULL,
  measurements      JSON NOT NULL,
  updated_at        TEXT NOT NULL,
  PRIMARY KEY (tenant_id, model, firmware_version)
);
