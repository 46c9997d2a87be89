import type { PortalPasskey } from "../../src/domain/portal.ts";
import { html } from "../html.ts";
import { layout, table, type PageContext } from "../layout.ts";

/** A stored ISO time as people read it: minutes, UTC. */
export const minutes = (iso: string) => html`<time datetime="${iso}">${iso.slice(0, 16).replace("T", " ")} UTC</time>`;

/**
 * `ended`: the browser came back with a session that is over (signed out elsewhere, idle too long, disabled).
 * `sso`: the name of the deployment's identity provider, when single sign-on is configured (docs/sso.md).
 */
export function signInPage(next: string, ended = false, sso?: string): string {
  return layout(
    "Sign in",
    {},
    html`${ended ? html`<p class="ended narrow">Your session has ended: it was idle too long, reached its time limit, or was signed out. Sign in again.</p>` : ""}
${sso ? html`<p class="narrow"><a role="button" href="/portal/sso/start?next=${encodeURIComponent(next)}" data-sso>Sign in with ${sso}</a></p>
<p class="or narrow">Or with your email and password:</p>` : ""}
<form data-api="/portal/api/session" data-method="POST" data-then="${next}" class="narrow">
  <label>Email <input type="email" name="email" autocomplete="username webauthn" required maxlength="320"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="1024"></label>
  <button type="submit">Sign in</button>
</form>
<div class="narrow" data-passkey-only hidden>
  <p class="or">Or sign in without a password:</p>
  <button type="button" class="secondary" data-passkey-signin data-then="${next}">Use a passkey</button>
</div>`,
  );
}

/**
 * Where single sign-on lands once the session is open: a page whose link (and refresh) takes the person on. A
 * same-site step, so the browser sends the new SameSite=Strict session cookie with it.
 */
export function ssoLandingPage(next: string): string {
  return layout(
    "Signed in",
    {},
    html`<meta http-equiv="refresh" content="0;url=${next}">
<p class="narrow">You are signed in. <a href="${next}" data-sso-continue>Continue</a></p>`,
  );
}

/** Where a one-time link lands: an invitation's first password, or a reset link's new one (the same API). */
export function invitePage(kind: "invite" | "reset"): string {
  return layout(
    kind === "invite" ? "Set your password" : "Choose a new password",
    {},
    html`<form data-api="/portal/api/invite" data-method="POST" data-then="/portal/signin" data-invite data-success="Password set. Sign in with it now." class="narrow">
  <p>Choose a password of at least 12 characters that is not one of the common ones. This link works once${
    kind === "reset" ? ", and signs you out everywhere: sign in again with the new password" : ""
  }.</p>
  <label>New password <input type="password" name="password" autocomplete="new-password" required minlength="12" maxlength="1024"></label>
  <button type="submit">Set password</button>
</form>`,
  );
}

/**
 * Who you are, and your passkeys: add one, rename, delete. `hasPassword` false: a person single sign-on made, who
 * has no current password to change.
 */
export function accountPage(ctx: PageContext, passkeys: PortalPasskey[], origin: string, hasPassword = true): string {
  const actor = ctx.actor!;
  const rows = passkeys.map((p) => {
    const api = `/portal/api/passkeys/${encodeURIComponent(p.credentialId)}`;
    return html`<tr>
  <td data-label="Name">${p.name}</td><td data-label="Added">${minutes(p.createdAt)}</td>
  <td data-label="Last used">${p.lastUsedAt ? minutes(p.lastUsedAt) : "never"}</td>
  <td data-label="Kind">${p.backedUp ? "synced" : "this device only"}</td>
  <td data-label="Actions" class="actions"><div>
    <details>
      <summary role="button" class="secondary outline">Rename</summary>
      <form data-api="${api}" data-method="PATCH" data-success="Passkey renamed." aria-label="Rename the passkey ${p.name}">
        <label>New name <input name="name" required maxlength="60" value="${p.name}"></label>
        <button type="submit">Save</button>
      </form>
    </details>
    <button type="button" class="secondary" data-api="${api}" data-method="DELETE" data-success="Passkey “${p.name}” deleted."
      data-confirm="Delete the passkey “${p.name}”? You can still sign in with your password and any other passkey.">Delete</button>
  </div></td>
</tr>`;
  });
  return layout(
    "Account",
    ctx,
    html`<section aria-labelledby="you-h">
  <h2 id="you-h">You</h2>
  <dl class="facts">
    <dt>Email</dt><dd>${actor.email}</dd>
    <dt>Role</dt><dd>${actor.role}</dd>
  </dl>
</section>
<section aria-labelledby="password-h">
  <h2 id="password-h">Password</h2>
  ${hasPassword ? "" : html`<p data-no-password>You have no password: you sign in through single sign-on or a passkey. To have one as well, ask an
  operator or an admin of your tenant for a reset link.</p>`}
  ${hasPassword ? html`<p>Changing it signs you out everywhere else; this browser stays signed in.</p>
  <form data-api="/portal/api/account/password" data-method="POST" data-then="/portal/account" data-success="Password changed." aria-label="Change your password" class="narrow">
    <input type="email" autocomplete="username" value="${actor.email}" hidden aria-hidden="true">
    <label>Current password <input type="password" name="currentPassword" autocomplete="current-password" required maxlength="1024"></label>
    <label>New password <input type="password" name="newPassword" autocomplete="new-password" required minlength="12" maxlength="1024"></label>
    <button type="submit">Change password</button>
  </form>` : ""}
</section>
<section aria-labelledby="passkeys-h">
  <h2 id="passkeys-h">Passkeys</h2>
  <p>A passkey signs you in with your device's screen lock or a security key instead of your password, and cannot be
  phished: it works only at <code>${origin}</code>.</p>
  <form data-passkey-register aria-label="Add a passkey" class="inline">
    <label>Name (optional) <input name="name" maxlength="60" placeholder="laptop, phone, security key"></label>
    <button type="submit">Add a passkey</button>
  </form>
  <div class="stack">${table("Your passkeys", ["Name", "Added", "Last used", "Kind", "Actions"], rows)}</div>
</section>`,
    "/portal/account",
  );
}
