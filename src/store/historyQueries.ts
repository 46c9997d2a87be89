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
  const { args, arg } = builder(ph);
  const order = "ORDER BY created_at DESC, object_id DESC";
  const limit = Math.min(Math.max(Math.trunc(q.limit), 1), MAX_HISTORY_PAGE);
  const filters = (extra: string[]) => {
    const w = [...extra];
    if (q.tenantId !== undefined) w.push(`tenant_id = ${arg(q.tenantId)}`);
    if (q.verdict !== undefined) w.push(`verdict = ${arg(q.verdict)}`);
    if (q.status !== undefined) w.push(`status = ${arg(q.status)}`);
    if (q.format !== undefined) w.push(`format = ${arg(q.format)}`);
    if (q.from !== undefined) w.push(`created_at >= ${arg(q.from)}`);
    if (q.to !== undefined) w.push(`created_at < ${arg(q.to)}`);
    if (q.before) w.push(`(created_at, object_id) < (${arg(q.before.createdAt)}, ${arg(q.before.objectId)})`);
    return w.length ? `WHERE ${w.join(" AND ")}` : "";
  };
  if (q.device === undefined || q.device === "") {
    const where = filters([]);
    return { sql: `SELECT ${columns} FROM verdicts ${where} ${order} LIMIT ${arg(limit)}`, args };
  }
  // A device is named by its chipId or its IMEI. One OR over both columns defeats the ordered index reads (a
  // device's every verdict is read and sorted); two ordered, limited reads of the (tenant, chip_id) and (tenant,
  // imei) indexes read at most two pages, however many verdicts the device has. The `<> ''` terms let SQLite use
  // those partial indexes (a bound parameter alone does not prove the value non-empty). A row matching both is
  // left to the chip arm (UNION cannot deduplicate PostgreSQL's json columns): if that arm's page stops before it,
  // it is older than a full page and cannot be on this one either.
  const device = q.device;
  const arm = (column: "chip_id" | "imei", extra: string[]) =>
    `SELECT * FROM (SELECT ${columns} FROM verdicts ${filters([`${column} = ${arg(device)}`, `${column} <> ''`, ...extra])} ${order} LIMIT ${arg(limit)}) AS ${column}_arm`;
  const union = `${arm("chip_id", [])} UNION ALL ${arm("imei", [`COALESCE(chip_id, '') <> ${arg(device)}`])}`;
  return { sql: `SELECT * FROM (${union}) AS by_device ${order} LIMIT ${arg(limit)}`, args };
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
