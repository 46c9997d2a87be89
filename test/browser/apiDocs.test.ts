import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { Browser } from "playwright-core";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { launchChromium, newContext, screenshot } from "./harness.ts";

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
});
