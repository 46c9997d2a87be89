/**
 * The CSP every page of this origin is held to (the portal's pages, /docs): its own files only, nothing inline,
 * nothing from another origin, never framed. A page that needs one thing more or less (Swagger UI: no default at
 * all, one hashed `<style>`, fonts as data:) changes those directives and keeps the rest, so the two policies
 * cannot drift apart on the directives that protect the CSRF-holding pages.
 */
const STRICT: Readonly<Record<string, string>> = {
  "default-src": "'self'",
  "script-src": "'self'",
  "style-src": "'self'",
  "img-src": "'self' data:",
  "connect-src": "'self'",
  "object-src": "'none'",
  "base-uri": "'none'",
  "form-action": "'self'",
  "frame-ancestors": "'none'",
};

/** The strict policy as a header value, with `changes` replacing or adding directives. */
export function contentSecurityPolicy(changes: Readonly<Record<string, string>> = {}): string {
  return Object.entries({ ...STRICT, ...changes })
    .map(([directive, sources]) => `${directive} ${sources}`)
    .join("; ");
}
