import type { AuditRecord } from "../../src/domain/audit.ts";
import type { AuditView } from "../../src/services/auditReader.ts";
import { html, type Html } from "../html.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

/** who made a change, as a person reads it: a person's email, an API client's id, the operator's OS user */
function actorCell(r: AuditRecord): Html {
  const a = r.actor;
  if (a.kind === "user") return html`${a.email} <small class="muted">portal user</small>`;
  if (a.kind === "api-client") return html`<code>${a.id}</code> <small class="muted">API client</small>`;
  if (a.kind === "operator") return html`${a.id} <small class="muted">operator (CLI)</small>`;
  return html`<span class="muted">attestd (${a.id})</span>`;
}

function fromCell(r: AuditRecord): Html {
  const f = r.from;
  if (f.kind === "http") return html`${f.remoteAddress}${f.userAgent ? html`<br><small class="muted">${f.userAgent}</small>` : ""}`;
  if (f.kind === "cli") return html`CLI on ${f.hostname}`;
  return html`<span class="muted">attestd</span>`;
}

/** before → after, as compact JSON (secrets were removed before the record was written) */
function changeCell(r: AuditRecord): Html {
  const show = (v: unknown) => (v === null || v === undefined ? html`<span class="muted">—</span>` : html`<code class="json">${JSON.stringify(v)}</code>`);
  return html`<details><summary>before / after</summary><div><strong>Before</strong> ${show(r.before)}</div><div><strong>After</strong> ${show(r.after)}</div></details>`;
}

const HEAD = ["Time (UTC)", "Action", "Target", "Who", "From", { label: "Change", secondary: true }];

/** The portal's Audit trail page: every change of state, newest first, filtered as the admin API filters it. */
export function auditPage(ctx: PageContext, v: AuditView, page: { items: AuditRecord[]; next?: string }): string {
  const filtered = Object.values(v).some((x) => x !== undefined && x !== "");
  const q = { ...v, tenant: ctx.tenant };
  const rows = page.items.map(
    (r) => html`<tr>
  <td class="nowrap" data-label="Time (UTC)">${when(r.time)}</td>
  <td data-label="Action"><a href="${withQuery("/portal/audit", { ...q, action: r.action })}"><code>${r.action}</code></a></td>
  <td data-label="Target">${r.target.kind} <a class="id" href="${withQuery("/portal/audit", { ...q, target: `${r.target.kind}:${r.target.id}` })}">${r.target.id}</a></td>
  <td data-label="Who">${actorCell(r)}</td>
  <td data-label="From">${fromCell(r)}</td>
  <td data-label="Change">${changeCell(r)}</td>
</tr>`,
  );
  return layout(
    "Audit trail",
    ctx,
    html`<p class="lead">Every change made to this tenant's settings — from the portal, the admin API, Part B's API clients or an operator's
<code>attestd</code> command — with who made it, from where, and the record before and after. Secrets are never kept here.</p>
<form method="get" action="/portal/audit" class="filters" aria-label="Filter the audit trail">
  ${hiddenTenant(ctx)}
  <label>Action <input name="action" value="${v.action ?? ""}" maxlength="100" placeholder="key.revoked or key.*" spellcheck="false"></label>
  <label>Who <input name="actor" value="${v.actor ?? ""}" maxlength="200" placeholder="user, operator or an id" spellcheck="false"></label>
  <label>Target <input name="target" value="${v.target ?? ""}" maxlength="300" placeholder="api-key or api-key:ID" spellcheck="false"></label>
  <label>From (UTC) <input name="from" value="${v.from ?? ""}" placeholder="2026-11-26" maxlength="40" spellcheck="false" autocomplete="off"></label>
  <label>To (UTC, not included) <input name="to" value="${v.to ?? ""}" placeholder="2026-11-27" maxlength="40" spellcheck="false" autocomplete="off"></label>
  <div class="filter-actions"><button type="submit">Filter</button>${filtered ? html` <a href="${withQuery("/portal/audit", { tenant: ctx.tenant })}">Clear filters</a>` : ""}
  <a href="${withQuery("/portal/api/audit/export", q)}" download>Export (JSON lines)</a></div>
</form>
<div class="stack">${table("Changes, newest first", HEAD, rows)}</div>
${page.next ? html`<nav class="pager" aria-label="Pages of changes"><ul><li><a href="${withQuery("/portal/audit", { ...q, after: page.next })}" rel="next">Older changes →</a></li></ul></nav>` : ""}`,
    "/portal/audit",
  );
}
