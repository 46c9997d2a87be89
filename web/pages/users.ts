import type { PeopleFilter, PersonSummary } from "../../src/portal/accounts.ts";
import { html, type Html } from "../html.ts";
import { layout, table, type PageContext } from "../layout.ts";
import { minutes } from "./account.ts";

/**
 * Operators: everyone who signs in, filtered by tenant or to the operators; invite, reset link, change role, disable,
 * enable. A tenant admin: the people of their tenant, and a reset link for each.
 */
/** a `<select>` of the tenants that exist (operators pick one rather than type a name) */
function tenantPicker(name: string, tenants: string[], selected: string | undefined, none: string): Html {
  return html`<select name="${name}"><option value="">${none}</option>${tenants.map(
    (t) => html`<option value="${t}" ${t === selected ? html`selected` : ""}>${t}</option>`,
  )}</select>`;
}

export function usersPage(ctx: PageContext, people: PersonSummary[], f: PeopleFilter, tenants: string[] = []): string {
  const self = ctx.actor!.userId;
  const operator = ctx.actor!.role === "operator";
  const rows = people.map((p) => {
    const api = `/portal/api/users/${encodeURIComponent(p.userId)}`;
    // a secret shown once: into the page's #new-link, like an invitation's
    const reset =
      p.state === "disabled" || p.userId === self
        ? ""
        : html`<form data-api="${api}/reset-link" data-method="POST" data-reveal="new-link:link" class="row-form"
          data-done="Reset link for ${p.email} made. Copy it below now: it is shown once." aria-label="Reset link for ${p.email}">
          <button type="submit" class="secondary">Reset link</button>
        </form>`;
    const role =
      p.role === "operator" || !operator
        ? "operator"
        : html`<form data-api="${api}" data-method="PATCH" data-success="Role of ${p.email} changed." class="row-form" aria-label="Role of ${p.email}">
        <select name="role" aria-label="Role of ${p.email}">
          ${(["admin", "viewer"] as const).map((r) => html`<option value="${r}" ${r === p.role ? html`selected` : ""}>${r}</option>`)}
        </select>
        <button type="submit" class="secondary">Change</button>
      </form>`;
    const action = !operator
      ? reset || (p.userId === self ? "you" : "")
      : p.state === "disabled"
        ? html`<button type="button" class="secondary" data-api="${api}/enable" data-method="POST" data-success="${p.email} may sign in again.">Enable</button>`
        : p.userId === self
          ? "you"
          : html`${reset}<button type="button" class="secondary" data-api="${api}/disable" data-method="POST" data-success="${p.email} disabled; their sessions ended."
          data-confirm="Disable ${p.email}? Every session of theirs ends at once.">Disable</button>`;
    return html`<tr>
  <td data-label="Email">${p.email}</td><td data-label="Tenant">${p.tenant ?? "—"}</td><td data-label="Role">${role}</td>
  <td data-label="State">${p.state}</td><td data-label="Since">${minutes(p.createdAt)}</td><td data-label="Action" class="actions">${action}</td>
</tr>`;
  });
  const caption = f.operators ? "Operators" : f.tenant ? `People of ${f.tenant}` : "Everyone";
  const linkShown = html`<div id="new-link" hidden>
    <p><strong>The link, shown once.</strong> Send it to the person: it works once, for 24 hours, and sets their
    password; any earlier link of theirs no longer works. A reset link also signs them out everywhere when used.</p>
    <p><code id="new-link-value"></code> <button type="button" class="secondary" data-copy="new-link-value">Copy</button></p>
  </div>`;
  if (!operator) {
    return layout(
      "Users",
      ctx,
      html`<p>The people of your tenant. One who forgot their password gets a reset link from you; an operator invites
new people and changes roles.</p>
${linkShown}
<div class="stack">${table(caption, ["Email", "Tenant", "Role", "State", "Since", "Action"], rows)}</div>`,
      "/portal/users",
    );
  }
  return layout(
    "Users",
    ctx,
    html`<form method="get" action="/portal/users" class="filters" aria-label="Filter people">
  <label>Tenant ${tenantPicker("tenant", tenants, f.tenant, "every tenant")}</label>
  <label class="check"><input type="checkbox" name="operators" value="true" ${f.operators ? html`checked` : ""}> Operators only</label>
  <button type="submit">Show</button>
  ${f.tenant || f.operators ? html`<a href="/portal/users">Everyone</a>` : ""}
</form>
<section aria-labelledby="invite-h">
  <h2 id="invite-h">Invite someone</h2>
  <form data-api="/portal/api/users" data-method="POST" data-omit-empty data-reveal="new-link:link"
    data-done="Invited. Copy the link below now: it is shown once." aria-label="Invite someone">
    <div class="grid">
      <label>Email <input type="email" name="email" required maxlength="320"></label>
      <div>
        <label for="invite-role">Role</label>
        <select id="invite-role" name="role">
          <option value="admin">admin</option>
          <option value="viewer">viewer (reads only)</option>
          <option value="operator">operator (all tenants)</option>
        </select>
      </div>
      <label>Tenant (not for operators) ${tenantPicker("tenant", tenants, f.tenant, "— (an operator)")}</label>
    </div>
    <button type="submit" class="auto">Invite</button>
  </form>
  ${linkShown}
</section>
<div class="stack">${table(caption, ["Email", "Tenant", "Role", "State", "Since", "Action"], rows)}</div>`,
    "/portal/users",
  );
}
