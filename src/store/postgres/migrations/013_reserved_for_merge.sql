-- PLACEHOLDER of branch i26-policy, not a real migration: number 013 belongs to another branch merged with this one.
-- Delete this file at the merge (migrations must be numbered without gaps, and 014_tenant_policies is this branch's).
SELECT 1;
