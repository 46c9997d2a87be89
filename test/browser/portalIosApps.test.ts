import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { sqliteFile } from "../../src/store/openStores.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { confirmInPage, screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

const APP_ID = "ABCDE12345.com.acme.shop";

/**
 * The iOS apps page in Debian's Chromium against a real `attestd serve` (issue 25): a tenant admin is refused a bad
 * app id with the field named, registers an app, sees it listed, removes it through the in-page confirmation, and
 * revokes an App Attest key (one its devices attested, written to the store before the server starts, as an
 * attestation's Yes leaves it). Screenshots and axe-core at 1280 and 390 px.
 */
describe("the iOS apps page in a real browser", { timeout: 180_000 }, () => {
  let portal: PortalInBrowser;
  let context: BrowserContext;
  let page: Page;
  let keyId: string;

  async function visit(name: string): Promise<void> {
    await page.waitForLoadState("networkidle");
    await screenshot(page, `ios-apps-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  before(async () => {
    portal = await startPortalInBrowser({
      tenants: ["acme"],
      async seed(dir) {
        const store = new SqliteStore({ file: sqliteFile(dir) });
        try {
          const tenant = (await store.getTenantByName("acme"))!;
          const publicKey = Buffer.concat([Buffer.from([4]), randomBytes(64)]);
          keyId = createHash("sha256").update(publicKey).digest("base64");
          const key = { tenantId: tenant.tenantId, keyId, appId: APP_ID, publicKey: publicKey.toString("base64"), counter: 0, environment: "production" as const, receipt: "", attestedAt: new Date().toISOString(), lastAssertedAt: null, revokedAt: null, riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null, refreshDueAt: null };
          assert.ok(await store.applyAppAttestEffect({ kind: "attested", key }));
        } finally {
          await store.close();
        }
      },
    });
    ({ context, page } = await portal.signIn("ada@acme.example", ["--tenant", "acme"]));
  });

  after(async () => {
    await context?.close();
    await portal?.stop();
  });

  it("refuses a bad app id, registers an app, lists it, removes it via the in-page confirmation, revokes a key", async () => {
    const { base, data } = portal;
    await page.goto(`${base}/portal/`);
    await page.getByRole("link", { name: "iOS apps" }).click();
    await page.waitForURL(`${base}/portal/ios-apps`);
    await visit("1-no-app");

    // a bundle id without its Team ID: said on the page, the field named, nothing added
    await page.getByLabel("App id (TEAMID.BUNDLEID)").fill("com.acme.shop");
    await page.getByRole("button", { name: "Register app" }).click();
    await page.locator("#notice.error", { hasText: /the app id is TEAMID\.BUNDLEID/ }).waitFor();

    await page.getByLabel("App id (TEAMID.BUNDLEID)").fill(APP_ID);
    await page.getByLabel("Environment whose keys it accepts").selectOption("both");
    await page.getByRole("button", { name: "Register app" }).click();
    const row = page.locator("tbody tr", { hasText: APP_ID }).filter({ has: page.getByRole("button", { name: `Remove ${APP_ID}` }) });
    await row.waitFor();
    assert.match((await row.textContent())!, /both/);
    await page.locator("#notice", { hasText: "iOS app registered." }).waitFor();
    await visit("2-one-app-1280px");
    await page.setViewportSize({ width: 390, height: 844 });
    await visit("3-one-app-390px");
    await page.setViewportSize({ width: 1280, height: 860 });
    const listed = JSON.parse(attestdCli(["ios-app", "list", "--tenant", "acme", ...data]).stdout) as { appId: string; environment: string }[];
    assert.deepEqual(listed.map((a) => [a.appId, a.environment]), [[APP_ID, "both"]]);

    // the key's verdicts link names it as the verdict list's device filter
    const keyRow = page.locator("tbody tr", { hasText: keyId });
    assert.equal(await keyRow.getByRole("link", { name: `Verdicts of key ${keyId}` }).getAttribute("href"), `/portal/verdicts?${new URLSearchParams({ device: keyId })}`);

    await page.getByRole("button", { name: `Remove ${APP_ID}` }).click();
    await page.locator("#confirm-dialog[open]").waitFor();
    await screenshot(page, "ios-apps-4-confirm-remove");
    await confirmInPage(page);
    await row.waitFor({ state: "detached" });
    await page.locator("#notice", { hasText: `${APP_ID} removed.` }).waitFor();
    assert.deepEqual(JSON.parse(attestdCli(["ios-app", "list", "--tenant", "acme", ...data]).stdout), []);

    await keyRow.getByRole("button", { name: `Revoke key ${keyId}` }).click();
    await confirmInPage(page);
    await page.locator("#notice", { hasText: `Key ${keyId} revoked.` }).waitFor();
    assert.match((await page.locator("tbody tr", { hasText: keyId }).textContent())!, /revoked/);
    await visit("5-key-revoked");
    const shown = JSON.parse(attestdCli(["ios-key", "show", "--tenant", "acme", "--key-id", keyId, ...data]).stdout) as { revokedAt: string | null };
    assert.ok(shown.revokedAt, "the CLI sees the key revoked");
  });
});
