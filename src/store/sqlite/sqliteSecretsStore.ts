import type { DatabaseSync } from "node:sqlite";
import { SEALED_COLUMNS } from "../sealedColumns.ts";
import type { SealAllOutcome, SealAllRequest, SecretsStore } from "../types.ts";
import { SqliteConnectionStore } from "./connectionStore.ts";
import { pluck, transaction } from "./database.ts";

/** SecretsStore on the SQLite file (see types.ts). */
export class SqliteSecretsStore extends SqliteConnectionStore implements SecretsStore {
  /**
   * Values were resealed but the VACUUM that scrubs their old bytes has not completed. A VACUUM that meets another
   * process's lock fails SQLITE_BUSY after the reseal committed; the lock wait (connectionStore.ts) then calls
   * sealAll again, which finds nothing left to reseal, so without this the scrub would be skipped in silence.
   */
  private scrubPending = 0;

  constructor(db: DatabaseSync) {
    super(db);
  }

  async sealingKeyId(): Promise<string | undefined> {
    return this.recorded();
  }

  private recorded(): string | undefined {
    return pluck(this.db.prepare("SELECT key_id FROM sealing_key WHERE singleton = 1")).get() as string | undefined;
  }

  async sealAll(r: SealAllRequest): Promise<SealAllOutcome> {
    const out = transaction(this.db, "immediate", (): SealAllOutcome => {
      const recorded = this.recorded();
      if (recorded !== undefined && recorded !== r.keyId && !r.accepts(recorded)) return { outcome: "conflict", recordedKeyId: recorded };
      let resealed = 0;
      for (const c of SEALED_COLUMNS) {
        const stale = this.db
          .prepare(`SELECT ${c.idColumn} AS id, ${c.column} AS value FROM ${c.table} WHERE substr(${c.column}, 1, ?) <> ?`)
          .all(r.sealedPrefix.length, r.sealedPrefix) as { id: string; value: string }[];
        const update = this.db.prepare(`UPDATE ${c.table} SET ${c.column} = ? WHERE ${c.idColumn} = ?`);
        for (const row of stale) update.run(r.reseal(row.value, c.purpose, row.id), row.id);
        resealed += stale.length;
      }
      if (recorded !== r.keyId) {
        this.db
          .prepare("INSERT INTO sealing_key (singleton, key_id, sealed_at) VALUES (1, ?, ?) ON CONFLICT (singleton) DO UPDATE SET key_id = excluded.key_id, sealed_at = excluded.sealed_at")
          .run(r.keyId, new Date().toISOString());
      }
      return { outcome: "sealed", resealed };
    });
    if (out.outcome !== "sealed") return out;
    this.scrubPending += out.resealed;
    if (this.scrubPending > 0) {
      // An UPDATE leaves the old bytes in the unused parts of the pages it rearranges (even with secure_delete, a
      // rebalanced page keeps its old content in the gap), and the WAL holds earlier frames. VACUUM writes every page
      // anew; the TRUNCATE checkpoint copies them over the main file and empties the WAL. Once per key change, so
      // its cost (proportional to the file) is paid on the first start after an upgrade or a rotation only.
      this.db.exec("VACUUM");
      this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      // what this call reports includes what an earlier call resealed before its scrub met a lock
      const resealed = this.scrubPending;
      this.scrubPending = 0;
      return { outcome: "sealed", resealed };
    }
    return out;
  }
}
