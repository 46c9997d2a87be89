import { readFileSync } from "node:fs";
import { parseStatusList, EMPTY_STATUS_LIST } from "../attestation/chain/statusList.ts";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import { parseReferenceValues } from "../attestation/policy/referenceValues.ts";
import type { ReferenceValue, VendorTrust } from "../attestation/types.ts";
import type { StoredReferenceSet } from "../domain/referenceValues.ts";
import type { ReferenceValueStore } from "../store/types.ts";
import { fileProblem, pathMessage } from "../errors/operatorError.ts";

export interface VendorTrustOptions {
  vendorRoots?: string | undefined;
  revocations?: string | undefined;
  referenceValues?: string | undefined;
}

function readText(file: string, what: string, expected: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(pathMessage(`${what} FILE`, file, fileProblem(e), expected));
  }
}

/** Merges file and store reference values; the store (imported later, by the operator) wins on the same pair. */
function mergeReferenceValues(fromFile: readonly ReferenceValue[], fromStore: readonly ReferenceValue[]): ReferenceValue[] {
  const byPair = new Map<string, ReferenceValue>();
  for (const v of [...fromFile, ...fromStore]) byPair.set(`${v.model}\u0000${v.firmwareVersion}`, v);
  return [...byPair.values()];
}

const plain = (s: StoredReferenceSet): ReferenceValue => ({ model: s.model, firmwareVersion: s.firmwareVersion, measurements: s.measurements });

/**
 * The vendor half of the trust configuration: roots and revocations from files (read once; a bad file stops
 * start-up with one line), reference values from the file plus the store's global sets (`attestd refvals import`,
 * an operator in the portal), and each tenant's own sets (its admins, in the portal, or `refvals import --tenant`),
 * re-read every `refreshMs` so a change takes effect on every running server without a restart.
 */
export class VendorTrustSource {
  private base: VendorTrust;
  private readonly rootsDer: Uint8Array[];
  private readonly revocations: VendorTrust["revocations"];
  /** what --reference-values holds (shown by the portal and `refvals list` beside the stored global sets) */
  readonly fileValues: readonly ReferenceValue[];
  private lastGlobalJson = "";
  /** per tenant with sets of its own: their JSON (to see a change) and its VendorTrust, over the current base */
  private tenants = new Map<string, { json: string; trust: VendorTrust }>();
  private timer: NodeJS.Timeout | undefined;
  private queue: Promise<void> = Promise.resolve();

  private constructor(opts: VendorTrustOptions, private readonly store: ReferenceValueStore | undefined) {
    this.rootsDer = opts.vendorRoots ? parsePemBundle(readText(opts.vendorRoots, "--vendor-roots", "a PEM bundle of vendor root certificates, e.g. the root.pem attestd dev-ca writes")) : [];
    this.revocations = opts.revocations
      ? parseStatusList(readText(opts.revocations, "--revocations", "a status list in Google's JSON shape"), `--revocations ${opts.revocations}`)
      : EMPTY_STATUS_LIST;
    this.fileValues = opts.referenceValues
      ? parseReferenceValues(readText(opts.referenceValues, "--reference-values", "reference values as JSON, e.g. the reference-values.json attestd dev-ca writes"), `--reference-values ${opts.referenceValues}`)
      : [];
    this.base = this.build([]);
  }

  /** `store` undefined (the offline CLI with no database): the --reference-values file alone */
  static async open(opts: VendorTrustOptions, store?: ReferenceValueStore): Promise<VendorTrustSource> {
    const source = new VendorTrustSource(opts, store);
    await source.refresh();
    return source;
  }

  private build(storeValues: readonly ReferenceValue[]): VendorTrust {
    return {
      rootsDer: this.rootsDer,
      revocations: this.revocations,
      referenceValues: mergeReferenceValues(this.fileValues, storeValues),
    };
  }

  /** the trust of a tenant without sets of its own: the global sets alone */
  get(): VendorTrust {
    return this.base;
  }

  /** a tenant's trust: the base, plus its own sets when it has any (the same object while nothing changes) */
  forTenant(tenantId: string): VendorTrust {
    return this.tenants.get(tenantId)?.trust ?? this.base;
  }

  /**
   * Rebuilds only what changed, so per-trust caches stay warm: the base when the global sets changed (and with it
   * every tenant's), a tenant's trust when its own sets changed.
   */
  refresh(): Promise<void> {
    // One read at a time, each after the previous: a refresh asked for after a write reads after it, and an older
    // read still under way can never land last and bring back what the write replaced.
    const run = this.queue.then(() => this.reload());
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async reload(): Promise<void> {
    const sets = this.store ? await this.store.listReferenceSets({}) : [];
    const global: ReferenceValue[] = [];
    const perTenant = new Map<string, ReferenceValue[]>();
    for (const s of sets) {
      if (s.tenantId === null) global.push(plain(s));
      else perTenant.set(s.tenantId, [...(perTenant.get(s.tenantId) ?? []), plain(s)]);
    }
    const globalJson = JSON.stringify(global);
    const baseChanged = globalJson !== this.lastGlobalJson;
    if (baseChanged) {
      this.lastGlobalJson = globalJson;
      this.base = this.build(global);
    }
    const next = new Map<string, { json: string; trust: VendorTrust }>();
    for (const [tenantId, values] of perTenant) {
      const json = JSON.stringify(values);
      const kept = this.tenants.get(tenantId);
      next.set(tenantId, !baseChanged && kept?.json === json ? kept : { json, trust: { ...this.base, tenantReferenceValues: values } });
    }
    this.tenants = next;
  }

  start(refreshMs: number, onError: (e: unknown) => void): void {
    this.timer = setInterval(() => this.refresh().catch(onError), refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
