import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { attestdCli } from "../helpers/serverProcess.ts";
import { screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

/**
 * The portal's Audit trail page in Chromium: a tenant admin finds it in the navigation and sees the changes made to
 * the tenant by the CLI (the operator's OS user) and in the portal (the person), filters them by action, and the
 * page has no serious axe violation. Screenshot: test-artifacts/screenshots/portal-audit.png.
 */
describe("the portal's Audit trail page in a browser", () => {
  let portal: PortalInBrowser;
  before(async () => {
    portal = await startPortalInBrowser({ tenants: ["acme"] });
  });
  after(() => portal.stop());

  it("lists the tenant's changes, who and from where, filtered by action; axe finds nothing serious", async () => {
    const key = attestdCli(["key", "create", "--tenant", "acme", "--label", "from the CLI", ...portal.data]);
    assert.equal(key.status, 0, key.stderr);
    const { page } = await portal.signIn("ada@acme.example", ["--tenant", "acme", "--role", "admin"]);
    await page.goto(`${portal.base}/portal/`);
    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.waitForURL(/\/portal\/audit/);
    const rows = page.locator("tbody tr");
    await rows.first().waitFor();
    const text = await page.locator("tbody").innerText();
    assert.match(text, /key\.created/);
    assert.match(text, /operator \(CLI\)/);
    assert.match(text, /portal\.session\.signed-in/);
    assert.match(text, /ada@acme\.example/);
    await screenshot(page, "portal-audit");
    assert.deepEqual(await seriousAxeViolations(page), []);

    await page.getByLabel("Action").fill("key.*");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/action=key/);
    const filtered = await page.locator("tbody").innerText();
    assert.match(filtered, /key\.created/);
    assert.doesNotMatch(filtered, /portal\.session/);
  });
});
