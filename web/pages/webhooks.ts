import type { WebhookAttempt, WebhookDelivery, WebhookEndpointSummary } from "../../src/domain/webhooks.ts";
import { WEBHOOK_EVENT_TYPES } from "../../src/domain/webhooks.ts";
import { DEFAULT_ROTATION_OVERLAP_S, WEBHOOK_CACHE_MS } from "../../src/services/webhooks.ts";
import { html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

export interface WebhooksPageData {
  endpoints: WebhookEndpointSummary[];
  deliveries: WebhookDelivery[];
  /** the delivery picked with ?delivery=, with its attempts */
  shown?: { delivery: WebhookDelivery; attempts: WebhookAttempt[] } | undefined;
}

const STATE_WORDS: Record<WebhookDelivery["state"], string> = { pending: "pending", delivered: "delivered", failed: "failed (gave up)" };

/**
 * The tenant's signed webhooks (issue 26, docs/events.md): its endpoints, and for an admin the forms that add one,
 * rotate its secret (both shown once, in the box above the lists), enable, disable and remove; the latest deliveries
 * with their state, and one delivery's attempts (time, status, duration, the start of the answer) with "Resend".
 * The same WebhookRegistry as `attestd webhook ...` and /portal/api/webhooks.
 */
export function webhooksPage(ctx: PageContext, d: WebhooksPageData, canWrite: boolean): string {
  const q = { tenant: ctx.tenant };
  const endpointRows = d.endpoints.map(
    (e) => html`<tr>
  <td class="wrap"><code>${e.url}</code>${e.description ? html`<br><small>${e.description}</small>` : ""}</td>
  <td class="wrap">${e.events.map((x) => html`<code>${x}</code> `)}</td>
  <td>${e.events.includes("verdict.stored") ? (e.verdicts === "all" ? "all" : "not Yes") : "—"}</td>
  <td>${e.enabled ? "enabled" : "disabled"}</td>
  <td class="nowrap">${e.previousSecretUntil ? html`previous secret signs until ${when(e.previousSecretUntil)}` : "one secret"}</td>
  <td class="nowrap">${
    canWrite
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/webhooks/${e.id}`, q)}" data-method="PATCH" data-body="${JSON.stringify({ enabled: !e.enabled })}" data-success="Endpoint ${e.enabled ? "disabled" : "enabled"}.">${e.enabled ? "Disable" : "Enable"}</button>
<form class="row-form" data-api="${withQuery(`/portal/api/webhooks/${e.id}/rotate`, q)}" data-method="POST" data-reveal="new-secret:secret" data-success="New secret made; the previous one keeps signing for ${DEFAULT_ROTATION_OVERLAP_S / 3600} hours." aria-label="Rotate the secret of ${e.url}"><button type="submit" class="secondary">Rotate secret</button></form>
<button type="button" class="secondary" data-api="${withQuery(`/portal/api/webhooks/${e.id}`, q)}" data-method="DELETE" data-success="Endpoint removed." data-confirm="Remove the endpoint ${e.url}? Its pending deliveries fail; their history stays." aria-label="Remove ${e.url}">Remove</button>`
      : ""
  }</td>
</tr>`,
  );
  const deliveryRows = d.deliveries.map(
    (x) => html`<tr>
  <td class="nowrap"><a href="${withQuery("/portal/webhooks", { ...q, delivery: x.id })}">${when(x.createdAt)}</a></td>
  <td><code>${x.eventType}</code></td>
  <td class="wrap">${d.endpoints.find((e) => e.id === x.endpointId)?.url ?? html`<small>removed endpoint</small>`}</td>
  <td>${STATE_WORDS[x.state]}</td>
  <td>${x.attempts}</td>
  <td>${x.lastStatus ?? "—"}</td>
  <td class="nowrap">${x.state === "pending" ? when(new Date(x.nextAttemptMs).toISOString()) : "—"}</td>
  <td>${canWrite ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/webhook-deliveries/${x.id}/resend`, q)}" data-method="POST" data-success="Delivery queued again." aria-label="Resend the ${x.eventType} of ${x.createdAt}">Resend</button>` : ""}</td>
</tr>`,
  );
  const shown = d.shown
    ? html`<article aria-labelledby="shown-h">
<h2 id="shown-h">Delivery <code>${d.shown.delivery.id}</code></h2>
<p><code>webhook-id: ${d.shown.delivery.eventId}</code> · ${STATE_WORDS[d.shown.delivery.state]} · gives up ${when(new Date(d.shown.delivery.giveUpAtMs).toISOString())}</p>
<pre><code>${d.shown.delivery.payload}</code></pre>
${table(
  "Attempts",
  ["#", "When (UTC)", "Status", "Duration", "Error", "Answer (first 1024 bytes)"],
  d.shown.attempts.map(
    (a) => html`<tr><td>${a.attempt}</td><td class="nowrap">${when(a.at)}</td><td>${a.status ?? "no answer"}</td><td>${a.durationMs} ms</td><td class="wrap">${a.error ?? ""}</td><td class="wrap"><code>${a.response ?? ""}</code></td></tr>`,
  ),
)}
</article>`
    : "";
  const secretShown = html`<div id="new-secret" hidden>
  <p><strong>The signing secret, shown once.</strong> Your receiver checks each delivery's <code>webhook-signature</code> with it
  (docs/events.md). It is sealed in the store and will not be shown again.</p>
  <p><code id="new-secret-value"></code> <button type="button" class="secondary" data-copy="new-secret-value">Copy</button></p>
</div>`;
  const add = canWrite
    ? html`<article aria-labelledby="add-h">
<h2 id="add-h">Add an endpoint</h2>
<form data-api="${withQuery("/portal/api/webhooks", q)}" data-method="POST" data-omit-empty data-reveal="new-secret:secret" data-success="Endpoint added. Copy its secret now: it is shown once." aria-label="Add a webhook endpoint">
  <label>URL <input name="url" type="url" required maxlength="2048" placeholder="https://hooks.example.com/attestd" spellcheck="false" autocomplete="off"></label>
  <label>Events, one per line or comma
    <textarea name="events" data-list rows="2" spellcheck="false" aria-describedby="events-help">verdict.stored</textarea></label>
  <small id="events-help">${WEBHOOK_EVENT_TYPES.join(", ")}</small>
  <label>Verdicts <select name="verdicts"><option value="all">every verdict</option><option value="non-yes">only those not Yes</option></select></label>
  <label>Description <input name="description" maxlength="200"></label>
  <button type="submit">Add endpoint</button>
</form>
</article>`
    : "";
  return layout(
    "Webhooks",
    ctx,
    html`<p>Signed HTTP callbacks for the tenant's events, per the Standard Webhooks specification: a verdict stored, a
  device's pin set or refusing, an API key created or revoked, a trust source degraded or recovered. Failed deliveries
  are retried with backoff for days. Changes reach other instances within ${WEBHOOK_CACHE_MS / 1000} seconds. The same
  as <code>attestd webhook</code>.</p>
${secretShown}
${add}
${table("Endpoints", ["URL", "Events", "Verdicts", "State", "Secret", "Actions"], endpointRows)}
${shown}
${table("Latest deliveries", ["Event time (UTC)", "Event", "Endpoint", "State", "Attempts", "Last status", "Next attempt (UTC)", "Action"], deliveryRows)}`,
    "/portal/webhooks",
  );
}
