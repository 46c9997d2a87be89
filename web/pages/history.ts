import type { AppraisalStatus, BlobFormatName } from "../../src/attestation/types.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { ACTIVITY_KINDS, type ActivityKind } from "../../src/domain/activity.ts";
import { isoTime, type ActivityItem, type ActivityPage, type ActivityView, type VerdictFilter, type VerdictPage } from "../../src/portal/history.ts";
import type { ApiKeySummary } from "../../src/services/apiKeyAdmin.ts";
import { explainVerdict, verdictDeviceId } from "../../src/portal/verdictReasons.ts";
import { html, type Html } from "../html.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

/** A request's outcome as a badge whose words carry it (colour only repeats them): OK, or Error with its status. */
function outcomeBadge(status: number): Html {
  return status >= 400
    ? html`<span class="badge badge-error">Error</span>`
    : html`<span class="badge badge-ok">OK</span>`;
}

function activityRows(items: ActivityItem[], ctx: PageContext, keyLabels: ReadonlyMap<string, string>): Html[] {
  return items.map(
    (e) => html`<tr class="${e.status >= 400 ? "row-error" : ""}">
  <td class="nowrap" data-label="Time (UTC)">${when(e.time)}</td>
  <td data-label="Result"><div>${outcomeBadge(e.status)}</div></td>
  <td data-label="Request">${e.method} ${e.route}</td>
  <td data-label="Status">${e.status}</td>
  <td data-label="Code"><div>${e.code ? html`<code>${e.code}</code>${e.message ? html` <strong>${e.message}</strong>` : ""}${e.meaning ? html`<br><small class="muted">${e.meaning}</small>` : ""}` : html`<span class="muted">—</span>`}</div></td>
  <td data-label="Error id">${e.errorId ? html`<a class="id" href="${withQuery("/portal/activity", { errorId: e.errorId, tenant: ctx.tenant })}">${e.errorId}</a>` : ""}</td>
  <td data-label="Key or client">${e.clientId ? html`<a href="${withQuery("/portal/activity", { key: e.clientId, tenant: ctx.tenant })}" title="${e.clientId}">${keyLabels.get(e.clientId) ?? e.clientId}</a>` : html`<span class="muted">—</span>`}</td>
  <td data-label="Latency (ms)">${e.latencyMs}</td><td data-label="Address">${e.remoteAddress}</td>
</tr>`,
  );
}

const ACTIVITY_HEAD = ["Time (UTC)", "Result", "Request", "Status", "Code and message", "Error id", "API key or client", { label: "Latency (ms)", secondary: true }, { label: "Address", secondary: true }];

/** The kinds of request the Activity page lists, as its menu says them. */
const KIND_LABELS: Record<ActivityKind, string> = { api: "API requests", portal: "Portal page views", all: "Both" };

/** Every status and format a verdict can have (the compiler checks none is missing), for the filters' menus. */
const STATUSES = ["Success", "DeviceError", "CertificateInvalid", "SignatureInvalid", "NonceMismatch", "Revoked"] as const;
const FORMATS = ["vendor", "android-key", "play-integrity", "app-attest"] as const;
type Exhaustive<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : never;
const listed: [Exhaustive<AppraisalStatus, (typeof STATUSES)[number]>, Exhaustive<BlobFormatName, (typeof FORMATS)[number]>] = [true, true];
void listed;

function option(value: string, current: string | undefined): Html {
  return html`<option value="${value}" ${(current ?? "") === value ? html`selected` : ""}>${value || "any"}</option>`;
}

/** a time filter as the tables write times (web/time.ts): what is typed here can be copied from a row */
const tableTime = (s: string | undefined) => (s ? isoTime(s).slice(0, 19).replace("T", " ") : "");

// text fields, not datetime-local: a browser shows those in its own locale's format (26/11/2026, 14:00), unlike
// every time on these pages
const TIME_PATTERN = "\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?Z?)?";
const TIME_HINT = "YYYY-MM-DD, or YYYY-MM-DD HH:MM[:SS], in UTC as the table shows times";

