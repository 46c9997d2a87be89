import type Database from "better-sqlite3";
import type { SigningKeyRecord } from "../../domain/signingKeys.ts";
import { sqliteRows, type Row } from "../rows.ts";
import type { SigningKeyStore } from "../types.ts";
import { SqliteConnectionStore } from "./connectionStore.ts";

const COLS = "kid, alg, public_jwk, private_key, created_at, retires_at";

/**
 * Result signing keys in the SQLite file (migration 005). Rare writes (a first start, an operator's rotation), so
 * they run outside the group-commit writer: the first key in one statement against the one-current-key index,
 * a rotation in its own IMMEDIATE transaction, which also serialises `attestd keys rotate` with a running server.
 */
export class SqliteSigningKeyStore extends SqliteConnectionStore implements SigningKeyStore {
  private readonly s;

  constructor(db: Database.Database) {
    super(db);
    this.s = {
      published: db.prepare(`SELECT ${COLS} FROM ear_signing_keys WHERE retires_at IS NULL OR retires_at > ? ORDER BY created_at DESC, kid`),
      current: db.prepare(`SELECT ${COLS} FROM ear_signing_keys WHERE retires_at IS NULL`),
      // any uniqueness conflict (a current key exists, or this very key) leaves the table as it was
      insertIfNoCurrent: db.prepare(
        `INSERT OR IGNORE INTO ear_signing_keys (${COLS}) VALUES (@kid, @alg, @publicJwk, @privateKey, @createdAt, NULL)`,
      ),
      insert: db.prepare(`INSERT INTO ear_signing_keys (${COLS}) VALUES (@kid, @alg, @publicJwk, @privateKey, @createdAt, NULL)`),
      retireCurrent: db.prepare("UPDATE ear_signing_keys SET retires_at = ? WHERE retires_at IS NULL"),
    };
  }

  async listSigningKeys(nowIso: string): Promise<SigningKeyRecord[]> {
    return (this.s.published.all(nowIso) as Row[]).map(sqliteRows.signingKey);
  }

  async putFirstSigningKey(k: SigningKeyRecord): Promise<SigningKeyRecord> {
    return this.db
      .transaction(() => {
        this.s.insertIfNoCurrent.run(k);
        return sqliteRows.signingKey(this.s.current.get() as Row);
      })
      .immediate();
  }

  async rotateSigningKey(k: SigningKeyRecord, retiresAt: string): Promise<{ retired: string | null }> {
    return this.db
      .transaction(() => {
        const previous = this.s.current.get() as Row | undefined;
        this.s.retireCurrent.run(retiresAt);
        this.s.insert.run(k);
        return { retired: (previous?.kid as string | undefined) ?? null };
      })
      .immediate();
  }
}
