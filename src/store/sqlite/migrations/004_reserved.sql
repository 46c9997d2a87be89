-- Placeholder, only on branch issue14-pinning: migration numbers 004 and 005 belong to branches merged before it
-- (the integrator's numbering), and migrations must be contiguous. Delete this file on merge; 006 follows theirs.
SELECT 1;
