import { parseReferenceValues } from "../attestation/policy/referenceValues.ts";
import type { ReferenceValue } from "../attestation/types.ts";
import type { Clock } from "../clock.ts";
import type { StoredReferenceSet } from "../domain/referenceValues.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { decodeCursor, encodeCursor, PAGE_SIZE } from "../portal/history.ts";
import type { ReferenceValueStore } from "../store/types.ts";

/** The largest reference-values file the portal takes (about 3,500 sets of 16 digests): one request, one parse. */
export const MAX_REFERENCE_FILE_BYTES = 4 * 1024 * 1024;

export interface ReferenceSetPage {
  items: StoredReferenceSet[];
  /** the cursor of the next page, when there is one */
  next?: string;
}

/**
 * Reference values, for the CLI (`attestd refvals ...`) and the portal alike. Two scopes: the global sets
 * (`tenant` undefined: the operator's, for every tenant) and a tenant's own, which replace a global set of the same
 * (model, firmwareVersion) in that tenant's appraisals only (docs/portal.md, "Reference values"). A file is parsed
 * by the one strict parser (errors name the item and field) and stored whole or not at all.
 */
export class ReferenceValueAdmin {
  constructor(
    private readonly store: ReferenceValueStore,
    private readonly clock: Clock,
    private readonly opts: {
      /** --reference-values, listed beside the stored global sets */
      fileValues?: readonly ReferenceValue[];
      /** called after every change, so the instance that made it appraises with it at once */
      changed?: () => Promise<void>;
    } = {},
  ) {}

  /** the global sets of --reference-values (a stored global set of the same pair replaces one) */
  get fileValues(): readonly ReferenceValue[] {
    return this.opts.fileValues ?? [];
  }

  /**
   * Parses `text` (the JSON of `attestd refvals import`) and stores every set in the scope, or nothing: a refusal
   * is PORTAL_INVALID_REQUEST whose reason names `source`, the item's index and the field at fault.
   */
  async import(text: string, source: string, tenant: Tenant | undefined, by: ChangeActor): Promise<number> {
    let values: ReferenceValue[];
    try {
      values = parseReferenceValues(text, source);
    } catch (e) {
      throw new AppError(catalog.PORTAL_INVALID_REQUEST, (e as Error).message);
    }
    const n = await this.store.upsertReferenceValues(values, new Date(this.clock.nowMs()).toISOString(), tenant?.tenantId ?? null);
    await by.record({
      tenantId: tenant?.tenantId ?? null,
      action: "reference-values.imported",
      target: { kind: "reference-values", id: tenant?.tenantId ?? "global" },
      before: null,
      after: { source, count: n, sets: values.map((v) => ({ model: v.model, firmwareVersion: v.firmwareVersion, measurements: v.measurements })) },
    });
    await this.opts.changed?.();
    return n;
  }

  /** One page of a scope's sets in (model, firmwareVersion) order, optionally of one model. */
  async list(tenant: Tenant | undefined, q: { model?: string; after?: string; limit?: number } = {}): Promise<ReferenceSetPage> {
    const after = decodeCursor(q.after, ["string", "string"]) as [string, string] | undefined;
    const limit = q.limit ?? PAGE_SIZE;
    const rows = await this.store.listReferenceSets({
      tenantId: tenant?.tenantId ?? null,
      ...(q.model ? { model: q.model } : {}),
      ...(after ? { after: { model: after[0], firmwareVersion: after[1] } } : {}),
      limit: limit + 1,
    });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return rows.length > limit && last ? { items, next: encodeCursor([last.model, last.firmwareVersion]) } : { items };
  }

  /** Every set of a scope (the CLI's listing). */
  all(tenant: Tenant | undefined): Promise<StoredReferenceSet[]> {
    return this.store.listReferenceSets({ tenantId: tenant?.tenantId ?? null });
  }

  /** false when the scope has no set for the pair (another tenant's set is not found either) */
  async remove(tenant: Tenant | undefined, model: string, firmwareVersion: string, by: ChangeActor): Promise<boolean> {
    const removed = await this.store.deleteReferenceSet(tenant?.tenantId ?? null, model, firmwareVersion);
    if (removed) {
      await by.record({
        tenantId: tenant?.tenantId ?? null,
        action: "reference-values.removed",
        target: { kind: "reference-set", id: `${model}/${firmwareVersion}` },
        before: { model, firmwareVersion },
        after: null,
      });
      await this.opts.changed?.();
    }
    return removed;
  }
}
