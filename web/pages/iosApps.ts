import type { IosEnvironment } from "../../src/attestation/types.ts";
import type { IosAppSummary } from "../../src/domain/iosApps.ts";
import type { AppAttestKeySummary } from "../../src/services/appAttestKeys.ts";
import { DEFAULT_IOS_ENVIRONMENT, IOS_APP_CACHE_MS, IOS_ENVIRONMENTS, MAX_DEVELOPER_KEY_BYTES, MAX_IOS_APP_ID } from "../../src/services/iosApps.ts";
import { html, type Html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

/** an app's environment as people read it: whose keys it accepts (docs/app-attest.md "Registering the app") */
const ENVIRONMENT_WORDS: Record<IosEnvironment, string> = {
  production: "production (App Store, TestFlight)",
  development: "development (run from Xcode)",
  both: "both",
};

/** A key id in a path is base64url (a standard one has "/" in it), as the admin API takes it. */
const keyPath = (keyId: string) => Buffer.from(keyId, "base64").toString("base64url");

export interface AppAttestKeyPage {
  items: AppAttestKeySummary[];
  next: string | null;
  /** the cursor this page was read after (undefined: the first page) */
  after: string | undefined;
}

/**
 * The tenant's iOS apps and the App Attest keys their devices attested (issue 25), on one page: a key belongs to
 * an app (its app id is the key's), not to a relying party's device name, so it is listed under the apps rather
 * than on the Attested devices page (docs/portal.md says why). An admin registers and removes apps and revokes
 * keys; every change is the admin API's (`/portal/api/ios-apps`, `/portal/api/app-attest-keys`).
 */
/**
 * The developer key's form for one app (a key id and the .p8 file, read in the browser and sent as text in the JSON
 * body, as the Play apps page sends a service-account file: web/static/portal.js, `data-text-file`), and its removal.
 */
function developerKeyForm(ctx: PageContext, a: IosAppSummary): Html {
  const api = withQuery(`/portal/api/ios-apps/${a.id}/developer-key`, { tenant: ctx.tenant });
  return html`<details><summary>${a.developerKey ? "Replace developer key" : "Set developer key"}</summary>
<form data-api="${api}" data-method="PUT" data-success="Developer key set for ${a.appId}." aria-label="Developer key of ${a.appId}">
  <label>Key id (10 characters)
    <input name="keyId" required maxlength="10" pattern="[A-Z0-9]{10}" placeholder="ABC123DEFG" spellcheck="false" autocomplete="off"></label>
  <label>The key's .p8 file
    <input type="file" name="privateKey" required data-text-file data-max-bytes="${MAX_DEVELOPER_KEY_BYTES}" accept=".p8,.pem"></label>
  <button type="submit">Save key</button>
</form>
${a.developerKey ? html`<button type="button" class="secondary" data-api="${api}" data-method="DELETE" data-success="Developer key of ${a.appId} removed." data-confirm="Remove the developer key of ${a.appId}? Its keys' receipts are no longer refreshed; the metrics read so far stay." aria-label="Remove the developer key of ${a.appId}">Remove key</button>` : ""}
</details>`;
}

/** the fraud-risk metric as the keys list shows it: the number and when it was read, or why there is none */
function metricCell(k: AppAttestKeySummary): Html {
  if (k.riskMetric !== null) return html`<span title="keys attested for the app on this device in the last 30 days (Apple); informational">${k.riskMetric}</span> <small class="muted nowrap">${when(k.riskMetricAt!)}</small>`;
  if (k.lastRefreshReason) return html`<span class="muted" title="${k.lastRefreshReason}">not read (${k.lastRefreshResult ?? ""})</span>`;
  return html`<span class="muted">not read yet</span>`;
}

export function iosAppsPage(ctx: PageContext, apps: IosAppSummary[], keys: AppAttestKeyPage, canWrite: boolean): string {
  const appRows = apps.map(
    (a) => html`<tr>
  <td><code>${a.appId}</code></td>
  <td>${ENVIRONMENT_WORDS[a.environment]}</td>
  <td>${a.developerKey ? html`set (<code>${a.developerKey.keyId}</code>)` : "not set"}</td>
  <td class="nowrap">${when(a.createdAt)}</td>
  <td>${canWrite ? developerKeyForm(ctx, a) : ""}${
    canWrite
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/ios-apps/${a.id}`, { tenant: ctx.tenant })}" data-method="DELETE" data-success="${a.appId} removed." data-confirm="Remove ${a.appId}? Its attestations are refused from then on (by other instances within ${IOS_APP_CACHE_MS / 1000} seconds). The keys its devices attested stay, and so do their assertions: revoke a key to refuse those." aria-label="Remove ${a.appId}">Remove</button>`
      : ""
  }</td>
