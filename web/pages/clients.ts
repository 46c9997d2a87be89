import type { ClientView } from "../../src/enrollment/clients.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { AppError } from "../../src/errors/AppError.ts";
import { html, type Html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

/**
 * Why a tenant's Part B clients are refused whatever their credentials (blocked, inactive, a reseller not enabled
 * for enrollment), in the words and code the API answers them with, and what would change it. Shown on the
 * Enrollment clients and Enrollment pages, so an empty or failing page explains itself.
 */
export function standingNotice(tenant: Pick<Tenant, "name" | "kind">, refusal: AppError | undefined): Html | string {
  if (!refusal) return "";
  const fix =
    tenant.kind === "reseller" && refusal.entry.key === "RESELLER_BLOCKED"
      ? html`An operator enables enrollment for a reseller on the Tenants page, or with <code>attestd tenant enable-enrollment ${tenant.name}</code>.`
      : html`An operator changes the tenant's state on the Tenants page, or with <code>attestd tenant set-state ${tenant.name} active</code>.`;
  return html`<article class="standing" aria-labelledby="standing-h">
  <h2 id="standing-h">Enrollment is not available to this tenant</h2>
  <p><strong>${refusal.reason}.</strong> Until then every request of the tenant's enrollment clients is refused with
    <code>${refusal.entry.status} ${refusal.entry.code} ${refusal.entry.message}</code>, and no client is created here. ${fix}</p>
</article>`;
}

const STATE_LABEL: Record<ClientView["state"], string> = {
  active: "active",
  revoked: "revoked",
  "user-deregistered": "user deregistered (refused)",
};

export function clientsPage(ctx: PageContext, tenant: Tenant, clients: ClientView[], refusal: AppError | undefined, canWrite: boolean): string {
  const api = (path: string) => withQuery(path, { tenant: ctx.tenant });
  const rows = clients.map(
    (c) => html`<tr>
  <td><code>${c.clientId}</code>${
    c.restrictions ? html`<br><small>only from ${[...c.restrictions.ipAddresses, ...c.restrictions.referers].join(", ")}</small>` : ""
  }</td>
  <td>${c.email}</td><td>${c.readOnly ? "read-only" : "read and write"}</td>
  <td>${c.rps} / ${c.burst}</td>
  <td>${when(c.createdAt)}</td>
  <td>${c.state === "revoked" ? html`revoked ${when(c.revokedAt!)}` : STATE_LABEL[c.state]}</td>
  <td class="actions">${
    canWrite && c.state !== "revoked"
      ? html`<button type="button" class="secondary outline" data-api="${api(`/portal/api/clients/${c.clientId}`)}" data-method="PATCH"
    data-body="${JSON.stringify({ readOnly: !c.readOnly })}" data-success="Client ${c.clientId} ${c.readOnly ? "may write again" : "is read-only now"}.">${c.readOnly ? "Allow writes" : "Make read-only"}</button>
<button type="button" class="secondary" data-api="${api(`/portal/api/clients/${c.clientId}`)}" data-method="DELETE" data-success="Client ${c.clientId} revoked."
    data-confirm="Revoke client ${c.clientId} of ${c.email}? Its access tokens stop working at once and it cannot get new ones.">Revoke</button>`
      : ""
  }</td>
</tr>`,
  );
  const create =
    canWrite && !refusal
      ? html`<details ${clients.length === 0 ? html`open` : ""}>
  <summary role="button" class="outline">Create a client</summary>
  <form data-api="${api("/portal/api/clients")}" data-method="POST" data-download="keysJson" data-download-name="keys.json" aria-label="Create an enrollment client">
    <label>Email of the user it acts for (registered if new) <input type="email" name="email" required maxlength="254" autocomplete="off"></label>
    <div class="grid">
      <label>Requests per second (default 10) <input type="number" name="rps" min="0.001" step="any" inputmode="decimal"></label>
      <label>Burst (default 20, or twice the rate) <input type="number" name="burst" min="1" step="1" inputmode="numeric"></label>
    </div>
    <label><input type="checkbox" name="readOnly" role="switch"> Read-only: GET requests only</label>
    <button type="submit">Create client and download keys.json</button>
  </form>
</details>
<article id="download-done" hidden aria-labelledby="download-done-h">
  <h2 id="download-done-h">keys.json downloaded</h2>
  <p>It holds the client's private key and identifier and is their only copy: attestd keeps the public key and a hash
    of the identifier, and cannot show them again. Store the file where the client runs.
    <a href="${withQuery("/portal/clients", { tenant: ctx.tenant })}">Show the client in the list</a>.</p>
</article>`
      : "";
  return layout(
    "Enrollment clients",
    ctx,
    html`${standingNotice(tenant, refusal)}
<p>The tenant's clients of the enrollment API (Part B). Each signs its requests with the key pair in its
  <code>keys.json</code>; see <a href="/docs">the API documentation</a>.</p>
${create}
${table("Enrollment clients", ["Client id", "User", "Access", "Requests/s / burst", "Created (UTC)", "State", "Actions"], rows)}`,
    "/portal/clients",
  );
}
