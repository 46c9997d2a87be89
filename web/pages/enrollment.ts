import type { DeviceEntry, EnrollTransaction, Profile } from "../../src/domain/enrollment.ts";
import type { AppError } from "../../src/errors/AppError.ts";
import type { NumberedPage } from "../../src/enrollment/paging.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import { html, type Html } from "../html.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";
import { standingNotice } from "./clients.ts";
import { when } from "../time.ts";

type Query = Record<string, string | number | undefined>;

const VIEWS = [
  { href: "/portal/enrollment", label: "Profiles" },
  { href: "/portal/enrollment/transactions", label: "Transactions" },
  { href: "/portal/enrollment/devices", label: "Devices" },
];

function views(ctx: PageContext, active: string): Html {
  return html`<nav aria-label="Enrollment views" class="subnav"><ul>${VIEWS.map(
    (v) => html`<li><a href="${withQuery(v.href, { tenant: ctx.tenant })}" ${v.href === active ? html`aria-current="page"` : ""}>${v.label}</a></li>`,
  )}</ul></nav>`;
}

/** "Page 2 of 7" with links that keep every filter (Part B's 0-based page numbers in the URL). */
function pager(path: string, q: Query, p: NumberedPage<unknown>): Html | string {
  if (p.totalPages <= 1) return "";
  const link = (page: number, label: string, rel: string) => html`<a href="${withQuery(path, { ...q, page: page || undefined })}" rel="${rel}">${label}</a>`;
  return html`<nav aria-label="Pages" class="pager"><p>
  ${p.page > 0 ? link(p.page - 1, "Previous page", "prev") : ""}
  <span>Page ${p.page + 1} of ${p.totalPages} (${p.total} in all)</span>
  ${p.page + 1 < p.totalPages ? link(p.page + 1, "Next page", "next") : ""}
</p></nav>`;
}

function page(title: string, ctx: PageContext, tenant: Pick<Tenant, "name" | "kind">, refusal: AppError | undefined, active: string, body: Html): string {
  return layout(title, ctx, html`${standingNotice(tenant, refusal)}${views(ctx, active)}${body}`, "/portal/enrollment");
}

const option = (value: string, current: string | undefined) =>
  html`<option value="${value}" ${(current ?? "") === value ? html`selected` : ""}>${value || "any"}</option>`;

export function enrollmentProfilesPage(ctx: PageContext, tenant: Pick<Tenant, "name" | "kind">, refusal: AppError | undefined, p: NumberedPage<Profile>): string {
  const link = (path: string, q: Query) => withQuery(path, { tenant: ctx.tenant, ...q });
  const rows = p.items.map(
    (pr) => html`<tr>
  <td><a href="${link(`/portal/enrollment/profiles/${encodeURIComponent(pr.profileId)}`, {})}">${pr.name}</a></td>
  <td><code>${pr.profileId}</code></td><td>${pr.mdmUrl ?? ""}</td>
  <td>${when(pr.updatedAt)}</td>
  <td><a href="${link("/portal/enrollment/transactions", { profileId: pr.profileId })}">transactions</a>
    · <a href="${link("/portal/enrollment/devices", { profileId: pr.profileId })}">devices</a></td>
</tr>`,
  );
  return page(
    "Enrollment",
    ctx,
    tenant,
    refusal,
    "/portal/enrollment",
    html`<p>Bulk-enrollment profiles, as the enrollment API (<code>/svc/v1/enroll/profiles</code>) serves them; clients
  create and change them.</p>
${table("Profiles, newest first", ["Name", "Profile id", "MDM URL", "Updated (UTC)", "Records"], rows)}
${pager("/portal/enrollment", { tenant: ctx.tenant }, p)}`,
  );
}

export interface TransactionFilterView {
  type?: string | undefined;
  state?: string | undefined;
  profileId?: string | undefined;
}

