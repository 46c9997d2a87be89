import type { SsoMappingView } from "../../src/portal/ssoMappings.ts";
import { html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

export interface SsoPageData {
  mappings: SsoMappingView[];
  /** the deployment's provider (--sso-issuer, --sso-name); undefined when single sign-on is not configured */
  provider: { name: string; issuer: string; claims: boolean } | undefined;
  /** every tenant's name, for the form's choice */
  tenants: string[];
}

/**
 * Operators' single sign-on (docs/sso.md): which provider the deployment signs people in with, the operators'
 * mappings of a provider subject or a verified email to a tenant and role, a form that adds or replaces one (the
 * tenant the operator is looking at chosen first), and "Remove" for each. The same SsoMappings service as `attestd sso map|unmap|list` and /portal/api/sso/mappings.
 */
export function ssoPage(ctx: PageContext, d: SsoPageData): string {
  const rows = d.mappings.map((m) => {
    const what = `${m.kind} ${m.value}`;
    return html`<tr>
  <td>${m.kind === "subject" ? "subject" : "verified email"}</td>
  <td class="wrap"><code>${m.value}</code></td>
  <td><a href="${withQuery("/portal/users", { tenant: m.tenant })}">${m.tenant}</a></td>
  <td>${m.role}</td>
  <td class="nowrap">${when(m.createdAt)}</td>
  <td><button type="button" class="secondary" data-api="/portal/api/sso/mappings/${m.kind}/${encodeURIComponent(m.value)}" data-method="DELETE" data-success="Mapping of ${what} removed."
    data-confirm="Remove the mapping of ${what}? Their next sign-in through the provider is refused unless another mapping applies." aria-label="Remove the mapping of ${what}">Remove</button></td>
</tr>`;
  });
  const provider = d.provider
    ? html`<p>People sign in with <strong>${d.provider.name}</strong> (<code>${d.provider.issuer}</code>). At each sign-in the
  first that applies decides their tenant and role: a mapping of their subject below, then of their email (only when the
  provider says it is verified), then ${d.provider.claims ? "the ID token's tenant and role claims (the --sso-* flags)" : "nothing: no claims are mapped (--sso-tenant-claim is not set)"}.
  Operators are never signed in this way.</p>`
    : html`<p><strong>Single sign-on is not configured</strong> on this deployment (<code>--sso-issuer</code>, docs/sso.md). Mappings
  made here are kept and apply once it is.</p>`;
  return layout(
    "Single sign-on",
    ctx,
    html`${provider}
<article aria-labelledby="map-h">
<h2 id="map-h">Map a person</h2>
<form data-api="/portal/api/sso/mappings" data-method="PUT" data-success="Mapping saved: it applies from the person's next sign-in." aria-label="Map a provider identity to a tenant and role">
  <div class="grid">
    <label>By <select name="kind" aria-describedby="kind-help"><option value="email">verified email</option><option value="subject">subject (sub)</option></select></label>
    <label>Email or subject <input name="value" required maxlength="255" spellcheck="false" autocomplete="off" placeholder="ada@acme.example"></label>
  </div>
  <small id="kind-help">The subject is the provider's own id for the person (the ID token's <code>sub</code>), never reassigned; an email mapping is used only when the provider says the email is verified. A mapping of the same subject or email is replaced.</small>
  <div class="grid">
    <label>Tenant <select name="tenant" required>${d.tenants.map((t) => html`<option value="${t}" ${t === ctx.tenant ? html`selected` : ""}>${t}</option>`)}</select></label>
    <label>Role <select name="role"><option value="viewer">viewer</option><option value="admin">admin</option></select></label>
  </div>
  <button type="submit">Save mapping</button>
</form>
</article>
${table("Mappings", ["By", "Email or subject", "Tenant", "Role", "Since (UTC)", "Action"], rows)}
<p class="muted">The same as <code>attestd sso map</code>, <code>attestd sso unmap</code> and <code>attestd sso list</code>. Each change is in the audit trail.</p>`,
    "/portal/sso",
  );
}
