import type { ReferenceValue } from "../attestation/types.ts";

/**
 * A stored reference set with where it applies: the global sets (`tenantId` null: the operator's, from
 * `attestd refvals import` or an operator in the portal) apply to every tenant; a tenant's own sets apply to that
 * tenant's appraisals only, in place of a global set of the same (model, firmwareVersion). docs/portal.md,
 * "Reference values", says why.
 */
export interface StoredReferenceSet extends ReferenceValue {
  tenantId: string | null;
  updatedAt: string;
}
