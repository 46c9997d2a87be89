import type { ActivityKind } from "../domain/activity.ts";
import type { StoredVerdict, VerdictValue } from "../domain/verdicts.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog, entriesForCode } from "../errors/catalog.ts";
import { MAX_HISTORY_PAGE } from "../store/historyQueries.ts";
import type { ActivityStore, StoredActivityEntry, VerdictQuery, VerdictStore } from "../store/types.ts";
import { csvLine } from "./csv.ts";

export const PAGE_SIZE = 50;

/** The columns of the verdict export, in order: the record's fields people filter on, then the deciding rule. */
export const VERDICT_CSV_COLUMNS = ["createdAt", "objectId", "verdict", "status", "format", "chipId", "IMEI", "MAC", "tamperBit", "version", "measurements", "reason"] as const;

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)?(?:Z|[+-]\d{2}:\d{2})?$/;

/**
 * A time filter as the stores compare it (a full ISO 8601 UTC time): a date, or a date and time with or without a
 * zone; without one it is UTC, as the portal shows every time. The date and time may be apart by a space, as the
 * pages' tables write them (web/time.ts), so a time copied from a table is a filter as it is.
 */
export function isoTime(given: string, field = "time"): string {
  const s = /^\d{4}-\d{2}-\d{2} \d/.test(given) ? given.replace(" ", "T") : given;
  const zoned = /T.*(?:Z|[+-]\d{2}:\d{2})$/.test(s) || !s.includes("T") ? s : `${s}Z`;
  const ms = ISO_TIME.test(s) ? Date.parse(zoned) : NaN;
  if (Number.isNaN(ms)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `${field}: "${given}" is not a date or time; write YYYY-MM-DD or YYYY-MM-DD HH:MM[:SS] (UTC)`);
  return new Date(ms).toISOString();
}

export interface VerdictFilter {
  verdict?: VerdictValue;
  status?: string;
  format?: string;
  from?: string;
  to?: string;
  device?: string;
}

export interface ActivityView {
  errorId?: string;
  status?: number;
  code?: string;
  route?: string;
  /** the API key (Part A) or enrollment client (Part B) that made the request */
  key?: string;
  /** the APIs' requests (the default), the portal's own page views, or all */
  kind?: ActivityKind;
  from?: string;
  to?: string;
}

/** An activity entry as the portal shows it: the catalog's message and meaning beside the code. */
export type ActivityItem = StoredActivityEntry & { message: string | null; meaning: string | null };

/** Which way a page of a list goes from its cursor: `after` older entries, `before` newer ones. */
export interface PageCursor {
  after?: string | undefined;
  before?: string | undefined;
}

/** A page of verdicts: `next` the cursor of the older page, `prev` of the newer one, each when there is one. */
export interface VerdictPage {
  items: StoredVerdict[];
  next?: string;
  prev?: string;
}

export interface ActivityPage {
  items: ActivityItem[];
  /** the cursor of the page of older entries (`after`), when there are any */
  next?: string;
  /** the cursor of the page of newer entries (`before`), when there are any */
  prev?: string;
}

/** The catalog's message (and what it means) for a logged code; two entries sharing it are both named. */
function explained(e: StoredActivityEntry): ActivityItem {
  const entries = e.code ? entriesForCode(e.code, e.route) : [];
  const message = entries.length ? [...new Set(entries.map((x) => x.message))].join(" or ") : null;
  const meaning = entries.length ? [...new Set(entries.map((x) => x.meaning))].join("; or ") : null;
  return { ...e, message, meaning };
}

/** An opaque "after" cursor: the last row's sort key, base64url JSON, so a page link is bookmarkable. */
export function encodeCursor(key: unknown[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

export function decodeCursor(cursor: string | undefined, shape: ["string", "string"] | ["string", "number"]): unknown[] | undefined {
  if (cursor === undefined || cursor === "") return undefined;
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && v.length === shape.length && v.every((x, i) => typeof x === shape[i])) return v;
  } catch {
    // falls through to the refusal
  }
  throw new AppError(catalog.PORTAL_INVALID_REQUEST, "after / before: the page link is not one this service made; open the list again from its first page");
}

/** the store's query for a filter: times made exact ISO (isoTime), an empty filter left out */
function verdictQuery(tenantId: string | undefined, f: VerdictFilter): Omit<VerdictQuery, "limit"> {
  const q: Omit<VerdictQuery, "limit"> = { ...f, ...(tenantId !== undefined ? { tenantId } : {}) };
  if (f.from) q.from = isoTime(f.from, "from");
  if (f.to) q.to = isoTime(f.to, "to");
  return q;
}

/**
 * What a tenant (or an operator, `tenantId` undefined) reads of its history in the portal: verdicts and activity,
 * newest first, filtered and paged on the store's indexes.
 */
export class PortalHistory {
  constructor(private readonly store: VerdictStore & ActivityStore) {}

