import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import type { ActivityView, VerdictFilter } from "../../src/portal/history.ts";
import type { StoredActivityEntry } from "../../src/store/types.ts";
import { html, type Html } from "../html.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";

function activityRows(items: StoredActivityEntry[], ctx: PageContext): Html[] {
  return items.map(
    (e) => html`<tr>
  <td><time datetime="${e.time}">${e.time}</time></td><td>${e.method}</td><td>${e.route}</td><td>${e.status}</td><td>${e.code ?? ""}</td>
  <td>${e.errorId ? html`<a href="${withQuery("/portal/activity", { errorId: e.errorId, tenant: ctx.tenant })}">${e.errorId}</a>` : ""}</td>
  <td>${e.latencyMs}</td><td>${e.remoteAddress}</td>
</tr>`,
  );
}

const ACTIVITY_HEAD = ["Time", "Method", "Route", "Status", "Code", "Error id", "Latency (ms)", "Address"];

export function overviewPage(ctx: PageContext, recent: StoredVerdict[], failures: StoredActivityEntry[]): string {
  const counts = { Yes: 0, No: 0, Unknown: 0 };
  for (const v of recent) counts[v.record.verdict]++;
  return layout(
    "Overview",
    ctx,
    html`<section aria-labelledby="recent-h">
  <h2 id="recent-h">The last ${recent.length} verdicts</h2>
  <ul class="counts">
    ${(["Yes", "No", "Unknown"] as const).map(
      (v) => html`<li><a href="${withQuery("/portal/verdicts", { verdict: v, tenant: ctx.tenant })}">${v}: <strong>${counts[v]}</strong></a></li>`,
    )}
  </ul>
</section>
<section aria-labelledby="failed-h">
  <h2 id="failed-h">Recent failed requests</h2>
  ${table("Recent failed requests", ACTIVITY_HEAD, activityRows(failures, ctx))}
</section>`,
    "/portal/",
  );
}

export function verdictsPage(ctx: PageContext, f: VerdictFilter, items: StoredVerdict[], next: string | undefined): string {
  const option = (value: string, current: string | undefined) =>
    html`<option value="${value}" ${(current ?? "") === value ? html`selected` : ""}>${value || "any"}</option>`;
  const rows = items.map(
    (v) => html`<tr>
  <td><time datetime="${v.createdAt}">${v.createdAt}</time></td><td>${v.record.verdict}</td><td>${v.record.status}</td><td>${v.format}</td>
  <td>${v.record.chipId || v.record.IMEI}</td>
  <td><a href="${withQuery(`/portal/verdicts/${encodeURIComponent(v.objectId)}`, { tenant: ctx.tenant })}">${v.objectId}</a></td>
</tr>`,
  );
  return layout(
    "Verdicts",
    ctx,
    html`<form method="get" action="/portal/verdicts" class="filters" aria-label="Filter verdicts">
  ${hiddenTenant(ctx)}
  <label>Verdict <select name="verdict">${["", "Yes", "No", "Unknown"].map((v) => option(v, f.verdict))}</select></label>
  <label>Status <input name="status" value="${f.status ?? ""}" maxlength="64"></label>
  <label>Format <select name="format">${["", "vendor", "android-key"].map((v) => option(v, f.format))}</select></label>
  <label>Device (chipId or IMEI) <input name="device" value="${f.device ?? ""}" maxlength="128"></label>
  <button type="submit">Filter</button>
</form>
${table("Verdicts, newest first", ["Time", "Verdict", "Status", "Format", "Device", "Object id"], rows)}
${next ? html`<p><a href="${withQuery("/portal/verdicts", { ...f, tenant: ctx.tenant, after: next })}">Older verdicts</a></p>` : ""}`,
    "/portal/verdicts",
  );
}

export function verdictDetailPage(ctx: PageContext, v: StoredVerdict): string {
  return layout(
    `Verdict ${v.objectId}`,
    ctx,
    html`<dl>
  <dt>Verdict</dt><dd>${v.record.verdict}</dd>
  <dt>Status</dt><dd>${v.record.status}</dd>
  <dt>The rule that decided</dt><dd>${v.reason}</dd>
  <dt>Format</dt><dd>${v.format}</dd>
  <dt>Time</dt><dd>${v.createdAt}</dd>
</dl>
<h2>The verdict record</h2>
<pre tabindex="0">${JSON.stringify(v.record, null, 2)}</pre>
<h2>What the attestation said</h2>
<pre tabindex="0">${JSON.stringify(v.detail, null, 2)}</pre>`,
    "/portal/verdicts",
  );
}

export function activityPage(ctx: PageContext, f: ActivityView, items: StoredActivityEntry[], next: string | undefined): string {
  return layout(
    "Activity log",
    ctx,
    html`<form method="get" action="/portal/activity" class="filters" aria-label="Filter the activity log">
  ${hiddenTenant(ctx)}
  <label>Error id <input name="errorId" value="${f.errorId ?? ""}" maxlength="64"></label>
  <label>Status <input name="status" inputmode="numeric" value="${f.status ?? ""}" maxlength="3"></label>
  <label>Code <input name="code" value="${f.code ?? ""}" maxlength="64"></label>
  <label>Route <input name="route" value="${f.route ?? ""}" maxlength="200"></label>
  <button type="submit">Filter</button>
</form>
${table("Requests, newest first", ACTIVITY_HEAD, activityRows(items, ctx))}
${next ? html`<p><a href="${withQuery("/portal/activity", { ...f, tenant: ctx.tenant, after: next })}">Older requests</a></p>` : ""}`,
    "/portal/activity",
  );
}
