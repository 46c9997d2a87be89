import { builder, MAX_HISTORY_PAGE, type Placeholder, type SqlArg } from "./historyQueries.ts";
import type { ReferenceSetQuery } from "./types.ts";

const COLUMNS = "model, firmware_version, measurements, updated_at";

/**
 * The reference-set listing (ReferenceValueStore.listReferenceSets), written once for both SQL backends. One
 * scope is a primary-key range read in (model, firmware_version) order, paged by key; every scope (the trust
 * refresh) is the global table followed by the tenants' table, in one statement so one snapshot.
 */
export function referenceSetsSql(q: ReferenceSetQuery, ph: Placeholder): { sql: string; args: SqlArg[] } {
  if (q.tenantId === undefined) {
    return {
      sql: `SELECT NULL AS tenant_id, ${COLUMNS} FROM reference_values
            UNION ALL SELECT tenant_id, ${COLUMNS} FROM tenant_reference_values
            ORDER BY tenant_id NULLS FIRST, model, firmware_version`,
      args: [],
    };
  }
  const { where, args, arg } = builder(ph);
  const table = q.tenantId === null ? "reference_values" : "tenant_reference_values";
  if (q.tenantId !== null) where.push(`tenant_id = ${arg(q.tenantId)}`);
  if (q.model !== undefined) where.push(`model = ${arg(q.model)}`);
  if (q.after) where.push(`(model, firmware_version) > (${arg(q.after.model)}, ${arg(q.after.firmwareVersion)})`);
  const limit = q.limit === undefined ? "" : ` LIMIT ${arg(Math.min(Math.max(Math.trunc(q.limit), 1), MAX_HISTORY_PAGE))}`;
  const scope = q.tenantId === null ? "NULL AS tenant_id" : "tenant_id";
  return {
    sql: `SELECT ${scope}, ${COLUMNS} FROM ${table} ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY model, firmware_version${limit}`,
    args,
  };
}
