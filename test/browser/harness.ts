import { createHash, X509Certificate } from "node:crypto";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { Agent } from "undici";
import { PORTAL_PASSWORD } from "../helpers/portalPeople.ts";
import { attestdCli, freePort, REPO, startServer, type ServerProcess } from "../helpers/serverProcess.ts";

/**
 * Debian's Chromium, driven by playwright-core (its own browser download cannot work offline). `.ci/run` installs
 * the package when it is missing; CHROMIUM_PATH points elsewhere.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Where every browser test keeps the screenshots of the pages it visited (kept after the run; git ignores it). */
export const SCREENSHOTS = path.join(REPO, "test-artifacts", "screenshots");

/**
 * Chromium refuses WebAuthn on a page with a certificate error, so "ignore HTTPS errors" is not enough for the
 * passkey tests: the browser is told to accept the one dev TLS leaf by its public key (SPKI SHA-256), which makes
 * the page a real secure context, as a trusted certificate would.
 */
export function spkiPin(certPemFile: string): string {
  const leafPem = readFileSync(certPemFile, "utf8").split(/(?=-----BEGIN CERTIFICATE-----)/)[0]!;
  const spki = new X509Certificate(leafPem).publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(spki).digest("base64");
}

export async function launchChromium(opts: { acceptLeafOf?: string } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does it), or set CHROMIUM_PATH`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      // the machine's network is closed: without these Chromium keeps dialling Google's hosts
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...(opts.acceptLeafOf ? [`--ignore-certificate-errors-spki-list=${spkiPin(opts.acceptLeafOf)}`] : []),
    ],
  });
}

export async function newContext(browser: Browser, width = 1280, height = 860): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width, height }, locale: "en-GB", timezoneId: "UTC" });
}

export interface PortalInBrowser {
  /** the server's data directory, and the CLI's arguments that name it */
  dir: string;
  data: string[];
  /** https://localhost:PORT: a host name, for cookies and WebAuthn alike */
  base: string;
  server: ServerProcess;
  browser: Browser;
  /** an undici dispatcher that trusts the dev CA, for requests to the APIs beside the browser */
  api: Agent;
  /**
   * A new context signed in as this person: invited by the CLI (`invite`: its extra arguments, e.g. ["--tenant",
   * "acme"] or ["--operator"]), password set and signed in through the admin API from a page of the portal, so the
   * cookie is the browser's. `page.on("dialog")` accepts any native dialog, so none can hang a test.
   */
  signIn(email: string, invite: string[], viewport?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }>;
  stop(): Promise<void>;
}

/**
 * What every browser test of the portal starts from: a data directory with these tenants, whatever `seed` writes
 * there before the server starts (a store's rows, as a second process like the CLI), `attestd serve` over HTTPS
 * (dev TLS) on a free port, Debian's Chromium trusting its leaf, and a way to sign people in.
 */
export async function startPortalInBrowser(
  opts: {
    tenants?: string[];
    seed?: (dir: string, data: string[]) => Promise<void> | void;
    args?: string[];
    /** the port to serve on, for a test that must name the portal's URL before it starts (an identity provider's redirect) */
    port?: number;
  } = {},
): Promise<PortalInBrowser> {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-browser-"));
  const data = ["--data-dir", dir];
  for (const name of opts.tenants ?? []) {
    const made = attestdCli(["tenant", "create", name, ...data]);
    assert.equal(made.status, 0, made.stderr);
  }
  await opts.seed?.(dir, data);
  const port = opts.port ?? (await freePort());
  const base = `https://localhost:${port}`;
  const server = await startServer([...data, ...(opts.args ?? [])], { port, tls: { caFile: path.join(dir, "tls/ca.pem") } });
  const api = new Agent({ connect: { ca: readFileSync(path.join(dir, "tls/ca.pem"), "utf8") } });
  const browser = await launchChromium({ acceptLeafOf: path.join(dir, "tls/server-fullchain.pem") });
  return {
    dir,
    data,
    base,
    server,
    browser,
    api,
    async signIn(email, invite, viewport) {
      const made = attestdCli(["user", "invite", "--email", email, ...invite, "--public-url", base, ...data]);
      assert.equal(made.status, 0, made.stderr);
      const token = made.stdout.trim().split("#")[1]!;
      const context = await newContext(browser, viewport?.width, viewport?.height);
      const page = await context.newPage();
      page.on("dialog", (d) => void d.accept());
      await page.goto(`${base}/portal/signin`);
      // (a string, as every evaluate here: tsx would wrap a function's inner helpers in a __name the page lacks)
      const status = await page.evaluate(`(async () => {
        const post = (url, body) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        await post("/portal/api/invite", ${JSON.stringify({ token, password: PORTAL_PASSWORD })});
        return (await post("/portal/api/session", ${JSON.stringify({ email, password: PORTAL_PASSWORD })})).status;
      })()`);
      assert.equal(status, 200);
      return { context, page };
    },
    async stop() {
      await browser.close();
      await server.stop();
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Answers the portal's in-page confirmation (web/layout.ts #confirm-dialog) that a click on a button with
 * data-confirm opened: its action button, named as the button that asked.
 */
export async function confirmInPage(page: Page): Promise<void> {
  const dialog = page.locator("#confirm-dialog[open]");
  await dialog.waitFor();
  await dialog.locator("[data-confirm-ok]").click();
}

/** A full-page screenshot named after the test step; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name.replace(/[^A-Za-z0-9_.-]+/g, "-")}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  nodes: string[];
}

/** axe-core's violations of any impact on the page as it is now (the layout test holds every page to none). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  return (await page.evaluate(`${axeSource};
    axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({
      id: v.id, impact: v.impact ?? "", help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
    })))`)) as AxeViolation[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. Evaluated through the DevTools protocol,
 * which the page's CSP does not govern, so the strict CSP stays on while the check runs.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  return (await axeViolations(page)).filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** A CTAP2 platform authenticator with user verification, as a phone's or laptop's built-in one behaves. */
export async function addVirtualAuthenticator(page: Page): Promise<{ authenticatorId: string; remove(): Promise<void> }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    authenticatorId,
    remove: async () => {
      await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
    },
  };
}
