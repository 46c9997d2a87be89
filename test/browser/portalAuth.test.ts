import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { attestdCli, freePort, startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { addVirtualAuthenticator, confirmInPage, launchChromium, newContext, screenshot, seriousAxeViolations } from "./harness.ts";

const PASSWORD = "a long and unusual passphrase";

/**
 * Signing in to the portal in Debian's Chromium against a real `attestd serve` over HTTPS: a passkey registered
 * with Chromium's virtual authenticator and then used alone, a viewer who sees no write control and is refused a
 * forced write, operators managing people on the Users page, a password change and a reset link that sign the
 * person out elsewhere, and a session that goes idle (a second server with a
 * short --portal-idle-timeout). Every page visited is screenshotted (test-artifacts/screenshots/auth-*) and
 * checked with axe-core, the Account and Users pages at 1280 and 390 px.
 */
describe("portal sign-in in a real browser", { timeout: 300_000 }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-portal-auth-"));
  const data = ["--data-dir", dir];
  let server: ServerProcess;
  let browser: Browser;
  let base: string;
  const contexts: BrowserContext[] = [];

  async function visit(page: Page, name: string, url?: string): Promise<void> {
    if (url) await page.goto(url);
    await page.waitForLoadState("networkidle");
    await screenshot(page, `auth-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  /** `visit` at 390 px wide, then back to 1280 */
  async function visitNarrow(page: Page, name: string): Promise<void> {
    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, `${name}-390px`);
    await page.setViewportSize({ width: 1280, height: 860 });
  }

  async function newPage(): Promise<Page> {
    const context = await newContext(browser);
    contexts.push(context);
    const page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
    return page;
  }

  /** invited with the CLI, password set through the link in the browser, signed in */
  async function signedIn(page: Page, email: string, invite: string[], serverBase = base, dataDir = data): Promise<void> {
    const made = attestdCli(["user", "invite", "--email", email, ...invite, "--public-url", serverBase, ...dataDir]);
    assert.equal(made.status, 0, made.stderr);
    const who = email.split("@")[0]!;
    await page.goto(made.stdout.trim());
    await visit(page, `${who}-invite`);
    await page.getByLabel("New password").fill(PASSWORD);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.waitForURL(`${serverBase}/portal/signin`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${serverBase}/portal/`);
    await visit(page, `${who}-overview`);
  }

  before(async () => {
    assert.equal(attestdCli(["tenant", "create", "acme", ...data]).status, 0);
    const port = await freePort();
    // no --public-url: the default for a loopback host is https://localhost:PORT, the origin passkeys need
    base = `https://localhost:${port}`;
    server = await startServer([...data], { port, tls: { caFile: path.join(dir, "tls/ca.pem") } });
    browser = await launchChromium({ acceptLeafOf: path.join(dir, "tls/server-fullchain.pem") });
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("registers a passkey, signs out, signs in with the passkey alone; renames and deletes it", async () => {
    const page = await newPage();
    const authenticator = await addVirtualAuthenticator(page);
    await signedIn(page, "ada@acme.example", ["--tenant", "acme"]);

    await page.getByRole("link", { name: "Account" }).click();
    await page.waitForURL(`${base}/portal/account`);
    await visit(page, "1-account-no-passkey");
    await page.getByLabel("Name (optional)").fill("laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("cell", { name: "laptop", exact: true }).waitFor();
    assert.match((await page.locator("tbody tr").first().textContent())!, /never/);
    await visit(page, "2-account-passkey");
    await visitNarrow(page, "2-account-passkey");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await visit(page, "3-signin");
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.waitForURL(`${base}/portal/`);
    await page.goto(`${base}/portal/keys`);
    await page.getByRole("button", { name: "Create key" }).waitFor();
    await visit(page, "4-keys-after-passkey");
    await page.goto(`${base}/portal/account`);
    assert.doesNotMatch((await page.locator("tbody tr").first().textContent())!, /never/, "its last use is shown");
    await visit(page, "4-account-used");

    // rename, then delete with a confirmation: the session goes on, the passkey no longer opens one
    await page.getByText("Rename").click();
    await page.getByLabel("New name").fill("work laptop");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("cell", { name: "work laptop", exact: true }).waitFor();
    await visit(page, "5-account-renamed");
    await page.getByRole("button", { name: "Delete" }).click();
    await confirmInPage(page);
    await page.getByText("Nothing here yet.").waitFor();
    await visit(page, "6-account-deleted");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.locator("#notice.error").getByText("The passkey was not accepted").waitFor();
    await visit(page, "7-signin-deleted-passkey");
    assert.equal(page.url(), `${base}/portal/signin`);
    await authenticator.remove();
  });

  it("a viewer sees no write control, and a write forced from the page is refused with the catalog code", async () => {
    const page = await newPage();
    assert.equal(attestdCli(["key", "create", "--tenant", "acme", ...data]).status, 0);
    await signedIn(page, "vic@acme.example", ["--tenant", "acme", "--role", "viewer"]);
    await page.goto(`${base}/portal/keys`);
    await page.getByRole("cell", { name: "active" }).waitFor();
    assert.equal(await page.getByRole("button", { name: "Create key" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Revoke" }).count(), 0);
    assert.equal(await page.getByRole("link", { name: "Users" }).count(), 0);
    await visit(page, "8-keys-viewer");
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    const forced = await page.evaluate(async (csrf) => {
      const r = await fetch("/portal/api/keys", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": csrf }, body: '{"label":"x"}' });
      return { status: r.status, body: (await r.json()) as { code: string } };
    }, csrf);
    assert.deepEqual([forced.status, forced.body.code], [403, "4038000"]);
    const users = await page.goto(`${base}/portal/users`);
    assert.equal(users?.status(), 403);
    await page.getByRole("heading", { name: "Not allowed" }).waitFor();
    await visit(page, "8-users-as-viewer-403");
  });

  it("an operator invites, changes a role and disables someone on the Users page", async () => {
    const page = await newPage();
    await signedIn(page, "root@example.org", ["--operator"]);
    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForURL(`${base}/portal/users`);
    await visit(page, "9-users");
    await visitNarrow(page, "9-users");

    await page.getByLabel("Email").fill("bea@acme.example");
    await page.getByLabel("Role", { exact: true }).selectOption("viewer");
    await page.getByLabel("Tenant (not for operators)").selectOption("acme");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.locator("#new-link").waitFor({ state: "visible" });
    const link = (await page.locator("#new-link-value").textContent())!.trim();
    assert.match(link, new RegExp(`^${base}/portal/invite#[A-Za-z0-9_-]{43}$`));
    await visit(page, "10-users-invited");

    await page.goto(`${base}/portal/users?tenant=acme`);
    const bea = page.getByRole("row", { name: /bea@acme\.example/ });
    await bea.getByRole("combobox").selectOption("admin");
    await bea.getByRole("button", { name: "Change" }).click();
    await page.waitForLoadState("networkidle");
    await page.getByRole("row", { name: /bea@acme\.example/ }).getByRole("combobox").waitFor();
    assert.equal(await page.getByRole("row", { name: /bea@acme\.example/ }).getByRole("combobox").inputValue(), "admin");
    await page.getByRole("row", { name: /vic@acme\.example/ }).getByRole("button", { name: "Disable" }).click();
    await confirmInPage(page);
    await page.getByRole("row", { name: /vic@acme\.example/ }).getByRole("button", { name: "Enable" }).waitFor();
    await visit(page, "11-users-changed");
    const listed = JSON.parse(attestdCli(["user", "list-portal", "--tenant", "acme", ...data]).stdout) as { email: string; role: string; state: string }[];
    assert.deepEqual(
      listed.filter((p) => p.email !== "ada@acme.example").map((p) => [p.email, p.role, p.state]),
      [["bea@acme.example", "admin", "invited"], ["vic@acme.example", "viewer", "disabled"]],
      "the CLI sees what the page did",
    );
  });

  it("a password changed on the Account page keeps this browser in and signs every other out; a reset link signs out all", async () => {
    const NEW = "a completely different passphrase";
    const here = await newPage();
    await signedIn(here, "kit@acme.example", ["--tenant", "acme", "--role", "viewer"]);
    const elsewhere = await newPage();
    await elsewhere.goto(`${base}/portal/signin`);
    await elsewhere.getByLabel("Email").fill("kit@acme.example");
    await elsewhere.getByLabel("Password").fill(PASSWORD);
    await elsewhere.getByRole("button", { name: "Sign in" }).click();
    await elsewhere.waitForURL(`${base}/portal/`);

    await visit(here, "12-account-password", `${base}/portal/account`);
    await here.getByLabel("Current password").fill(PASSWORD);
    await here.getByLabel("New password").fill(NEW);
    const answered = here.waitForResponse((r) => r.url().endsWith("/portal/api/account/password"));
    // the page reloads itself after the answer (portal.js); a navigation of the test's own started before that
    // reload is aborted by it (net::ERR_ABORTED), so wait for the reloaded page first
    const reloaded = here.waitForEvent("load");
    await here.getByRole("button", { name: "Change password" }).click();
    assert.equal((await answered).status(), 200);
    await reloaded;
    await here.goto(`${base}/portal/keys`);
    assert.equal(new URL(here.url()).pathname, "/portal/keys", "the browser that changed it goes on in its new session");
    await elsewhere.goto(`${base}/portal/keys`);
    assert.equal(new URL(elsewhere.url()).pathname, "/portal/signin", "another browser of the person is signed out");

    const reset = attestdCli(["user", "reset-link", "kit@acme.example", "--public-url", base, ...data]);
    assert.equal(reset.status, 0, reset.stderr);
    await elsewhere.goto(reset.stdout.trim());
    await visit(elsewhere, "13-reset-link");
    await elsewhere.getByRole("heading", { name: "Choose a new password" }).waitFor();
    await elsewhere.getByLabel("New password").fill(PASSWORD);
    await elsewhere.getByRole("button", { name: "Set password" }).click();
    await elsewhere.waitForURL(`${base}/portal/signin`);
    await here.goto(`${base}/portal/keys`);
    assert.equal(new URL(here.url()).pathname, "/portal/signin", "a used reset link ends every session of the person");
  });

  it("a session idle past --portal-idle-timeout sends the next page to sign-in", async () => {
    // a second server with a 5 s idle timeout, on its own store; the first one's dev TLS, so the browser trusts it
    const idleDir = mkdtempSync(path.join(tmpdir(), "attestd-portal-idle-"));
    cpSync(path.join(dir, "tls"), path.join(idleDir, "tls"), { recursive: true });
    const idleData = ["--data-dir", idleDir];
    const port = await freePort();
    const idleBase = `https://localhost:${port}`;
    const idle = await startServer([...idleData, "--portal-idle-timeout", "5", "--portal-session-lifetime", "600"], { port, tls: { caFile: path.join(idleDir, "tls/ca.pem") } });
    try {
      assert.equal(attestdCli(["tenant", "create", "acme", ...idleData]).status, 0);
      const page = await newPage();
      await signedIn(page, "ida@acme.example", ["--tenant", "acme"], idleBase, idleData);
      await page.goto(`${idleBase}/portal/keys`);
      await page.getByRole("table", { name: "API keys" }).waitFor();
      // longer than the idle timeout without a request
      await new Promise((r) => setTimeout(r, 6500));
      await page.goto(`${idleBase}/portal/verdicts`);
      await page.waitForURL(`${idleBase}/portal/signin?next=%2Fportal%2Fverdicts&ended=1`);
      await page.getByText("Your session has ended").waitFor();
      await visit(page, "12-idle-signed-out");
    } finally {
      await idle.stop();
      rmSync(idleDir, { recursive: true, force: true });
    }
  });
});