export function enrollmentTransactionsPage(
  ctx: PageContext,
  tenant: Pick<Tenant, "name" | "kind">,
  refusal: AppError | undefined,
  f: TransactionFilterView,
  p: NumberedPage<EnrollTransaction>,
): string {
  const link = (path: string, q: Query) => withQuery(path, { tenant: ctx.tenant, ...q });
  const rows = p.items.map(
    (t) => html`<tr>
  <td>${when(t.createdAt)}</td>
  <td class="id">${t.kind === "devices" ? html`<a href="${link("/portal/enrollment/devices", { transactionId: t.transactionId })}" title="its devices">${t.transactionId}</a>` : t.transactionId}</td>
  <td>${t.kind === "devices" ? "device upload" : "profile change"}</td><td>${t.type}</td><td>${t.state}</td>
  <td><a href="${link(`/portal/enrollment/profiles/${encodeURIComponent(t.profileId)}`, {})}">${t.profileName}</a></td>
  <td>${when(t.updatedAt)}</td>
</tr>`,
  );
  const filter = { type: f.type || undefined, state: f.state || undefined, profileId: f.profileId || undefined };
  return page(
    "Enrollment transactions",
    ctx,
    tenant,
    refusal,
    "/portal/enrollment/transactions",
    html`<form method="get" action="/portal/enrollment/transactions" class="filters" aria-label="Filter transactions">
  ${hiddenTenant(ctx)}
  <label>Type <select name="type">${["", "Post", "Put", "Delete"].map((v) => option(v, f.type))}</select></label>
  <label>State <select name="state">${["", "Processing", "Complete", "Failed"].map((v) => option(v, f.state))}</select></label>
  <label>Profile id <input name="profileId" value="${f.profileId ?? ""}" maxlength="64"></label>
  <button type="submit">Filter</button>
</form>
${table("Transactions, newest first", ["Time (UTC)", "Transaction id", "What", "Type", "State", "Profile", "Updated (UTC)"], rows)}
${pager("/portal/enrollment/transactions", { tenant: ctx.tenant, ...filter }, p)}`,
  );
}

export interface DeviceFilterView {
  transactionId?: string | undefined;
  profileId?: string | undefined;
}

export function enrollmentDevicesPage(
  ctx: PageContext,
  tenant: Pick<Tenant, "name" | "kind">,
  refusal: AppError | undefined,
  f: DeviceFilterView,
  p: NumberedPage<DeviceEntry> & { processing: number },
): string {
  const rows = p.items.map(
    (d) => html`<tr>
  <td><code>${d.deviceId}</code></td><td>${d.state}</td>
  <td class="id">${d.profileId ? html`<a href="${withQuery(`/portal/enrollment/profiles/${encodeURIComponent(d.profileId)}`, { tenant: ctx.tenant })}">${d.profileId}</a>` : "none"}</td>
  <td>${when(d.updatedAt)}</td>
  <td>${d.error ? html`<code>${d.error.code} ${d.error.message}</code> ${d.error.reason}` : ""}</td>
</tr>`,
  );
  const filter = { transactionId: f.transactionId || undefined, profileId: f.profileId || undefined };
  return page(
    "Enrolled devices",
    ctx,
    tenant,
    refusal,
    "/portal/enrollment/devices",
    html`<form method="get" action="/portal/enrollment/devices" class="filters" aria-label="Filter devices">
  ${hiddenTenant(ctx)}
  <label>Transaction id (one upload) <input name="transactionId" value="${f.transactionId ?? ""}" maxlength="64"></label>
  <label>Profile id <input name="profileId" value="${f.profileId ?? ""}" maxlength="64"></label>
  <button type="submit">Filter</button>
</form>
<p>${p.total} device(s)${p.processing ? html`, <strong>${p.processing} still processing</strong>` : ""}.</p>
${table(f.transactionId ? "The upload's devices, in request order" : "Devices, by device id", ["Device id", "State", "Profile", "Updated (UTC)", "Error"], rows)}
${pager("/portal/enrollment/devices", { tenant: ctx.tenant, ...filter }, p)}`,
  );
}

export function enrollmentProfilePage(ctx: PageContext, pr: Profile): string {
  const link = (path: string) => withQuery(path, { tenant: ctx.tenant, profileId: pr.profileId });
  return layout(
    `Profile ${pr.name}`,
    ctx,
    html`<dl>
  <dt>Profile id</dt><dd><code>${pr.profileId}</code></dd>
  <dt>Description</dt><dd>${pr.description ?? "none"}</dd>
  <dt>MDM URL</dt><dd>${pr.mdmUrl ?? "none"}</dd>
  <dt>Created (UTC)</dt><dd>${when(pr.createdAt)}</dd>
  <dt>Updated (UTC)</dt><dd>${when(pr.updatedAt)}</dd>
</dl>
<h2>Settings</h2>
<pre tabindex="0">${pr.settings ? JSON.stringify(pr.settings, null, 2) : "none"}</pre>
<p><a href="${link("/portal/enrollment/transactions")}">Its transactions</a> · <a href="${link("/portal/enrollment/devices")}">Its devices</a></p>`,
    "/portal/enrollment",
  );
}
