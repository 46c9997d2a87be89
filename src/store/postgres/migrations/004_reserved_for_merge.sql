-- Placeholder, no schema change. Issue 14's branches were given migration 005 for their tables while 004 is
-- taken on another branch; migrations must be contiguous, so this file keeps 005 loadable on its own branch.
-- The integrator deletes it (or renumbers) when merging.
SELECT 1;
