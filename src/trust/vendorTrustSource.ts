import { readFileSync } from "node:fs";
import { parseStatusList, EMPTY_STATUS_LIST } from "../attestation/chain/statusList.ts";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import { parseReferenceValues } from "../attestation/policy/referenceValues.ts";
import type { ReferenceValue, VendorTrust } from "../attestation/types.ts";
import type { ReferenceValueStore } from "../store/types.ts";

export interface VendorTrustOptions {
  vendorRoots?: string | undefined;
  revocations?: string | undefined;
  referenceValues?: string | undefined;
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** Merges file and store reference values; the store (imported later, by the operator) wins on the same pair. */
function mergeReferenceValues(fromFile: readonly ReferenceValue[], fromStore: readonly ReferenceValue[]): ReferenceValue[] {
  const byPair = new Map<string, ReferenceValue>();
  for (const v of [...fromFile, ...fromStore]) byPair.set(`${v.model}\u0000${v.firmwareVersion}`, v);
  return [...byPair.values()];
}

/**
 * The vendor half of the trust configuration: roots and revocations from files (read once; a bad file stops
 * start-up with one line), reference values from the file plus whatever `attestd refvals import` put in the
 * store, re-read every `refreshMs` so an import takes effect on a running server without a restart.
 */
export class VendorTrustSource {
  private current: VendorTrust;
  private readonly rootsDer: Uint8Array[];
  private readonly revocations: VendorTrust["revocations"];
  private readonly fileValues: ReferenceValue[];
  private lastStoreJson = "";
  private timer: NodeJS.Timeout | undefined;

  private constructor(opts: VendorTrustOptions, private readonly store: ReferenceValueStore | undefined) {
    this.rootsDer = opts.vendorRoots ? parsePemBundle(readText(opts.vendorRoots, "--vendor-roots")) : [];
    this.revocations = opts.revocations
      ? parseStatusList(readText(opts.revocations, "--revocations"), `--revocations ${opts.revocations}`)
      : EMPTY_STATUS_LIST;
    this.fileValues = opts.referenceValues
      ? parseReferenceValues(readText(opts.referenceValues, "--reference-values"), `--reference-values ${opts.referenceValues}`)
      : [];
    this.current = this.build([]);
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

  get(): VendorTrust {
    return this.current;
  }

  /** Rebuilds the trust object only when the stored values changed, so per-trust caches stay warm. */
  async refresh(): Promise<void> {
    const values = this.store ? await this.store.listReferenceValues() : [];
    const json = JSON.stringify(values);
    if (json === this.lastStoreJson) return;
    this.lastStoreJson = json;
    this.current = this.build(values);
  }

  start(refreshMs: number, onError: (e: unknown) => void): void {
    this.timer = setInterval(() => this.refresh().catch(onError), refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
