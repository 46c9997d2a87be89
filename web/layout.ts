import type { PortalRole } from "../src/domain/portal.ts";
import type { Actor } from "../src/portal/sessions.ts";
import { Html, html } from "./html.ts";

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
 * The navigation, in groups (docs/portal.md "Navigation"); an entry with `only` is shown to those roles alone, and a
 * group left empty is not shown (the routes check the role regardless). The account is not here: it sits beside
 * the name and "Sign out" in the top bar, where people look for it.
 */
interface NavLink {
  href: string;
  label: string;
  only?: PortalRole[];
}
export const NAV: { label: string; links: NavLink[] }[] = [
  {
    label: "Attestation",
    links: [
      { href: "/portal/", label: "Overview" },
      { href: "/portal/verdicts", label: "Verdicts" },
      { href: "/portal/devices", label: "Attested devices" },
      { href: "/portal/activity", label: "Activity log" },
      { href: "/portal/play-apps", label: "Play apps" },
      { href: "/portal/ios-apps", label: "iOS apps" },
      { href: "/portal/policy", label: "Policy" },
      { href: "/portal/reference-values", label: "Reference values" },
    ],
  },
  {
    label: "Access",
    links: [
      { href: "/portal/keys", label: "API keys" },
      { href: "/portal/webhooks", label: "Webhooks" },
      { href: "/portal/clients", label: "Enrollment clients" },
      { href: "/portal/enrollment", label: "Enrollment" },
      { href: "/portal/users", label: "Users", only: ["admin", "operator"] },
      { href: "/portal/audit", label: "Audit trail", only: ["admin", "operator"] },
    ],
  },
  {
    label: "Operator",
    links: [
      { href: "/portal/tenants", label: "Tenants", only: ["operator"] },
      { href: "/portal/trust", label: "Trust sources", only: ["operator"] },
      { href: "/portal/sso", label: "Single sign-on", only: ["operator"] },
    ],
  },
  {
    label: "Help",
    // Swagger UI's page beside the portal (/docs, `--api-docs`): every route, its answers and error codes
    links: [{ href: "/docs", label: "API reference" }],
  },
];

/** The same path with these query parameters (empty ones left out): filters live in the URL. */
export function withQuery(path: string, q: Record<string, string | number | undefined>): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") s.set(k, String(v));
  const text = s.toString();
  return text ? `${path}?${text}` : path;
}

function navigation(ctx: PageContext, actor: Actor, active: string | undefined): Html {
  const groups = NAV.map((g) => ({ ...g, links: g.links.filter((n) => !n.only || n.only.includes(actor.role)) })).filter((g) => g.links.length);
  return html`<nav id="portal-nav" aria-label="Portal" class="pages">
  ${groups.map((g) => {
    const id = `nav-${g.label.toLowerCase()}`;
    return html`<div class="nav-group"><p class="nav-label" id="${id}">${g.label}</p><ul aria-labelledby="${id}">
    ${g.links.map(
      (n) => html`<li><a href="${n.href.startsWith("/portal/") ? withQuery(n.href, { tenant: ctx.tenant }) : n.href}" ${n.href === active ? html`aria-current="page"` : ""}>${n.label}</a></li>`,
    )}
  </ul></div>`;
  })}
</nav>`;
}

/**
 * The in-page confirmation portal.js opens for a button with data-confirm (never the browser's confirm(), which
 * cannot be styled, names no action and is blocked in some embedded browsers). Cancel comes first: a stray Enter
 * does nothing harmful.
 */
const CONFIRM_DIALOG = html`<dialog id="confirm-dialog" aria-labelledby="confirm-title" aria-describedby="confirm-text">
  <article>
    <h2 id="confirm-title">Are you sure?</h2>
    <p id="confirm-text"></p>
    <footer>
      <button type="button" class="secondary" data-confirm-cancel>Cancel</button>
      <button type="button" data-confirm-ok>Confirm</button>
    </footer>
  </article>
</dialog>`;

