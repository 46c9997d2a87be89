import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { type Agent, request } from "undici";
import { attestdCli } from "../helpers/serverProcess.ts";
import { addVirtualAuthenticator, confirmInPage, newContext, screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

const PASSWORD = "a long and unusual passphrase";
const KEY_HEADER = "x-vendor-attest-api-key";

/** The smallest valid vendor container (blob-format.md): a device error, appraised Unknown and stored like any verdict. */
function deviceErrorBlob(): Buffer {
  const err = Buffer.from("Error", "ascii");
  return Buffer.concat([Buffer.from([1, err.length]), err, Buffer.from([2, 0, 0, 0, 0, 0])]);
}

/**
 * The portal in Debian's Chromium against a real `attestd serve` over HTTPS (dev TLS), as a person uses it:
 * invitation → password → sign in → a passkey added → signed out and in again with it → API key → the key used on
 * the API → the verdict in the history and on the overview's chart → a failed
 * request found by its errorId → the key revoked → the API refuses it. Every page visited is screenshotted
 * (test-artifacts/screenshots/) and checked with axe-core (no serious or critical violation), at 1280 and 390 px.
 */
describe("the portal in a real browser", { timeout: 240_000 }, () => {
  let portal: PortalInBrowser;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let api: Agent;
  let data: string[];

  async function visit(name: string, url?: string): Promise<void> {
    if (url) await page.goto(url);
    await page.waitForLoadState("networkidle");
    await screenshot(page, `portal-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  before(async () => {
    portal = await startPortalInBrowser({ tenants: ["acme", "globex"] });
    ({ browser, base, api, data } = portal);
    context = await newContext(browser);
    page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
  });

  after(async () => {
    await portal?.stop();
  });

  it("walks the whole life of a tenant admin", async () => {
    const invite = attestdCli(["user", "invite", "--email", "ada@acme.example", "--tenant", "acme", "--public-url", base, ...data]);
    assert.equal(invite.status, 0, invite.stderr);
    const link = invite.stdout.trim();
    assert.match(link, new RegExp(`^${base}/portal/invite#[A-Za-z0-9_-]{43}$`));

    // the link: set a password (a common one is refused first)
    await page.goto(link);
    await visit("1-invite");
    await page.getByLabel("New password").fill("password1234");
    await page.getByRole("button", { name: "Set password" }).click();
    await page.getByText(/most common/).waitFor();
    await page.getByLabel("New password").fill(PASSWORD);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await visit("2-signin");

    // a signed-out deep link comes back after signing in
    await page.goto(`${base}/portal/keys`);
    await page.waitForURL(/\/portal\/signin\?next=%2Fportal%2Fkeys/);
    await page.getByLabel("Email").fill("ada@acme.example");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${base}/portal/keys`);
    const cookie = (await context.cookies()).find((c) => c.name === "__Host-attestd_session")!;
    assert.deepEqual([cookie.secure, cookie.httpOnly, cookie.sameSite, cookie.path], [true, true, "Strict", "/"]);
    await visit("3-keys-empty");

    // a passkey from Chromium's virtual authenticator; signed out, back in with the passkey alone
    await addVirtualAuthenticator(page);
    await page.getByRole("link", { name: "Account" }).click();
    await page.waitForURL(`${base}/portal/account`);
    await page.getByLabel("Name (optional)").fill("laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("cell", { name: "laptop", exact: true }).waitFor();
    await visit("3b-passkey-added");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.waitForURL(`${base}/portal/`);
    await page.goto(`${base}/portal/keys`);

    // an API key, shown once
    await page.getByLabel("Label").fill("web shop");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator("#new-key").waitFor({ state: "visible" });
    const key = (await page.locator("#new-key-value").textContent())!.trim();
    assert.match(key, /^atd_[a-z2-7]{10}_[A-Za-z0-9_-]{43}$/);
    // the list beside the shown key already holds it, without a reload that would lose the key's only display
    await page.locator("tbody tr", { hasText: "web shop" }).waitFor();
    assert.equal((await page.locator("#new-key-value").textContent())!.trim(), key);
    await visit("4-key-created");

    // used through the API: a nonce, a blob, a verdict
    const nonceRes = await request(`${base}/v2/nonces`, { method: "POST", headers: { [KEY_HEADER]: key }, dispatcher: api });
    assert.equal(nonceRes.statusCode, 200);
    const { nonce } = (await nonceRes.body.json()) as { nonce: string };
    const blobRes = await request(`${base}/v2/blobs?nonce=${nonce}`, {
      method: "POST",
      headers: { [KEY_HEADER]: key, "content-type": "application/octet-stream" },
      body: deviceErrorBlob(),
      dispatcher: api,
    });
    assert.equal(blobRes.statusCode, 200);
    const verdict = (await blobRes.body.json()) as { verdict: string; status: string };
    assert.deepEqual([verdict.verdict, verdict.status], ["Unknown", "DeviceError"]);
    // and a failed one: the nonce was spent
    const failed = await request(`${base}/v2/blobs?nonce=${nonce}`, {
      method: "POST",
      headers: { [KEY_HEADER]: key, "content-type": "application/octet-stream" },
      body: deviceErrorBlob(),
      dispatcher: api,
    });
    assert.equal(failed.statusCode, 400);
    await failed.body.text();

    // the verdict in the history, and its detail
    await page.goto(`${base}/portal/verdicts`);
    const row = page.locator("tbody tr").first();
    await row.getByText("DeviceError").waitFor();
    await visit("5-verdicts");
    await row.getByRole("link").click();
    await page.getByRole("heading", { name: "Why" }).waitFor();
    await visit("6-verdict-detail");

    // and on the overview's chart: this hour's Unknown bar holds it
    await page.goto(`${base}/portal/`);
    await page.locator('canvas[data-chart="hourly"][data-drawn="true"]').waitFor();
    // (evaluated in the page: the tests are compiled without the DOM's types)
    const thisHour = (await page.evaluate(`(() => {
      const chart = Chart.getChart(document.querySelector('canvas[data-chart="hourly"]'));
      return Object.fromEntries(chart.data.datasets.map((d) => [d.label, d.data[d.data.length - 1]]));
    })()`)) as Record<string, number>;
    assert.deepEqual(thisHour, { Yes: 0, No: 0, Unknown: 1 });
    await visit("6b-overview");

    // the failed request, found by status, then by its exact errorId at the deep link support would paste
    let errorId = "";
    for (let i = 0; i < 40 && !errorId; i++) {
      await page.goto(`${base}/portal/activity?status=400`);
      errorId = (await page.locator("tbody tr td:nth-child(6) a").first().textContent({ timeout: 500 }).catch(() => "")) ?? "";
      if (!errorId) await new Promise((r) => setTimeout(r, 250)); // the activity log is written behind
    }
    assert.match(errorId, /^[0-9a-f]{24}$/);
    await visit("7-activity-400");
    await page.goto(`${base}/portal/activity?errorId=${errorId}`);
    assert.equal(await page.locator("tbody tr").count(), 1);
    assert.match((await page.locator("tbody tr").first().textContent())!, /4000004/, "the row of the NONCE_ALREADY_USED answer");
    await visit("8-activity-errorid");

    // the narrow screen
    await page.setViewportSize({ width: 390, height: 844 });
    await visit("9-verdicts-390px", `${base}/portal/verdicts`);
    await page.setViewportSize({ width: 1280, height: 860 });

    // revoke: the API refuses the key (at once on this instance, which answered the revocation)
    await page.goto(`${base}/portal/keys`);
    await page.getByRole("button", { name: "Revoke" }).click();
    await confirmInPage(page);
    await page.getByText(/^revoked /).waitFor();
    await visit("10-key-revoked");
    let status = 0;
    for (let i = 0; i < 30 && status !== 401; i++) {
      const res = await request(`${base}/v2/nonces`, { method: "POST", headers: { [KEY_HEADER]: key }, dispatcher: api });
      status = res.statusCode;
      await res.body.text();
      if (status !== 401) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(status, 401);
  });

  it("refuses what people must not do: another tenant's verdict by URL, a missing CSRF token, a signed-out session", async () => {
    const verdictLink = await (async () => {
      await page.goto(`${base}/portal/verdicts`);
      return page.locator("tbody tr a").first().getAttribute("href");
    })();
    assert.ok(verdictLink);

    // a state change without the page's CSRF token, sent from the page itself
    const noCsrf = await page.evaluate(async () => {
      const r = await fetch("/portal/api/keys", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      return { status: r.status, body: (await r.json()) as { code: string } };
    });
    assert.equal(noCsrf.status, 403);
    assert.equal(noCsrf.body.code, "4038001");

    // another tenant's admin opens acme's verdict by its URL
    const invite = attestdCli(["user", "invite", "--email", "gus@globex.example", "--tenant", "globex", "--public-url", base, ...data]);
    const other = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const p2 = await other.newPage();
    await p2.goto(invite.stdout.trim());
    await p2.getByLabel("New password").fill(PASSWORD);
    await p2.getByRole("button", { name: "Set password" }).click();
    await p2.waitForURL(`${base}/portal/signin`);
    await p2.getByLabel("Email").fill("gus@globex.example");
    await p2.getByLabel("Password").fill(PASSWORD);
    await p2.getByRole("button", { name: "Sign in" }).click();
    await p2.waitForURL(`${base}/portal/`);
    const cross = await p2.goto(`${base}${verdictLink}`);
    assert.equal(cross?.status(), 404);
    await screenshot(p2, "portal-11-cross-tenant-404");

    // disabled while signed in: the next page is the sign-in page
    assert.equal(attestdCli(["user", "disable", "gus@globex.example", ...data]).status, 0);
    await p2.goto(`${base}/portal/verdicts`);
    await p2.waitForURL(/\/portal\/signin/);
    await screenshot(p2, "portal-12-disabled-signed-out");
    await other.close();

    // signing out ends the session on the server: the old cookie is worth nothing
    const before = (await context.cookies()).find((c) => c.name === "__Host-attestd_session")!;
    await page.goto(`${base}/portal/`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await context.addCookies([before]);
    await page.goto(`${base}/portal/verdicts`);
    await page.waitForURL(/\/portal\/signin/);
  });
});
