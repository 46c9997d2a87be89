import type { StoredVerdict, VerdictValue } from "../domain/verdicts.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { MAX_HISTORY_PAGE } from "../store/historyQueries.ts";
import type { ActivityStore, StoredActivityEntry, VerdictQuery, VerdictStore } from "../store/types.ts";
import { csvLine } from "./csv.ts";

export const PAGE_SIZE = 50;

/** The columns of the verdict export, in order: the record's fields people filter on, then the deciding rule. */
export const VERDICT_CSV_COLUMNS = ["createdAt", "objectId", "verdict", "status", "format", "chipId", "IMEI", "MAC", "tamperBit", "version", "measurements", "reason"] as const;

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)?(?:Z|[+-]\d{2}:\d{2})?$/;

/**
 * A time filter as the stores compare it (a full ISO 8601 UTC time): a date, or a date and time with or without a
 * zone; without one it is UTC, as the portal shows every time (a browser's datetime-local field sends none).
 */
export function isoTime(s: string): string {
  const zoned = /T.*(?:Z|[+-]\d{2}:\d{2})$/.test(s) || !s.includes("T") ? s : `${s}Z`;
  const ms = ISO_TIME.test(s) ? Date.parse(zoned) : NaN;
  if (Number.isNaN(ms)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `"${s}" is not a date or an ISO 8601 time`);
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
  from?: string;
  to?: string;
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
  throw new AppError(catalog.PORTAL_INVALID_REQUEST, "the page cursor is not one this service made");
}

/** the store's query for a filter: times made exact ISO (isoTime), an empty filter left out */
function verdictQuery(tenantId: string | undefined, f: VerdictFilter): Omit<VerdictQuery, "limit"> {
  const q: Omit<VerdictQuery, "limit"> = { ...f, ...(tenantId !== undefined ? { tenantId } : {}) };
  if (f.from) q.from = isoTime(f.from);
  if (f.to) q.to = isoTime(f.to);
  return q;
}

/**
 * What a tenant (or an operator, `tenantId` undefined) reads of its history in the portal: verdicts and activity,
 * newest first, filtered and paged on the store's indexes.
 */
export class PortalHistory {
  constructor(private readonly store: VerdictStore & ActivityStore) {}

  async verdicts(tenantId: string | undefined, f: VerdictFilter, after?: string): Promise<{ items: StoredVerdict[]; next?: string }> {
    const before = decodeCursor(after, ["string", "string"]) as [string, string] | undefined;
    const q: VerdictQuery = { ...verdictQuery(tenantId, f), limit: PAGE_SIZE + 1 };
    if (before) q.before = { createdAt: before[0], objectId: before[1] };
    const rows = await this.store.listVerdicts(q);
    const items = rows.slice(0, PAGE_SIZE);
    const last = items[items.length - 1];
    return rows.length > PAGE_SIZE && last ? { items, next: encodeCursor([last.createdAt, last.objectId]) } : { items };
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

  async activity(tenantId: string | undefined, f: ActivityView, after?: string): Promise<{ items: StoredActivityEntry[]; next?: string }> {
    const before = decodeCursor(after, ["string", "number"]) as [string, number] | undefined;
    const rows = await this.store.queryActivity({
      ...(tenantId !== undefined ? { tenantId } : {}),
      ...(f.errorId ? { errorId: f.errorId } : {}),
      ...(f.status !== undefined ? { status: f.status } : {}),
      ...(f.code ? { code: f.code } : {}),
      ...(f.route ? { route: f.route } : {}),
      ...(f.from ? { since: isoTime(f.from) } : {}),
      ...(f.to ? { until: isoTime(f.to) } : {}),
      ...(before ? { before: { time: before[0], seq: before[1] } } : {}),
      limit: PAGE_SIZE + 1,
    });
    const items = rows.slice(0, PAGE_SIZE);
    const last = items[items.length - 1];
    return rows.length > PAGE_SIZE && last ? { items, next: encodeCursor([last.time, last.seq]) } : { items };
  }
}
