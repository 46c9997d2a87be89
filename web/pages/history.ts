import type { AppraisalStatus, BlobFormatName } from "../../src/attestation/types.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { isoTime, type ActivityView, type VerdictFilter } from "../../src/portal/history.ts";
import type { StoredActivityEntry } from "../../src/store/types.ts";
import { html, type Html } from "../html.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

function activityRows(items: StoredActivityEntry[], ctx: PageContext): Html[] {
  return items.map(
    (e) => html`<tr>
  <td class="nowrap">${when(e.time)}</td><td>${e.method}</td><td>${e.route}</td><td>${e.status}</td><td>${e.code ?? ""}</td>
  <td>${e.errorId ? html`<a href="${withQuery("/portal/activity", { errorId: e.errorId, tenant: ctx.tenant })}">${e.errorId}</a>` : ""}</td>
  <td>${e.latencyMs}</td><td>${e.remoteAddress}</td>
</tr>`,
  );
}

const ACTIVITY_HEAD = ["Time (UTC)", "Method", "Route", "Status", "Code", "Error id", "Latency (ms)", "Address"];

/** Every status and format a verdict can have (the compiler checks none is missing), for the filters' menus. */
const STATUSES = ["Success", "DeviceError", "CertificateInvalid", "SignatureInvalid", "NonceMismatch", "Revoked"] as const;
const FORMATS = ["vendor", "android-key", "play-integrity", "app-attest"] as const;
type Exhaustive<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : never;
const listed: [Exhaustive<AppraisalStatus, (typeof STATUSES)[number]>, Exhaustive<BlobFormatName, (typeof FORMATS)[number]>] = [true, true];
void listed;

function option(value: string, current: string | undefined): Html {
  return html`<option value="${value}" ${(current ?? "") === value ? html`selected` : ""}>${value || "any"}</option>`;
}

/** a time filter as a datetime-local field shows it (UTC, to the minute) */
const localValue = (s: string | undefined) => (s ? isoTime(s).slice(0, 16) : "");

function timeFields(f: { from?: string | undefined; to?: string | undefined }): Html {
  return html`<label>From (UTC) <input type="datetime-local" name="from" value="${localValue(f.from)}"></label>
  <label>To (UTC, not included) <input type="datetime-local" name="to" value="${localValue(f.to)}"></label>`;
}

export function verdictsPage(ctx: PageContext, f: VerdictFilter, items: StoredVerdict[], next: string | undefined): string {
  const rows = items.map(
    (v) => html`<tr>
  <td class="nowrap">${when(v.createdAt)}</td><td>${v.record.verdict}</td><td>${v.record.status}</td><td class="nowrap">${v.format}</td>
  <td>${v.record.chipId || v.record.IMEI}</td>
  <td><a href="${withQuery(`/portal/verdicts/${encodeURIComponent(v.objectId)}`, { tenant: ctx.tenant })}">${v.objectId}</a></td>
</tr>`,
  );
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
${table("Verdicts, newest first", ["Time (UTC)", "Verdict", "Status", "Format", "Device", "Object id"], rows)}
${next ? html`<p><a href="${withQuery("/portal/verdicts", { ...f, tenant: ctx.tenant, after: next })}">Older verdicts</a></p>` : ""}`,
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
  return layout(
    `Verdict ${v.objectId}`,
    ctx,
    html`<article class="verdict verdict-${r.verdict}">
  <p class="big"><strong>${r.verdict}</strong> · ${r.status}</p>
  <h2>The rule that decided</h2>
  <p class="wrap">${v.reason}</p>
</article>
<h2>The verdict record</h2>
<dl class="facts">
  <dt>Time (UTC)</dt><dd>${when(v.createdAt)}</dd>
  <dt>Format</dt><dd>${v.format}</dd>
  <dt>Device</dt><dd>${r.chipId ? html`chipId <code>${r.chipId}</code>` : ""} ${r.IMEI ? html`IMEI <code>${r.IMEI}</code>` : ""} ${r.MAC ? html`MAC <code>${r.MAC}</code>` : ""}</dd>
  <dt>Tamper bit</dt><dd>${r.tamperBit || "—"}</dd>
  <dt>Version</dt><dd>${r.version || "—"}</dd>
  <dt>Measurements</dt><dd><code class="wrap">${r.measurements || "—"}</code></dd>
  <dt>Nonce</dt><dd><code class="wrap">${r.nonce}</code></dd>
</dl>
<p><a href="${withQuery("/portal/verdicts", { device: r.chipId || r.IMEI || undefined, tenant: ctx.tenant })}">${r.chipId || r.IMEI ? "Every verdict of this device" : "Every verdict"}</a></p>
<h2>What the attestation said</h2>
<div class="attestation">${readable(v.detail)}</div>
<details><summary>As JSON</summary>
<pre tabindex="0">${JSON.stringify({ record: v.record, detail: v.detail }, null, 2)}</pre>
</details>`,
    "/portal/verdicts",
  );
}

export function activityPage(ctx: PageContext, f: ActivityView, items: StoredActivityEntry[], next: string | undefined): string {
  const filtered = Object.values(f).some((x) => x !== undefined && x !== "");
  return layout(
    "Activity log",
    ctx,
    html`<form method="get" action="/portal/activity" class="filters" aria-label="Filter the activity log">
  ${hiddenTenant(ctx)}
  <label>Error id <input name="errorId" value="${f.errorId ?? ""}" maxlength="64" spellcheck="false"></label>
  <label>Status <input name="status" inputmode="numeric" pattern="[1-5][0-9][0-9]" value="${f.status ?? ""}" maxlength="3"></label>
  <label>Code <input name="code" value="${f.code ?? ""}" maxlength="64"></label>
  <label>Route <input name="route" value="${f.route ?? ""}" maxlength="200" placeholder="/v2/blobs"></label>
  ${timeFields(f)}
  <div class="filter-actions"><button type="submit">Filter</button>${filtered ? html` <a href="${withQuery("/portal/activity", { tenant: ctx.tenant })}">Clear filters</a>` : ""}</div>
</form>
${f.errorId && items.length === 0 ? html`<p>No request of this tenant answered with error id <code>${f.errorId}</code>. The log is written within a second of the answer; an id from another tenant's request is not shown.</p>` : ""}
${table("Requests, newest first", ACTIVITY_HEAD, activityRows(items, ctx))}
${next ? html`<p><a href="${withQuery("/portal/activity", { ...f, tenant: ctx.tenant, after: next })}">Older requests</a></p>` : ""}`,
    "/portal/activity",
  );
}
