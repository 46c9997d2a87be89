import type { Overview, RequestTotals, SeriesPoint } from "../../src/portal/overview.ts";
import { TRUST_STATES, type TrustState } from "../../src/domain/trustStates.ts";
import { stateWorks, type TrustSourceName, type TrustSourcesView, type TrustSourceView } from "../../src/services/trustSources.ts";
import { html, type Html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";
import { operatorFirstRun, quickStart, type ApiAccess } from "./quickStart.ts";
import type { ApiKeySummary } from "../../src/services/apiKeyAdmin.ts";
import { reasonInWords } from "../../src/portal/verdictReasons.ts";
import type { FailureCount } from "../../src/store/types.ts";

/** an empty tenant's first steps (web/pages/quickStart.ts) */
export interface QuickStart {
  keys: ApiKeySummary[];
  canWrite: boolean;
  api: ApiAccess;
}

const count = new Intl.NumberFormat("en");
export const n = (x: number) => count.format(x);

/** a time that may be unknown (a source never read) */
export const whenever = (iso: string | undefined) => (iso ? when(iso) : "—");

/** 200 s → "3 min", 7300 s → "2 h 1 min", 200000 s → "2 d 7 h" */
export function age(seconds: number | undefined): string {
  if (seconds === undefined) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  const hours = Math.floor((s % 86400) / 3600);
  return `${Math.floor(s / 86400)} d${hours ? ` ${hours} h` : ""}`;
}

/** a source's state as its one word (src/domain/trustStates.ts), coloured by what it means for the appraisal */
export function stateWord(state: TrustState): Html {
  const tone = state === "held" ? "warn" : state === "not set" ? "off" : stateWorks(state) ? "ok" : "bad";
  return html`<span class="state state-${tone}" title="${TRUST_STATES[state]}">${state}</span>`;
}

/** Every state word and what it means: the legend under each list of sources. */
export function trustStateLegend(): Html {
  return html`<details class="legend"><summary>What the states mean</summary><dl class="facts">${(Object.keys(TRUST_STATES) as TrustState[]).map(
    (w) => html`<dt>${stateWord(w)}</dt><dd>${TRUST_STATES[w]}</dd>`,
  )}</dl></details>`;
}

/** the sources read once, at start-up (a change needs a restart): no "last read" of their own */
const READ_AT_START_UP: ReadonlySet<TrustSourceName> = new Set(["vendor-roots", "vendor-revocations", "app-attest-roots", "app-attest-receipt-root"]);
export const readAtStartUp = (s: TrustSourceView): boolean => READ_AT_START_UP.has(s.name);

/** when the data in use was obtained, as a cell says it */
export function obtained(s: TrustSourceView): Html | string {
  if (s.origin === "built-in") return "shipped with attestd";
  if (readAtStartUp(s)) return s.configured ? "read at start-up" : "—";
  return whenever(s.fetchedAt);
}

/**
 * A counted reason in the Verdicts pages' words, the rule and the reason as kept as a small reference; a text the
 * portal has no words for (src/portal/verdictReasons.ts, reasonInWords) is shown as it is.
 */
function failureWhy(f: FailureCount): Html | string {
  const why = reasonInWords(f.reason, f.status);
  return why ? html`<div>${why.sentence}<br><small class="muted rule-ref" title="${f.reason}">${why.rule}</small></div>` : f.reason;
}

/** The trust sources' table, on the overview (everyone) and the operators' trust page. */
export function trustTable(t: TrustSourcesView, forOperator: boolean): Html {
  const head = ["Source", "State", "Used by", "Obtained (UTC)", "Age", "Last read (UTC)", forOperator ? "Last error" : "Why", ...(forOperator ? ["From"] : [])];
  return table(
    "Trust sources",
    head,
    t.sources.map(
      (s) => html`<tr>
  <th scope="row">${s.label}</th>
  <td class="nowrap">${stateWord(s.state)}${s.origin === "cache" ? " (disk cache)" : ""}${s.pending ? " · reading…" : ""}</td>
  <td class="wrap">${s.usedBy}</td>
  <td class="nowrap">${obtained(s)}</td><td>${s.fetchedAt ? age(s.ageSeconds) : "—"}</td>
  <td class="nowrap">${whenever(s.lastAttempt)}</td><td class="wrap">${(forOperator ? (s.lastError ?? s.reason) : s.reason) ?? "none"}</td>
  ${forOperator ? html`<td class="wrap">${s.source ?? "—"}</td>` : ""}
</tr>`,
    ),
  );
}

function seriesTable(caption: string, unit: string, points: SeriesPoint[], label: (bucket: string) => string): Html {
  return table(
    caption,
    [unit, "Yes", "No", "Unknown"],
    points.map((p) => html`<tr><th scope="row">${label(p.bucket)}</th><td>${n(p.Yes)}</td><td>${n(p.No)}</td><td>${n(p.Unknown)}</td></tr>`),
  );
}

function totalsRow(period: string, t: RequestTotals): Html {
  return html`<tr><th scope="row">${period}</th><td>${n(t.total)}</td><td>${n(t.succeeded)}</td><td>${n(t.refused)}</td><td>${n(t.failed)}</td></tr>`;
}

/**
 * The overview. The two charts are canvases that web/static/overview.js fills from GET /portal/api/overview (the
 * same numbers as the tables under them, which are what a screen reader reads: each canvas is an image named
 * after its table).
 */
export function overviewPage(ctx: PageContext, o: Overview, tenants: string[] | undefined, start?: QuickStart): string {
  const api = withQuery("/portal/api/overview", { tenant: ctx.tenant });
  const sum = (points: SeriesPoint[], v: "Yes" | "No" | "Unknown") => points.reduce((a, p) => a + p[v], 0);
  const since = (points: SeriesPoint[]) => (points[0]!.bucket.length === 13 ? `${points[0]!.bucket}:00:00Z` : points[0]!.bucket);
  const totals = (points: SeriesPoint[]) =>
    html`<ul class="counts">${(["Yes", "No", "Unknown"] as const).map(
      (v) => html`<li><a href="${withQuery("/portal/verdicts", { verdict: v, from: since(points), tenant: ctx.tenant })}">${v}: <strong>${n(sum(points, v))}</strong></a></li>`,
    )}</ul>`;
  const chart = (which: "hourly" | "daily", caption: string, points: SeriesPoint[], unit: string, label: (b: string) => string) =>
    html`<figure class="chart-figure">
  <div class="chart"><canvas data-chart="${which}" data-src="${api}" role="img" aria-label="${caption}: a stacked bar chart; the numbers are in the table below it">${caption}: the numbers are in the table below.</canvas></div>
  <figcaption>${totals(points)}</figcaption>
</figure>
<details><summary>${caption}, as a table</summary>${seriesTable(caption, unit, points, label)}</details>`;

  const picker = tenants
    ? html`<form method="get" action="/portal/" class="filters" aria-label="Whose overview">
  <label>Tenant <select name="tenant"><option value="">every tenant</option>${tenants.map(
    (t) => html`<option value="${t}" ${t === ctx.tenant ? html`selected` : ""}>${t}</option>`,
  )}</select></label>
  <button type="submit" class="secondary">Show</button>
</form>`
    : "";

  const failures = table(
    "Why verdicts were No or Unknown",
    ["Verdict", "Status", "Why, and the rule that decided", "Last 24 h", "Last 30 days"],
    o.failures.map(
      (f) => html`<tr>
  <td>${f.verdict}</td><td><a href="${withQuery("/portal/verdicts", { verdict: f.verdict, status: f.status, tenant: ctx.tenant })}">${f.status}</a></td>
  <td class="wrap">${failureWhy(f)}</td><td>${n(f.recent)}</td><td>${n(f.total)}</td>
</tr>`,
    ),
  );
  const requests = table("Requests", ["Period", "Requests", "Succeeded", "Refused (4xx)", "Failed (5xx)"], [
    totalsRow("Last 24 hours", o.requests.last24h),
    totalsRow("Last 30 days", o.requests.last30d),
  ]);
  const errors = table(
    "Most frequent refusals",
    ["Status", "Code", "Request", "Last 24 h", "Last 30 days"],
    o.errors.map(
      (e) => html`<tr>
  <td>${e.status}</td>
  <td><a href="${withQuery("/portal/activity", { status: e.status, code: e.code ?? undefined, route: e.route, tenant: ctx.tenant })}">${e.code ?? "(none)"}</a></td>
  <td><code>${e.method} ${e.route}</code></td><td>${n(e.recent)}</td><td>${n(e.total)}</td>
</tr>`,
    ),
  );
  const forOperator = ctx.actor?.role === "operator";
  const vendorRootsDown = o.trust.sources.find((s) => s.name === "vendor-roots" && !stateWorks(s.state));
  return layout(
    ctx.actor?.role === "operator" ? (ctx.tenant ? `Overview of ${ctx.tenant}` : "Overview of every tenant") : "Overview",
    ctx,
    html`${picker}
${start ? quickStart(ctx, start) : ""}
${tenants && tenants.length === 0 ? operatorFirstRun() : ""}
<p class="muted">Times are UTC. Figures as of ${when(o.generatedAt)}.</p>
<section aria-labelledby="day-h">
  <h2 id="day-h">Verdicts in the last 24 hours</h2>
  ${chart("hourly", "Verdicts per hour, last 24 hours", o.verdicts.hourly, "Hour (UTC)", (b) => `${b.slice(0, 10)} ${b.slice(11, 13)}:00`)}
</section>
<section aria-labelledby="month-h">
  <h2 id="month-h">Verdicts in the last 30 days</h2>
  ${chart("daily", "Verdicts per day, last 30 days", o.verdicts.daily, "Day (UTC)", (b) => b)}
</section>
<section aria-labelledby="fail-h">
  <h2 id="fail-h">Why verdicts failed</h2>
  ${failures}
</section>
<section aria-labelledby="req-h">
  <h2 id="req-h">Requests and error codes</h2>
  ${requests}
  ${errors}
</section>
<section aria-labelledby="trust-h">
  <h2 id="trust-h">Trust sources</h2>
  <p>${o.trust.usable ? "Android key attestation can be trusted now: Google's roots and status list are in hand and fresh." : html`<strong>Android key attestation fails closed now</strong>: a source below is missing or stale, so every android-key verdict is <code>CertificateInvalid</code>.`}
  ${vendorRootsDown ? html`<strong>Vendor-format attestation fails closed now</strong> (vendor roots: ${stateWord(vendorRootsDown.state)}): every vendor-format verdict is <code>CertificateInvalid</code>.` : ""}
  ${forOperator ? html` <a href="/portal/trust">Trust sources</a>` : ""}</p>
  ${trustTable(o.trust, forOperator)}
  ${trustStateLegend()}
</section>`,
    "/portal/",
  );
}
