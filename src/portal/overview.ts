import type { Clock } from "../clock.ts";
import type { VerdictValue } from "../domain/verdicts.ts";
import type { TrustSources, TrustSourcesView } from "../services/trustSources.ts";
import { hourOf } from "../store/historyQueries.ts";
import type { FailureCount, RequestErrorCount, StatsStore } from "../store/types.ts";

/** One bar of the chart: the verdicts of an hour ("2026-11-22T10") or a day ("2026-11-22"), UTC. */
export interface SeriesPoint {
  bucket: string;
  Yes: number;
  No: number;
  Unknown: number;
}

export interface RequestTotals {
  total: number;
  /** answered below 400 */
  succeeded: number;
  /** 4xx: refused (the caller's to fix; the activity log has each errorId) */
  refused: number;
  /** 5xx */
  failed: number;
}

/**
 * What the overview shows, for one tenant or (operators) every tenant: verdicts over the last 24 hours by hour and
 * the last 30 days by day; why verdicts were No or Unknown; how requests were answered and the most frequent
 * refusals, each over 30 days with the last 24 hours beside it; and the trust sources' state.
 */
export interface Overview {
  generatedAt: string;
  verdicts: { hourly: SeriesPoint[]; daily: SeriesPoint[] };
  failures: FailureCount[];
  requests: { last24h: RequestTotals; last30d: RequestTotals };
  errors: RequestErrorCount[];
  trust: TrustSourcesView;
}

export const TOP = 10;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** every-tenant overviews sum every tenant's counters: kept this long, as a page reload should not redo it */
const ALL_TENANTS_CACHE_MS = 30_000;

const VALUES: readonly VerdictValue[] = ["Yes", "No", "Unknown"];

/**
 * The overview, read from the counters the stores keep beside verdicts and activity (StatsStore): a few hundred
 * rows for a tenant however many verdicts it has (bench/README.md, "Portal overview counts"). A tenant's overview
 * is always current (a verdict appears as soon as it is stored); the every-tenant one is cached for 30 s.
 */
export class PortalOverview {
  private cached: { atMs: number; forOperator: boolean; overview: Overview } | undefined;

  constructor(
    private readonly stats: StatsStore,
    private readonly trust: TrustSources,
    private readonly clock: Clock,
  ) {}

  async overview(tenantId: string | undefined, forOperator: boolean): Promise<Overview> {
    const nowMs = this.clock.nowMs();
    if (tenantId === undefined && this.cached && this.cached.forOperator === forOperator && nowMs - this.cached.atMs < ALL_TENANTS_CACHE_MS) {
      return this.cached.overview;
    }
    // the chart's windows: the 24 hours up to and including this one, the 30 days up to and including today
    const hours = Array.from({ length: 24 }, (_, i) => hourOf(new Date(nowMs - (23 - i) * HOUR_MS).toISOString()));
    const days = Array.from({ length: 30 }, (_, i) => new Date(nowMs - (29 - i) * DAY_MS).toISOString().slice(0, 10));
    const recentFromHour = hours[0]!;
    const window = { ...(tenantId !== undefined ? { tenantId } : {}), fromHour: `${days[0]}T00` };
    const [hourly, daily, failures, statuses, errors] = await Promise.all([
      this.stats.verdictCounts({ ...window, fromHour: recentFromHour, bucket: "hour" }),
      this.stats.verdictCounts({ ...window, bucket: "day" }),
      this.stats.topFailures({ ...window, recentFromHour, limit: TOP }),
      this.stats.requestCounts({ ...window, recentFromHour }),
      this.stats.topRequestErrors({ ...window, recentFromHour, limit: TOP }),
    ]);
    const overview: Overview = {
      generatedAt: new Date(nowMs).toISOString(),
      verdicts: { hourly: series(hours, hourly), daily: series(days, daily) },
      failures,
      requests: {
        last24h: totals(statuses.map((s) => ({ status: s.status, n: s.recent }))),
        last30d: totals(statuses.map((s) => ({ status: s.status, n: s.total }))),
      },
      errors,
      trust: await this.trust.view(forOperator),
    };
    if (tenantId === undefined) this.cached = { atMs: nowMs, forOperator, overview };
    return overview;
  }
}

/** every bucket of the window, in order, zero where nothing was counted */
function series(buckets: string[], counts: { bucket: string; verdict: VerdictValue; n: number }[]): SeriesPoint[] {
  const at = new Map(buckets.map((b) => [b, { bucket: b, Yes: 0, No: 0, Unknown: 0 } as SeriesPoint]));
  for (const c of counts) {
    const point = at.get(c.bucket);
    if (point && VALUES.includes(c.verdict)) point[c.verdict] += c.n;
  }
  return [...at.values()];
}

function totals(rows: { status: number; n: number }[]): RequestTotals {
  const t: RequestTotals = { total: 0, succeeded: 0, refused: 0, failed: 0 };
  for (const r of rows) {
    t.total += r.n;
    if (r.status >= 500) t.failed += r.n;
    else if (r.status >= 400) t.refused += r.n;
    else t.succeeded += r.n;
  }
  return t;
}
