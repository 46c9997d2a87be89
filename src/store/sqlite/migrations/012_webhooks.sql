-- PLACEHOLDER on branch i26-audit only: migration 012 belongs to the webhooks session (issue 26, item 1). The
-- numbers must be contiguous, so this empty file lets 013_audit.sql run on this branch alone. At merge, take the
-- webhooks branch's 012_webhooks.sql and drop this one.
SELECT 1;
