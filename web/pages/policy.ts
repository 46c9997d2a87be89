import type { TenantPolicyVersion } from "../../src/domain/tenantPolicy.ts";
import { POLICY_CACHE_MS } from "../../src/services/tenantPolicies.ts";
import { html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

/** What a new tenant's editor starts from: every section, each field at what the operator's defaults mean. */
const EXAMPLE = { android: { minOsPatchLevel: "2025-01", requiredSecurityLevel: "TrustedEnvironment", factoryExpiry: "accept" } };

/**
 * The tenant's appraisal policy (issue 26, docs/policy.md): the version in force, its document as JSON in a textarea
 * an admin edits and saves as the next version (the server's parser names each faulty field in the notice), and the
 * version history with a rollback per version. The same as `attestd policy` and /portal/api/policy.
 */
export function policyPage(ctx: PageContext, current: TenantPolicyVersion | undefined, versions: TenantPolicyVersion[], canWrite: boolean): string {
  const bound = POLICY_CACHE_MS / 1000;
  const document = JSON.stringify(current?.document ?? EXAMPLE, null, 2);
  const rows = versions.map(
    (v) => html`<tr>
  <td>v${v.version}${current && v.version === current.version ? html` <mark>in force</mark>` : ""}</td>
  <td class="nowrap">${when(v.createdAt)}</td>
  <td>${v.author}</td>
  <td><details><summary>Document</summary><pre tabindex="0">${JSON.stringify(v.document, null, 2)}</pre></details></td>
  <td>${
    canWrite && current && v.version !== current.version
      ? html`<button type="button" class="secondary" data-api="${withQuery("/portal/api/policy/rollback", { tenant: ctx.tenant })}" data-method="POST" data-body="${JSON.stringify({ version: v.version })}" data-success="Rolled back to the document of v${v.version}, stored as a new version." data-confirm="Store the document of v${v.version} as a new version? It is in force on every instance within ${bound} seconds.">Roll back to v${v.version}</button>`
      : ""
  }</td>
</tr>`,
  );
  const status = current
    ? html`<p>Version <strong>v${current.version}</strong> is in force, stored ${when(current.createdAt)} by ${current.author}. Verdicts it shapes name it (<code>;policy=v${current.version}</code> in the appraisal policy id).</p>`
    : html`<p>No stored policy: the operator's defaults apply. Saving stores version 1.</p>`;
  const editor = canWrite
    ? html`<article aria-labelledby="edit-h">
<h2 id="edit-h">Edit</h2>
<form data-api="${withQuery("/portal/api/policy", { tenant: ctx.tenant })}" data-method="PUT" data-json-body data-success="Policy saved as a new version." aria-label="Edit the policy">
  <label>Policy document (JSON)
    <textarea name="document" rows="16" spellcheck="false" aria-describedby="policy-help">${document}</textarea></label>
  <small id="policy-help">Fields: <code>android</code> (<code>allowedApps</code>, <code>minOsPatchLevel</code> as YYYY-MM or YYYY-MM-DD,
  <code>requiredSecurityLevel</code>, <code>factoryExpiry</code>, <code>allowedBootKeys</code>), <code>playIntegrity.minDeviceVerdict</code>,
  <code>appAttest.environments</code>. A faulty field is named in the notice. In force here at once, on every instance within ${bound} seconds.</small>
  <button type="submit">Save as a new version</button>
</form>
</article>`
    : html`<pre tabindex="0" aria-label="Policy document">${document}</pre>`;
  return layout(
    "Policy",
    ctx,
    html`<p>The tenant's appraisal policy: what an Android key attestation must meet, and the floors under its Play Integrity and App Attest apps.
  Every change is a new version; older ones stay readable, and a rollback stores an old document as a new version. The same as <code>attestd policy</code>.</p>
${status}
${editor}
${table("Policy versions", ["Version", "Stored (UTC)", "By", "Document", "Action"], rows)}`,
    "/portal/policy",
  );
}
