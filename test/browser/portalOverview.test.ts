import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { type Agent, request } from "undici";
import type { StoredVerdict, VerdictValue } from "../../src/domain/verdicts.ts";
import { VENDOR_SENTENCES } from "../../src/portal/verdictReasons.ts";
import { sqliteFile } from "../../src/store/openStores.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
import { screenshot, seriousAxeViolations, startPortalInBrowser, type PortalInBrowser } from "./harness.ts";

const KEY_HEADER = "x-vendor-attest-api-key";
const HOUR = 3_600_000;
const WIDTHS = [1280, 390] as const;

/** The smallest valid vendor container (blob-format.md): a device error, appraised Unknown and stored like any verdict. */
function deviceErrorBlob(): Buffer {
  const err = Buffer.from("Error", "ascii");
  return Buffer.concat([Buffer.from([1, err.length]), err, Buffer.from([2, 0, 0, 0, 0, 0])]);
}

/**
 * The overview, verdicts (filters, CSV export), activity, key edits and the operators' tenants and trust pages in
 * Debian's Chromium against a real `attestd serve` over HTTPS. Every page is screenshotted
 * (test-artifacts/screenshots/portal-overview-*) and checked with axe-core at 1280 and 390 px. The HTTP-level
 * refusals (viewers, other tenants, CSRF) are test/http/portalOverview.test.ts's.
 */
