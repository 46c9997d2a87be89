import type { ActivityFilter, StatsWindow, TopOf, VerdictQuery } from "./types.ts";

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

/** A value bound to a placeholder: what both drivers take as it is (node:sqlite refuses anything else). */
export type SqlArg = string | number | null;

/** WHERE clauses and their arguments, numbered as the backend's placeholders want. */
export function builder(ph: Placeholder) {
  const where: string[] = [];
  const args: SqlArg[] = [];
  const arg = (v: SqlArg) => {
    args.push(v);
    return ph(args.length);
  };
  return { where, args, arg };
}

export function verdictHistorySql(q: VerdictQuery, ph: Placeholder, columns: string): { sql: string; args: SqlArg[] } {
  const { args, arg } = builder(ph);
  // `after` reads the other way (oldest first from the cursor), so a page of newer verdicts is one range read too
  const order = q.after ? "ORDER BY created_at ASC, object_id ASC" : "ORDER BY created_at DESC, object_id DESC";
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
    if (q.after) w.push(`(created_at, object_id) > (${arg(q.after.createdAt)}, ${arg(q.after.objectId)})`);
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

/**
 * isPortalPageRoute (src/domain/activity.ts) in SQL. A filter on the rows the indexes read, not an index of its
 * own: the portal's page views are a small share of a tenant's requests, so a page of API requests reads about a
 * page of rows. test/store/activityKinds.test.ts holds the two to the same answers.
 */
export const PORTAL_PAGE_ROUTE_SQL = "route = '/' OR route = '/portal' OR (route LIKE '/portal/%' AND route NOT LIKE '/portal/api/%')";

export function activitySql(f: ActivityFilter, ph: Placeholder): { sql: string; args: SqlArg[] } {
  const { where, args, arg } = builder(ph);
  if (f.tenantId !== undefined) where.push(`tenant_id = ${arg(f.tenantId)}`);
  if (f.errorId !== undefined) where.push(`error_id = ${arg(f.errorId)}`);
  if (f.since !== undefined) where.push(`time >= ${arg(f.since)}`);
  if (f.until !== undefined) where.push(`time < ${arg(f.until)}`);
  if (f.status !== undefined) where.push(`status = ${arg(f.status)}`);
  if (f.code !== undefined) where.push(`code = ${arg(f.code)}`);
  if (f.route !== undefined) where.push(`route = ${arg(f.route)}`);
  if (f.clientId !== undefined) where.push(`client_id = ${arg(f.clientId)}`);
  if (f.kind !== undefined) where.push(`${f.kind === "api" ? "NOT " : ""}(${PORTAL_PAGE_ROUTE_SQL})`);
  if (f.before) where.push(`(time, id) < (${arg(f.before.time)}, ${arg(f.before.seq)})`);
  if (f.after) where.push(`(time, id) > (${arg(f.after.time)}, ${arg(f.after.seq)})`);
  const limit = arg(Math.min(Math.max(f.limit ?? 1000, 1), 100_000));
  const order = f.after ? "ORDER BY time ASC, id ASC" : "ORDER BY time DESC, id DESC";
  return {
    sql: `SELECT * FROM activity ${where.length ? "WHERE " + where.join(" AND ") : ""} ${order} LIMIT ${limit}`,
    args,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The overview's counts (migration 004_portal_stats): written with each verdict and activity batch, read here.

/** how much of a failed verdict's deciding rule its counter row keeps (SQL substr: characters) */
export const STATS_REASON_CHARS = 200;
/** PostgreSQL's counter rows per (tenant, hour, verdict, status, reason); see the migration */
export const VERDICT_STATS_SLOTS = 8;
export const MAX_TOP = 100;

/** The UTC hour of an ISO time, as the counters key it: "2026-11-22T10". */
export const hourOf = (iso: string): string => iso.slice(0, 13);

/** Which of the counter rows a verdict adds to: its objectId is random, so its first character spreads them. */
export const statsSlot = (objectId: string): number => objectId.charCodeAt(0) % VERDICT_STATS_SLOTS;

/**
 * A verdict's counter key: why a Yes passed is not listed, so its reason is "" and all Yes of an hour share a row.
 * A record without a verdict or status (none is made so; a test's stub may be) counts under "".
 */
export function verdictStatsKey(v: { tenantId: string; createdAt: string; record: { verdict?: string; status?: string }; reason: string }) {
  const verdict = v.record.verdict ?? "";
  return { tenantId: v.tenantId, hour: hourOf(v.createdAt), verdict, status: v.record.status ?? "", reason: verdict === "Yes" ? "" : v.reason };
}

function windowWhere(q: StatsWindow, arg: (v: SqlArg) => string, where: string[]): void {
  if (q.tenantId !== undefined) where.push(`tenant_id = ${arg(q.tenantId)}`);
  where.push(`hour >= ${arg(q.fromHour)}`);
}

const topLimit = (n: number) => Math.min(Math.max(Math.trunc(n), 1), MAX_TOP);

export function verdictCountsSql(q: StatsWindow & { bucket: "hour" | "day" }, ph: Placeholder): { sql: string; args: SqlArg[] } {
  const { where, args, arg } = builder(ph);
  windowWhere(q, arg, where);
  const len = q.bucket === "hour" ? 13 : 10;
  return {
    sql: `SELECT substr(hour, 1, ${len}) AS bucket, verdict, SUM(n) AS n FROM verdict_stats WHERE ${where.join(" AND ")} GROUP BY 1, 2 ORDER BY 1, 2`,
    args,
  };
}

export function topFailuresSql(q: StatsWindow & TopOf, ph: Placeholder): { sql: string; args: SqlArg[] } {
  const { where, args, arg } = builder(ph);
  // placeholders are numbered in the order they are written, so the SELECT's comes first
  const recent = arg(q.recentFromHour);
  windowWhere(q, arg, where);
  where.push("verdict <> 'Yes'");
  return {
    sql: `SELECT verdict, status, reason, SUM(n) AS total, SUM(CASE WHEN hour >= ${recent} THEN n ELSE 0 END) AS recent
          FROM verdict_stats WHERE ${where.join(" AND ")} GROUP BY verdict, status, reason
          ORDER BY total DESC, recent DESC, verdict, status, reason LIMIT ${arg(topLimit(q.limit))}`,
    args,
  };
}

export function requestCountsSql(q: StatsWindow & { recentFromHour: string }, ph: Placeholder): { sql: string; args: SqlArg[] } {
  const { where, args, arg } = builder(ph);
  const recent = arg(q.recentFromHour);
  windowWhere(q, arg, where);
  return {
    sql: `SELECT status, SUM(n) AS total, SUM(CASE WHEN hour >= ${recent} THEN n ELSE 0 END) AS recent
          FROM activity_stats WHERE ${where.join(" AND ")} GROUP BY status ORDER BY status`,
    args,
  };
}

export function topRequestErrorsSql(q: StatsWindow & TopOf, ph: Placeholder): { sql: string; args: SqlArg[] } {
  const { where, args, arg } = builder(ph);
  const recent = arg(q.recentFromHour);
  windowWhere(q, arg, where);
  where.push("status >= 400");
  return {
    sql: `SELECT status, code, method, route, SUM(n) AS total, SUM(CASE WHEN hour >= ${recent} THEN n ELSE 0 END) AS recent
          FROM activity_stats WHERE ${where.join(" AND ")} GROUP BY status, code, method, route
          ORDER BY total DESC, recent DESC, status, code, method, route LIMIT ${arg(topLimit(q.limit))}`,
    args,
  };
}
