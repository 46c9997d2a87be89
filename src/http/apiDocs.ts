import fastifySwaggerUi from "@fastify/swagger-ui";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { PACKAGE_VERSION } from "../packageInfo.ts";
import { contentSecurityPolicy } from "./contentSecurityPolicy.ts";
import type { AppInstance } from "./types.ts";

/**
 * /docs, Swagger UI over /openapi.json. It is served on the origin whose portal pages hold CSRF tokens, so it is
 * held to the same rules as they are: its own files only (the page, swagger-ui's bundle and the plugin's
 * initializer are all files; no inline script), never framed, no sniffing. Swagger UI sets styles through the DOM,
 * which `style-src` does not govern; the one `<style>` element it draws (its logo's colours, in the standalone
 * preset) is allowed by its hash, nothing else inline. Its logo and icons are data: images; "Try it out" calls this
 * origin. test/browser/apiDocs.test.ts loads it in Chromium and finds no CSP violation.
 */
function csp(styleHashes: readonly string[]): string {
  return contentSecurityPolicy({
    "default-src": "'none'",
    "style-src": ["'self'", ...styleHashes].join(" "),
    "font-src": "'self' data:",
  });
}

/**
 * The CSP hashes of the `<style>` elements the installed swagger-ui's preset draws, read from the file it serves:
 * an upgrade that changes them changes the hashes with it, and one that adds another way of drawing styles shows
 * up as a violation in the browser test.
 */
function presetStyleHashes(): string[] {
  const dir = path.dirname(createRequire(import.meta.url).resolve("@fastify/swagger-ui"));
  const preset = readFileSync(path.join(dir, "static", "swagger-ui-standalone-preset.js"), "utf8");
  return [...preset.matchAll(/createElement\("style",null,("(?:[^"\\]|\\.)*")\)/g)].map(
    (m) => `'sha256-${createHash("sha256").update(JSON.parse(m[1]!) as string).digest("base64")}'`,
  );
}

/** attestd's mark: a shield with a check, the favicon's and (beside the name) the top bar's. */
const MARK =
  '<path d="M16 2 4 6.5v8.2c0 7.3 5 12.9 12 15.3 7-2.4 12-8 12-15.3V6.5Z" fill="#1f6feb"/>' +
  '<path d="m10.5 16.2 3.8 3.8 7.4-7.6" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>';
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">${MARK}</svg>`;
/** the top bar's logo, drawn as an image on Swagger UI's dark bar: the mark, the name and the version serving it */
const LOGO =
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 250 32" width="250" height="32">${MARK}` +
  '<text x="38" y="23" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="21" font-weight="700" fill="#fff">attestd</text>' +
  `<text x="140" y="23" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="14" fill="#c9d1d9">API ${PACKAGE_VERSION.replace(/[^0-9A-Za-z.+-]/g, "")}</text></svg>`;
/**
 * Served as a file (style-src 'self'). The top bar's "Explore" box loads any other document into the page: no use
 * here (connect-src 'self' refuses another origin anyway), so it is hidden rather than left to fail.
 */
const THEME_CSS = ".swagger-ui .topbar .download-url-wrapper { display: none; }\n.swagger-ui .topbar { padding: 8px 0; }\n";

/** What Swagger UI is told: the title and mark of attestd rather than Swagger's, and what helps one try the API. */
export const API_DOCS_UI = {
  theme: {
    title: `attestd API ${PACKAGE_VERSION}`,
    favicon: [{ filename: "attestd.svg", rel: "icon", sizes: "any", type: "image/svg+xml", content: Buffer.from(FAVICON) }],
    css: [{ filename: "attestd.css", content: THEME_CSS }],
  },
  logo: { type: "image/svg+xml", content: Buffer.from(LOGO), href: "/docs/" },
  uiConfig: {
    // operations stay in the document's order (openapi.ts orders it: nonce, blob, verdict reads, then the rest)
    displayOperationId: true,
    displayRequestDuration: true,
    filter: true,
    tryItOutEnabled: false,
    persistAuthorization: false,
  },
};

/** Registers /docs with its headers, unless `--api-docs false` (then /docs is a 404; /openapi.json stays). */
export async function registerApiDocs(app: AppInstance, enabled: boolean): Promise<void> {
  if (!enabled) return;
  const headers = {
    "content-security-policy": csp(presetStyleHashes()),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
  };
  // its own scope, so the headers hook runs for /docs and its files (served by @fastify/static inside the plugin) only
  await app.register(async (scope) => {
    scope.addHook("onRequest", (_request, reply, done) => {
      reply.headers(headers);
      done();
    });
    await scope.register(fastifySwaggerUi, { routePrefix: "/docs", ...API_DOCS_UI });
  });
}