function timeFields(f: { from?: string | undefined; to?: string | undefined }): Html {
  return html`<label>From (UTC) <input name="from" value="${tableTime(f.from)}" placeholder="2026-11-26 14:00" pattern="${TIME_PATTERN}" title="${TIME_HINT}" maxlength="19" spellcheck="false" autocomplete="off"></label>
  <label>To (UTC, not included) <input name="to" value="${tableTime(f.to)}" placeholder="2026-11-27" pattern="${TIME_PATTERN}" title="${TIME_HINT}" maxlength="19" spellcheck="false" autocomplete="off"></label>`;
}

/** A verdict as a badge: its word (and a sign) says it, the colour only repeats it. */
export function verdictBadge(verdict: string): Html {
  const sign = verdict === "Yes" ? "✓" : verdict === "No" ? "✗" : "?";
  return html`<span class="badge badge-${verdict === "Yes" || verdict === "No" ? verdict.toLowerCase() : "unknown"}"><span aria-hidden="true">${sign}</span> ${verdict}</span>`;
}

/** The device a verdict is about: the relying party's deviceId (a link to its page) and the hardware ids. */
function deviceCell(ctx: PageContext, v: StoredVerdict): Html {
  const deviceId = verdictDeviceId(v);
  const hw = v.record.chipId ? html`chipId <code>${v.record.chipId}</code>` : v.record.IMEI ? html`IMEI <code>${v.record.IMEI}</code>` : "";
  return html`${deviceId ? html`<a href="${withQuery(`/portal/devices/${encodeURIComponent(deviceId)}`, { tenant: ctx.tenant })}"><code>${deviceId}</code></a>${hw ? html`<br>` : ""}` : ""}${hw ? html`<small class="wrap">${hw}</small>` : ""}${!deviceId && !hw ? html`<span class="muted">—</span>` : ""}`;
}

export function verdictsPage(ctx: PageContext, f: VerdictFilter, page: VerdictPage): string {
  const rows = page.items.map((v) => {
    const why = explainVerdict(v);
    return html`<tr>
  <td class="nowrap" data-label="Time (UTC)">${when(v.createdAt)}</td>
  <td data-label="Verdict"><div>${verdictBadge(v.record.verdict)}<br><small>${v.record.status}</small></div></td>
  <td data-label="Why"><div>${why.sentence}<br><small class="muted rule-ref">${why.rule}</small></div></td>
  <td class="nowrap" data-label="Format">${v.format}</td>
  <td data-label="Device"><div>${deviceCell(ctx, v)}</div></td>
  <td data-label="Object id"><a class="id" href="${withQuery(`/portal/verdicts/${encodeURIComponent(v.objectId)}`, { tenant: ctx.tenant })}">${v.objectId}</a></td>
</tr>`;
  });
  const filtered = Object.values(f).some((x) => x !== undefined && x !== "");
  const csv = withQuery("/portal/api/verdicts.csv", { ...f, tenant: ctx.tenant });
  return layout(
    "Verdicts",
    ctx,
    html`<form method="get" action="/portal/verdicts" class="filters" aria-label="Filter verdicts">
  ${hiddenTenant(ctx)}
  <label>Verdict <select name="verdict">${["", "Yes", "No", "Unknown"].map((v) => option(v, f.verdict))}</select></label>
  <label>Status <select name="status">${["", ...STATUSES].map((v) => option(v, f.status))}</select></label>
  <label>Format <select name="format">${["", ...FORMATS].map((v) => option(v, f.format))}</select></label>
  <label>Device (chipId or IMEI) <input name="device" value="${f.device ?? ""}" maxlength="128"></label>
  ${timeFields(f)}
  <div class="filter-actions"><button type="submit">Filter</button>${filtered ? html` <a href="${withQuery("/portal/verdicts", { tenant: ctx.tenant })}">Clear filters</a>` : ""}</div>
</form>
<p class="export"><a href="${csv}" download data-export="export-status" role="button" class="secondary outline">Export ${filtered ? "these verdicts" : "all verdicts"} as CSV</a>
  <span id="export-status" role="status" aria-live="polite"></span></p>
<div class="stack">${table("Verdicts, newest first", ["Time (UTC)", "Verdict", "Why", { label: "Format", secondary: true }, "Device", "Object id"], rows)}</div>
${pager("/portal/verdicts", { ...f, tenant: ctx.tenant }, page, "verdicts")}`,
    "/portal/verdicts",
  );
}

