import type { Tenant } from "../../src/domain/tenants.ts";
import type { TrustSourcesView } from "../../src/services/trustSources.ts";
import { html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";
import { TRUST_STATES } from "../../src/domain/trustStates.ts";
import { age, obtained, readAtStartUp, stateWord, trustStateLegend, trustTable, whenever } from "./overview.ts";

const STATES = ["active", "inactive", "blocked"] as const;

/** Operators' tenants: the list, a tenant's state and enrollment changed in place, a new tenant. */
export function tenantsPage(ctx: PageContext, tenants: Tenant[]): string {
  const rows = tenants.map((t) => {
    const api = `/portal/api/tenants/${encodeURIComponent(t.name)}`;
    return html`<tr>
  <th scope="row"><a href="${withQuery("/portal/", { tenant: t.name })}">${t.name}</a></th>
  <td>${t.kind}</td><td><code>${t.customerId}</code></td>
  <td>
    <form data-api="${api}" data-method="PATCH" data-success="State of ${t.name} changed." class="row-form" aria-label="Change the state of ${t.name}">
      <select name="state" aria-label="State of ${t.name}">${STATES.map((s) => html`<option value="${s}" ${s === t.state ? html`selected` : ""}>${s}</option>`)}</select>
      <button type="submit" class="secondary">Set</button>
    </form>
  </td>
  <td>${t.enrollmentEnabled ? "enabled" : "disabled"}
    <button type="button" class="secondary outline" data-api="${api}" data-method="PATCH" data-body="${JSON.stringify({ enrollmentEnabled: !t.enrollmentEnabled })}" data-success="Enrollment API ${t.enrollmentEnabled ? "disabled" : "enabled"} for ${t.name}."
      aria-label="${t.enrollmentEnabled ? "Disable" : "Enable"} enrollment for ${t.name}">${t.enrollmentEnabled ? "Disable" : "Enable"}</button>
  </td>
  <td class="nowrap">${when(t.createdAt)}</td>
  <td><a href="${withQuery("/portal/keys", { tenant: t.name })}">keys</a> · <a href="${withQuery("/portal/verdicts", { tenant: t.name })}">verdicts</a></td>
</tr>`;
  });
  return layout(
    "Tenants",
    ctx,
    html`<details>
  <summary role="button" class="secondary">New tenant</summary>
  <form data-api="/portal/api/tenants" data-method="POST" data-success="Tenant created." aria-label="Create a tenant">
    <div class="grid">
      <label>Name <input name="name" required maxlength="64" pattern="[A-Za-z0-9._\\-]{1,64}" placeholder="acme" aria-describedby="name-help"></label>
      <label>Kind <select name="kind"><option value="customer">customer</option><option value="reseller">reseller</option></select></label>
      <label>Customer ID (digits; empty: random) <input name="customerId" inputmode="numeric" maxlength="20" pattern="[0-9]{1,20}"></label>
    </div>
    <small id="name-help">1–64 of A–Z a–z 0–9 . _ -, as <code>attestd tenant create NAME</code>. Resellers may use the enrollment API once enabled.</small>
    <button type="submit">Create tenant</button>
  </form>
</details>
${table("Tenants", ["Name", { label: "Kind", secondary: true }, "Customer ID", "State", "Enrollment API", { label: "Created (UTC)", secondary: true }, "See"], rows)}
<p class="muted">Blocked and inactive tenants are refused (403) by both APIs at once; the same changes as <code>attestd tenant set-state</code> and <code>attestd tenant enable-enrollment</code>.</p>`,
    "/portal/tenants",
  );
}

/** Operators' trust sources: every source the appraisal uses, each with its one state word and its facts; "refresh now". */
export function trustPage(ctx: PageContext, t: TrustSourcesView): string {
  const cards = t.sources.map(
    (s) => html`<article aria-labelledby="src-${s.name}" data-source="${s.name}">
  <h2 id="src-${s.name}">${s.label}</h2>
  <dl class="facts">
    <dt>State</dt><dd>${stateWord(s.state)} <span class="muted">${TRUST_STATES[s.state]}</span></dd>
    <dt>Used by</dt><dd>${s.usedBy}</dd>
    <dt>From</dt><dd class="wrap">${s.source ?? "—"}${s.origin ? ` (${s.origin === "built-in" ? "built in" : s.origin === "cache" ? "the disk cache: the source failed" : "the source"})` : ""}</dd>
    ${s.name === "play-integrity" ? "" : html`<dt>Obtained (UTC)</dt><dd>${s.fetchedAt ? html`${whenever(s.fetchedAt)} (${age(s.ageSeconds)} ago)` : obtained(s)}</dd>`}
    ${readAtStartUp(s) ? "" : html`<dt>${s.name === "play-integrity" ? "Last call to Google (UTC)" : "Last read (UTC)"}</dt><dd>${whenever(s.lastAttempt)}${s.pending ? " · a read is under way" : ""}</dd>`}
    <dt>Last error</dt><dd class="wrap">${s.lastError ?? "none"}</dd>
    ${s.heldBack ? html`<dt>Held back</dt><dd class="wrap">a copy read ${whenever(s.heldBack.at)} with ${s.heldBack.items} where ${s.heldBack.inForce} are in force (${s.heldBack.lostPercent}% fewer) was not used; the copy obtained ${whenever(s.fetchedAt)} stays in force. To accept it, see <code>--android-max-shrink</code> in the Android key documentation.</dd>` : ""}
    ${s.itemsAre ? html`<dt>${s.itemsAre[0]!.toUpperCase()}${s.itemsAre.slice(1)}</dt><dd>${s.items ?? "—"}</dd>` : ""}
    ${s.reason ? html`<dt>Why</dt><dd class="wrap">${s.reason}</dd>` : ""}
    <dt>In one sentence</dt><dd class="wrap">${s.summary ?? ""}</dd>
  </dl>
</article>`,
  );
  return layout(
    "Trust sources",
    ctx,
    html`<p>${t.usable ? "Android key attestation can be trusted now." : html`<strong>Android key attestation fails closed now</strong> (every android-key verdict is <code>CertificateInvalid</code>).`}
  Google's sources are stale when older than ${age(t.maxAgeSeconds)} (<code>--android-max-age</code>); the server reads them again on its own (<code>--android-refresh</code>), and now with the button.
  The vendor files (<code>--vendor-roots</code>, <code>--revocations</code>) and App Attest's roots (<code>--app-attest-roots</code>) are read at start-up; a change needs a restart.</p>
<p><button type="button" data-api="/portal/api/trust/refresh" data-method="POST" data-busy="Reading the sources…" data-success="Trust sources read again.">Refresh now</button></p>
${table("Every trust source and its state", ["Source", "State"], t.sources.map((s) => html`<tr><th scope="row"><a href="#src-${s.name}">${s.label}</a></th><td>${stateWord(s.state)}</td></tr>`))}
${trustStateLegend()}
${cards}
<details><summary>As one table</summary>${trustTable(t, true)}</details>`,
    "/portal/trust",
  );
}