export function layout(title: string, ctx: PageContext, body: Html, active?: string): string {
  // The top bar holds the name, who is signed in, their account and the way out; the pages are a sidebar on a
  // wide screen and a menu behind one button on a narrow one (portal.css, portal.js).
  const actor = ctx.actor;
  const brand = html`<a class="brand" href="/portal/"><img src="/portal/assets/favicon.svg" alt="" width="28" height="28"><span>attestd</span></a>`;
  const bar = actor
    ? html`<header class="topbar">
      ${brand}
      <button type="button" class="menu-toggle secondary outline" aria-expanded="false" aria-controls="portal-nav">Menu</button>
      <p class="who"><span class="wrap">${actor.email}</span> · ${actor.role}${ctx.tenant ? html` · tenant <span class="wrap">${ctx.tenant}</span>` : ""}</p>
      <a class="account" href="${withQuery("/portal/account", { tenant: ctx.tenant })}" ${active === "/portal/account" ? html`aria-current="page"` : ""}>Account</a>
      <button type="button" class="secondary outline signout" data-signout>Sign out</button>
    </header>
    ${navigation(ctx, actor, active)}`
    : html`<header class="topbar">${brand}</header>`;
  return (
    "<!doctype html>\n" +
    html`<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    ${ctx.csrf ? html`<meta name="csrf-token" content="${ctx.csrf}">` : ""}
    <title>${title} · attestd</title>
    <link rel="icon" href="/portal/assets/favicon.svg" type="image/svg+xml">
    <link rel="stylesheet" href="/portal/assets/vendor/pico.min.css">
    <link rel="stylesheet" href="/portal/assets/portal.css">
    <script type="module" src="/portal/assets/portal.js"></script>
  </head>
  <body>
    <a class="skip" href="#main">Skip to content</a>
    <div class="shell${actor ? "" : " signed-out"}">
      ${bar}
      <main id="main">
        <h1>${title}</h1>
        <p role="status" aria-live="polite" class="notice" id="notice"></p>
        ${body}
      </main>
    </div>
    ${CONFIRM_DIALOG}
  </body>
</html>`.text
  );
}

/** A column of `table()`: its name, and whether it may be left out where the screen is narrow. */
export interface Column {
  label: string;
  /**
   * Secondary: hidden below a laptop's width, in the table and in its cards alike (what it says is on the row's
   * own page or in its edit form). The first column and the one holding the row's action are never secondary.
   */
  secondary?: boolean;
}

export interface TableOptions {
  /** false: a table that stays a table on a phone (a few short numbers), scrolled in its own box if it must */
  cards?: boolean;
}

const CELL = /<(td|th)(?=[\s>])/g;
/** a run this long without a space (an id, a hash, an email, a route) may break anywhere; shorter words stay whole */
const LONG_VALUE = /[^\s]{16,}/;

/**
 * Every cell of a row marked with its column's name (data-label, which the cards show at a phone's width), for a
 * secondary column data-secondary, and data-long where its text holds a long unbroken value (portal.css lets only
 * those break anywhere, so a table never squeezes "active" into "activ/e" to make room). The rows are Html made by
 * the `html` tag, so every "<td"/"<th" in them is a tag (interpolated text has its "<" escaped); a cell that names
 * its own data-label keeps it.
 */
function labelCells(row: Html, columns: Column[]): Html {
  let i = 0;
  return new Html(
    row.text.replace(CELL, (tag: string, _name: string, at: number, all: string) => {
      const column = columns[i];
      const spans = /^[^>]*colspan="(\d+)"/.exec(all.slice(at))?.[1];
      i += spans ? Number(spans) : 1;
      if (!column) return tag;
      const open = /^[^>]*/.exec(all.slice(at))![0];
      const label = open.includes("data-label=") ? "" : html` data-label="${column.label}"`.text;
      const close = all.slice(at).search(/<\/t[dh]>/);
      const text = all.slice(at + open.length + 1, close < 0 ? undefined : at + close).replace(/<[^>]*>/g, " ");
      return `${tag}${label}${column.secondary ? " data-secondary" : ""}${LONG_VALUE.test(text) ? " data-long" : ""}`;
    }),
  );
}

/**
 * A table in a box of its own. At a phone's width it becomes one card per row, each cell under its column's
 * name, unless `cards: false`; a column given as `{ label, secondary: true }` is hidden on narrow screens.
 * `head` entries may be plain strings (the first form, still the common one).
 */
export function table(caption: string, head: (string | Column)[], rows: Html[], options: TableOptions = {}): Html {
  const columns = head.map((h) => (typeof h === "string" ? { label: h } : h));
  const cards = options.cards ?? true;
  // its own region (focusable: a table that must scroll sideways can be by keyboard), named apart from a section
  // that carries the same words as its heading (axe's landmark-unique)
  return html`<div class="table-wrap${cards ? " cards" : ""}" tabindex="0" role="region" aria-label="Table: ${caption}">
  <table>
    <caption>${caption}</caption>
    <thead><tr>${columns.map((c) => html`<th scope="col" ${c.secondary ? html`data-secondary` : ""}>${c.label}</th>`)}</tr></thead>
    <tbody>${rows.length ? rows.map((r) => labelCells(r, columns)) : html`<tr><td colspan="${columns.length}" class="empty">Nothing here yet.</td></tr>`}</tbody>
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
