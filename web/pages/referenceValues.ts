import type { ReferenceValue } from "../../src/attestation/types.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { ReferenceSetPage } from "../../src/services/referenceValueAdmin.ts";
import { html, type Html } from "../html.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

export interface ReferenceValuesView {
  /** the tenant looked at (a tenant user's own, an operator's ?tenant=), undefined: an operator on the global sets */
  tenant: Tenant | undefined;
  model: string | undefined;
  own: ReferenceSetPage | undefined;
  global: ReferenceSetPage;
  /** global sets of the server's --reference-values file: how many, and those the page lists (the model's, bounded) */
  fileSets: number;
  fileShown: readonly ReferenceValue[];
  canWrite: boolean;
  canWriteGlobal: boolean;
  maxBytes: number;
}

function head(deletable: boolean): string[] {
  return ["Model", "Firmware", "Measurements", "Updated (UTC)", ...(deletable ? ["Action"] : [])];
}

function rows(page: ReferenceSetPage, ctx: PageContext, deletable: boolean, scopeLabel: string): Html[] {
  return page.items.map(
    (s) => html`<tr>
  <td>${s.model}</td><td>${s.firmwareVersion}</td><td>${s.measurements.length}</td><td>${when(s.updatedAt)}</td>
  ${
    deletable
      ? html`<td><button type="button" class="secondary" data-method="DELETE"
    data-api="${withQuery("/portal/api/reference-values", { tenant: ctx.tenant, model: s.model, firmwareVersion: s.firmwareVersion })}"
    data-success="The ${scopeLabel} set for ${s.model} / ${s.firmwareVersion} deleted."
    data-confirm="Delete ${scopeLabel} set for ${s.model} / ${s.firmwareVersion}? Devices of that model and firmware then appraise against the next set that applies, or Unknown.">Delete</button></td>`
      : ""
  }
</tr>`,
  );
}

export function referenceValuesPage(ctx: PageContext, v: ReferenceValuesView): string {
  const here = (q: Record<string, string | undefined>) => withQuery("/portal/reference-values", { tenant: ctx.tenant, model: v.model, ...q });
  const writesTo = v.tenant ? `tenant ${v.tenant.name}'s own sets` : "the global sets, which apply to every tenant";
  const upload =
    v.canWrite && (v.tenant || v.canWriteGlobal)
      ? html`<article aria-labelledby="upload-h">
<h2 id="upload-h">Upload a file</h2>
<form data-upload="${withQuery("/portal/api/reference-values", { tenant: ctx.tenant })}" data-max-bytes="${v.maxBytes}" aria-label="Upload reference values">
  <label>Reference-values file (JSON, at most ${Math.floor(v.maxBytes / 1024 / 1024)} MiB)
    <input type="file" name="file" accept=".json,application/json" required aria-describedby="upload-help"></label>
  <p id="upload-help"><small>The format of <code>attestd refvals import</code>:
    <code>[{"model": "…", "firmwareVersion": "…", "measurements": ["&lt;64 hex digits&gt;", …]}]</code>. The sets go to
    ${writesTo}; one replaces the set of the same model and firmware there. Nothing is stored unless the whole file
    is valid, and a refusal names the item and field at fault.</small></p>
  <button type="submit">Upload</button>
  <progress hidden value="0" max="100" aria-label="Upload progress"></progress>
  <p class="notice" role="status" aria-live="polite" data-upload-status></p>
</form>
</article>`
      : "";
  const filter = html`<form method="get" action="/portal/reference-values" class="filters" aria-label="Filter reference values">
  ${hiddenTenant(ctx)}
  <label>Model (exact) <input name="model" value="${v.model ?? ""}" maxlength="64"></label>
  <button type="submit" class="secondary">Filter</button>
</form>`;
  const ownSection = v.own
    ? html`<section aria-labelledby="own-h">
  <h2 id="own-h">Tenant ${v.tenant!.name}'s own sets</h2>
  ${table(`Tenant ${v.tenant!.name}'s reference sets`, head(v.canWrite), rows(v.own, ctx, v.canWrite, "this tenant's"))}
  ${v.own.next ? html`<p><a href="${here({ after: v.own.next })}">More of the tenant's sets</a></p>` : ""}
</section>`
    : "";
  const globalWritable = !v.tenant && v.canWriteGlobal;
  const globalSection = html`<section aria-labelledby="global-h">
  <h2 id="global-h">Global sets</h2>
  <p>The operator's sets, for every tenant${v.tenant ? html`; where tenant ${v.tenant.name} has its own set for the same model and firmware, that one applies to its devices instead` : ""}.
    ${v.fileSets ? html`The server's <code>--reference-values</code> file adds ${v.fileSets} more, <a href="#file-h">listed below</a> (a stored set of the same model and firmware replaces one of them).` : ""}</p>
  ${table("Global reference sets", head(globalWritable), rows(v.global, ctx, globalWritable, "the global"))}
  ${v.global.next ? html`<p><a href="${here({ globalAfter: v.global.next })}">More global sets</a></p>` : ""}
</section>`;
  const fileSection = html`<section aria-labelledby="file-h">
  <h2 id="file-h">From the server's file</h2>
  ${v.fileSets
    ? html`<p>The ${v.fileSets} global set(s) the server loaded at start-up from its <code>--reference-values</code> file; they apply to
    every tenant, unless a stored global set above (or a tenant's own) has the same model and firmware. The file changes with a restart.
    ${v.model ? `Model ${v.model}: ${v.fileShown.length} of them.` : v.fileShown.length < v.fileSets ? `The first ${v.fileShown.length} are listed; filter by model for the others.` : ""}</p>
  ${table("Reference sets of --reference-values", ["Model", "Firmware", "Measurements"], v.fileShown.map((s) => html`<tr><td>${s.model}</td><td>${s.firmwareVersion}</td><td>${s.measurements.length}</td></tr>`))}`
    : html`<p>The server was started without <code>--reference-values</code>: the sets above are all there are.</p>`}
</section>`;
  return layout(
    "Reference values",
    ctx,
    html`<p>A device of the vendor format appraises <strong>Yes</strong> when its measurements equal the set for its model and
  firmware, <strong>No</strong> when they differ, and <strong>Unknown</strong> when no set applies.
  ${v.tenant ? html`A tenant's own sets apply to its devices only and replace a global set of the same model and firmware.` : ""}
  Changes apply to new appraisals within 10 seconds.</p>
${upload}
${filter}
${ownSection}
${globalSection}
${fileSection}`,
    "/portal/reference-values",
  );
}
