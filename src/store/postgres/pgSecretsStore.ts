import type pg from "pg";
import { SEALED_COLUMNS } from "../sealedColumns.ts";
import type { SealAllOutcome, SealAllRequest, SecretsStore } from "../types.ts";
import { query, transaction } from "./pgQuery.ts";

/** pg_advisory_xact_lock key serialising sealAll across instances: "sealed" in ASCII. */
const SEALING_LOCK_KEY = "126879263384932";

/** SecretsStore on PostgreSQL (see types.ts). */
export class PgSecretsStore implements SecretsStore {
  constructor(private readonly pool: pg.Pool) {}

  async sealingKeyId(): Promise<string | undefined> {
    const r = await query(this.pool, undefined, "SELECT key_id FROM sealing_key WHERE singleton = 1");
    return r.rows[0]?.key_id as string | undefined;
  }

  async sealAll(r: SealAllRequest): Promise<SealAllOutcome> {
    const out = await transaction(this.pool, async (c): Promise<SealAllOutcome> => {
      await query(c, undefined, "SELECT pg_advisory_xact_lock($1::bigint)", [SEALING_LOCK_KEY]);
      const recorded = (await query(c, undefined, "SELECT key_id FROM sealing_key WHERE singleton = 1")).rows[0]?.key_id as string | undefined;
      if (recorded !== undefined && recorded !== r.keyId && !r.accepts(recorded)) return { outcome: "conflict", recordedKeyId: recorded };
      let resealed = 0;
      for (const col of SEALED_COLUMNS) {
        const stale = (
          await query(c, undefined, `SELECT ${col.idColumn} AS id, ${col.column} AS value FROM ${col.table} WHERE substr(${col.column}, 1, $1) <> $2`, [
            r.sealedPrefix.length,
            r.sealedPrefix,
          ])
        ).rows as { id: string; value: string }[];
        for (const row of stale) {
          await query(c, undefined, `UPDATE ${col.table} SET ${col.column} = $1 WHERE ${col.idColumn} = $2`, [r.reseal(row.value, col.purpose, row.id), row.id]);
        }
        resealed += stale.length;
      }
      if (recorded !== r.keyId) {
        await query(
          c,
          undefined,
          "INSERT INTO sealing_key (singleton, key_id, sealed_at) VALUES (1, $1, $2) ON CONFLICT (singleton) DO UPDATE SET key_id = excluded.key_id, sealed_at = excluded.sealed_at",
          [r.keyId, new Date().toISOString()],
        );
      }
      return { outcome: "sealed", resealed };
    });
    if (out.outcome === "sealed" && out.resealed > 0) {
      // An UPDATE leaves the old row version (and its TOASTed value) in the table's files until vacuumed; VACUUM FULL
      // writes the table anew and drops the old files. PostgreSQL's WAL and any backup taken before still hold the
      // old values until they are recycled: docs/deployment.md says so.
      for (const table of new Set(SEALED_COLUMNS.map((col) => col.table))) await query(this.pool, undefined, `VACUUM FULL ${table}`);
    }
    return out;
  }
}
