-- Issue 13 (security): what only the operator may learn of a refused request. Mirrors the SQLite migration of the same name.

-- The real reason of an error answer, for `attestd activity` (clients may get a deliberately vaguer `data`).
ALTER TABLE activity ADD COLUMN reason TEXT;

-- Sealed secrets (src/secrets/): the id of the key every sealed column value (src/store/sealedColumns.ts) is sealed
-- with; the values are sealed by the first start with a key, not here (SQL has no key).
CREATE TABLE sealing_key (
  singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
  key_id     TEXT NOT NULL,
  sealed_at  TEXT NOT NULL
);
