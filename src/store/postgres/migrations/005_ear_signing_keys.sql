-- The keys attestd signs its results (EARs) with (src/results/README.md). Mirrors
-- sqlite/migrations/005_ear_signing_keys.sql.
CREATE TABLE ear_signing_keys (
  kid          TEXT COLLATE "C" PRIMARY KEY,
  alg          TEXT NOT NULL,
  public_jwk   TEXT NOT NULL,
  private_key  TEXT NOT NULL,
  created_at   TEXT COLLATE "C" NOT NULL,
  retires_at   TEXT COLLATE "C"
);
-- At most one current key: of instances starting together for the first time, exactly one insert succeeds.
CREATE UNIQUE INDEX ear_signing_keys_one_current ON ear_signing_keys ((retires_at IS NULL)) WHERE retires_at IS NULL;
