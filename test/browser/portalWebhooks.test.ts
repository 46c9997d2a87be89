import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { attestdCli } from "../helpers/serverProcess.ts";
import { WebhookReceiver } from "../helpers/webhookReceiver.ts";
import { confirmInPage, screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

/**
 * The Webhooks page in Debian's Chromium against a real `attestd serve` (issue 26): a tenant admin adds an endpoint
 * (its secret shown once in the page's box, and gone after a reload), creates an API key so that a key.created is
 * delivered to a receiver on 127.0.0.1, opens the delivery's attempts, resends it, and removes the endpoint.
 * Screenshots and axe-core at 1280 and 390 px.
 */
describe("the Webhooks page in a real browser", { timeout: 180_000 }, () => {
  let portal: PortalInBrowser;
  let page: Page;
  let receiver: WebhookReceiver;

  async function visit(name: string): Promise<void> {
    await page.waitForLoadState("networkidle");
    await screenshot(page, `webhooks-${name}`);
    const violations = await seriousAxeViolations(page);
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 2)}`);
  }

  before(async () => {
    receiver = await WebhookReceiver.start();
    portal = await startPortalInBrowser({ tenants: ["acme"], args: ["--webhook-allow-private", "--webhook-allow-http", "--webhook-poll-ms", "50"] });
    ({ page } = await portal.signIn("ada@acme.example", ["--tenant", "acme"]));
  });
  after(async () => {
    await portal?.stop();
    await receiver.close();
  });

  it("adds an endpoint with its secret shown once, sees a delivery's attempts, resends, removes", async () => {
    const { base } = portal;
    await page.goto(`${base}/portal/`);
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.waitForURL(`${base}/portal/webhooks`);
    await visit("1-empty");

    await page.getByLabel("URL").fill(receiver.url);
    await page.getByLabel(/^Events/).fill("key.created, verdict.stored");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secretBox = page.locator("#new-secret-value");
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!;
    assert.match(secret, /^whsec_/);
    receiver.secrets = [secret];
    await page.locator("tbody tr", { hasText: receiver.url }).first().waitFor();
    await visit("2-secret-shown");

    // an API key made by the CLI is an event like one made here
    const key = attestdCli(["key", "create", "--tenant", "acme", ...portal.data]);
    assert.equal(key.status, 0, key.stderr);
    await receiver.waitFor(1, 30_000);
    assert.equal(receiver.received[0]!.json.type, "key.created");
    assert.equal(receiver.received[0]!.verified, true);

    await page.reload();
    assert.ok(!(await page.content()).includes(secret.slice(6)), "the secret is gone after a reload");
    const row = page.locator("tbody tr", { hasText: "key.created" }).last();
    await row.waitFor();
    await row.getByRole("link").click();
    await page.locator("#shown-h").waitFor();
    assert.match((await page.locator("article", { has: page.locator("#shown-h") }).textContent())!, /200[\s\S]*thanks/);
    await visit("3-delivery-attempts");

    await page.getByRole("button", { name: /^Resend the key\.created/ }).click();
    await receiver.waitFor(2, 30_000);
    assert.equal(receiver.received[1]!.id, receiver.received[0]!.id);

    await page.setViewportSize({ width: 390, height: 844 });
    await visit("4-390px");
    await page.setViewportSize({ width: 1280, height: 860 });

    await page.goto(`${base}/portal/webhooks`);
    await page.getByRole("button", { name: `Remove ${receiver.url}` }).click();
    await confirmInPage(page);
    await page.locator("tbody tr", { hasText: "enabled" }).waitFor({ state: "detached" });
    const listed = JSON.parse(attestdCli(["webhook", "list", "--tenant", "acme", ...portal.data]).stdout) as unknown[];
    assert.deepEqual(listed, []);
  });
});
