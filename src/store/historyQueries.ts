import type { ActivityFilter, VerdictQuery } from "./types.ts";

/**
 * The verdict-history and activity-log queries, written once for both SQL backends (`?` for SQLite, `$n` for
 * PostgreSQL). Each filter is an equality or range on an indexed column, and paging is by key — rows strictly
 * after the cursor in newest-first order — never by OFFSET, so page 1 and page 10,000 cost the same index range
 * read (migration 003's indexes; src/store/README.md).
 */
export type Placeholder = (index: number) => string;

export const sqlitePlaceholder: Placeholder = () => "?";
export const pgPlaceholder: Placeholder = (i) => `$${i}`;

export const MAX_HISTORY_PAGE = 500;

/** WHERE clauses and their arguments, numbered as the backend's placeholders want. */
export function builder(ph: Placeholder) {
  const where: string[] = [];
  const args: unknown[] = [];
  const arg = (v: unknown) => {
    args.push(v);
    return ph(args.length);
  };
  return { where, args, arg };
}

export function verdictHistorySql(q: VerdictQuery, ph: Placeholder, columns: string): { sql: string; args: unknown[] } {
  const { where, args, arg } = builder(ph);
  if (q.tenantId !== undefined) where.push(`tenant_id = ${arg(q.tenantId)}`);
  if (q.verdict !== undefined) where.push(`verdict = ${arg(q.verdict)}`);
  if (q.status !== undefined) where.push(`status = ${arg(q.status)}`);
  if (q.format !== undefined) where.push(`format = ${arg(q.format)}`);
  if (q.from !== undefined) where.push(`created_at >= ${arg(q.from)}`);
  if (q.to !== undefined) where.push(`created_at < ${arg(q.to)}`);
  if (q.device !== undefined && q.device !== "") {
    const d = arg(q.device);
    where.push(`(chip_id = ${d} OR imei = ${ph === sqlitePlaceholder ? arg(q.device) : d})`);
  }
  if (q.before) where.push(`(created_at, object_id) < (${arg(q.before.createdAt)}, ${arg(q.before.objectId)})`);
  const limit = arg(Math.min(Math.max(Math.trunc(q.limit), 1), MAX_HISTORY_PAGE));
  return {
    sql: `SELECT ${columns} FROM verdicts ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY created_at DESC, object_id DESC LIMIT ${limit}`,
    args,
  };
}

export function activitySql(f: ActivityFilter, ph: Placeholder): { sql: string; args: unknown[] } {
  const { where, args, arg } = builder(ph);
  if (f.tenantId !== undefined) where.push(`tenant_id = ${arg(f.tenantId)}`);
  if (f.errorId !== undefined) where.push(`error_id = ${arg(f.errorId)}`);
  if (f.since !== undefined) where.push(`time >= ${arg(f.since)}`);
  if (f.until !== undefined) where.push(`time < ${arg(f.until)}`);
  if (f.status !== undefined) where.push(`status = ${arg(f.status)}`);
  if (f.code !== undefined) where.push(`code = ${arg(f.code)}`);
  if (f.route !== undefined) where.push(`route = ${arg(f.route)}`);
  if (f.before) where.push(`(time, id) < (${arg(f.before.time)}, ${arg(f.before.seq)})`);
  const limit = arg(Math.min(Math.max(f.limit ?? 1000, 1), 100_000));
  return {
    sql: `SELECT * FROM activity ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY time DESC, id DESC LIMIT ${limit}`,
    args,
  };
}
