import type { AuditRecord } from "../domain/audit.ts";
import { builder, type Placeholder, type SqlArg } from "./historyQueries.ts";
import type { Row } from "./rows.ts";
import type { AuditFilter } from "./types.ts";

/**
 * The audit trail's SQL, written once for both SQL backends (`?` for SQLite, `$n` for PostgreSQL): the insert, the
 * filtered newest-first page (keyset paging on (time, id), never OFFSET), and the row mapper. Every JSON column is
 * text in both schemas (migration 013), so one mapper reads both.
 */

export const MAX_AUDIT_PAGE = 1000;

export const AUDIT_COLUMNS = "id, time, tenant_id, actor_kind, actor_id, actor, action, target_kind, target_id, before_json, after_json, source";

export function auditInsertSql(ph: Placeholder): string {
  const marks = Array.from({ length: 12 }, (_, i) => ph(i + 1)).join(", ");
  return `INSERT INTO audit (${AUDIT_COLUMNS}) VALUES (${marks})`;
}

export function auditArgs(r: AuditRecord): SqlArg[] {
  return [
    r.id,
    r.time,
    r.tenantId,
    r.actor.kind,
    r.actor.id,
    JSON.stringify(r.actor),
    r.action,
    r.target.kind,
    r.target.id,
    JSON.stringify(r.before ?? null),
    JSON.stringify(r.after ?? null),
    JSON.stringify(r.from),
  ];
}

export function auditSql(f: AuditFilter, ph: Placeholder): { sql: string; args: SqlArg[] } {
  const { where, args, arg } = builder(ph);
  if (f.tenantId !== undefined) where.push(`tenant_id = ${arg(f.tenantId)}`);
  if (f.since !== undefined) where.push(`time >= ${arg(f.since)}`);
  if (f.until !== undefined) where.push(`time < ${arg(f.until)}`);
  if (f.actorKind !== undefined) where.push(`actor_kind = ${arg(f.actorKind)}`);
  if (f.actorId !== undefined) where.push(`actor_id = ${arg(f.actorId)}`);
  if (f.action !== undefined) {
    // `key.*` names every action of a family
    if (f.action.endsWith(".*")) where.push(`action LIKE ${arg(f.action.slice(0, -1).replace(/[%_\\]/g, "\\$&") + "%")} ESCAPE '\\'`);
    else where.push(`action = ${arg(f.action)}`);
  }
  if (f.targetKind !== undefined) where.push(`target_kind = ${arg(f.targetKind)}`);
  if (f.targetId !== undefined) where.push(`target_id = ${arg(f.targetId)}`);
  if (f.before) where.push(`(time, id) < (${arg(f.before.time)}, ${arg(f.before.id)})`);
  const limit = Math.min(Math.max(Math.trunc(f.limit ?? 100), 1), MAX_AUDIT_PAGE);
  const w = where.length ? `WHERE ${where.join(" AND ")}` : "";
  return { sql: `SELECT ${AUDIT_COLUMNS} FROM audit ${w} ORDER BY time DESC, id DESC LIMIT ${arg(limit)}`, args };
}

export function auditRow(r: Row): AuditRecord {
  return {
    id: r.id as string,
    time: r.time as string,
    actor: JSON.parse(r.actor as string) as AuditRecord["actor"],
    tenantId: (r.tenant_id as string | null) ?? null,
    action: r.action as string,
    target: { kind: r.target_kind as string, id: r.target_id as string },
    before: JSON.parse(r.before_json as string) as unknown,
    after: JSON.parse(r.after_json as string) as unknown,
    from: JSON.parse(r.source as string) as AuditRecord["from"],
  };
}

/** The filter in memory, for MemoryDurableStore: the same answers as auditSql. */
export function auditMatches(f: AuditFilter, r: AuditRecord): boolean {
  if (f.tenantId !== undefined && r.tenantId !== f.tenantId) return false;
  if (f.since !== undefined && r.time < f.since) return false;
  if (f.until !== undefined && r.time >= f.until) return false;
  if (f.actorKind !== undefined && r.actor.kind !== f.actorKind) return false;
  if (f.actorId !== undefined && r.actor.id !== f.actorId) return false;
  if (f.action !== undefined && !(f.action.endsWith(".*") ? r.action.startsWith(f.action.slice(0, -1)) : r.action === f.action)) return false;
  if (f.targetKind !== undefined && r.target.kind !== f.targetKind) return false;
  if (f.targetId !== undefined && r.target.id !== f.targetId) return false;
  if (f.before && !(r.time < f.before.time || (r.time === f.before.time && r.id < f.before.id))) return false;
  return true;
}
