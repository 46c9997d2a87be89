import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { request } from "undici";
import type { StoredVerdict, VerdictValue } from "../../src/domain/verdicts.ts";
import { sqliteFile } from "../../src/store/openStores.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { NAV } from "../../web/layout.ts";
import { PORTAL_PASSWORD } from "../helpers/portalPeople.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { axeViolations, screenshot, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

const KEY_HEADER = "x-vendor-attest-api-key";
const SIZES = [
  { width: 1280, height: 860 },
  { width: 390, height: 844 },
] as const;
/** as long as a tenant's name may be (64), so every place that shows it is tried with the worst case */
const LONG_TENANT = "acme-international-device-attestation-holdings-europe-west-00001";
const LONG_LABEL = "production web shop for the European storefront, Android and vendor devices, rotated quarterly by ops";
const LONG_EMAIL = "integration.service.account.for.enrollment@subsidiary.acme-international.example";
const IOS_APP_ID = "ABCDE12345.com.acme-international.storefront.europe.production";

/**
 * The frame every page of the portal shares (web/layout.ts, web/static/portal.css and portal.js), in Debian's
 * Chromium at 1280×860 and 390×844, signed in as a tenant admin and as an operator: on EVERY page no horizontal
 * page scroll, every link and button of every table row inside the screen, no axe-core violation of any impact,
 * and at 390 px the menu opens (and is checked open). Then the whole life of a key by keyboard alone. The
 * screenshots are kept in test-artifacts/screenshots/layout-*.png.
 */