/** A parsed attestation as nested lists a person can read: objects as terms and values, lists numbered. */
function readable(value: unknown, depth = 0): Html {
  if (value === null || value === undefined || value === "") return html`<span class="muted">none</span>`;
  if (Array.isArray(value)) {
    if (value.length === 0) return html`<span class="muted">none</span>`;
    return depth > 6 ? html`<code class="wrap">${JSON.stringify(value)}</code>` : html`<ol>${value.map((x) => html`<li>${readable(x, depth + 1)}</li>`)}</ol>`;
  }
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return html`<span class="muted">none</span>`;
    return depth > 6
      ? html`<code class="wrap">${JSON.stringify(value)}</code>`
      : html`<dl class="tree">${entries.map(([k, v]) => html`<dt>${k}</dt><dd>${readable(v, depth + 1)}</dd>`)}</dl>`;
  }
  return html`<span class="wrap">${String(value)}</span>`;
}

export function verdictDetailPage(ctx: PageContext, v: StoredVerdict): string {
  const r = v.record;
  const why = explainVerdict(v);
  const deviceId = verdictDeviceId(v);
  const hwDevice = r.chipId || r.IMEI || undefined;
  return layout(
    `Verdict ${v.objectId}`,
    ctx,
    html`<article class="verdict verdict-${r.verdict}">
  <p class="big">${verdictBadge(r.verdict)} <span>${r.status}</span></p>
  <h2>Why</h2>
  <p>${why.sentence}</p>
  <p class="rule-ref"><small>Rule: <code>${why.rule}</code>${why.sentence !== v.reason ? html` · as the API says it: <span class="wrap">${v.reason}</span>` : ""}</small></p>
</article>
<h2>The verdict record</h2>
<dl class="facts">
  <dt>Time (UTC)</dt><dd>${when(v.createdAt)}</dd>
  <dt>Format</dt><dd>${v.format}</dd>
  <dt>Device</dt><dd>${deviceId ? html`deviceId <a href="${withQuery(`/portal/devices/${encodeURIComponent(deviceId)}`, { tenant: ctx.tenant })}"><code>${deviceId}</code></a> ` : ""}${r.chipId ? html`chipId <code>${r.chipId}</code>` : ""} ${r.IMEI ? html`IMEI <code>${r.IMEI}</code>` : ""} ${r.MAC ? html`MAC <code>${r.MAC}</code>` : ""}${!deviceId && !r.chipId && !r.IMEI && !r.MAC ? "—" : ""}</dd>
  <dt>Tamper bit</dt><dd>${r.tamperBit || "—"}</dd>
  <dt>Version</dt><dd>${r.version || "—"}</dd>
  <dt>Measurements</dt><dd><code class="wrap">${r.measurements || "—"}</code></dd>
  <dt>Nonce</dt><dd><code class="wrap">${r.nonce}</code></dd>
</dl>
<p>${deviceId ? html`<a href="${withQuery(`/portal/devices/${encodeURIComponent(deviceId)}`, { tenant: ctx.tenant })}">The attested device ${deviceId}: its history and pin</a> · ` : ""}<a href="${withQuery("/portal/verdicts", { device: hwDevice, tenant: ctx.tenant })}">${hwDevice ? "Every verdict of this chipId or IMEI" : "Every verdict"}</a></p>
<h2>What the attestation said</h2>
<div class="attestation">${readable(v.detail)}</div>
<details><summary>As JSON</summary>
<pre tabindex="0">${JSON.stringify({ record: v.record, detail: v.detail }, null, 2)}</pre>
</details>`,
    "/portal/verdicts",
  );
}

