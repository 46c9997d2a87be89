import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { attestdCli } from "../helpers/serverProcess.ts";
import { responseKeys, serviceAccountFile } from "../helpers/playAppKeys.ts";
import { confirmInPage, newContext, screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

const PASSWORD = "a long and unusual passphrase";

/**
 * The Play apps page in Debian's Chromium against a real `attestd serve` (issue 23): a tenant admin registers one
 * app with the two keys pasted and one with a service-account file chosen (read by portal.js and posted as text),
 * sees both listed with no key anywhere on the page, and removes one. Screenshots and axe-core at 1280 and 390 px.
 */
describe("the Play apps page in a real browser", { timeout: 180_000 }, () => {
  let portal: PortalInBrowser;
  let dir: string;
  let data: string[];
  let context: BrowserContext;
  let page: Page;
  let base: string;

  async function visit(name: string): Promise<void> {
    await page.waitForLoadState("networkidle");
    await screenshot(page, `play-apps-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  before(async () => {
    portal = await startPortalInBrowser({ tenants: ["acme"] });
    ({ dir, data, base } = portal);
    context = await newContext(portal.browser);
    page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
  });

  after(async () => {
    await portal?.stop();
  });

  it("registers an app with pasted keys and one with a service-account file, lists them without keys, removes one", async () => {
    const invite = attestdCli(["user", "invite", "--email", "ada@acme.example", "--tenant", "acme", "--public-url", base, ...data]);
    assert.equal(invite.status, 0, invite.stderr);
    await page.goto(invite.stdout.trim());
    await page.getByLabel("New password").fill(PASSWORD);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.waitForURL(`${base}/portal/signin`);
    await page.getByLabel("Email").fill("ada@acme.example");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${base}/portal/`);

    await page.getByRole("link", { name: "Play apps" }).click();
    await page.waitForURL(`${base}/portal/play-apps`);
    await visit("1-empty");

    // the two keys pasted, a digest as the Play Console shows it, the floor raised, one signal deciding
    const keys = responseKeys();
    await page.getByLabel("Package name").fill("com.acme.shop");
    await page.getByLabel(/Signing certificate SHA-256 digests/).fill("AB:".repeat(31) + "AB");
    await page.getByLabel("Lowest device verdict that passes").selectOption("MEETS_STRONG_INTEGRITY");
    await page.getByLabel("The app is licensed to the user").check();
    await page.getByLabel(/Response decryption key/).fill(keys.decryptionKey);
    await page.getByLabel(/Response verification key/).fill(keys.verificationKey);
    await page.getByRole("button", { name: "Register app" }).click();
    await page.locator("tbody tr", { hasText: "com.acme.shop" }).waitFor();
    const shop = page.locator("tbody tr", { hasText: "com.acme.shop" });
    assert.match((await shop.textContent())!, /response keys[\s\S]*(ab){32}[\s\S]*strong integrity[\s\S]*300 s[\s\S]*licensed/);

    // a service-account key file chosen: read in the browser, sent as text with the form
    const account = serviceAccountFile();
    const file = path.join(dir, "service-account.json");
    writeFileSync(file, account.text);
    await page.getByLabel("Package name").fill("com.acme.bank");
    await page.getByLabel(/service-account key file/).setInputFiles(file);
    await page.getByRole("button", { name: "Register app" }).click();
    await page.locator("tbody tr", { hasText: "com.acme.bank" }).waitFor();
    assert.match((await page.locator("tbody tr", { hasText: "com.acme.bank" }).textContent())!, /attest@demo-project\.iam\.gserviceaccount\.com/);
    await visit("2-two-apps");

    // a refusal is said on the page, and nothing is added
    await page.getByLabel("Package name").fill("com.acme.shop");
    await page.getByLabel(/Response decryption key/).fill(keys.decryptionKey);
    await page.getByLabel(/Response verification key/).fill(keys.verificationKey);
    await page.getByRole("button", { name: "Register app" }).click();
    await page.locator("#notice.error", { hasText: /registered com\.acme\.shop already/ }).waitFor();

    await page.reload();
    const html = await page.content();
    assert.ok(html.includes("com.acme.bank"));
    for (const secret of [keys.decryptionKey, keys.verificationKey, account.privateKeyPem.split("\n")[1]!]) {
      assert.ok(!html.includes(secret), "no key on the page once entered");
    }

    await page.setViewportSize({ width: 390, height: 844 });
    await visit("3-390px");
    await page.setViewportSize({ width: 1280, height: 860 });

    await page.getByRole("button", { name: "Remove com.acme.shop" }).click();
    await confirmInPage(page);
    await page.locator("tbody tr", { hasText: "com.acme.shop" }).waitFor({ state: "detached" });
    const listed = JSON.parse(attestdCli(["play-app", "list", "--tenant", "acme", ...data]).stdout) as { policy: { packageName: string } }[];
    assert.deepEqual(listed.map((a) => a.policy.packageName), ["com.acme.bank"]);
  });
});