describe("the portal's frame at a laptop's and a phone's width", { timeout: 2_400_000 }, () => {
  let portal: PortalInBrowser;

  before(async () => {
    portal = await startPortalInBrowser({
      tenants: [LONG_TENANT, "globex"],
      async seed(dir, data) {
        for (const label of [LONG_LABEL, "ci"]) {
          const made = attestdCli(["key", "create", "--tenant", LONG_TENANT, "--label", label, ...data]);
          assert.equal(made.status, 0, made.stderr);
        }
        const client = attestdCli(["client", "create", "--tenant", LONG_TENANT, "--user", LONG_EMAIL, "--out", path.join(dir, "keys.json"), ...data]);
        assert.equal(client.status, 0, client.stderr);
        // an iOS app with a long bundle id, so the iOS apps page shows a row of each of its tables
        const ios = attestdCli(["ios-app", "add", "--tenant", LONG_TENANT, "--app-id", IOS_APP_ID, "--environment", "both", ...data]);
        assert.equal(ios.status, 0, ios.stderr);
        // an SSO mapping of a long email, so the operators' Single sign-on page shows a row with its Remove
        const sso = attestdCli(["sso", "map", "--email", LONG_EMAIL, "--tenant", LONG_TENANT, "--role", "viewer", ...data]);
        assert.equal(sso.status, 0, sso.stderr);
        await seedHistory(dir);
      },
    });
  });

  after(async () => {
    await portal?.stop();
  });

  /** Verdicts and activity of the long-named tenant, written to the store as a second process (as the CLI does). */
  async function seedHistory(dir: string): Promise<void> {
    const store = new SqliteStore({ file: sqliteFile(dir) });
    try {
      const tenant = (await store.getTenantByName(LONG_TENANT))!;
      const now = Date.now();
      const verdicts: [VerdictValue, string, string][] = [
        ["Yes", "Success", "c0ffee00112233445566778899aabbccddeeff00112233445566778899aabbcc"],
        ["No", "SignatureInvalid", "phone-351756051523999"],
        ["Unknown", "DeviceError", "c0ffee01"],
      ];
      for (const [i, [verdict, status, chipId]] of verdicts.entries()) {
        const createdAt = new Date(now - i * 60_000).toISOString();
        const v: StoredVerdict = {
          objectId: randomBytes(16).toString("base64url"),
          tenantId: tenant.tenantId,
          format: chipId.startsWith("phone") ? "android-key" : "vendor",
          record: { measurements: "7363d79d", tamperBit: "0", IMEI: "", status: status as StoredVerdict["record"]["status"], nonce: "n", chipId, verdict, MAC: "", version: "2", createdDate: createdAt, updateDate: createdAt },
          reason: `rule 8 (${status}/${verdict})`,
          detail: { rule: 8, records: { chipId } },
          createdAt,
        };
        await store.saveVerdict(v);
      }
      // an App Attest key, as an attestation's Yes leaves it, and one assertion of it (the iOS apps page's keys)
      const publicKey = Buffer.concat([Buffer.from([4]), randomBytes(64)]);
      const keyId = createHash("sha256").update(publicKey).digest("base64");
      const attestedAt = new Date(now - 3_600_000).toISOString();
      const key = { tenantId: tenant.tenantId, keyId, appId: IOS_APP_ID, publicKey: publicKey.toString("base64"), counter: 0, environment: "production" as const, receipt: "", attestedAt, lastAssertedAt: null, revokedAt: null, riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null, refreshDueAt: null };
      assert.ok(await store.applyAppAttestEffect({ kind: "attested", key }));
      assert.ok(await store.applyAppAttestEffect({ kind: "asserted", tenantId: tenant.tenantId, keyId, counter: 3, at: new Date(now - 60_000).toISOString() }));
      await store.appendActivity([
        { time: new Date(now - 5000).toISOString(), errorId: null, tenantId: tenant.tenantId, clientId: null, method: "POST", route: "/v2/nonces", status: 200, code: null, latencyMs: 3, remoteAddress: "203.0.113.7", reason: null },
        {
          time: new Date(now - 4000).toISOString(),
          errorId: randomBytes(12).toString("hex"),
          tenantId: tenant.tenantId,
          clientId: null,
          method: "POST",
          route: "/svc/v1/enrollment/transactions/:transactionId/devices",
          status: 400,
          code: "4000004",
          latencyMs: 12,
          remoteAddress: "2001:db8:85a3:1234:5678:8a2e:370:7334",
          reason: "the nonce was used",
        },
      ]);
    } finally {
      await store.close();
    }
  }

  /** The page's links from the navigation a person of this role sees, and the pages one click further. */
  async function pagesOf(page: Page, tenantQuery: string): Promise<string[]> {
    const base = portal.base;
    const hrefs = NAV.flatMap((g) => g.links.map((l) => l.href));
    await page.goto(`${base}/portal/${tenantQuery}`);
    const shown = (await page.evaluate(`[...document.querySelectorAll("#portal-nav a")].map((a) => a.getAttribute("href"))`)) as string[];
    // every navigation entry the page shows is one of NAV's, and NAV's role filter decides which
    for (const href of shown) assert.ok(hrefs.includes(href.split("?")[0]!), href);
    const extra = ["/portal/account", `/portal/enrollment/transactions${tenantQuery}`, `/portal/enrollment/devices${tenantQuery}`];
    await page.goto(`${base}/portal/verdicts${tenantQuery}`);
    const verdict = await page.locator("main tbody tr a").first().getAttribute("href");
    assert.ok(verdict, "a seeded verdict to open");
    // the API reference is Swagger UI's page, not the portal's: test/browser/apiDocs.test.ts covers it
    return [...shown.filter((href) => !href.startsWith("/docs")), ...extra, verdict];
  }

  /** The numbers the frame promises, read in the page (a string: the tests are compiled without the DOM's types). */
  async function measure(page: Page): Promise<{ scroll: number; inner: number; outside: string[]; rows: number }> {
    return (await page.evaluate(`(() => {
      const inner = window.innerWidth;
      const outside = [];
      const rows = [...document.querySelectorAll("main tbody tr")];
      for (const row of rows) {
        const actions = [...row.querySelectorAll("a, button")].filter((el) => el.getClientRects().length > 0);
        for (const el of actions) {
          const box = el.getBoundingClientRect();
          if (box.left < 0 || box.right > inner + 0.5) outside.push((el.getAttribute("aria-label") || el.textContent).trim() + " @ " + Math.round(box.left) + ".." + Math.round(box.right));
        }
      }
      return { scroll: document.documentElement.scrollWidth, inner, outside, rows: rows.length };
    })()`)) as { scroll: number; inner: number; outside: string[]; rows: number };
  }

  /**
   * What is wrong with the pages so far: collected rather than thrown at the first, so one run shows every page's
   * faults; each test asserts it empty at its end.
   */
  let problems: string[] = [];
  function expect(ok: boolean, what: string): void {
    if (!ok) problems.push(what);
  }
  function noProblems(): void {
    const found = problems;
    problems = [];
    assert.deepEqual(found, []);
  }

  async function noAxeViolation(page: Page, what: string): Promise<void> {
    const violations = await axeViolations(page);
    expect(violations.length === 0, `${what}: ${JSON.stringify(violations)}`);
  }

  const menuChecked = new Set<string>();

  /** One page at both widths: fits, its rows' actions in view, no axe violation; at 390 px its menu opens. */
  async function check(page: Page, who: string, url: string): Promise<void> {
    const name = url.replace(/^\/portal\/?/, "").replace(/\?.*$/, "").replace(/\//g, "-") || "overview";
    for (const size of SIZES) {
      await page.setViewportSize(size);
      await page.goto(`${portal.base}${url}`);
      await page.waitForLoadState("networkidle");
      await screenshot(page, `layout-${who}-${name}-${size.width}px`);
      const m = await measure(page);
      expect(m.scroll <= m.inner, `${who} ${url} at ${size.width} px scrolls sideways: ${m.scroll} > ${m.inner}`);
      expect(m.outside.length === 0, `${who} ${url} at ${size.width} px: row actions off-screen: ${m.outside.join("; ")}`);
      await noAxeViolation(page, `${who} ${url} at ${size.width} px`);
      if (size.width === 390) {
        const menu = page.getByRole("button", { name: "Menu" });
        assert.equal(await page.locator("#portal-nav").isVisible(), false, "the menu starts closed on a phone");
        await menu.click();
        assert.equal(await menu.getAttribute("aria-expanded"), "true");
        const links = page.locator("#portal-nav a");
        assert.ok((await links.count()) >= 2);
        for (const link of await links.all()) {
          const box = (await link.boundingBox())!;
          expect(box.x >= 0 && box.x + box.width <= size.width, `${url}: ${await link.textContent()} in the open menu is off-screen`);
        }
        await screenshot(page, `layout-${who}-${name}-390px-menu`);
        // the menu is the same markup on every page: axe reads it open once per role (the machine is shared)
        if (!menuChecked.has(who)) await noAxeViolation(page, `${who} ${url} at 390 px with the menu open`);
        menuChecked.add(who);
        await page.keyboard.press("Escape");
        assert.equal(await menu.getAttribute("aria-expanded"), "false", "Escape closes the menu");
      }
    }
  }

  it("every page of a tenant admin fits both widths, with its rows' actions in view and no axe violation", async () => {
    const { context, page } = await portal.signIn("ada@long.example", ["--tenant", LONG_TENANT]);
    try {
      const pages = await pagesOf(page, "");
      assert.ok(pages.includes("/portal/users") && !pages.includes("/portal/tenants"), "an admin's navigation: Users, not the operators' pages");
      for (const url of pages) await check(page, "admin", url);
      // the in-page confirmation, open, at both widths
      for (const size of SIZES) {
        await page.setViewportSize(size);
        await page.goto(`${portal.base}/portal/keys`);
        await page.getByRole("button", { name: /^Revoke key / }).first().click();
        await page.locator("#confirm-dialog[open]").waitFor();
        await screenshot(page, `layout-admin-confirm-${size.width}px`);
        await noAxeViolation(page, `the confirmation at ${size.width} px`);
        await page.keyboard.press("Escape");
        assert.equal(await page.locator("#confirm-dialog[open]").count(), 0);
      }
      // the signed-out pages
      const signedOut = await portal.browser.newContext();
      const anon = await signedOut.newPage();
      for (const url of ["/portal/signin", "/portal/invite"]) {
        for (const size of SIZES) {
          await anon.setViewportSize(size);
          await anon.goto(`${portal.base}${url}`);
          await screenshot(anon, `layout-signed-out-${url.split("/").pop()}-${size.width}px`);
          const m = await measure(anon);
          expect(m.scroll <= m.inner, `${url} at ${size.width} px scrolls sideways: ${m.scroll} > ${m.inner}`);
          await noAxeViolation(anon, `${url} at ${size.width} px`);
        }
      }
      await signedOut.close();
      noProblems();
    } finally {
      await context.close();
    }
  });

  it("every page of an operator, with a long tenant name, fits both widths", async () => {
    const { context, page } = await portal.signIn("root@example.org", ["--operator"]);
    try {
      for (const url of ["/portal/", "/portal/tenants", "/portal/trust", "/portal/users", "/portal/account"]) await check(page, "operator", url);
      const tenantPages = await pagesOf(page, `?tenant=${LONG_TENANT}`);
      assert.ok(tenantPages.some((u) => u.startsWith("/portal/tenants")), "an operator's navigation holds Tenants");
      for (const url of tenantPages.filter((u) => u.includes("tenant="))) await check(page, "operator", url);
      noProblems();
    } finally {
      await context.close();
    }
  });

  it("by keyboard alone: sign in, open the menu on a phone, create an API key and revoke it through the in-page confirmation", async () => {
    const email = "kay@long.example";
    const made = attestdCli(["user", "invite", "--email", email, "--tenant", LONG_TENANT, "--public-url", portal.base, ...portal.data]);
    assert.equal(made.status, 0, made.stderr);
    const context = await portal.browser.newContext({ viewport: { width: 390, height: 844 }, locale: "en-GB", timezoneId: "UTC" });
    const page = await context.newPage();
    try {
      // the password is set through the API (the invitation page is another test's); everything after is keys
      await page.goto(`${portal.base}/portal/signin`);
      assert.equal(
        await page.evaluate(`fetch("/portal/api/invite", { method: "POST", headers: { "content-type": "application/json" },
          body: JSON.stringify(${JSON.stringify({ token: made.stdout.trim().split("#")[1], password: PORTAL_PASSWORD })}) }).then((r) => r.status)`),
        200,
      );
      const focused = () => page.evaluate(`(() => { const el = document.activeElement; return el ? (el.getAttribute("aria-label") || el.labels?.[0]?.textContent || el.textContent || "").trim() : ""; })()`) as Promise<string>;
      /** Tab (forwards) until the focused element's name matches, as a person would */
      async function tabTo(name: RegExp, limit = 60): Promise<void> {
        for (let i = 0; i < limit; i++) {
          await page.keyboard.press("Tab");
          if (name.test(await focused())) return;
        }
        assert.fail(`Tab never reached ${name}`);
      }

      await tabTo(/^Email/);
      await page.keyboard.type(email);
      await tabTo(/^Password/);
      await page.keyboard.type(PORTAL_PASSWORD);
      await page.keyboard.press("Enter");
      await page.waitForURL(`${portal.base}/portal/`);

      await tabTo(/^Menu$/);
      await page.keyboard.press("Enter");
      assert.equal(await page.getByRole("button", { name: "Menu" }).getAttribute("aria-expanded"), "true");
      assert.equal(await focused(), "Overview", "opening the menu moves focus to its first page");
      await tabTo(/^API keys$/);
      await page.keyboard.press("Enter");
      await page.waitForURL(`${portal.base}/portal/keys`);

      await tabTo(/^Label/);
      await page.keyboard.type("made by keyboard");
      await tabTo(/^Create key$/);
      await page.keyboard.press("Space");
      await page.locator("#new-key").waitFor({ state: "visible" });
      const key = (await page.locator("#new-key-value").textContent())!.trim();
      const keyId = key.split("_")[1]!;
      // the key shown once wraps inside its box: the phone's page does not widen (it was 515 px wide)
      const shown = await measure(page);
      assert.ok(shown.scroll <= shown.inner, `the new key's box widens the page: ${shown.scroll} > ${shown.inner}`);
      assert.match(await page.locator("#notice").innerText(), new RegExp(`Key ${keyId} created`));
      const row = page.locator("tbody tr", { hasText: "made by keyboard" });
      await row.waitFor();
      assert.match(await row.innerText(), /active/);

      // Revoke: the confirmation takes focus; Escape cancels and gives focus back; then confirmed by keys
      await tabTo(new RegExp(`^Revoke key ${keyId}`), 120);
      await page.keyboard.press("Enter");
      await page.locator("#confirm-dialog[open]").waitFor();
      assert.equal(await focused(), "Cancel", "focus moves into the confirmation, to Cancel");
      assert.equal(await page.locator("#confirm-title").innerText(), `Revoke key ${keyId}?`, "the title names the action and its object");
      await page.keyboard.press("Escape");
      assert.equal(await page.locator("#confirm-dialog[open]").count(), 0);
      // the dialog's "close" event, which gives focus back, is a task queued after Escape: waited for, not raced
      await page.waitForFunction(`document.activeElement?.getAttribute("aria-label")?.startsWith(${JSON.stringify(`Revoke key ${keyId}`)})`, undefined, { timeout: 10_000 }).catch(() => undefined);
      assert.match(await focused(), new RegExp(`^Revoke key ${keyId}`), "focus returns to the button that asked");
      assert.match(await row.innerText(), /active/, "cancelled: still active");

      await page.keyboard.press("Space");
      await page.locator("#confirm-dialog[open]").waitFor();
      await page.keyboard.press("Tab");
      assert.equal(await focused(), "Revoke", "the confirming button names the action");
      await page.keyboard.press("Enter");
      await page.locator("tbody tr", { hasText: "made by keyboard" }).getByText(/^revoked /).waitFor();
      // the reloaded page's rows are parsed before its script writes the notice: the notice is waited for
      await page.locator("#notice", { hasText: keyId }).waitFor({ timeout: 10_000 }).catch(() => undefined);
      assert.match(await page.locator("#notice").innerText(), new RegExp(`${keyId}`), "the success message names the key");
      await screenshot(page, "layout-keyboard-key-revoked-390px");

      // and the API refuses the key from now on
      let status = 0;
      for (let i = 0; i < 30 && status !== 401; i++) {
        const res = await request(`${portal.base}/v2/nonces`, { method: "POST", headers: { [KEY_HEADER]: key }, dispatcher: portal.api });
        status = res.statusCode;
        await res.body.text();
        if (status !== 401) await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(status, 401);
    } finally {
      await context.close();
    }
  });
});
