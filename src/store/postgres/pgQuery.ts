import type pg from "pg";
import { fromPgError } from "../errors.ts";
import type { Row } from "../rows.ts";

/** Anything that runs a query: the pool (one statement, autocommit) or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query"> | pg.PoolClient;

/**
 * One statement. `name` makes it a prepared statement, parsed once per connection; dynamic SQL passes undefined.
 * Driver errors leave through fromPgError, so an unreachable database is a StoreUnavailableError (→ 503).
 */
export async function query(db: Queryable, name: string | undefined, text: string, values: unknown[] = []): Promise<pg.QueryResult<Row>> {
  try {
    return await db.query<Row>(name ? { name, text, values } : { text, values });
  } catch (err) {
    throw fromPgError(err);
  }
}

export interface TxOptions {
  /** READ COMMITTED (default) for writes that lock what they touch; REPEATABLE READ for a consistent multi-read */
  isolation?: "READ COMMITTED" | "REPEATABLE READ";
  readOnly?: boolean;
}

/**
 * Runs `fn` in one transaction on one pooled connection: COMMIT when it returns, ROLLBACK when it throws. A
 * connection whose rollback failed is destroyed rather than returned to the pool in an unknown state.
 */
export async function transaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>, opts: TxOptions = {}): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw fromPgError(err);
  }
  let broken: Error | undefined;
  try {
    await query(client, undefined, `BEGIN ISOLATION LEVEL ${opts.isolation ?? "READ COMMITTED"}${opts.readOnly ? " READ ONLY" : ""}`);
    const out = await fn(client);
    await query(client, undefined, "COMMIT");
    return out;
  } catch (err) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackErr) {
      broken = rollbackErr as Error;
    }
    throw err;
  } finally {
    client.release(broken);
  }
}

/** The SQLSTATE of a unique violation, with the constraint it broke (PostgreSQL names it). */
export function uniqueViolation(err: unknown): string | undefined {
  const e = err as { code?: unknown; constraint?: unknown };
  return e.code === "23505" ? String(e.constraint ?? "") : undefined;
}
