-- Issue 13 (security): what only the operator may learn of a refused request.

-- The real reason of an error answer, for `attestd activity`. A client sometimes gets a deliberately vaguer `data`
-- (identity failures answer alike, so a stolen part of a credential cannot be tested piecemeal); this is the reason
-- behind it. Never shown to clients or tenants.
ALTER TABLE activity ADD COLUMN reason TEXT;

-- Sealed secrets (src/secrets/): every value of a sealed column (src/store/sealedColumns.ts, e.g.
-- tenant_encryption_keys.private_key) is AES-256-GCM-sealed with the operator's key from now on. This row names
-- the key they are sealed with, so a process holding another key is refused at start instead of sealing with its
-- own. The values themselves are sealed by the first start with a key (plaintext rows included), not here: SQL
-- has no key.
CREATE TABLE sealing_key (
  singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
  key_id     TEXT NOT NULL,
  sealed_at  TEXT NOT NULL
);
