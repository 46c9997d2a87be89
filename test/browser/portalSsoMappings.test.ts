import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { startOidcProvider, type TestOidcProvider } from "../helpers/oidcProvider.ts";
import { freePort } from "../helpers/serverProcess.ts";
import { confirmInPage, newContext, screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

/**
 * The operators' Single sign-on page in Debian's Chromium (docs/portal.md, docs/sso.md), against a real `attestd
 * serve` with --sso-* set and a real OpenID Connect provider on 127.0.0.1: an operator maps a verified email to a
 * tenant's admin with the page's form, the person then signs in through the provider as that admin; the operator
 * removes the mapping (confirmed in the page), and the person's next sign-in through the provider is refused.
 * Screenshots (test-artifacts/screenshots/sso-page-*) and axe-core at 1280 and 390 px.
 */
describe("the Single sign-on page in a real browser", { timeout: 240_000 }, () => {
  const secrets = mkdtempSync(path.join(tmpdir(), "attestd-sso-page-"));
  let portal: PortalInBrowser;
  let idp: TestOidcProvider;
  let op: Page;

  async function visit(page: Page, name: string): Promise<void> {
    await page.waitForLoadState("networkidle");
    await screenshot(page, `sso-page-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  /**
   * A new browser of this person, through "Sign in with Test IdP", once it is on `landing`: the portal's overview
   * when signed in (the callback's page moves on to it), the callback's own page when refused.
   */
  async function signInThroughProvider(sub: string, email: string, landing: string): Promise<Page> {
    idp.signInAs({ sub, email, email_verified: true });
    const context = await newContext(portal.browser);
    const page = await context.newPage();
    await page.goto(`${portal.base}/portal/signin`);
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    await page.waitForURL((url) => url.origin === portal.base && url.pathname === landing);
    await page.waitForLoadState("networkidle");
    return page;
  }

  before(async () => {
    const port = await freePort();
    idp = await startOidcProvider({ redirectUri: `https://localhost:${port}/portal/sso/callback` });
    const secret = path.join(secrets, "client-secret");
    writeFileSync(secret, idp.clientSecret, { mode: 0o600 });
    portal = await startPortalInBrowser({
      tenants: ["acme", "globex"],
      port,
      args: ["--sso-issuer", idp.issuer, "--sso-client-id", idp.clientId, "--sso-client-secret-file", secret, "--sso-allow-http-loopback", "--sso-name", "Test IdP"],
    });
    ({ page: op } = await portal.signIn("root@ops.example", ["--operator"]));
  });
  after(async () => {
    await portal?.stop();
    await idp?.close();
    rmSync(secrets, { recursive: true, force: true });
  });

  it("an operator maps a verified email with the form; that person signs in through the provider as the tenant's admin", async () => {
    await op.goto(`${portal.base}/portal/`);
    await op.getByRole("link", { name: "Single sign-on" }).click();
    await op.waitForURL(`${portal.base}/portal/sso`);
    assert.match((await op.locator("main").textContent())!, /People sign in with Test IdP/);
    await visit(op, "1-empty");

    const form = op.getByRole("form", { name: "Map a provider identity to a tenant and role" });
    await form.getByLabel("Email or subject").fill("Grace@Acme.example");
    await form.getByLabel("Tenant").selectOption("acme");
    await form.getByLabel("Role").selectOption("admin");
    await form.getByRole("button", { name: "Save mapping" }).click();
    await op.locator("#notice", { hasText: "Mapping saved" }).waitFor();
    const row = op.locator("main tbody tr", { hasText: "grace@acme.example" });
    await row.waitFor();
    assert.match((await row.textContent())!, /verified email[\s\S]*acme[\s\S]*admin/);
    await visit(op, "2-mapped");

    const grace = await signInThroughProvider("idp-grace", "grace@acme.example", "/portal/");
    assert.match((await grace.locator("body").textContent())!, /grace@acme\.example[\s\S]*admin/);
    await grace.context().close();
  });

  it("Remove, confirmed in the page: the row is gone and the person's next sign-in through the provider is refused", async () => {
    await op.goto(`${portal.base}/portal/sso`);
    await op.getByRole("button", { name: "Remove the mapping of email grace@acme.example" }).click();
    await confirmInPage(op);
    await op.locator("#notice", { hasText: "Mapping of email grace@acme.example removed" }).waitFor();
    await op.locator("main tbody tr", { hasText: "grace@acme.example" }).waitFor({ state: "detached" });

    await op.setViewportSize({ width: 390, height: 844 });
    await visit(op, "3-390px");
    await op.setViewportSize({ width: 1280, height: 860 });

    const refused = await signInThroughProvider("idp-grace", "grace@acme.example", "/portal/sso/callback");
    assert.match((await refused.locator("main").textContent())!, /no longer mapped to a tenant[\s\S]*4038010/);
    await visit(refused, "4-refused");
    await refused.context().close();
  });
});
