import type { TrustState } from "../domain/trustStates.ts";
import { stateWorks, type TrustSourceName, type TrustSourcesView } from "./trustSources.ts";

/**
 * trust.degraded / trust.recovered (docs/events.md): the trust sources' states read every `everyMs` (the portal's
 * view, src/services/trustSources.ts) and compared with the last reading; a source whose state moves from one that
 * works to one that does not (TRUST_STATES_OK) is degraded, the way back recovered. The first reading is the
 * baseline: a start-up says nothing. Each instance watches its own sources (they refresh on their own), so with
 * several instances a tenant may hear one change from each: `data.instance` names it.
 */
export class WebhookTrustEvents {
  private last = new Map<TrustSourceName, TrustState>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly view: () => Promise<TrustSourcesView>,
    private readonly emit: (type: "trust.degraded" | "trust.recovered", data: object) => Promise<unknown>,
    private readonly instance: string,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  /** One reading: the events its changes make, emitted; answers how many changes it saw. */
  async check(): Promise<number> {
    const v = await this.view();
    let changes = 0;
    const first = this.last.size === 0;
    for (const s of v.sources) {
      const before = this.last.get(s.name);
      this.last.set(s.name, s.state);
      if (first || before === undefined || stateWorks(before) === stateWorks(s.state)) continue;
      changes++;
      await this.emit(stateWorks(s.state) ? "trust.recovered" : "trust.degraded", {
        source: s.name,
        label: s.label,
        state: s.state,
        previous: before,
        ...(s.reason ? { reason: s.reason } : {}),
        instance: this.instance,
      });
    }
    return changes;
  }

  start(everyMs: number): void {
    this.timer = setInterval(() => {
      this.running ??= this.check()
        .then(() => undefined, this.onError)
        .finally(() => (this.running = undefined));
    }, everyMs);
    this.timer.unref();
    this.running = this.check().then(() => undefined, this.onError).finally(() => (this.running = undefined));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
