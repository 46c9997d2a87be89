import type { PortalRole } from "../src/domain/portal.ts";
import type { Actor } from "../src/portal/sessions.ts";
import { html, type Html } from "./html.ts";

/**
 * What every page of the portal shares: the layout (head, navigation, who is signed in, the notice line), tables,
 * and links that keep their filters in the URL. Pages (web/pages/) only lay out what the routes
 * (src/http/portal/) read through the services; every state change goes through /portal/api by
 * web/static/portal.js.
 */

export interface PageContext {
  actor?: Actor;
  /** the session's CSRF token, which portal.js sends as X-CSRF-Token */
  csrf?: string;
  /** the tenant an operator is looking at (?tenant=NAME), kept in every link */
  tenant?: string;
}

/**
 * The navigation; an entry with `only` is shown to those roles alone (the routes check the role regardless).
 */
const NAV: { href: string; label: string; only?: PortalRole[] }[] = [
  { href: "/portal/", label: "Overview" },
  { href: "/portal/verdicts", label: "Verdicts" },
  { href: "/portal/devices", label: "Attested devices" },
  { href: "/portal/activity", label: "Activity log" },
  { href: "/portal/keys", label: "API keys" },
  { href: "/portal/clients", label: "Enrollment clients" },
  { href: "/portal/reference-values", label: "Reference values" },
  { href: "/portal/play-apps", label: "Play apps" },
  { href: "/portal/enrollment", label: "Enrollment" },
  { href: "/portal/users", label: "Users", only: ["admin", "operator"] },
  { href: "/portal/account", label: "Account" },
  { href: "/portal/tenants", label: "Tenants", only: ["operator"] },
  { href: "/portal/trust", label: "Trust sources", only: ["operator"] },
];

/** The same path with these query parameters (empty ones left out): filters live in the URL. */
export function withQuery(path: string, q: Record<string, string | number | undefined>): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") s.set(k, String(v));
  const text = s.toString();
  return text ? `${path}?${text}` : path;
}

export function layout(title: string, ctx: PageContext, body: Html, active?: string): string {
  // Two rows: who is signed in and the way out beside the name, then the pages, a bar that wraps on a phone.
  const bar = ctx.actor
    ? html`<div class="topbar">
        <strong class="brand">attestd</strong>
        <p class="who">${ctx.actor.email} · ${ctx.actor.role}${ctx.tenant ? ` · tenant ${ctx.tenant}` : ""}</p>
        <button type="button" class="secondary outline signout" data-signout>Sign out</button>
      </div>
      <nav aria-label="Portal" class="pages"><ul>
        ${NAV.filter((n) => !n.only || n.only.includes(ctx.actor!.role)).map(
          (n) => html`<li><a href="${withQuery(n.href, { tenant: ctx.tenant })}" ${n.href === active ? html`aria-current="page"` : ""}>${n.label}</a></li>`,
        )}
      </ul></nav>`
    : html`<div class="topbar"><strong class="brand">attestd</strong></div>`;
  return (
    "<!doctype html>\n" +
    html`<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    ${ctx.csrf ? html`<meta name="csrf-token" content="${ctx.csrf}">` : ""}
    <title>${title} · attestd</title>
    <link rel="stylesheet" href="/portal/assets/vendor/pico.min.css">
    <link rel="stylesheet" href="/portal/assets/portal.css">
    <script type="module" src="/portal/assets/portal.js"></script>
  </head>
  <body>
    <a class="skip" href="#main">Skip to content</a>
    <header class="container">
      ${bar}
    </header>
    <main id="main" class="container">
      <h1>${title}</h1>
      <p role="status" aria-live="polite" class="notice" id="notice"></p>
      ${body}
    </main>
  </body>
</html>`.text
  );
}

export function table(caption: string, head: string[], rows: Html[]): Html {
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${caption}">
  <table>
    <caption>${caption}</caption>
    <thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
    <tbody>${rows.length ? rows : html`<tr><td colspan="${head.length}">Nothing here yet.</td></tr>`}</tbody>
  </table>
</div>`;
}

export function hiddenTenant(ctx: PageContext): Html | string {
  return ctx.tenant ? html`<input type="hidden" name="tenant" value="${ctx.tenant}">` : "";
}

/** For an operator on a page of one tenant who has not said which: the tenants, each a link to that page. */
export function pickTenantPage(ctx: PageContext, title: string, path: string, tenants: string[]): string {
  return layout(
    title,
    ctx,
    html`<p>Whose? Operators see one tenant's ${title.toLowerCase()} at a time.</p>
<ul>${tenants.map((t) => html`<li><a href="${withQuery(path, { tenant: t })}">${t}</a></li>`)}</ul>
${tenants.length === 0 ? html`<p>No tenant yet: <a href="/portal/tenants">create one</a>.</p>` : ""}`,
    path,
  );
}