/** Links to the newer and the older page, when there are any; the filters stay in them. */
function pager(path: string, q: Record<string, string | number | undefined>, page: { next?: string; prev?: string }, what: string): Html | string {
  if (!page.next && !page.prev) return "";
  return html`<nav class="pager" aria-label="Pages of ${what}"><ul>
  <li>${page.prev ? html`<a href="${withQuery(path, { ...q, before: page.prev })}" rel="prev">← Newer ${what}</a>` : html`<span class="muted">Newest ${what} shown</span>`}</li>
  <li>${page.next ? html`<a href="${withQuery(path, { ...q, after: page.next })}" rel="next">Older ${what} →</a>` : html`<span class="muted">Oldest ${what} shown</span>`}</li>
</ul></nav>`;
}

export function activityPage(ctx: PageContext, f: ActivityView, page: ActivityPage, keys: readonly ApiKeySummary[]): string {
  const filtered = Object.entries(f).some(([k, x]) => x !== undefined && x !== "" && !(k === "kind" && x === "api"));
  const keyLabels = new Map(keys.map((k) => [k.keyId, k.label ? `${k.label} (${k.keyId})` : k.keyId]));
  const kind = f.kind ?? "api";
  const q = { ...f, tenant: ctx.tenant };
  return layout(
    "Activity log",
    ctx,
    html`<p class="lead">Every request made to the APIs with this tenant's keys and clients, newest first. An error answer carries an
<strong>error id</strong> (the <code>X-Error-Id</code> header, and <code>errorId</code> in enrollment and admin API bodies): paste it below to find the request.</p>
<form method="get" action="/portal/activity" class="filters" aria-label="Filter the activity log">
  ${hiddenTenant(ctx)}
  <label>Error id <input name="errorId" value="${f.errorId ?? ""}" maxlength="64" spellcheck="false" autocomplete="off"></label>
  <label>Show <select name="kind">${ACTIVITY_KINDS.map((k) => html`<option value="${k}" ${kind === k ? html`selected` : ""}>${KIND_LABELS[k]}</option>`)}</select></label>
  <label>Status <input name="status" inputmode="numeric" pattern="[1-5][0-9][0-9]" value="${f.status ?? ""}" maxlength="3" placeholder="400" title="an HTTP status, 100 to 599"></label>
  <label>Code <input name="code" value="${f.code ?? ""}" maxlength="64" placeholder="4000006"></label>
  <label>Route <input name="route" value="${f.route ?? ""}" maxlength="200" placeholder="/v2/blobs"></label>
  ${keys.length
    ? html`<label>API key <select name="key"><option value="">any</option>${keys.map((k) => html`<option value="${k.keyId}" ${f.key === k.keyId ? html`selected` : ""}>${keyLabels.get(k.keyId)}${k.revokedAt ? " — revoked" : ""}</option>`)}${f.key && !keyLabels.has(f.key) ? html`<option value="${f.key}" selected>${f.key}</option>` : ""}</select></label>`
    : html`<label>API key or client id <input name="key" value="${f.key ?? ""}" maxlength="64" spellcheck="false"></label>`}
  ${timeFields(f)}
  <div class="filter-actions"><button type="submit">Filter</button>${filtered ? html` <a href="${withQuery("/portal/activity", { tenant: ctx.tenant })}">Clear filters</a>` : ""}</div>
</form>
${f.errorId && page.items.length === 0
  ? html`<p class="notice" role="status">No request of this tenant answered with error id <code>${f.errorId}</code>. The log is written within a second of the answer.
A request that named no valid API key belongs to no tenant, and an id from another tenant's request is not shown: the operator finds both (<code>attestd activity --error-id ${f.errorId}</code>).</p>`
  : ""}
<div class="stack">${table(`${KIND_LABELS[kind]}, newest first`, ACTIVITY_HEAD, activityRows(page.items, ctx, keyLabels))}</div>
${pager("/portal/activity", q, page, "requests")}`,
    "/portal/activity",
  );
}
