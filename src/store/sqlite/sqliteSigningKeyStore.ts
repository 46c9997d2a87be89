import type { DatabaseSync } from "node:sqlite";
import type { SigningKeyRecord } from "../../domain/signingKeys.ts";
import { sqliteRows, type Row } from "../rows.ts";
import type { SigningKeyStore } from "../types.ts";
import { SqliteConnectionStore } from "./connectionStore.ts";
import { transaction } from "./database.ts";

const COLS = "kid, alg, public_jwk, private_key, created_at, retires_at";

/** The record's values for the inserts' named parameters (node:sqlite refuses a key the statement does not name). */
const insertParams = (k: SigningKeyRecord) => ({ kid: k.kid, alg: k.alg, publicJwk: k.publicJwk, privateKey: k.privateKey, createdAt: k.createdAt });

/**
 * Result signing keys in the SQLite file (migration 005). Rare writes (a first start, an operator's rotation), so
 * they run outside the group-commit writer: the first key in one statement against the one-current-key index,
 * a rotation in its own IMMEDIATE transaction, which also serialises `attestd keys rotate` with a running server.
 */
export class SqliteSigningKeyStore extends SqliteConnectionStore implements SigningKeyStore {
  private readonly s;

  constructor(db: DatabaseSync) {
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
    return transaction(this.db, "immediate", () => {
      this.s.insertIfNoCurrent.run(insertParams(k));
      return sqliteRows.signingKey(this.s.current.get() as Row);
    });
  }

  async rotateSigningKey(k: SigningKeyRecord, retiresAt: string): Promise<{ retired: string | null }> {
    return transaction(this.db, "immediate", () => {
      const previous = this.s.current.get() as Row | undefined;
      this.s.retireCurrent.run(retiresAt);
      this.s.insert.run(insertParams(k));
      return { retired: (previous?.kid as string | undefined) ?? null };
    });
  }
}
