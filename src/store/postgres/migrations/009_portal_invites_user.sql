-- A user has one live sign-in link at most (docs/portal.md): a new link, a password set or a disable voids every
-- other unused link of the user, found through this index rather than a scan of every link ever issued.
-- Mirrors sqlite/migrations/009_portal_invites_user.sql.
CREATE INDEX portal_invites_user ON portal_invites (user_id) WHERE used_at_ms IS NULL;
