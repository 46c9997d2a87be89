import type { Clock } from "../clock.ts";

/** How many tenants' reads a cache keeps at most; the oldest entry makes room. */
const MAX_TENANTS = 10_000;

/**
 * A per-tenant copy of something an appraisal reads on every request (a tenant's Play apps, its iOS apps), read
 * from the store at most every `ttlMs` per tenant. A change made through the owner drops the tenant's copy at once
 * (`forget`); one made elsewhere (another instance, the CLI) reaches this process within `ttlMs`.
 *
 * A read that began before a change must not be kept: it may have missed the change. Every `forget` bumps a
 * generation, and a read whose generation moved meanwhile is answered but not cached. The entry's time is taken
 * before the read, so a copy never outlives `ttlMs` from a moment the store could have been older.
 */
export class TenantReadCache<T> {
  private readonly entries = new Map<string, { at: number; value: T }>();
  private generation = 0;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  async get(tenantId: string, read: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(tenantId);
    if (hit && this.clock.nowMs() - hit.at < this.ttlMs) return hit.value;
    const now = this.clock.nowMs();
    const generation = this.generation;
    const value = await read();
    if (generation === this.generation) {
      // re-inserted at the end: the map's order is the entries' age, the first is the one to drop
      this.entries.delete(tenantId);
      if (this.entries.size >= MAX_TENANTS) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(tenantId, { at: now, value });
    }
    return value;
  }

  /** The tenant's copy is dropped, and no read in flight may be kept. */
  forget(tenantId: string): void {
    this.generation++;
    this.entries.delete(tenantId);
  }
}
