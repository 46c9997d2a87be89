import type { ApiKeySummary } from "../../src/services/apiKeyAdmin.ts";
import { KEY_CACHE_MS } from "../../src/services/apiKeyAuth.ts";
import { html, type Html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";
import { curlCommands, type ApiAccess } from "./quickStart.ts";

/** how soon a change reaches the other instances (their key cache), as people read it: "0.5 seconds" */
const BOUND = `${KEY_CACHE_MS / 1000} seconds`;
const limits = (k: ApiKeySummary) => (k.rps ? `${k.rps} / ${k.burst}` : "server default");
const listed = (xs: string[] | undefined) => (xs && xs.length ? xs.join(", ") : "any");

/** An admin's edit of one active key, below the table (a form per row would not fit a phone's width). */
function editForm(ctx: PageContext, k: ApiKeySummary): Html {
  const id = `edit-${k.keyId}`;
  return html`<details class="edit-key">
  <summary>Edit ${k.label ? html`“${k.label}” (<code>${k.keyId}</code>)` : html`<code>${k.keyId}</code>`}</summary>
  <form data-api="${withQuery(`/portal/api/keys/${k.keyId}`, { tenant: ctx.tenant })}" data-method="PATCH" data-success="Key ${k.keyId} saved." aria-label="Edit key ${k.keyId}">
    <label>Label <input name="label" maxlength="100" value="${k.label ?? ""}"></label>
    <div class="grid">
      <label>Requests per second (0: the server's default) <input name="rps" type="number" min="0" step="any" value="${k.rps}"></label>
      <label>Burst (0: twice the rps) <input name="burst" type="number" min="0" step="1" value="${k.burst}"></label>
    </div>
    <label>IP addresses or CIDR blocks it may be used from (empty: any)
      <textarea name="ipAddresses" data-list rows="2" spellcheck="false" aria-describedby="${id}-ip" placeholder="203.0.113.0/24, 2001:db8::/32">${(k.restrictions?.ipAddresses ?? []).join("\n")}</textarea></label>
    <small id="${id}-ip">One per line or comma-separated.</small>
    <label>Referers it may be used from (empty: any)
      <textarea name="referers" data-list rows="2" spellcheck="false" aria-describedby="${id}-ref" placeholder="https://*.example.com/*">${(k.restrictions?.referers ?? []).join("\n")}</textarea></label>
    <small id="${id}-ref"><code>*</code> matches any run of characters. A Referer is sent by browsers and can be forged by others: the IP list is the restriction that holds.</small>
    <button type="submit">Save key ${k.keyId}</button>
  </form>
</details>`;
}

export function keysPage(ctx: PageContext, keys: ApiKeySummary[], canWrite: boolean, api: ApiAccess): string {
  const rows = keys.map(
    (k) => html`<tr>
  <td><code>${k.keyId}</code></td><td>${k.label ?? ""}</td><td class="nowrap">${when(k.createdAt)}</td><td class="nowrap">${k.lastUsedAt ? when(k.lastUsedAt) : "never"}</td>
  <td>${limits(k)}</td>
  <td class="wrap">${listed(k.restrictions?.ipAddresses)}</td>
  <td class="wrap">${listed(k.restrictions?.referers)}</td>
  <td>${k.revokedAt ? html`revoked ${when(k.revokedAt)}` : "active"}</td>
  <td>${
    canWrite && !k.revokedAt
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/keys/${k.keyId}`, { tenant: ctx.tenant })}" data-method="DELETE" data-success="Key ${k.keyId} revoked." data-confirm="Revoke key ${k.keyId}? This server refuses requests with it at once, every other instance within ${BOUND}." aria-label="Revoke key ${k.keyId}">Revoke</button>`
      : ""
  }</td>
</tr>`,
  );
  const create = canWrite
    ? html`<form data-api="${withQuery("/portal/api/keys", { tenant: ctx.tenant })}" data-method="POST" data-show-key aria-label="Create an API key">
  <div class="grid">
    <label>Label <input name="label" maxlength="100" placeholder="web shop, production"></label>
    <label>Requests per second (0: the server's default) <input name="rps" type="number" min="0" step="any" value="0"></label>
  </div>
  <button type="submit">Create key</button>
</form>
<div id="new-key" hidden>
  <p><strong>The new key, shown once.</strong> Store it now: attestd keeps only its hash.</p>
  <p><code id="new-key-value"></code> <button type="button" class="secondary" data-copy="new-key-value">Copy</button></p>
  <p>Try it now: a nonce, then the device's blob with it (<a href="/docs">API reference</a>):</p>
  <pre class="commands" tabindex="0" role="region" aria-label="The commands"><code id="new-key-curl">${curlCommands(api, html`<span data-fill-key></span>`)}</code></pre>
  <p><button type="button" class="secondary auto" data-copy="new-key-curl">Copy the commands</button></p>
</div>`
    : "";
  const active = keys.filter((k) => !k.revokedAt);
  return layout(
    "API keys",
    ctx,
    html`${create}${table("API keys", ["Key id", "Label", "Created (UTC)", "Last used (UTC)", { label: "rps / burst", secondary: true }, { label: "IP addresses", secondary: true }, { label: "Referers", secondary: true }, "State", "Action"], rows)}
${canWrite && active.length ? html`<p class="muted">A revoked key is refused by this server from the moment it says so, by every other instance within ${BOUND}.</p>` : ""}
${canWrite && active.length ? html`<section aria-labelledby="edit-h"><h2 id="edit-h">Change a key</h2>
<p class="muted">Limits and restrictions apply to the next request on this server, within ${BOUND} on every other instance. The same as <code>attestd key set</code>.</p>
${active.map((k) => editForm(ctx, k))}</section>` : ""}`,
    "/portal/keys",
  );
}
