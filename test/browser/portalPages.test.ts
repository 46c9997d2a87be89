import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { PORTAL_PASSWORD } from "../helpers/portalPeople.ts";
import { attestdCli, freePort, startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { launchChromium, newContext, screenshot, seriousAxeViolations } from "./harness.ts";

const WIDTHS = [1280, 390] as const;

/** The smallest valid vendor container (blob-format.md): a device error, appraised Unknown and stored like any verdict. */
function deviceErrorBlob(): Buffer {
  const err = Buffer.from("Error", "ascii");
  return Buffer.concat([Buffer.from([1, err.length]), err, Buffer.from([2, 0, 0, 0, 0, 0])]);
}

/**
 * Issue 24's pages in Debian's Chromium against a real `attestd serve` over HTTPS (its dev TLS, a dev vendor CA and
 * its reference values): an empty tenant's quick start, a new key's commands run as they are copied (bash and curl,
 * against this server), the invited person in the Users list at once, and every trust source with its state word.
 * Screenshots: test-artifacts/screenshots/portal-pages-*, at 1280 and 390 px, each page checked with axe-core.
 */
describe("portal pages in a real browser: quick start, users, trust sources", { timeout: 300_000 }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-pages-"));
  const data = ["--data-dir", dir];
  const demo = path.join(dir, "demo-ca");
  let server: ServerProcess;
  let browser: Browser;
  let base: string;

  async function signedIn(email: string, invite: string[]): Promise<{ context: BrowserContext; page: Page }> {
    const made = attestdCli(["user", "invite", "--email", email, ...invite, "--public-url", base, ...data]);
    assert.equal(made.status, 0, made.stderr);
    const token = made.stdout.trim().split("#")[1]!;
    const context = await newContext(browser);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
    await page.goto(`${base}/portal/signin`);
    const status = await page.evaluate(`(async () => {
      const post = (url, body) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      await post("/portal/api/invite", ${JSON.stringify({ token, password: PORTAL_PASSWORD })});
      return (await post("/portal/api/session", ${JSON.stringify({ email, password: PORTAL_PASSWORD })})).status;
    })()`);
    assert.equal(status, 200);
    return { context, page };
  }

  /** The page as it is now, at both widths: screenshotted, no serious axe violation, nothing wider than the screen. */
  async function look(page: Page, name: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 860 });
      await screenshot(page, `portal-pages-${name}-${width}px`);
      const violations = await seriousAxeViolations(page);
      assert.deepEqual(violations, [], `${name} at ${width} px: ${JSON.stringify(violations, null, 2)}`);
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      assert.ok(overflow <= 0, `${name} at ${width} px is ${overflow} px wider than the screen`);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  }

  before(async () => {
    assert.equal(attestdCli(["dev-ca", "--out", demo]).status, 0);
    for (const name of ["acme", "fresh"]) assert.equal(attestdCli(["tenant", "create", name, ...data]).status, 0);
    const port = await freePort();
    base = `https://localhost:${port}`;
    server = await startServer([...data, "--vendor-roots", path.join(demo, "root.pem"), "--reference-values", path.join(demo, "reference-values.json")], {
      port,
      tls: { caFile: path.join(dir, "tls/ca.pem") },
    });
    browser = await launchChromium({ acceptLeafOf: path.join(dir, "tls/server-fullchain.pem") });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an empty tenant: the quick start; a key made shows commands that work against this server as copied", async () => {
    const { context, page } = await signedIn("fay@fresh.example", ["--tenant", "fresh"]);
    await page.goto(`${base}/portal/`);
    await page.getByRole("heading", { name: "Quick start" }).waitFor();
    const placeholder = await page.locator("#quick-curl").textContent();
    assert.match(placeholder!, new RegExp(`KEY='atd_YOUR-KEY'\\nNONCE=\\$\\(curl -sS --cacert ${dir.replace(/[.]/g, "\\.")}/tls/ca\\.pem -X POST`));
    assert.ok(placeholder!.includes(`${base}/v2/nonces`), placeholder!);
    await look(page, "1-quick-start");

    // the button of step 1 leads to the keys page, where the key is made and shown once with the commands
    await page.getByRole("button", { name: "Create a key" }).click();
    await page.waitForURL(`${base}/portal/keys`);
    await page.getByLabel("Label").fill("first try");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator("#new-key").waitFor({ state: "visible" });
    const key = (await page.locator("#new-key-value").textContent())!;
    assert.match(key, /^atd_[a-z2-7]{10}_[A-Za-z0-9_-]{43}$/);
    const commands = (await page.locator("#new-key-curl").textContent())!;
    assert.ok(commands.startsWith(`KEY='${key}'\n`), commands);
    await page.getByRole("button", { name: "Copy the commands" }).click();
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), commands, "the copy button copies exactly these commands");
    await look(page, "2-key-created");

    // run what was copied, as a person would paste it into a shell: a nonce, then a blob (a device error) with it
    const work = mkdtempSync(path.join(tmpdir(), "attestd-curl-"));
    try {
      writeFileSync(path.join(work, "blob.bin"), deviceErrorBlob());
      const run = spawnSync("bash", ["-e", "-c", commands], { cwd: work, encoding: "utf8", timeout: 30_000 });
      assert.equal(run.status, 0, run.stderr);
      const [nonce, verdict] = run.stdout.trim().split("\n");
      assert.match(nonce!, /^[A-Za-z0-9_-]{43}$/, `POST /v2/nonces answered a nonce: ${run.stdout}`);
      const record = JSON.parse(verdict!) as { nonce: string; status: string; verdict: string };
      assert.deepEqual([record.status, record.verdict], ["DeviceError", "Unknown"], verdict);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }

    // that first verdict ends the quick start
    await page.goto(`${base}/portal/`);
    await page.getByRole("heading", { name: "Verdicts in the last 24 hours" }).waitFor();
    assert.equal(await page.locator("[data-quick-start]").count(), 0);
    await context.close();
  });

  it("a key made before: the overview names it, with a placeholder for the secret shown once", async () => {
    const made = attestdCli(["key", "create", "--tenant", "acme", ...data]);
    assert.equal(made.status, 0, made.stderr);
    const keyId = made.stdout.trim().split("_")[1]!;
    const { context, page } = await signedIn("ada@acme.example", ["--tenant", "acme"]);
    await page.goto(`${base}/portal/`);
    const text = (await page.locator("#quick-curl").textContent())!;
    assert.ok(text.startsWith(`KEY='atd_${keyId}_PASTE-THE-REST-OF-THE-KEY'`), text);
    await page.locator("[data-quick-start]").getByText(`atd_${keyId}_…`).waitFor();
    await look(page, "3-quick-start-with-key");

    // the sets the server loaded from --reference-values, listed (the dev CA's demo set)
    await page.goto(`${base}/portal/reference-values`);
    const fileSets = page.getByRole("table", { name: "Reference sets of --reference-values" });
    const demoSets = JSON.parse(readFileSync(path.join(demo, "reference-values.json"), "utf8")) as { model: string; firmwareVersion: string }[];
    assert.ok(demoSets.length > 0);
    for (const set of demoSets) await fileSets.getByRole("row").filter({ hasText: set.model }).filter({ hasText: set.firmwareVersion }).waitFor();
    await look(page, "6-reference-values");
    await context.close();
  });

  it("an operator: the invited person is in the list at once; the trust page lists every source with its state word", async () => {
    const { context, page } = await signedIn("root@example.org", ["--operator"]);
    await page.goto(`${base}/portal/users`);
    const invite = page.getByRole("form", { name: "Invite someone" });
    await invite.getByLabel("Email").fill("new.person@fresh.example");
    await invite.getByLabel("Role").selectOption("viewer");
    await invite.getByLabel(/Tenant/).selectOption("fresh");
    await invite.getByRole("button", { name: "Invite" }).click();
    await page.locator("#new-link").waitFor({ state: "visible" });
    // no reload: the link shown once stays, and the row is there beside it
    const row = page.getByRole("row").filter({ hasText: "new.person@fresh.example" });
    await row.waitFor();
    assert.match((await row.textContent())!, /fresh[\s\S]*viewer[\s\S]*active|fresh[\s\S]*viewer/);
    assert.match((await page.locator("#new-link-value").textContent())!, /\/portal\/invite#/);
    await look(page, "4-users-invited");

    await page.goto(`${base}/portal/trust`);
    const expected = [
      ["Google attestation roots", "built in"],
      ["Google attestation status list", "current"], // spawned servers read the vectors' status list (serverProcess.ts)
      ["Vendor roots", "current"],
      ["Vendor revocations", "not set"],
      ["Play Integrity decoding by Google", "not set"],
      ["Apple App Attestation root", "built in"],
      ["Apple receipt root (Apple Root CA - G3)", "built in"],
    ];
    const summary = page.getByRole("table", { name: "Every trust source and its state" });
    for (const [label, state] of expected) {
      const cells = await summary.getByRole("row").filter({ hasText: label }).locator("th, td").allTextContents();
      assert.deepEqual(cells.map((c) => c.trim()), [label, state]);
      await page.locator(`article:has(h2:text-is("${label}")) dd .state`).filter({ hasText: state }).waitFor();
    }
    await look(page, "5-trust");
    await context.close();
  });
});
