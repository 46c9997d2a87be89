import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { request } from "undici";
import { writeFileSync } from "node:fs";
import { createDevCa, issueDeviceLeaf, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { DEFAULT_MEASUREMENTS, DEFAULT_MODEL, demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { accessTokenRequest, apiToken, parseClientKeys, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { imeiFrom14 } from "../../src/enrollment/deviceIds.ts";
import { attestdCli, freePort, startServer, type ServerProcess } from "../helpers/serverProcess.ts";
import { confirmInPage, launchChromium, newContext, screenshot, seriousAxeViolations } from "./harness.ts";

const PASSWORD = "a long and unusual passphrase";
const DIGESTS = DEFAULT_MEASUREMENTS.map((m) => Buffer.from(m).toString("hex"));

/**
 * The portal's enrollment pages in Debian's Chromium against a real `attestd serve` over HTTPS: a tenant admin
 * creates an enrollment client and the keys.json the browser downloads gets a Part B access token and works on
 * /svc/v1; a reference-values file with a faulty item is refused (the item named, nothing stored), then a valid one
 * is stored; the Enrollment views show what the client did. A reseller not enabled for enrollment sees why its
 * pages are empty. A till named by the relying party (`deviceId`) is pinned, then refused after its key changes; the
 * admin looks it up on the Devices page and resets its pin, and the new key then pins afresh. Every page is screenshotted (test-artifacts/screenshots/enrollment-*) and checked with axe-core
 * at 1280 and 390 px.
 */
describe("the portal's enrollment pages in a real browser", { timeout: 300_000 }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-portal-enroll-"));
  const data = ["--data-dir", dir];
  let server: ServerProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let keys: ClientKeys;
  let transactionId = "";
  let vendorCa: DevCa;
  let tills: CertifiedKey[];
  let apiKey = "";

  /** Screenshot and axe-check the page as it is, at 1280 px and again at 390 px. */
  async function visit(p: Page, name: string, url?: string): Promise<void> {
    if (url) await p.goto(url);
    await p.waitForLoadState("networkidle");
    for (const [width, height, suffix] of [[1280, 860, ""], [390, 844, "-390px"]] as const) {
      await p.setViewportSize({ width, height });
      await screenshot(p, `enrollment-${name}${suffix}`);
      const violations = await seriousAxeViolations(p);
      assert.deepEqual(violations, [], `${name}${suffix}: ${JSON.stringify(violations, null, 2)}`);
    }
    await p.setViewportSize({ width: 1280, height: 860 });
  }

  /** Invitation link → password → signed in, in `p`. */
  async function signUp(p: Page, email: string, tenant: string, role = "admin"): Promise<void> {
    const invite = attestdCli(["user", "invite", "--email", email, "--tenant", tenant, "--role", role, "--public-url", base, ...data]);
    assert.equal(invite.status, 0, invite.stderr);
    await p.goto(invite.stdout.trim());
    await p.getByLabel("New password").fill(PASSWORD);
    await p.getByRole("button", { name: "Set password" }).click();
    await p.waitForURL(`${base}/portal/signin`);
    await p.getByLabel("Email").fill(email);
    await p.getByLabel("Password").fill(PASSWORD);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.waitForURL(`${base}/portal/`);
  }

  /** One Part B call as the client whose keys.json the browser downloaded. */
  async function svc(token: string, method: "GET" | "POST", url: string, body?: object): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await request(`${base}/svc/v1${url}`, {
      method,
      headers: { "x-vendor-apitoken": await apiToken(keys, token, { nowMs: Date.now() }), ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      dispatcher: server.dispatcher,
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  }

  async function accessToken(): Promise<{ status: number; token?: string }> {
    const res = await request(`${base}/svc/v1/auth/accesstoken`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(await accessTokenRequest(keys, { nowMs: Date.now() })),
      dispatcher: server.dispatcher,
    });
    const json = (await res.body.json()) as { accessToken?: string };
    return { status: res.statusCode, ...(json.accessToken ? { token: json.accessToken } : {}) };
  }

  /** A vendor blob of `leaf` for a fresh nonce, posted with the tenant's API key for `deviceId`: the verdict. */
  async function attestTill(leaf: CertifiedKey, deviceId: string): Promise<string> {
    const headers = { "x-vendor-attest-api-key": apiKey };
    const n = await request(`${base}/v2/nonces`, { method: "POST", headers, dispatcher: server.dispatcher });
    const nonce = ((await n.body.json()) as { nonce: string }).nonce;
    const res = await request(`${base}/v2/blobs?nonce=${nonce}&deviceId=${deviceId}`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/octet-stream" },
      body: Buffer.from(encodeVendorBlob({ ca: vendorCa, leaf, nonce })),
      dispatcher: server.dispatcher,
    });
    assert.equal(res.statusCode, 200);
    return ((await res.body.json()) as { verdict: string }).verdict;
  }

  before(async () => {
    assert.equal(attestdCli(["tenant", "create", "acme", "--customer-id", "1234567890", ...data]).status, 0);
    assert.equal(attestdCli(["tenant", "create", "resell", "--kind", "reseller", ...data]).status, 0);
    const key = attestdCli(["key", "create", "--tenant", "acme", ...data]);
    assert.equal(key.status, 0, key.stderr);
    apiKey = key.stdout.trim().split("\n").pop()!.trim();
    // the demo vendor CA, so the tills' blobs appraise Yes and can pin
    vendorCa = await createDevCa({ keyType: "ec" });
    tills = [await issueDeviceLeaf(vendorCa, { keyType: "ec" }), await issueDeviceLeaf(vendorCa, { keyType: "ec" })];
    writeFileSync(path.join(dir, "vendor-root.pem"), vendorCa.root.certPem);
    writeFileSync(path.join(dir, "refs.json"), JSON.stringify(demoReferenceValues()));
    const port = await freePort();
    base = `https://localhost:${port}`;
    server = await startServer([...data, "--vendor-roots", path.join(dir, "vendor-root.pem"), "--reference-values", path.join(dir, "refs.json")], {
      port,
      tls: { caFile: path.join(dir, "tls/ca.pem") },
    });
    browser = await launchChromium({ acceptLeafOf: path.join(dir, "tls/server-fullchain.pem") });
    context = await newContext(browser);
    page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
    await signUp(page, "ada@acme.example", "acme");
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates an enrollment client; the keys.json the browser downloads gets a Part B token and works", async () => {
    await page.getByRole("link", { name: "Enrollment clients" }).click();
    await page.waitForURL(`${base}/portal/clients`);
    await visit(page, "1-clients-empty");

    await page.getByLabel("Email of the user it acts for").fill("ops@acme.example");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Create client and download keys.json" }).click()]);
    assert.equal(download.suggestedFilename(), "keys.json");
    const text = readFileSync((await download.path())!, "utf8");
    keys = parseClientKeys(text);
    await page.getByRole("heading", { name: "keys.json downloaded" }).waitFor();
    // the list beside the notice already holds the new client (refreshed in place: a reload would lose the notice)
    await page.locator("tbody tr", { hasText: "ops@acme.example" }).waitFor();
    await page.getByRole("heading", { name: "keys.json downloaded" }).waitFor();
    await visit(page, "2-client-created");

    const token = await accessToken();
    assert.equal(token.status, 200);
    const made = await svc(token.token!, "POST", "/enroll/profiles", { name: "Field tablets", mdmUrl: "https://mdm.acme.example/enroll", settings: { wifi: true } });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    const devices = [imeiFrom14("35000000000001"), imeiFrom14("35000000000002"), "R58M12ABCDE"].map((deviceId) => ({ deviceId }));
    const upload = await svc(token.token!, "POST", "/enroll/devices", { customerId: "1234567890", profileId: made.json.profileId, devices });
    assert.equal(upload.status, 200, JSON.stringify(upload.json));
    transactionId = String(upload.json.transactionId);

    // the list: the client, then read-only from the page
    await page.getByRole("link", { name: "Show the client in the list" }).click();
    const row = page.locator("tbody tr", { hasText: "ops@acme.example" });
    await row.getByText("read and write").waitFor();
    assert.ok(!(await page.content()).includes(keys.Private), "the key is never shown");
    await row.getByRole("button", { name: "Make read-only" }).click();
    await row.getByText("read-only", { exact: true }).waitFor();
    await visit(page, "3-client-read-only");
    const refused = await svc(token.token!, "POST", "/enroll/profiles", { name: "Kiosks" });
    assert.equal(refused.status, 403, "read-only now");
    assert.equal((await svc(token.token!, "GET", "/enroll/profiles")).status, 200);
  });

  it("refuses a reference-values file with a faulty item, naming it, then stores a valid one", async () => {
    await page.goto(`${base}/portal/reference-values`);
    await visit(page, "4-refvals-empty");
    const file = (name: string, sets: unknown) => ({ name, mimeType: "application/json", buffer: Buffer.from(JSON.stringify(sets)) });
    const good = { model: DEFAULT_MODEL, firmwareVersion: "X100XXU9ZZZ9", measurements: DIGESTS };

    await page.getByLabel(/Reference-values file/).setInputFiles(file("bad-refs.json", [good, { ...good, firmwareVersion: "X100XXU8YYY8", measurements: [DIGESTS[0], "not hex"] }]));
    await page.getByRole("button", { name: "Upload" }).click();
    const status = page.locator("[data-upload-status]");
    await status.getByText(/^Nothing was stored\. .*bad-refs\.json: item 1 .*measurements\[1\] is not 64 hex digits/).waitFor();
    assert.match((await status.getAttribute("class")) ?? "", /error/);
    assert.equal(await page.locator("section[aria-labelledby=own-h] tbody tr", { hasText: "X100XXU9ZZZ9" }).count(), 0, "nothing stored");
    await visit(page, "5-refvals-refused");

    await page.getByLabel(/Reference-values file/).setInputFiles(file("refs.json", [good, { ...good, firmwareVersion: "X100XXU8YYY8" }]));
    await page.getByRole("button", { name: "Upload" }).click();
    await page.locator("#notice").getByText("2 reference set(s) from refs.json stored.").waitFor();
    const own = page.locator("section[aria-labelledby=own-h] tbody tr");
    assert.deepEqual(await own.locator("td:nth-child(2)").allTextContents(), ["X100XXU8YYY8", "X100XXU9ZZZ9"]);
    await visit(page, "6-refvals-stored");

    await own.filter({ hasText: "X100XXU8YYY8" }).getByRole("button", { name: "Delete" }).click();
    await confirmInPage(page);
    await page.locator("section[aria-labelledby=own-h] tbody tr", { hasText: "X100XXU8YYY8" }).waitFor({ state: "detached" });
  });

  it("browses profiles, transactions and each device's status", async () => {
    await page.getByRole("link", { name: "Enrollment", exact: true }).click();
    await page.waitForURL(`${base}/portal/enrollment`);
    await page.getByRole("link", { name: "Field tablets" }).waitFor();
    await visit(page, "7-profiles");

    await page.getByRole("link", { name: "Field tablets" }).click();
    await page.getByText("https://mdm.acme.example/enroll").waitFor();
    await visit(page, "8-profile");

    await page.getByRole("link", { name: "Its transactions" }).click();
    await page.getByText(transactionId).waitFor();
    await visit(page, "9-transactions");

    // the job worker runs in the server: the upload's devices leave Processing on their own
    let enrolled = 0;
    for (let i = 0; i < 40 && enrolled < 3; i++) {
      await page.goto(`${base}/portal/enrollment/devices?transactionId=${transactionId}`);
      enrolled = await page.locator("tbody tr", { hasText: "Enrolled" }).count();
      if (enrolled < 3) await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(enrolled, 3);
    await visit(page, "10-devices");

    await page.goto(`${base}/portal/enrollment/transactions?state=Complete`);
    assert.equal(await page.getByLabel("State").inputValue(), "Complete", "the filter is in the URL");
    await page.getByText(transactionId).waitFor();
  });

  it("a reseller not enabled for enrollment sees why its pages are empty", async () => {
    const other = await newContext(browser);
    const p = await other.newPage();
    await signUp(p, "rita@resell.example", "resell");
    await visit(p, "11-reseller-clients", `${base}/portal/clients`);
    await p.getByRole("heading", { name: "Enrollment is not available to this tenant" }).waitFor();
    assert.equal(await p.locator("form[aria-label='Create an enrollment client']").count(), 0, "no client to create until enrollment is enabled");
    await visit(p, "12-reseller-enrollment", `${base}/portal/enrollment`);
    await p.getByText("attestd tenant enable-enrollment resell").first().waitFor();
    await other.close();
  });

  it("looks up a till that was refused after its key changed, resets its pin, and the new key pins afresh", async () => {
    assert.equal(await attestTill(tills[0]!, "till-7"), "Yes");
    assert.equal(await attestTill(tills[0]!, "till-7"), "Yes");
    assert.equal(await attestTill(tills[1]!, "till-7"), "No", "another device key under a pinned name");

    await page.getByRole("navigation", { name: "Portal" }).getByRole("link", { name: "Attested devices" }).click();
    await page.waitForURL(`${base}/portal/devices`);
    await page.locator("tbody tr", { hasText: "till-7" }).getByText("refused: a pinned fact changed").waitFor();
    await visit(page, "14-devices");

    await page.getByLabel(/Device id/).fill("till-7");
    await page.getByRole("button", { name: "Look up" }).click();
    await page.waitForURL(`${base}/portal/devices/till-7`);
    await page.getByText(/^leafKey/).first().waitFor();
    assert.match(await page.locator("dl.facts").first().innerText(), /Appraisals\s+3/);
    await visit(page, "15-device");

    // the confirmation dialog is accepted by the page's handler
    await page.getByRole("button", { name: "Reset pin of till-7" }).click();
    await confirmInPage(page);
    await page.locator("#notice").getByText("Pin of till-7 reset.").waitFor();
    await page.getByText("Not pinned: the device's next Yes pins it.").waitFor();
    await page.locator("tbody tr", { hasText: "ada@acme.example" }).waitFor();
    await visit(page, "16-device-reset");

    assert.equal(await attestTill(tills[1]!, "till-7"), "Yes", "pinned afresh to the new key");
    const cli = attestdCli(["device", "show", "till-7", "--tenant", "acme", ...data]);
    assert.equal(cli.status, 0, cli.stderr);
    const shown = JSON.parse(cli.stdout) as { device: { count: number; pin: { objectId: string } | null; resets: number }; resets: { by: string }[] };
    assert.deepEqual([shown.device.count, shown.device.resets, shown.resets.map((r) => r.by)], [4, 1, ["ada@acme.example"]]);
    assert.ok(shown.device.pin, "the CLI sees the new pin");
  });

  it("revoking the client, after a confirmation, ends its token at once", async () => {
    const token = await accessToken();
    assert.equal(token.status, 200);
    await page.goto(`${base}/portal/clients`);
    await page.locator("tbody tr", { hasText: "ops@acme.example" }).getByRole("button", { name: "Revoke" }).click();
    await confirmInPage(page);
    await page.getByText(/^revoked /).waitFor();
    await visit(page, "13-client-revoked");
    assert.equal((await svc(token.token!, "GET", "/enroll/profiles")).status, 401);
    assert.equal((await accessToken()).status, 401);
  });
});
