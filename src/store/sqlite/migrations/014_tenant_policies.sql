-- A tenant's appraisal policy (issue 26; docs/policy.md): immutable versions 1, 2, 3, ... per tenant, the highest in
-- force. Rows are only ever inserted: a change is a new version, a rollback a new version with an old document. The
-- primary key makes two writers of one number meet: one insert wins, the other is told to read and try again.
-- `document` is the JSON text as src/attestation/policy/tenantPolicyDocument.ts parsed it.
CREATE TABLE tenant_policies (
  tenant_id   TEXT NOT NULL REFERENCES tenants (tenant_id),
  version     INTEGER NOT NULL CHECK (version >= 1),
  created_at  TEXT NOT NULL,
  author      TEXT NOT NULL,
  document    TEXT NOT NULL,
  PRIMARY KEY (tenant_id, version)
) WITHOUT ROWID;
