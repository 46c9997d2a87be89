import fastifySwaggerUi from "@fastify/swagger-ui";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
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
    await scope.register(fastifySwaggerUi, { routePrefix: "/docs" });
  });
}
