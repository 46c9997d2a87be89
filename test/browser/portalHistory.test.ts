import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Agent, request } from "undici";
import { VENDOR_SENTENCES } from "../../src/portal/verdictReasons.ts";
import { PORTAL_PASSWORD } from "../helpers/portalPeople.ts";
import { attestdCli, freePort, startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { launchChromium, newContext, screenshot, seriousAxeViolations } from "./harness.ts";

const KEY_HEADER = "x-vendor-attest-api-key";
const WIDTHS = [1280, 390] as const;

/** The smallest valid vendor container (blob-format.md): a device error, appraised Unknown (vendor rule 1). */
function deviceErrorBlob(): Buffer {
  const err = Buffer.from("Error", "ascii");
  return Buffer.concat([Buffer.from([1, err.length]), err, Buffer.from([2, 0, 0, 0, 0, 0])]);
}

/**
 * What a customer does with an error, in Debian's Chromium against a real `attestd serve` over HTTPS: a call fails,
 * its X-Error-Id header is pasted into the Activity log's deep link, the row says Error in words with the message
 * beside the code; the log lists API requests (not page views), pages older and back newer, and filters by key.
 * The Verdicts pages speak in sentences with badges in words and link to the attested device; a bad filter names
 * the field. Every page is screenshotted (test-artifacts/screenshots/portal-history-*) and checked with axe-core at
 * 1280 and 390 px.
 */
describe("errorIds, the Activity log and the Verdicts pages in a real browser", { timeout: 240_000 }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-history-"));
  const data = ["--data-dir", dir];
  let server: ServerProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let api: Agent;
  let shopKey: string;
  let appKey: string;

  async function visit(name: string, url?: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
      if (url) await page.goto(url);
      await page.waitForLoadState("networkidle");
      await screenshot(page, `portal-history-${name}-${width}px`);
      const violations = await seriousAxeViolations(page);
      assert.deepEqual(violations, [], `${name} at ${width} px: ${JSON.stringify(violations, null, 2)}`);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  }

  const post = async (url: string, key: string, body?: Buffer) => {
    const res = await request(`${base}${url}`, {
      method: "POST",
      headers: { [KEY_HEADER]: key, ...(body ? { "content-type": "application/octet-stream" } : {}) },
      ...(body ? { body } : {}),
      dispatcher: api,
    });
    return { status: res.statusCode, errorId: res.headers["x-error-id"] as string | undefined, body: (await res.body.json()) as Record<string, unknown> };
  };

  before(async () => {
    assert.equal(attestdCli(["tenant", "create", "acme", ...data]).status, 0);
    const shop = attestdCli(["key", "create", "--tenant", "acme", "--label", "web shop", ...data]);
    const app = attestdCli(["key", "create", "--tenant", "acme", "--label", "mobile app", ...data]);
    assert.equal(shop.status, 0, shop.stderr);
    shopKey = shop.stdout.trim();
    appKey = app.stdout.trim();
    const port = await freePort();
    base = `https://localhost:${port}`;
    server = await startServer([...data], { port, tls: { caFile: path.join(dir, "tls/ca.pem") } });
    api = new Agent({ connect: { ca: readFileSync(path.join(dir, "tls/ca.pem"), "utf8") } });
    browser = await launchChromium({ acceptLeafOf: path.join(dir, "tls/server-fullchain.pem") });
    context = await newContext(browser);
    page = await context.newPage();

    const made = attestdCli(["user", "invite", "--email", "ada@acme.example", "--tenant", "acme", "--public-url", base, ...data]);
    assert.equal(made.status, 0, made.stderr);
    const token = made.stdout.trim().split("#")[1]!;
    await page.goto(`${base}/portal/signin`);
    const status = await page.evaluate(`(async () => {
      const post = (url, body) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      await post("/portal/api/invite", ${JSON.stringify({ token, password: PORTAL_PASSWORD })});
      return (await post("/portal/api/session", ${JSON.stringify({ email: "ada@acme.example", password: PORTAL_PASSWORD })})).status;
    })()`);
    assert.equal(status, 200);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an API error's X-Error-Id leads to its row; the log pages both ways and filters by key", async () => {
    // a verdict of a named device, and a malformed blob whose answer names its errorId in the header only
    const n1 = (await post("/v2/nonces", shopKey)).body.nonce as string;
    assert.equal((await post(`/v2/blobs?nonce=${n1}&deviceId=till-4`, shopKey, deviceErrorBlob())).status, 200);
    const n2 = (await post("/v2/nonces", shopKey)).body.nonce as string;
    const bad = await post(`/v2/blobs?nonce=${n2}`, shopKey, Buffer.from("not a container"));
    assert.equal(bad.status, 400);
    assert.match(bad.errorId ?? "", /^[0-9a-f]{24}$/);
    assert.deepEqual(Object.keys(bad.body), ["result", "error"]);
    // enough of the other key's requests for a second page
    for (let i = 0; i < 55; i++) assert.equal((await post("/v2/nonces", appKey)).status, 200);

    // support pastes the errorId into the deep link (the log is written within a second)
    for (let i = 0; i < 40; i++) {
      await page.goto(`${base}/portal/activity?errorId=${bad.errorId}`);
      if ((await page.locator("tbody tr.row-error").count()) === 1) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const row = page.locator("tbody tr.row-error");
    assert.equal(await row.count(), 1);
    await row.getByText("Error", { exact: true }).waitFor();
    await row.getByText("BLOB_MALFORMED").waitFor();
    await row.getByText("The blob container cannot be read").waitFor();
    await row.getByRole("link", { name: /web shop/ }).waitFor();
    await visit("1-activity-errorid");

    // the default view: API requests, newest first; older, then back to newer
    await page.goto(`${base}/portal/activity`);
    assert.equal(await page.locator('select[name="kind"]').inputValue(), "api");
    const routes = await page.locator("tbody tr td:nth-child(3)").allTextContents();
    assert.ok(routes.every((r) => !/\/portal\/(?!api\/)/.test(r)), `no page views: ${routes.join()}`);
    const firstPage = await page.locator("tbody tr td:first-child time").allTextContents();
    await visit("2-activity");
    await page.getByRole("link", { name: "Older requests →" }).click();
    await page.waitForURL(/after=/);
    await page.getByRole("link", { name: "← Newer requests" }).waitFor();
    await visit("3-activity-older");
    await page.getByRole("link", { name: "← Newer requests" }).click();
    await page.waitForURL(/before=/);
    assert.deepEqual(await page.locator("tbody tr td:first-child time").allTextContents(), firstPage);
    await page.getByText("Newest requests shown").waitFor();

    // the portal's own page views, on request
    await page.locator('select[name="kind"]').selectOption("portal");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/kind=portal/);
    assert.ok((await page.locator("tbody tr td:nth-child(3)").allTextContents()).some((r) => r.includes("/portal/activity")));

    // by key: the web shop's requests only
    await page.goto(`${base}/portal/activity`);
    const shopKeyId = (await page.locator('select[name="key"] option', { hasText: "web shop" }).getAttribute("value"))!;
    await page.locator('select[name="key"]').selectOption(shopKeyId);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/key=/);
    const keyCells = await page.locator("tbody tr td:nth-child(7)").allTextContents();
    assert.ok(keyCells.length >= 4 && keyCells.every((c) => c.includes("web shop")), keyCells.join());
    await visit("4-activity-by-key");
  });

  it("verdicts in sentences with badges in words; the detail links to the attested device; a bad filter names the field", async () => {
    await page.goto(`${base}/portal/verdicts`);
    const row = page.locator("tbody tr").first();
    await row.getByText(VENDOR_SENTENCES["1"]).waitFor();
    await row.locator(".badge-unknown", { hasText: "Unknown" }).waitFor();
    await row.getByText("vendor rule 1").waitFor();
    await row.getByRole("link", { name: "till-4" }).waitFor();
    await visit("5-verdicts");
    await row.locator("a.id").click();
    await page.getByRole("heading", { name: "Why" }).waitFor();
    await visit("6-verdict-detail");
    await page.getByRole("link", { name: /The attested device till-4/ }).click();
    await page.waitForURL(`${base}/portal/devices/till-4`);

    await page.goto(`${base}/portal/activity?status=abc`);
    await page.getByText("status: must be a whole number from 100 to 599 (or empty).").waitFor();
    assert.equal(await page.getByText(/anyOf|querystring\//).count(), 0);
    await visit("7-bad-filter");
  });
});