  /**
   * One page of the tenant's verdicts, newest first; paged both ways by key like the activity log: `after` (a
   * `next`) the page of older verdicts, `before` (a `prev`) the page of newer ones.
   */
  async verdicts(tenantId: string | undefined, f: VerdictFilter, cursor: PageCursor = {}): Promise<VerdictPage> {
    if (cursor.after && cursor.before) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a page goes one way: after (older) or before (newer), not both");
    const older = decodeCursor(cursor.after, ["string", "string"]) as [string, string] | undefined;
    const newer = decodeCursor(cursor.before, ["string", "string"]) as [string, string] | undefined;
    const q: VerdictQuery = { ...verdictQuery(tenantId, f), limit: PAGE_SIZE + 1 };
    if (older) q.before = { createdAt: older[0], objectId: older[1] };
    if (newer) q.after = { createdAt: newer[0], objectId: newer[1] };
    const rows = await this.store.listVerdicts(q);
    const more = rows.length > PAGE_SIZE;
    const items = newer ? rows.slice(0, PAGE_SIZE).reverse() : rows.slice(0, PAGE_SIZE);
    const first = items[0];
    const last = items[items.length - 1];
    const page: VerdictPage = { items };
    if (last && (newer || more)) page.next = encodeCursor([last.createdAt, last.objectId]);
    if (first && (older || (newer && more))) page.prev = encodeCursor([first.createdAt, first.objectId]);
    return page;
  }

  /**
   * Every verdict the filter selects, newest first, as CSV: a header line, then one line per verdict, read from the
   * store a page of MAX_HISTORY_PAGE at a time by key and yielded page by page, so memory stays bounded however
   * many there are (the caller streams it with back-pressure: the next page is read when the last one was taken).
   * Verdicts stored after the export began are newer than its first page and not included.
   */
  async *verdictsCsv(tenantId: string | undefined, f: VerdictFilter): AsyncGenerator<string> {
    const q: VerdictQuery = { ...verdictQuery(tenantId, f), limit: MAX_HISTORY_PAGE };
    yield csvLine(VERDICT_CSV_COLUMNS);
    for (;;) {
      const rows = await this.store.listVerdicts(q);
      if (rows.length === 0) return;
      yield rows
        .map((v) => csvLine([v.createdAt, v.objectId, v.record.verdict, v.record.status, v.format, v.record.chipId, v.record.IMEI, v.record.MAC, v.record.tamperBit, v.record.version, v.record.measurements, v.reason]))
        .join("");
      if (rows.length < MAX_HISTORY_PAGE) return;
      const last = rows[rows.length - 1]!;
      q.before = { createdAt: last.createdAt, objectId: last.objectId };
    }
  }

  /** One verdict of the tenant; another tenant's id is simply not found. */
  async verdict(tenantId: string | undefined, objectId: string): Promise<StoredVerdict | undefined> {
    const v = await this.store.getVerdict(objectId);
    return v && (tenantId === undefined || v.tenantId === tenantId) ? v : undefined;
  }

  /**
   * One page of the tenant's activity, newest first, the APIs' requests unless `f.kind` says otherwise. Keyset
   * paging both ways: `after` (a `next`) reads the page of older entries, `before` (a `prev`) the page of newer
   * ones, each one index range read, so the tenth page back costs what the first does.
   */
  async activity(tenantId: string | undefined, f: ActivityView, cursor: PageCursor = {}): Promise<ActivityPage> {
    if (cursor.after && cursor.before) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a page goes one way: after (older) or before (newer), not both");
    const older = decodeCursor(cursor.after, ["string", "number"]) as [string, number] | undefined;
    const newer = decodeCursor(cursor.before, ["string", "number"]) as [string, number] | undefined;
    const kind = f.kind ?? "api";
    const rows = await this.store.queryActivity({
      ...(tenantId !== undefined ? { tenantId } : {}),
      ...(f.errorId ? { errorId: f.errorId } : {}),
      ...(f.status !== undefined ? { status: f.status } : {}),
      ...(f.code ? { code: f.code } : {}),
      ...(f.route ? { route: f.route } : {}),
      ...(f.key ? { clientId: f.key } : {}),
      // an exact errorId is found whatever its kind: support pastes it without knowing where it came from
      ...(kind !== "all" && !f.errorId ? { kind } : {}),
      ...(f.from ? { since: isoTime(f.from, "from") } : {}),
      ...(f.to ? { until: isoTime(f.to, "to") } : {}),
      ...(older ? { before: { time: older[0], seq: older[1] } } : {}),
      ...(newer ? { after: { time: newer[0], seq: newer[1] } } : {}),
      limit: PAGE_SIZE + 1,
    });
    const more = rows.length > PAGE_SIZE;
    // a newer page comes oldest first from the store: the PAGE_SIZE nearest the cursor, shown newest first
    const items = (newer ? rows.slice(0, PAGE_SIZE).reverse() : rows.slice(0, PAGE_SIZE)).map(explained);
    const first = items[0];
    const last = items[items.length - 1];
    const page: ActivityPage = { items };
    // older: past a newer page there is at least the cursor's own entry; else only when the store had more
    if (last && (newer || more)) page.next = encodeCursor([last.time, last.seq]);
    if (first && (older || (newer && more))) page.prev = encodeCursor([first.time, first.seq]);
    return page;
  }

}
