import type { ApiKeySummary } from "../../src/services/apiKeyAdmin.ts";
import { html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";

export function keysPage(ctx: PageContext, keys: ApiKeySummary[], canWrite: boolean): string {
  const rows = keys.map(
    (k) => html`<tr>
  <td><code>${k.keyId}</code></td><td>${k.label ?? ""}</td><td>${k.createdAt}</td><td>${k.lastUsedAt ?? "never"}</td>
  <td>${k.rps ? `${k.rps} / ${k.burst}` : "server default"}</td>
  <td>${k.restrictions ? [...k.restrictions.ipAddresses, ...k.restrictions.referers].join(", ") : "none"}</td>
  <td>${k.revokedAt ? `revoked ${k.revokedAt}` : "active"}</td>
  <td>${
    canWrite && !k.revokedAt
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/keys/${k.keyId}`, { tenant: ctx.tenant })}" data-method="DELETE" data-confirm="Revoke key ${k.keyId}? Requests with it are refused at once.">Revoke</button>`
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
</div>`
    : "";
  return layout(
    "API keys",
    ctx,
    html`${create}${table("API keys", ["Key id", "Label", "Created", "Last used", "rps / burst", "Restrictions", "State", "Action"], rows)}`,
    "/portal/keys",
  );
}
