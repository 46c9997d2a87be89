-- Issue 13 (security): what only the operator may learn of a refused request.

-- The real reason of an error answer, for `attestd activity`. A client sometimes gets a deliberately vaguer `data`
-- (identity failures answer alike, so a stolen part of a credential cannot be tested piecemeal); this is the reason
-- behind it. Never shown to clients or tenants.
ALTER TABLE activity ADD COLUMN reason TEXT;
