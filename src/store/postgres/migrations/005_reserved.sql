-- Placeholder, only on branch issue14-pinning: migration number 005 belongs to a branch merged before it (the
-- integrator's numbering), and migrations must be contiguous. Delete this file on merge; 006 follows it.
SELECT 1;
