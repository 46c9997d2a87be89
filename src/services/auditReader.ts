import type { AuditRecord } from "../domain/audit.ts";
import type { AuditFilter, AuditStore } from "../store/types.ts";
import { AUDIT_ACTOR_KINDS } from "../domain/audit.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { decodeCursor, encodeCursor, isoTime } from "../portal/history.ts";

/** What a reader of the trail filters on (the admin API's and the CLI's words); every field optional. */
export interface AuditView {
  /** ISO 8601 (or a date): records at or after */
  from?: string;
  /** records before */
  to?: string;
  /** an actor kind (`user`, `api-client`, `operator`, `system`) or an actor's id (a user id, a client id, an OS user) */
  actor?: string;
  /** an action, or a family: `key.*` */
  action?: string;
  /** `KIND` or `KIND:ID` (`api-key:abc`, `tenant:t_x`) */
  target?: string;
}

/** records on one page of the admin API, and the most one export writes */
export const AUDIT_PAGE_SIZE = 100;
export const MAX_AUDIT_EXPORT = 100_000;

/**
 * Reading the audit trail (docs/audit.md): a page for the admin API and the portal, JSON lines for the exports. Apart
 * from AuditTrail, which every command that changes state loads, so those commands do not load the portal's paging.
 */
export class AuditReader {
  constructor(private readonly store: AuditStore) {}

  /**
   * One page of the trail, newest first: a tenant's own records (`tenantId`), or every record (an operator:
   * undefined). `after` is the previous page's `next` cursor.
   */
  async page(tenantId: string | undefined, v: AuditView, after?: string, limit = AUDIT_PAGE_SIZE): Promise<{ items: AuditRecord[]; next?: string }> {
    const cursor = decodeCursor(after, ["string", "string"]) as [string, string] | undefined;
    const items = await this.store.queryAudit({ ...auditFilter(tenantId, v), ...(cursor ? { before: { time: cursor[0], id: cursor[1] } } : {}), limit: limit + 1 });
    const shown = items.slice(0, limit);
    const last = shown[shown.length - 1];
    return items.length > limit && last ? { items: shown, next: encodeCursor([last.time, last.id]) } : { items: shown };
  }

  /**
   * Every record the view selects, newest first, one JSON line each, read 1 000 at a time, at most `max`
   * (MAX_AUDIT_EXPORT): the export of the admin API and `attestd audit export`. The filter is checked before the
   * first line, so a bad one throws at the first `next()`.
   */
  async *exportLines(tenantId: string | undefined, v: AuditView, max = MAX_AUDIT_EXPORT): AsyncGenerator<string> {
    const f = auditFilter(tenantId, v);
    let before: { time: string; id: string } | undefined;
    let sent = 0;
    while (sent < max) {
      const rows = await this.store.queryAudit({ ...f, ...(before ? { before } : {}), limit: Math.min(1000, max - sent) });
      if (rows.length === 0) return;
      yield rows.map((r) => JSON.stringify(r) + "\n").join("");
      sent += rows.length;
      const last = rows[rows.length - 1]!;
      before = { time: last.time, id: last.id };
      if (rows.length < 1000) return;
    }
  }

}

/** The store's filter for a reader's view: times made exact ISO, `actor` a kind or an id, `target` KIND or KIND:ID. */
export function auditFilter(tenantId: string | undefined, v: AuditView): AuditFilter {
  const f: AuditFilter = {};
  if (tenantId !== undefined) f.tenantId = tenantId;
  if (v.from) f.since = isoTime(v.from, "from");
  if (v.to) f.until = isoTime(v.to, "to");
  if (v.actor) {
    if ((AUDIT_ACTOR_KINDS as readonly string[]).includes(v.actor)) f.actorKind = v.actor as AuditFilter["actorKind"];
    else f.actorId = v.actor;
  }
  if (v.action) {
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)*(\.\*)?$/.test(v.action)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "action: a dotted name such as key.revoked, or a family such as key.*");
    f.action = v.action;
  }
  if (v.target) {
    const i = v.target.indexOf(":");
    if (i < 0) f.targetKind = v.target;
    else {
      f.targetKind = v.target.slice(0, i);
      f.targetId = v.target.slice(i + 1);
    }
  }
  return f;
}