describe("overview, history, keys and operator pages in a real browser", { timeout: 300_000 }, () => {
  let portal: PortalInBrowser;
  let data: string[];
  let base: string;
  let api: Agent;
  const signedIn = (email: string, invite: string[]) => portal.signIn(email, invite);

  /** The page at both widths: loaded, `ready` awaited, screenshotted, no serious or critical axe violation. */
  async function visit(page: Page, name: string, url?: string, ready?: () => Promise<void>): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
      if (url) await page.goto(url);
      else await page.reload();
      await page.waitForLoadState("networkidle");
      await ready?.();
      await screenshot(page, `portal-overview-${name}-${width}px`);
      const violations = await seriousAxeViolations(page);
      assert.deepEqual(violations, [], `${name} at ${width} px: ${JSON.stringify(violations, null, 2)}`);
      // nothing wider than the screen but the scrollable tables
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      assert.ok(overflow <= 0, `${name} at ${width} px is ${overflow} px wider than the screen`);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  }

  before(async () => {
    portal = await startPortalInBrowser({
      tenants: ["acme", "globex"],
      async seed(dir) {
        // A month of acme's history, written to the store the server uses (as a second process, like the CLI): a few
        // verdicts in most hours of the last day and on most days of the month, with their failures.
        const store = new SqliteStore({ file: sqliteFile(dir) });
        try {
          const acme = (await store.getTenantByName("acme"))!;
          const now = Date.now();
          const save = (at: number, verdict: VerdictValue, status: string, reason: string, chipId: string) => {
            const createdAt = new Date(at).toISOString();
            const v: StoredVerdict = {
              objectId: randomBytes(16).toString("base64url"),
              tenantId: acme.tenantId,
              format: "vendor",
              record: { measurements: "7363d79d", tamperBit: verdict === "Yes" ? "0" : "1", IMEI: "", status: status as StoredVerdict["record"]["status"], nonce: "n", chipId, verdict, MAC: "", version: "2", createdDate: createdAt, updateDate: createdAt },
              reason,
              detail: { rule: verdict === "Yes" ? 8 : 6, records: { chipId, tamperBit: verdict === "Yes" ? 0 : 1 } },
              createdAt,
            };
            return store.saveVerdict(v);
          };
          for (let h = 1; h < 24; h++) {
            for (let i = 0; i < (h % 5) + 2; i++) await save(now - h * HOUR - i * 1000, "Yes", "Success", "rule 8 (Success/Yes): every check passed", `c0ffee${h}${i}`);
            if (h % 4 === 0) await save(now - h * HOUR, "No", "Success", "rule 6 (Success/No): TAMPER_BIT is 1", `c0ffee${h}bad`);
            if (h % 7 === 0) await save(now - h * HOUR, "No", "SignatureInvalid", "rule 4 (SignatureInvalid/No): the signature over data does not verify (ecdsa-with-SHA256)", `phone${h}`);
          }
          for (let d = 1; d < 30; d++) {
            for (let i = 0; i < (d % 6) * 3 + 4; i++) await save(now - d * 24 * HOUR - i * 60_000, "Yes", "Success", "rule 8 (Success/Yes): every check passed", `c0ffee-d${d}-${i}`);
            if (d % 3 === 0) await save(now - d * 24 * HOUR, "Unknown", "Success", 'rule 7 (Success/Unknown): no reference values for ("X1", "2.0")', `c0ffee-d${d}-new`);
          }
        } finally {
          await store.close();
        }
      },
    });
    ({ data, base, api } = portal);
  });

  after(async () => {
    await portal?.stop();
  });

  it("a tenant admin: the overview's chart matches its table, verdicts filtered and exported, the activity log, a key edited", async () => {
    const { context, page } = await signedIn("ada@acme.example", ["--tenant", "acme"]);

    // a verdict made through the API now: an Unknown in this hour's bar
    const key = attestdCli(["key", "create", "--tenant", "acme", ...data]).stdout.trim();
    const nonceRes = await request(`${base}/v2/nonces`, { method: "POST", headers: { [KEY_HEADER]: key }, dispatcher: api });
    const { nonce } = (await nonceRes.body.json()) as { nonce: string };
    const blob = await request(`${base}/v2/blobs?nonce=${nonce}`, { method: "POST", headers: { [KEY_HEADER]: key, "content-type": "application/octet-stream" }, body: deviceErrorBlob(), dispatcher: api });
    assert.equal(blob.statusCode, 200);
    await blob.body.text();

    const chartDrawn = async () => {
      await page.locator('canvas[data-chart="hourly"][data-drawn="true"]').waitFor();
      await page.locator('canvas[data-chart="daily"][data-drawn="true"]').waitFor();
    };
    await visit(page, "1-overview", `${base}/portal/`, chartDrawn);

    // the chart is drawn (pixels on the canvas) from the same numbers as the table under it
    for (const [which, caption] of [["hourly", "Verdicts per hour, last 24 hours"], ["daily", "Verdicts per day, last 30 days"]] as const) {
      // (evaluated in the page: the tests are compiled without the DOM's types)
      const drawn = (await page.evaluate(`(() => {
        const canvas = document.querySelector('canvas[data-chart="${which}"]');
        const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        let painted = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) painted++;
        const chart = Chart.getChart(canvas);
        return { painted, width: canvas.width, datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })) };
      })()`)) as { painted: number; width: number; datasets: { label: string; data: number[] }[] };
      assert.ok(drawn.width > 200 && drawn.painted > 2000, `${which}: ${drawn.painted} painted pixels`);
      // (the tables sit in closed <details>: hidden until opened, there all the same)
      const rows = await page
        .getByRole("table", { name: caption, includeHidden: true })
        .locator("tbody tr")
        .locator("td")
        .allTextContents()
        .then((cells) => Array.from({ length: cells.length / 3 }, (_, i) => cells.slice(i * 3, i * 3 + 3).map((c) => Number(c.replace(/,/g, "")))));
      assert.equal(rows.length, which === "hourly" ? 24 : 30);
      assert.deepEqual(drawn.datasets.map((d) => d.label), ["Yes", "No", "Unknown"]);
      assert.deepEqual(drawn.datasets.map((d) => d.data), [0, 1, 2].map((col) => rows.map((r) => r[col])), `${which}: the chart's numbers are the table's`);
    }
    const hourly = await page.getByRole("table", { name: "Verdicts per hour, last 24 hours", includeHidden: true }).locator("tbody tr").last().locator("td").allTextContents();
    assert.equal(hourly[2], "1", "the verdict just made is in this hour's bar, as Unknown");
    // why, in the Verdicts pages' words (src/portal/verdictReasons.ts), the rule as a small reference
    const why = page.getByRole("table", { name: "Why verdicts were No or Unknown" });
    await why.getByText(VENDOR_SENTENCES["4"]).waitFor();
    await why.getByText("vendor rule 4", { exact: true }).waitFor();
    await why.getByText(VENDOR_SENTENCES["7:no-reference"]).waitFor();

    // verdicts: filtered through the form, every filter in the URL
    await page.goto(`${base}/portal/verdicts`);
    // (a label wrapping a select is named with the option shown too: "Verdict any")
    await page.locator('select[name="verdict"]').selectOption("No");
    await page.locator('select[name="status"]').selectOption("SignatureInvalid");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/verdict=No&status=SignatureInvalid/);
    const statuses = await page.locator("tbody tr td:nth-child(2) small").allTextContents();
    assert.ok(statuses.length >= 3 && statuses.every((s) => s === "SignatureInvalid"), statuses.join());
    await visit(page, "2-verdicts-filtered", page.url());

    // the CSV export of that filter: downloaded with its progress in the page, the same rows as the table
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: /Export these verdicts as CSV/ }).click()]);
    assert.equal(download.suggestedFilename(), "verdicts-acme.csv");
    const csv = readFileSync((await download.path())!, "utf8").trimEnd().split("\r\n");
    assert.equal(csv.length - 1, statuses.length);
    assert.ok(csv.slice(1).every((line) => line.split(",")[3] === "SignatureInvalid"));
    await page.getByRole("status").filter({ hasText: `Exported ${statuses.length} rows to verdicts-acme.csv.` }).waitFor();
    await screenshot(page, "portal-overview-3-verdicts-exported-1280px");

    // a verdict's detail: the deciding rule and the parsed attestation
    await page.locator("tbody tr a.id").first().click();
    await page.getByRole("heading", { name: "Why" }).waitFor();
    await visit(page, "4-verdict-detail", page.url());

    // time filters: the last two hours only
    const from = new Date(Date.now() - 2 * HOUR).toISOString().slice(0, 16);
    await visit(page, "5-verdicts-time", `${base}/portal/verdicts?from=${from}`);
    const times = (await page.locator("tbody tr td:first-child time").all()).map((x) => x.getAttribute("datetime"));
    const at = (await Promise.all(times)) as string[];
    assert.ok(at.length > 0 && at.every((x) => x >= `${from}:00.000Z`), at.join());

    // the activity log, filtered by status
    await visit(page, "6-activity", `${base}/portal/activity?status=200&route=%2Fv2%2Fblobs`);
    assert.equal(await page.locator("tbody tr").count(), 1);

    // a key edited: limits and restrictions, shown in the list
    await page.goto(`${base}/portal/keys`);
    const edit = page.locator("details.edit-key").first();
    await edit.locator("summary").click();
    await edit.getByLabel(/Requests per second/).fill("25");
    await edit.getByLabel(/Burst/).fill("40");
    await edit.getByLabel(/IP addresses/).fill("203.0.113.0/24\n2001:db8::/32");
    await edit.getByLabel(/Referers/).fill("https://*.acme.example/*");
    await edit.getByRole("button", { name: /Save key/ }).click();
    await page.getByRole("cell", { name: "203.0.113.0/24, 2001:db8::/32" }).waitFor();
    await page.getByRole("cell", { name: "25 / 40" }).waitFor();
    await visit(page, "7-keys-edited", page.url());
    // a bad address: the answer says which, nothing changes
    await edit.locator("summary").click();
    await edit.getByLabel(/IP addresses/).fill("999.1.1.1");
    await edit.getByRole("button", { name: /Save key/ }).click();
    await page.locator("#notice").filter({ hasText: "ipAddresses[0]" }).waitFor();
    await screenshot(page, "portal-overview-8-key-refused-1280px");
    await context.close();
  });

  it("an operator: every tenant's overview, tenants created and changed, the trust sources refreshed", async () => {
    const { context, page } = await signedIn("root@example.org", ["--operator"]);
    await visit(page, "9-operator-overview", `${base}/portal/`, async () => {
      await page.locator('canvas[data-chart="daily"][data-drawn="true"]').waitFor();
    });

    await page.goto(`${base}/portal/tenants`);
    await page.getByText("New tenant").click();
    await page.getByLabel("Name").fill("initech");
    await page.getByLabel("Kind").selectOption("reseller");
    await page.getByRole("button", { name: "Create tenant" }).click();
    const row = page.getByRole("row", { name: /initech/ });
    await row.waitFor();
    await row.getByLabel("State of initech", { exact: true }).selectOption("blocked");
    await row.getByRole("button", { name: "Set" }).click();
    await page.getByText("State of initech changed.").waitFor(); // after the reload: the next click is on the new page
    await page.getByRole("row", { name: /initech/ }).getByRole("button", { name: "Enable enrollment for initech" }).waitFor();
    assert.equal(await page.getByRole("row", { name: /initech/ }).getByLabel("State of initech", { exact: true }).inputValue(), "blocked");
    await page.getByRole("row", { name: /initech/ }).getByRole("button", { name: "Enable enrollment for initech" }).click();
    await page.getByRole("row", { name: /initech/ }).getByRole("button", { name: "Disable enrollment for initech" }).waitFor();
    const listed = JSON.parse(attestdCli(["tenant", "list", ...data]).stdout) as { name: string; state: string; enrollmentEnabled: boolean }[];
    const initech = listed.find((x) => x.name === "initech")!;
    assert.deepEqual([initech.state, initech.enrollmentEnabled], ["blocked", true], "the CLI sees what the portal did");
    await visit(page, "10-tenants", page.url());

    // "refresh now" reads the status list again (its file, here): its last read moves on
    await page.goto(`${base}/portal/trust`);
    const lastRead = async () => (await page.evaluate(`fetch("/portal/api/trust").then((r) => r.json()).then((j) => j.sources[1].lastAttempt)`)) as string;
    const before = await lastRead();
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Refresh now" }).click()]);
    assert.ok((await lastRead()) > before, "the status list was read again");
    await page.getByText("Google attestation status list").first().waitFor();
    await visit(page, "11-trust", page.url());
    await context.close();
  });
});
