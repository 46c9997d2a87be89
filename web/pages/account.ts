import { layout } from "../layout.ts";
import { html } from "../html.ts";

export function signInPage(next: string): string {
  return layout(
    "Sign in",
    {},
    html`<form data-api="/portal/api/session" data-method="POST" data-then="${next}" class="narrow">
  <label>Email <input type="email" name="email" autocomplete="username" required maxlength="320"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="1024"></label>
  <button type="submit">Sign in</button>
</form>`,
  );
}

export function invitePage(): string {
  return layout(
    "Set your password",
    {},
    html`<form data-api="/portal/api/invite" data-method="POST" data-then="/portal/signin" data-invite class="narrow">
  <p>Choose a password of at least 12 characters that is not one of the common ones. This link works once.</p>
  <label>New password <input type="password" name="password" autocomplete="new-password" required minlength="12" maxlength="1024"></label>
  <button type="submit">Set password</button>
</form>`,
  );
}