</tr>`,
  );
  const keyRows = keys.items.map((k) => {
    const verdicts = withQuery("/portal/verdicts", { tenant: ctx.tenant, device: k.keyId });
    return html`<tr>
  <td><code>${k.keyId}</code></td>
  <td><code>${k.appId}</code></td>
  <td>${k.environment}</td>
  <td>${k.counter}</td>
  <td>${metricCell(k)}</td>
  <td class="nowrap">${when(k.attestedAt)}</td>
  <td class="nowrap">${k.lastAssertedAt ? when(k.lastAssertedAt) : "never"}</td>
  <td>${k.revokedAt ? html`revoked ${when(k.revokedAt)}` : "active"}</td>
  <td class="actions"><div><a href="${verdicts}" aria-label="Verdicts of key ${k.keyId}">Verdicts</a>${
    canWrite && !k.revokedAt
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/app-attest-keys/${keyPath(k.keyId)}/revoke`, { tenant: ctx.tenant })}" data-method="POST" data-success="Key ${k.keyId} revoked." data-confirm="Revoke key ${k.keyId}? Its later assertions are refused (rule revoked-key) at once, on every instance; its verdicts stay. The app must attest a new key." aria-label="Revoke key ${k.keyId}">Revoke</button>`
      : ""
  }</div></td>
</tr>`;
  });
  const add = canWrite
    ? html`<article aria-labelledby="add-h">
<h2 id="add-h">Register an app</h2>
<form data-api="${withQuery("/portal/api/ios-apps", { tenant: ctx.tenant })}" data-method="POST" data-success="iOS app registered." aria-label="Register an iOS app">
  <div class="grid">
    <label>App id (TEAMID.BUNDLEID)
      <input name="appId" required maxlength="${MAX_IOS_APP_ID}" placeholder="ABCDE12345.com.example.app" spellcheck="false" autocomplete="off" aria-describedby="app-id-help"></label>
    <label>Environment whose keys it accepts
      <select name="environment">${IOS_ENVIRONMENTS.map((e) => html`<option value="${e}" ${e === DEFAULT_IOS_ENVIRONMENT ? html`selected` : ""}>${ENVIRONMENT_WORDS[e]}</option>`)}</select></label>
  </div>
  <small id="app-id-help">The 10-character Team ID (the developer account's Membership page), a dot, the bundle id (Xcode).</small>
  <button type="submit">Register app</button>
</form>
</article>`
    : "";
  return layout(
    "iOS apps",
    ctx,
    html`<p>The tenant's iOS apps whose App Attest attestations and assertions attestd appraises. An attestation is <strong>Yes</strong> when
  Apple's chain holds, the nonce is the one attestd issued, and the key was made for a registered app id in an environment the app
  accepts; attestd then keeps the key, and the app's later requests are assertions signed with it. The same as
  <code>attestd ios-app</code> and <code>attestd ios-key</code>.</p>
${add}
${table("iOS apps", ["App id", "Environment", "Developer key", { label: "Registered (UTC)", secondary: true }, "Action"], appRows)}
<p class="muted">With the team's App Attest <strong>developer key</strong> (Apple developer account, Keys), attestd refreshes each key's receipt
with Apple in the background and keeps Apple's <strong>fraud-risk metric</strong>: how many keys the device attested for the app in the
last 30 days. It is information for you; no verdict depends on it. The key is sealed and never shown again, only its id.</p>
<h2 id="keys-h">App Attest keys</h2>
<p class="muted">The keys the tenant's devices attested, by key id. A key id is the device's identity for App Attest (the verdicts'
<code>chipId</code>): its verdicts are those of that device. Revoke a key of a device you no longer trust; its app attests a new one.</p>
<div class="stack">${table(
      `App Attest keys${keys.after ? `, after ${keys.after}` : ""}`,
      [
        "Key id",
        "App id",
        { label: "Environment", secondary: true },
        { label: "Counter", secondary: true },
        "Fraud-risk metric",
        { label: "Attested (UTC)", secondary: true },
        "Last assertion (UTC)",
        "State",
        "Actions",
      ],
      keyRows,
    )}</div>
<nav class="pager" aria-label="Pages of App Attest keys"><p>
  ${keys.after ? html`<a href="${withQuery("/portal/ios-apps", { tenant: ctx.tenant })}">First keys</a>` : ""}
  ${keys.next ? html`<a href="${withQuery("/portal/ios-apps", { tenant: ctx.tenant, after: keys.next })}">Next keys</a>` : ""}
</p></nav>`,
    "/portal/ios-apps",
  );
}
