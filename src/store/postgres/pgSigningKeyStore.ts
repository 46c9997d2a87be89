import type pg from "pg";
import type { SigningKeyRecord } from "../../domain/signingKeys.ts";
import { pgRows } from "../rows.ts";
import type { SigningKeyStore } from "../types.ts";
import { query, transaction } from "./pgQuery.ts";

const COLS = "kid, alg, public_jwk, private_key, created_at, retires_at";

/** pg_advisory_xact_lock key serialising rotations across instances and CLI runs ("earkey" in ASCII). */
const ROTATION_LOCK_KEY = "111533059810681";

/**
 * Result signing keys in PostgreSQL (migration 005), shared by every instance. The first key: one INSERT against
 * the one-current-key index (concurrent first starts queue on the index entry; all but one do nothing). A rotation:
 * one transaction under an advisory lock, so two operators rotating at once each retire the key before theirs.
 */
export class PgSigningKeyStore implements SigningKeyStore {
  constructor(private readonly pool: pg.Pool) {}

  async listSigningKeys(nowIso: string): Promise<SigningKeyRecord[]> {
    const r = await query(
      this.pool,
      "publishedSigningKeys",
      `SELECT ${COLS} FROM ear_signing_keys WHERE retires_at IS NULL OR retires_at > $1 ORDER BY created_at DESC, kid`,
      [nowIso],
    );
    return r.rows.map(pgRows.signingKey);
  }

  async putFirstSigningKey(k: SigningKeyRecord): Promise<SigningKeyRecord> {
    await query(
      this.pool,
      "insertFirstSigningKey",
      `INSERT INTO ear_signing_keys (${COLS}) VALUES ($1, $2, $3, $4, $5, NULL) ON CONFLICT DO NOTHING`,
      [k.kid, k.alg, k.publicJwk, k.privateKey, k.createdAt],
    );
    const r = await query(this.pool, "currentSigningKey", `SELECT ${COLS} FROM ear_signing_keys WHERE retires_at IS NULL`);
    return pgRows.signingKey(r.rows[0]!);
  }

  async rotateSigningKey(k: SigningKeyRecord, retiresAt: string): Promise<{ retired: string | null }> {
    return transaction(this.pool, async (c) => {
      await query(c, undefined, "SELECT pg_advisory_xact_lock($1::bigint)", [ROTATION_LOCK_KEY]);
      const previous = await query(c, undefined, "UPDATE ear_signing_keys SET retires_at = $1 WHERE retires_at IS NULL RETURNING kid", [
        retiresAt,
      ]);
      await query(c, undefined, `INSERT INTO ear_signing_keys (${COLS}) VALUES ($1, $2, $3, $4, $5, NULL)`, [
        k.kid,
        k.alg,
        k.publicJwk,
        k.privateKey,
        k.createdAt,
      ]);
      return { retired: (previous.rows[0]?.kid as string | undefined) ?? null };
    });
  }
}
