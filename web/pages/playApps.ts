import type { PlayAppSummary } from "../../src/domain/playApps.ts";
import { DEFAULT_MAX_AGE_SECONDS, DEVICE_FLOOR_NAMES, MAX_AGE_BOUNDS, MAX_SERVICE_ACCOUNT_BYTES, PLAY_APP_CACHE_MS } from "../../src/services/playApps.ts";
import { html } from "../html.ts";
import { layout, table, withQuery, type PageContext } from "../layout.ts";
import { when } from "../time.ts";

const FLOOR_WORDS: Record<string, string> = {
  MEETS_BASIC_INTEGRITY: "basic integrity",
  MEETS_DEVICE_INTEGRITY: "device integrity",
  MEETS_STRONG_INTEGRITY: "strong integrity",
};

function decides(a: PlayAppSummary): string {
  const r = a.policy.require;
  const on = [r.licensed ? "licensed" : "", r.playProtect ? "Play Protect" : "", r.appAccessRisk ? "app access risk" : ""].filter(Boolean);
  return on.length ? on.join(", ") : "none (recorded only)";
}

/**
 * The tenant's Google Play apps (issue 23): the registrations without their keys, and for an admin the form that
 * registers one. The keys are pasted (the Play Console's two base64 keys) or a service-account file is chosen; the
 * file is read in the browser and sent as text in the same JSON request (web/static/portal.js, `data-text-file`).
 * No page or answer shows a key afterwards.
 */
export function playAppsPage(ctx: PageContext, apps: PlayAppSummary[], canWrite: boolean): string {
  const rows = apps.map(
    (a) => html`<tr>
  <td><code>${a.policy.packageName}</code></td>
  <td>${a.opensWith === "response-keys" ? "response keys (opened by attestd)" : html`service account <code>${a.serviceAccountEmail ?? ""}</code> (decoded by Google)`}</td>
  <td class="wrap">${a.policy.certDigests.length ? a.policy.certDigests.map((d) => html`<code>${d}</code> `) : "any"}</td>
  <td>${FLOOR_WORDS[a.policy.deviceFloor] ?? a.policy.deviceFloor}</td>
  <td>${a.policy.maxAgeSeconds} s</td>
  <td>${decides(a)}</td>
  <td class="nowrap">${when(a.createdAt)}</td>
  <td>${
    canWrite
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/play-apps/${a.id}`, { tenant: ctx.tenant })}" data-method="DELETE" data-success="${a.policy.packageName} removed." data-confirm="Remove ${a.policy.packageName}? Its tokens are refused from then on (by other instances within ${PLAY_APP_CACHE_MS / 1000} seconds), and its keys are deleted." aria-label="Remove ${a.policy.packageName}">Remove</button>`
      : ""
  }</td>
</tr>`,
  );
  const floors = Object.values(DEVICE_FLOOR_NAMES);
  const add = canWrite
    ? html`<article aria-labelledby="add-h">
<h2 id="add-h">Register an app</h2>
<form data-api="${withQuery("/portal/api/play-apps", { tenant: ctx.tenant })}" data-method="POST" data-omit-empty data-success="Play app registered." aria-label="Register a Play app">
  <label>Package name <input name="packageName" required maxlength="255" placeholder="com.example.app" spellcheck="false" autocomplete="off"></label>
  <label>Signing certificate SHA-256 digests (empty: any certificate)
    <textarea name="certDigests" data-list rows="2" spellcheck="false" aria-describedby="digests-help" placeholder="AB:CD:…  or  abcd…"></textarea></label>
  <small id="digests-help">One per line, as the Play Console shows it (App integrity → App signing) or as 64 hex digits.</small>
  <div class="grid">
    <label>Lowest device verdict that passes
      <select name="deviceFloor">${floors.map((f) => html`<option value="${f}" ${f === "MEETS_DEVICE_INTEGRITY" ? html`selected` : ""}>${FLOOR_WORDS[f]}</option>`)}</select></label>
    <label>Token freshness, seconds (${MAX_AGE_BOUNDS.min}–${MAX_AGE_BOUNDS.max})
      <input name="maxAgeSeconds" type="number" min="${MAX_AGE_BOUNDS.min}" max="${MAX_AGE_BOUNDS.max}" step="1" value="${DEFAULT_MAX_AGE_SECONDS}"></label>
  </div>
  <fieldset>
    <legend>Signals that decide (each is recorded in the verdict either way)</legend>
    <label><input type="checkbox" name="require.licensed"> The app is licensed to the user</label>
    <label><input type="checkbox" name="require.playProtect"> Play Protect reports no issues</label>
    <label><input type="checkbox" name="require.appAccessRisk"> No app that captures the screen or controls the device is running</label>
  </fieldset>
  <fieldset aria-describedby="keys-help">
    <legend>How its tokens are opened: the response keys, or a service account</legend>
    <p id="keys-help"><small>Give one of the two. They are sealed in the store and never shown again, here or anywhere.</small></p>
    <label>Response decryption key (base64, from the Play Console)
      <input name="responseKeys.decryptionKey" type="password" autocomplete="off" spellcheck="false" maxlength="4096"></label>
    <label>Response verification key (base64, from the Play Console)
      <input name="responseKeys.verificationKey" type="password" autocomplete="off" spellcheck="false" maxlength="4096"></label>
    <label>or a Google service-account key file (JSON)
      <input type="file" name="serviceAccount" data-text-file data-max-bytes="${MAX_SERVICE_ACCOUNT_BYTES}" accept=".json,application/json"></label>
  </fieldset>
  <button type="submit">Register app</button>
</form>
</article>`
    : "";
  return layout(
    "Play apps",
    ctx,
    html`<p>The tenant's Android apps whose Play Integrity tokens attestd appraises. A token is <strong>Yes</strong> when it opens with
  the app's keys (or Google decodes it), names the nonce and the package, is fresh, comes from the app as Play recognises it
  signed with a listed certificate, and its device verdict reaches the floor. The same as <code>attestd play-app</code>.</p>
${add}
${table("Play apps", ["Package", "Tokens opened with", "Signing certificates", "Device floor", "Freshness", "Signals that decide", "Registered (UTC)", "Action"], rows)}`,
    "/portal/play-apps",
  );
}
