-- Issue 13 (security): what only the operator may learn of a refused request. Mirrors sqlite/migrations/004_security.sql.

-- The real reason of an error answer, for `attestd activity` (clients may get a deliberately vaguer `data`).
ALTER TABLE activity ADD COLUMN reason TEXT;
