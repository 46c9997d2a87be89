import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { attestdCli } from "../helpers/serverProcess.ts";
import { confirmInPage, newContext, screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

const PASSWORD = "a long and unusual passphrase";

/**
 * The Policy page in Debian's Chromium against a real `attestd serve` (issue 26, docs/policy.md): a tenant admin
 * saves a document with faulty fields and reads their paths in the notice, saves a good one and a stricter one,
 * and rolls back; the CLI sees the same versions. Screenshots and axe-core at 1280 and 390 px.
 */
describe("the Policy page in a real browser", { timeout: 180_000 }, () => {
  let portal: PortalInBrowser;
  let data: string[];
  let context: BrowserContext;
  let page: Page;
  let base: string;

  async function visit(name: string): Promise<void> {
    await page.waitForLoadState("networkidle");
    await screenshot(page, `policy-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  before(async () => {
    portal = await startPortalInBrowser({ tenants: ["acme"] });
    ({ data, base } = portal);
    context = await newContext(portal.browser);
    page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
  });

  after(async () => {
    await portal?.stop();
  });

  it("edits the document as JSON with field-named errors, keeps the history, rolls back", async () => {
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

    await page.getByRole("link", { name: "Policy", exact: true }).click();
    await page.waitForURL(`${base}/portal/policy`);
    assert.match((await page.locator("main").textContent())!, /No stored policy/);
    await visit("1-none");

    const editor = page.getByLabel("Policy document (JSON)");
    await editor.fill(JSON.stringify({ android: { minOsPatchLevel: "March 2025", requiredSecurityLevel: "Software" } }));
    await page.getByRole("button", { name: "Save as a new version" }).click();
    await page.locator("#notice.error", { hasText: /android\.minOsPatchLevel: must be YYYY-MM or YYYY-MM-DD/ }).waitFor();
    assert.match((await page.locator("#notice").textContent())!, /android\.requiredSecurityLevel: must be one of TrustedEnvironment, StrongBox/);
    await visit("2-field-errors");

    await editor.fill("{ not json");
    await page.getByRole("button", { name: "Save as a new version" }).click();
    await page.locator("#notice.error", { hasText: /The document is not JSON/ }).waitFor();

    await editor.fill(JSON.stringify({ android: { minOsPatchLevel: "2024-01" } }));
    await page.getByRole("button", { name: "Save as a new version" }).click();
    await page.locator("main", { hasText: "Version v1 is in force" }).waitFor();
    await page.getByLabel("Policy document (JSON)").fill(JSON.stringify({ android: { minOsPatchLevel: "2025-06", requiredSecurityLevel: "StrongBox" } }));
    await page.getByRole("button", { name: "Save as a new version" }).click();
    await page.locator("main", { hasText: "Version v2 is in force" }).waitFor();
    await visit("3-two-versions");

    await page.getByRole("button", { name: "Roll back to v1" }).click();
    await confirmInPage(page);
    await page.locator("main", { hasText: "Version v3 is in force" }).waitFor();
    const shown = JSON.parse(await page.getByLabel("Policy document (JSON)").inputValue());
    assert.deepEqual(shown, { android: { minOsPatchLevel: "2024-01" } });

    await page.setViewportSize({ width: 390, height: 844 });
    await visit("4-390px");
    await page.setViewportSize({ width: 1280, height: 860 });

    const versions = JSON.parse(attestdCli(["policy", "versions", "--tenant", "acme", ...data]).stdout) as { version: number; author: string }[];
    assert.deepEqual(versions.map((v) => [v.version, v.author]), [[3, "ada@acme.example"], [2, "ada@acme.example"], [1, "ada@acme.example"]]);
  });
});
