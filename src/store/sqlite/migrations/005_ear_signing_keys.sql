-- The keys attestd signs its results (EARs) with (src/results/README.md). One current key (retires_at NULL), and
-- previous keys kept published until retires_at. The private key is PKCS#8 PEM text, written and read through the
-- SigningKeyStore interface only.
CREATE TABLE ear_signing_keys (
  kid          TEXT PRIMARY KEY,
  alg          TEXT NOT NULL,
  public_jwk   TEXT NOT NULL,
  private_key  TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  retires_at   TEXT
) WITHOUT ROWID;
-- At most one current key: instances starting together for the first time each insert theirs unless one is
-- there, and this index lets exactly one insert succeed.
CREATE UNIQUE INDEX ear_signing_keys_one_current ON ear_signing_keys ((retires_at IS NULL)) WHERE retires_at IS NULL;
