import { createHash, X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { REPO } from "../helpers/serverProcess.ts";

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

/**
 * axe-core's serious and critical violations on the page as it is now. Evaluated through the DevTools protocol,
 * which the page's CSP does not govern, so the strict CSP stays on while the check runs.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  const result = (await page.evaluate(`${axeSource};
    axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({
      id: v.id, impact: v.impact ?? "", help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
    })))`)) as AxeViolation[];
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
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
