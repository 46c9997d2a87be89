import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startOidcProvider, type TestOidcProvider } from "../helpers/oidcProvider.ts";
import { attestdCli, freePort, startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { launchChromium, newContext, screenshot, seriousAxeViolations } from "./harness.ts";

/**
 * Single sign-on in Debian's Chromium (docs/sso.md): a real `attestd serve` over HTTPS with --sso-* set, a real
 * OpenID Connect provider (oidc-provider) on 127.0.0.1, and a person mapped by `attestd sso map`: the sign-in
 * page's "Sign in with Test IdP" goes to the provider and back, and the portal opens signed in, which shows that the
 * Strict session cookie set at the callback (a navigation that began on the provider's site) is sent by the
 * browser afterwards. An unmapped person gets the refusal page. Screenshots: test-artifacts/screenshots/sso-*.
 */
describe("portal single sign-on in a real browser", { timeout: 300_000 }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-portal-sso-"));
  const data = ["--data-dir", dir];
  let server: ServerProcess;
  let browser: Browser;
  let base: string;
  let idp: TestOidcProvider;

  async function visit(page: Page, name: string): Promise<void> {
    await page.waitForLoadState("networkidle");
    await screenshot(page, `sso-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  before(async () => {
    assert.equal(attestdCli(["tenant", "create", "acme", ...data]).status, 0);
    const mapped = attestdCli(["sso", "map", "--email", "ada@acme.example", "--tenant", "acme", "--role", "admin", ...data]);
    assert.equal(mapped.status, 0, mapped.stderr);
    const port = await freePort();
    base = `https://localhost:${port}`;
    idp = await startOidcProvider({ redirectUri: `${base}/portal/sso/callback` });
    const secret = path.join(dir, "sso-secret");
    writeFileSync(secret, idp.clientSecret, { mode: 0o600 });
    server = await startServer(
      [...data, "--sso-issuer", idp.issuer, "--sso-client-id", idp.clientId, "--sso-client-secret-file", secret, "--sso-allow-http-loopback", "--sso-name", "Test IdP"],
      { port, tls: { caFile: path.join(dir, "tls/ca.pem") } },
    );
    browser = await launchChromium({ acceptLeafOf: path.join(dir, "tls/server-fullchain.pem") });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await idp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("Sign in with Test IdP: to the provider and back, signed in as the mapped tenant admin", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    idp.signInAs({ sub: "idp-ada", email: "ada@acme.example", email_verified: true });
    await page.goto(`${base}/portal/verdicts`);
    await page.waitForURL(/\/portal\/signin/);
    await visit(page, "1-signin");
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    await page.waitForURL(`${base}/portal/verdicts`);
    await visit(page, "2-verdicts-signed-in");
    assert.match((await page.locator("body").textContent())!, /ada@acme\.example/);
    // the same session a password opens: a later page load is signed in too
    await page.goto(`${base}/portal/account`);
    assert.equal(new URL(page.url()).pathname, "/portal/account");
    await context.close();
  });

  it("an unmapped person is refused with a page that says why and offers the sign-in page", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    idp.signInAs({ sub: "idp-eve", email: "eve@elsewhere.example", email_verified: true });
    await page.goto(`${base}/portal/signin`);
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    await page.waitForURL(/\/portal\/sso\/callback/);
    await visit(page, "3-refused");
    const text = (await page.locator("main").textContent())!;
    assert.match(text, /maps to no tenant/);
    assert.match(text, /4038010/);
    await page.getByRole("link", { name: "Back to the sign-in page" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await context.close();
  });
});
