import type { StoredVerdict, VerdictValue } from "../domain/verdicts.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { ActivityStore, StoredActivityEntry, VerdictQuery, VerdictStore } from "../store/types.ts";

export const PAGE_SIZE = 50;

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

/**
 * What a tenant (or an operator, `tenantId` undefined) reads of its history in the portal: verdicts and activity,
 * newest first, filtered and paged on the store's indexes.
 */
export class PortalHistory {
  constructor(private readonly store: VerdictStore & ActivityStore) {}

  async verdicts(tenantId: string | undefined, f: VerdictFilter, after?: string): Promise<{ items: StoredVerdict[]; next?: string }> {
    const before = decodeCursor(after, ["string", "string"]) as [string, string] | undefined;
    const q: VerdictQuery = { ...f, limit: PAGE_SIZE + 1, ...(tenantId !== undefined ? { tenantId } : {}) };
    if (before) q.before = { createdAt: before[0], objectId: before[1] };
    const rows = await this.store.listVerdicts(q);
    const items = rows.slice(0, PAGE_SIZE);
    const last = items[items.length - 1];
    return rows.length > PAGE_SIZE && last ? { items, next: encodeCursor([last.createdAt, last.objectId]) } : { items };
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
      ...(f.from ? { since: f.from } : {}),
      ...(f.to ? { until: f.to } : {}),
      ...(before ? { before: { time: before[0], seq: before[1] } } : {}),
      limit: PAGE_SIZE + 1,
    });
    const items = rows.slice(0, PAGE_SIZE);
    const last = items[items.length - 1];
    return rows.length > PAGE_SIZE && last ? { items, next: encodeCursor([last.time, last.seq]) } : { items };
  }
}
