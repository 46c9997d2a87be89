import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * /docs (Swagger UI) is served on the portal's origin, whose pages hold CSRF tokens: it gets a CSP of its own (its
 * files only, nothing inline, never framed) and the portal's other security headers, and `--api-docs false` takes it
 * away while /openapi.json stays. The browser check that the UI renders under that CSP is test/browser/apiDocs.test.ts.
 */
const PAGES = ["/docs", "/docs/", "/docs/json", "/docs/static/index.html"];
const ASSETS = ["/docs/static/swagger-ui-bundle.js", "/docs/static/swagger-ui-standalone-preset.js", "/docs/static/swagger-initializer.js", "/docs/static/swagger-ui.css", "/docs/static/index.css", "/docs/static/favicon-32x32.png"];

describe("/docs, the API browser", () => {
  let t: TestRuntime;
  let off: TestRuntime;
  before(async () => {
    t = await startTestRuntime();
    off = await startTestRuntime({ apiDocs: false });
  });
  after(async () => {
    await t.close();
    await off.close();
  });

  it("its page and every file it loads carry a strict CSP, X-Frame-Options DENY and nosniff", async () => {
    for (const url of [...PAGES, ...ASSETS, "/docs/static/no-such-file.js"]) {
      const res = await t.runtime.app.inject({ method: "GET", url });
      const csp = String(res.headers["content-security-policy"] ?? "");
      const directives = csp.split(/;\s*/);
      for (const d of ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'", "connect-src 'self'"]) {
        assert.ok(directives.includes(d), `${url}: ${d} in "${csp}"`);
      }
      // its files, and the one <style> element swagger-ui draws by its hash
      assert.match(directives.find((d) => d.startsWith("style-src ")) ?? "", /^style-src 'self'( 'sha256-[A-Za-z0-9+/]{43}=')*$/, url);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https:|\*/, url);
      assert.equal(res.headers["x-frame-options"], "DENY", url);
      assert.equal(res.headers["x-content-type-options"], "nosniff", url);
      assert.equal(res.headers["referrer-policy"], "same-origin", url);
    }
  });

  it("the page itself has no inline script, and its files are there", async () => {
    const page = await t.runtime.app.inject({ method: "GET", url: "/docs/" });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers["content-type"]), /text\/html/);
    assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+=|style=/i, "no inline script, handler or style attribute");
    for (const url of ASSETS) assert.equal((await t.runtime.app.inject({ method: "GET", url })).statusCode, 200, url);
  });

  it("--api-docs false: /docs and its files are 404, /openapi.json stays", async () => {
    for (const url of [...PAGES, ...ASSETS]) {
      const res = await off.runtime.app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().error.code, "4040000", url);
    }
    const doc = await off.runtime.app.inject({ method: "GET", url: "/openapi.json" });
    assert.equal(doc.statusCode, 200);
    assert.equal(doc.json().openapi.slice(0, 3), "3.1");
  });
});
