import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { NONCE_PATTERN } from "../../src/nonces/nonce.ts";
import { PACKAGE_VERSION } from "../../src/packageInfo.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { launchChromium, newContext, screenshot } from "./harness.ts";

/** A page that records every CSP violation it meets (an init script runs outside the page's CSP, before its scripts). */
async function watchedPage(browser: Browser): Promise<{ page: Page; violations: () => Promise<string[]> }> {
  const context = await newContext(browser);
  const page = await context.newPage();
  const reported: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) reported.push(m.text());
  });
  await page.addInitScript(`window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.effectiveDirective + " " + e.blockedURI + " " + e.sourceFile));`);
  return { page, violations: async () => [...((await page.evaluate("window.__violations")) as string[]), ...reported] };
}

/**
 * /docs under its own strict CSP (src/http/apiDocs.ts) in a real browser: Swagger UI renders the document and the
 * browser reports no CSP violation, so the policy is as strict as the UI allows and no stricter.
 */
describe("/docs in Chromium", () => {
  let t: TestRuntime;
  let browser: Browser;
  let base: string;
  before(async () => {
    t = await startTestRuntime();
    await t.runtime.app.listen({ host: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${(t.runtime.app.server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t.close();
  });

  it("renders the API under its CSP with no violation", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    const reported: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) reported.push(m.text());
    });
    // an init script runs outside the page's CSP, so it can listen before the page's own scripts run
    await page.addInitScript(`window.__violations = [];
      document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.effectiveDirective + " " + e.blockedURI + " " + e.sourceFile));`);
    const res = await page.goto(`${base}/docs/`);
    assert.equal(res?.status(), 200);
    assert.match(res?.headers()["content-security-policy"] ?? "", /frame-ancestors 'none'/);
    // the document's title and its operations, grouped by tag, as Swagger UI draws them
    await page.locator(".swagger-ui .info .title").waitFor();
    assert.match(await page.locator(".swagger-ui .info .title").innerText(), /attestd/i);
    await page.locator(".opblock-tag", { hasText: "attestation" }).first().waitFor();
    assert.ok((await page.locator(".opblock").count()) > 10, "the operations are listed");
    // open one: its parameters render too
    await page.locator(".opblock-summary", { hasText: "/v2/nonces" }).first().click();
    await page.locator(".opblock.is-open").first().waitFor();
    await screenshot(page, "api-docs");
    const violations = (await page.evaluate("window.__violations")) as string[];
    assert.deepEqual([...violations, ...reported], [], "no CSP violation");
    await context.close();
  });

  it("is attestd's: its title, version, favicon and mark, and the operations in the order a relying party calls them", async () => {
    const { page, violations } = await watchedPage(browser);
    await page.goto(`${base}/docs/`);
    await page.locator(".opblock").first().waitFor();
    assert.equal(await page.title(), `attestd API ${PACKAGE_VERSION}`);
    assert.match(await page.locator(".swagger-ui .info .title").innerText(), new RegExp(`^attestd\\s*${PACKAGE_VERSION.replace(/\./g, "\\.")}`));
    // the favicon is attestd's, served from /docs under the same CSP; no Swagger icon is linked
    const icons = await page.locator("link[rel=icon]").evaluateAll((ls) => ls.map((l) => (l as unknown as { href: string }).href));
    assert.equal(icons.length, 1);
    assert.match(icons[0]!, /\/docs\/static\/theme\/attestd\.svg$/);
    const icon = await page.request.get(icons[0]!);
    assert.equal(icon.status(), 200);
    assert.match(await icon.text(), /^<svg /);
    // the top bar shows attestd's mark, not Swagger's
    const logo = page.locator(".swagger-ui .topbar a img");
    await logo.waitFor();
    assert.match(Buffer.from((await logo.getAttribute("src"))!.split(",")[1]!, "base64").toString(), />attestd</);
    // the tags in API_TAGS order, attestation first; in it the relying party's calls in order
    const tags = await page.locator(".opblock-tag").evaluateAll((ts) => ts.map((t) => t.getAttribute("data-tag")));
    assert.deepEqual(tags.slice(0, 3), ["attestation", "results", "enrollment"]);
    const first = await page.locator(".opblock-summary").evaluateAll((ops) =>
      ops.slice(0, 5).map((o) => `${o.querySelector(".opblock-summary-method")?.textContent} ${o.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`),
    );
    assert.deepEqual(first, [
      "POST /v2/nonces",
      "POST /v2/blobs",
      "POST /api/v1/transaction",
      "GET /api/v1/verdicts/{objectId}",
      "GET /api/v1/devices/{deviceId}",
    ]);
    assert.deepEqual(await violations(), [], "no CSP violation");
    await page.context().close();
  });

  it("tries it: Authorize with an API key, then Try it out on POST /v2/nonces answers 200 with a nonce", async () => {
    const { page, violations } = await watchedPage(browser);
    const sent: (string | undefined)[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/v2/nonces")) sent.push(r.headers()["x-vendor-attest-api-key"]);
    });
    await page.goto(`${base}/docs/`);
    await page.locator(".opblock").first().waitFor();
    // Authorize: the apiKey scheme's field takes the key
    await page.locator(".auth-wrapper .authorize").click();
    const dialog = page.locator(".dialog-ux .modal-ux");
    await dialog.waitFor();
    const apiKeyForm = dialog.locator(".auth-container", { hasText: "x-vendor-attest-api-key" });
    await apiKeyForm.locator("input").fill(t.key);
    await apiKeyForm.locator("button.authorize").click();
    await apiKeyForm.locator("button", { hasText: "Logout" }).waitFor();
    await dialog.locator("button.close-modal").click();
    // the nonce operation: Try it out, Execute
    const op = page.locator(".opblock", { has: page.locator('.opblock-summary-path[data-path="/v2/nonces"]') }).first();
    await op.locator(".opblock-summary").click();
    await op.locator("button.try-out__btn").click();
    await op.locator("button.execute").click();
    const status = op.locator(".live-responses-table .response .response-col_status").first();
    await status.waitFor();
    assert.equal((await status.innerText()).trim(), "200");
    const body = JSON.parse(await op.locator(".live-responses-table .response-col_description pre.microlight").first().innerText()) as { nonce: string };
    assert.match(body.nonce, new RegExp(NONCE_PATTERN));
    assert.deepEqual(sent, [t.key], "the request carried the key");
    await screenshot(page, "api-docs-try-it");
    assert.deepEqual(await violations(), [], "no CSP violation");
    await page.context().close();
  });
});
