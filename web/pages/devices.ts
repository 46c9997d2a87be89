import type { DevicePin, DevicePinReset, DeviceRecord, FactChange } from "../../src/domain/devices.ts";
import { hiddenTenant, layout, table, withQuery, type PageContext } from "../layout.ts";
import { html, type Html } from "../html.ts";
import { when } from "../time.ts";

/** What a pin outcome means to a person reading the list (docs/devices.md has the rules). */
const PIN_WORDS: Record<DeviceRecord["last"]["pin"], string> = {
  first: "pinned it",
  matched: "matched the pin",
  changed: "refused: a pinned fact changed",
  downgrade: "refused: downgrade",
  none: "not compared",
};

const deviceLink = (ctx: PageContext, deviceId: string) =>
  html`<a href="${withQuery(`/portal/devices/${encodeURIComponent(deviceId)}`, { tenant: ctx.tenant })}"><code>${deviceId}</code></a>`;

function lookupForm(ctx: PageContext, value = ""): Html {
  return html`<form method="get" action="/portal/devices" class="inline" role="search" aria-label="Look up a device">
  ${hiddenTenant(ctx)}
  <label>Device id (as the relying party named it) <input name="deviceId" value="${value}" maxlength="128" pattern="[A-Za-z0-9._:\\-]{1,128}" spellcheck="false" autocomplete="off" required></label>
  <button type="submit">Look up</button>
</form>`;
}

export function devicesPage(ctx: PageContext, items: DeviceRecord[], next: string | null, after: string | undefined): string {
  const rows = items.map(
    (d) => html`<tr>
  <td data-label="Device">${deviceLink(ctx, d.deviceId)}</td>
  <td data-label="First seen" class="nowrap">${when(d.firstSeen)}</td>
  <td data-label="Last seen" class="nowrap">${when(d.lastSeen)}</td>
  <td data-label="Appraisals">${d.count}</td>
  <td data-label="Latest"><span>${d.last.verdict} · ${PIN_WORDS[d.last.pin]}</span></td>
  <td data-label="Pin"><span>${d.pin ? html`pinned ${when(d.pin.pinnedAt)}` : "none"}</span></td>
  <td data-label="Resets">${d.resets}</td>
</tr>`,
  );
  return layout(
    "Attested devices",
    ctx,
    html`<p class="muted">Devices your relying party named (<code>deviceId</code> on <code>POST /v2/blobs</code> or in a batch): the first
<code>Yes</code> pins what the device attested, and a later appraisal that shows a different key or an older OS is refused.
Reset a pin after a repair or an owner's deliberate change; the next <code>Yes</code> pins the device afresh.</p>
${lookupForm(ctx)}
<div class="stack">${table(`Devices by id${after ? `, after ${after}` : ""}`, ["Device", "First seen (UTC)", "Last seen (UTC)", "Appraisals", "Latest appraisal", "Pin", "Resets"], rows)}</div>
<nav class="pager" aria-label="Pages of devices"><p>
  ${after ? html`<a href="${withQuery("/portal/devices", { tenant: ctx.tenant })}">First page</a>` : ""}
  ${next ? html`<a href="${withQuery("/portal/devices", { tenant: ctx.tenant, after: next })}">Next devices</a>` : ""}
</p></nav>`,
    "/portal/devices",
  );
}

/** Facts as a two-column list: identity facts, then levels (a pin's levels are high-water marks). */
function facts(identity: Record<string, string>, levels: Record<string, number>, levelWord: string): Html {
  const entries = [
    ...Object.entries(identity).map(([k, v]) => html`<dt>${k}</dt><dd><code class="wrap">${v || "(none)"}</code></dd>`),
    ...Object.entries(levels).map(([k, v]) => html`<dt>${k} <span class="muted">(${levelWord})</span></dt><dd>${v}</dd>`),
  ];
  return entries.length ? html`<dl class="facts">${entries}</dl>` : html`<p class="muted">none</p>`;
}

function changesList(changes: FactChange[] | undefined): Html | string {
  if (!changes?.length) return "";
  return html`<ul>${changes.map((c) => html`<li><code>${c.fact}</code> from <code class="wrap">${c.from || "(none)"}</code> to <code class="wrap">${c.to || "(none)"}</code></li>`)}</ul>`;
}

function pinSection(pin: DevicePin | null, verdictLink: (objectId: string) => Html): Html {
  if (!pin) return html`<p>Not pinned: the device's next <code>Yes</code> pins it.</p>`;
  return html`<p>Pinned ${when(pin.pinnedAt)} by verdict ${verdictLink(pin.objectId)} (${pin.format}); a mark last raised ${when(pin.raisedAt)}.</p>
${facts(pin.identity, pin.levels, "highest seen")}`;
}

export function devicePage(ctx: PageContext, d: DeviceRecord, resets: DevicePinReset[], canReset: boolean): string {
  const verdictLink = (objectId: string) => html`<a href="${withQuery(`/portal/verdicts/${encodeURIComponent(objectId)}`, { tenant: ctx.tenant })}">${objectId}</a>`;
  const resetRows = resets.map(
    (r) => html`<tr><td data-label="When" class="nowrap">${when(r.at)}</td><td data-label="By">${r.by}</td>
  <td data-label="Pin cleared"><span>${r.previousPin ? html`pinned ${when(r.previousPin.pinnedAt)} (${r.previousPin.format})` : "none (it had no pin)"}</span></td></tr>`,
  );
  // nothing to reset on a device that is not pinned (never, or reset already)
  const reset = canReset && d.pin
    ? html`<button type="button" class="auto" data-api="${withQuery(`/portal/api/devices/${encodeURIComponent(d.deviceId)}/reset`, { tenant: ctx.tenant })}" data-method="POST"
  data-confirm="Reset the pin of ${d.deviceId}? Its next Yes pins it afresh, whatever it then attests." data-done="Pin of ${d.deviceId} reset.">Reset pin of ${d.deviceId}</button>
<p class="muted">The same as <code>attestd device reset</code>: the history stays, and the reset is recorded below with your name.</p>`
    : "";
  return layout(
    `Device ${d.deviceId}`,
    ctx,
    html`<p><a href="${withQuery("/portal/devices", { tenant: ctx.tenant })}">All attested devices</a></p>
<h2>History</h2>
<dl class="facts">
  <dt>First seen (UTC)</dt><dd>${when(d.firstSeen)}</dd>
  <dt>Last seen (UTC)</dt><dd>${when(d.lastSeen)}</dd>
  <dt>Appraisals</dt><dd>${d.count}</dd>
  <dt>Latest appraisal</dt><dd>${d.last.verdict} · ${d.last.status} · ${PIN_WORDS[d.last.pin]} · ${when(d.last.at)} · ${verdictLink(d.last.objectId)}${changesList(d.last.changes)}</dd>
  <dt>Pin resets</dt><dd>${d.resets}</dd>
</dl>
<h2>Pin</h2>
${pinSection(d.pin, verdictLink)}
${reset}
<h2>Latest facts</h2>
${d.latestFacts ? html`<p>Attested ${when(d.latestFacts.at)} (${d.latestFacts.format}), verdict ${verdictLink(d.latestFacts.objectId)}.</p>${facts(d.latestFacts.identity, d.latestFacts.levels, "level")}` : html`<p class="muted">No appraisal of this device authenticated any facts yet.</p>`}
<div class="stack">${table("Pin resets, oldest first", ["When (UTC)", "By", "Pin cleared"], resetRows)}</div>
${lookupForm(ctx)}`,
    "/portal/devices",
  );
}
