import type { IosEnvironment } from "../../src/attestation/types.ts";
import type { StoredIosApp } from "../../src/domain/iosApps.ts";
import type { AppAttestKeySummary } from "../../src/services/appAttestKeys.ts";
import { DEFAULT_IOS_ENVIRONMENT, IOS_APP_CACHE_MS, IOS_ENVIRONMENTS, MAX_IOS_APP_ID } from "../../src/services/iosApps.ts";
import { html } from "../html.ts";
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
export function iosAppsPage(ctx: PageContext, apps: StoredIosApp[], keys: AppAttestKeyPage, canWrite: boolean): string {
  const appRows = apps.map(
    (a) => html`<tr>
  <td><code>${a.appId}</code></td>
  <td>${ENVIRONMENT_WORDS[a.environment]}</td>
  <td class="nowrap">${when(a.createdAt)}</td>
  <td>${
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
${table("iOS apps", ["App id", "Environment", { label: "Registered (UTC)", secondary: true }, "Action"], appRows)}
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
