import type { StoredVerdict } from "../src/domain/verdicts.ts";
import type { ActivityView, VerdictFilter } from "../src/portal/history.ts";
import type { Actor } from "../src/portal/sessions.ts";
import type { ApiKeySummary } from "../src/services/apiKeyAdmin.ts";
import type { StoredActivityEntry } from "../src/store/types.ts";
import { html, type Html } from "./html.ts";

/**
 * The portal's pages, rendered on the server. They only lay out what the routes (src/http/portal/) read through
 * the services; every state change goes through /portal/api by web/static/portal.js.
 */

export interface PageContext {
  actor?: Actor;
  /** the session's CSRF token, which portal.js sends as X-CSRF-Token */
  csrf?: string;
  /** the tenant an operator is looking at (?tenant=NAME), kept in every link */
  tenant?: string;
}

const NAV = [
  { href: "/portal/", label: "Overview" },
  { href: "/portal/verdicts", label: "Verdicts" },
  { href: "/portal/activity", label: "Activity log" },
  { href: "/portal/keys", label: "API keys" },
];

/** The same path with these query parameters (empty ones left out): filters live in the URL. */
export function withQuery(path: string, q: Record<string, string | number | undefined>): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") s.set(k, String(v));
  const text = s.toString();
  return text ? `${path}?${text}` : path;
}

function layout(title: string, ctx: PageContext, body: Html, active?: string): string {
  const nav = ctx.actor
    ? html`<ul>
        ${NAV.map(
          (n) => html`<li><a href="${withQuery(n.href, { tenant: ctx.tenant })}" ${n.href === active ? html`aria-current="page"` : ""}>${n.label}</a></li>`,
        )}
        <li><button type="button" class="secondary outline" data-signout>Sign out</button></li>
      </ul>`
    : "";
  const who = ctx.actor
    ? html`<p class="who">${ctx.actor.email} · ${ctx.actor.role}${ctx.tenant ? ` · tenant ${ctx.tenant}` : ""}</p>`
    : "";
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
      <nav aria-label="Portal"><ul><li><strong>attestd</strong></li></ul>${nav}</nav>
      ${who}
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

function table(caption: string, head: string[], rows: Html[]): Html {
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${caption}">
  <table>
    <caption>${caption}</caption>
    <thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
    <tbody>${rows.length ? rows : html`<tr><td colspan="${head.length}">Nothing here yet.</td></tr>`}</tbody>
  </table>
</div>`;
}

function hiddenTenant(ctx: PageContext): Html | string {
  return ctx.tenant ? html`<input type="hidden" name="tenant" value="${ctx.tenant}">` : "";
}

export function signInPage(next: string): string {
  return layout(
    "Sign in",
    {},
    html`<form data-api="/portal/api/session" data-method="POST" data-then="${next}" class="narrow">
  <label>Email <input type="email" name="email" autocomplete="username" required maxlength="320"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="1024"></label>
  <button type="submit">Sign in</button>
</form>`,
  );
}

export function invitePage(): string {
  return layout(
    "Set your password",
    {},
    html`<form data-api="/portal/api/invite" data-method="POST" data-then="/portal/signin" data-invite class="narrow">
  <p>Choose a password of at least 12 characters that is not one of the common ones. This link works once.</p>
  <label>New password <input type="password" name="password" autocomplete="new-password" required minlength="12" maxlength="1024"></label>
  <button type="submit">Set password</button>
</form>`,
  );
}

function activityRows(items: StoredActivityEntry[], ctx: PageContext): Html[] {
  return items.map(
    (e) => html`<tr>
  <td><time datetime="${e.time}">${e.time}</time></td><td>${e.method}</td><td>${e.route}</td><td>${e.status}</td><td>${e.code ?? ""}</td>
  <td>${e.errorId ? html`<a href="${withQuery("/portal/activity", { errorId: e.errorId, tenant: ctx.tenant })}">${e.errorId}</a>` : ""}</td>
  <td>${e.latencyMs}</td><td>${e.remoteAddress}</td>
</tr>`,
  );
}

const ACTIVITY_HEAD = ["Time", "Method", "Route", "Status", "Code", "Error id", "Latency (ms)", "Address"];

export function overviewPage(ctx: PageContext, recent: StoredVerdict[], failures: StoredActivityEntry[]): string {
  const counts = { Yes: 0, No: 0, Unknown: 0 };
  for (const v of recent) counts[v.record.verdict]++;
  return layout(
    "Overview",
    ctx,
    html`<section aria-labelledby="recent-h">
  <h2 id="recent-h">The last ${recent.length} verdicts</h2>
  <ul class="counts">
    ${(["Yes", "No", "Unknown"] as const).map(
      (v) => html`<li><a href="${withQuery("/portal/verdicts", { verdict: v, tenant: ctx.tenant })}">${v}: <strong>${counts[v]}</strong></a></li>`,
    )}
  </ul>
</section>
<section aria-labelledby="failed-h">
  <h2 id="failed-h">Recent failed requests</h2>
  ${table("Recent failed requests", ACTIVITY_HEAD, activityRows(failures, ctx))}
</section>`,
    "/portal/",
  );
}

export function verdictsPage(ctx: PageContext, f: VerdictFilter, items: StoredVerdict[], next: string | undefined): string {
  const option = (value: string, current: string | undefined) =>
    html`<option value="${value}" ${(current ?? "") === value ? html`selected` : ""}>${value || "any"}</option>`;
  const rows = items.map(
    (v) => html`<tr>
  <td><time datetime="${v.createdAt}">${v.createdAt}</time></td><td>${v.record.verdict}</td><td>${v.record.status}</td><td>${v.format}</td>
  <td>${v.record.chipId || v.record.IMEI}</td>
  <td><a href="${withQuery(`/portal/verdicts/${encodeURIComponent(v.objectId)}`, { tenant: ctx.tenant })}">${v.objectId}</a></td>
</tr>`,
  );
  return layout(
    "Verdicts",
    ctx,
    html`<form method="get" action="/portal/verdicts" class="filters" aria-label="Filter verdicts">
  ${hiddenTenant(ctx)}
  <label>Verdict <select name="verdict">${["", "Yes", "No", "Unknown"].map((v) => option(v, f.verdict))}</select></label>
  <label>Status <input name="status" value="${f.status ?? ""}" maxlength="64"></label>
  <label>Format <select name="format">${["", "vendor", "android-key"].map((v) => option(v, f.format))}</select></label>
  <label>Device (chipId or IMEI) <input name="device" value="${f.device ?? ""}" maxlength="128"></label>
  <button type="submit">Filter</button>
</form>
${table("Verdicts, newest first", ["Time", "Verdict", "Status", "Format", "Device", "Object id"], rows)}
${next ? html`<p><a href="${withQuery("/portal/verdicts", { ...f, tenant: ctx.tenant, after: next })}">Older verdicts</a></p>` : ""}`,
    "/portal/verdicts",
  );
}

export function verdictDetailPage(ctx: PageContext, v: StoredVerdict): string {
  return layout(
    `Verdict ${v.objectId}`,
    ctx,
    html`<dl>
  <dt>Verdict</dt><dd>${v.record.verdict}</dd>
  <dt>Status</dt><dd>${v.record.status}</dd>
  <dt>The rule that decided</dt><dd>${v.reason}</dd>
  <dt>Format</dt><dd>${v.format}</dd>
  <dt>Time</dt><dd>${v.createdAt}</dd>
</dl>
<h2>The verdict record</h2>
<pre tabindex="0">${JSON.stringify(v.record, null, 2)}</pre>
<h2>What the attestation said</h2>
<pre tabindex="0">${JSON.stringify(v.detail, null, 2)}</pre>`,
    "/portal/verdicts",
  );
}

export function activityPage(ctx: PageContext, f: ActivityView, items: StoredActivityEntry[], next: string | undefined): string {
  return layout(
    "Activity log",
    ctx,
    html`<form method="get" action="/portal/activity" class="filters" aria-label="Filter the activity log">
  ${hiddenTenant(ctx)}
  <label>Error id <input name="errorId" value="${f.errorId ?? ""}" maxlength="64"></label>
  <label>Status <input name="status" inputmode="numeric" value="${f.status ?? ""}" maxlength="3"></label>
  <label>Code <input name="code" value="${f.code ?? ""}" maxlength="64"></label>
  <label>Route <input name="route" value="${f.route ?? ""}" maxlength="200"></label>
  <button type="submit">Filter</button>
</form>
${table("Requests, newest first", ACTIVITY_HEAD, activityRows(items, ctx))}
${next ? html`<p><a href="${withQuery("/portal/activity", { ...f, tenant: ctx.tenant, after: next })}">Older requests</a></p>` : ""}`,
    "/portal/activity",
  );
}

export function keysPage(ctx: PageContext, keys: ApiKeySummary[], canWrite: boolean): string {
  const rows = keys.map(
    (k) => html`<tr>
  <td><code>${k.keyId}</code></td><td>${k.label ?? ""}</td><td>${k.createdAt}</td><td>${k.lastUsedAt ?? "never"}</td>
  <td>${k.rps ? `${k.rps} / ${k.burst}` : "server default"}</td>
  <td>${k.restrictions ? [...k.restrictions.ipAddresses, ...k.restrictions.referers].join(", ") : "none"}</td>
  <td>${k.revokedAt ? `revoked ${k.revokedAt}` : "active"}</td>
  <td>${
    canWrite && !k.revokedAt
      ? html`<button type="button" class="secondary" data-api="${withQuery(`/portal/api/keys/${k.keyId}`, { tenant: ctx.tenant })}" data-method="DELETE" data-confirm="Revoke key ${k.keyId}? Requests with it are refused at once.">Revoke</button>`
      : ""
  }</td>
</tr>`,
  );
  const create = canWrite
    ? html`<form data-api="${withQuery("/portal/api/keys", { tenant: ctx.tenant })}" data-method="POST" data-show-key aria-label="Create an API key">
  <div class="grid">
    <label>Label <input name="label" maxlength="100" placeholder="web shop, production"></label>
    <label>Requests per second (0: the server's default) <input name="rps" type="number" min="0" step="any" value="0"></label>
  </div>
  <button type="submit">Create key</button>
</form>
<div id="new-key" hidden>
  <p><strong>The new key, shown once.</strong> Store it now: attestd keeps only its hash.</p>
  <p><code id="new-key-value"></code> <button type="button" class="secondary" data-copy="new-key-value">Copy</button></p>
</div>`
    : "";
  return layout(
    "API keys",
    ctx,
    html`${create}${table("API keys", ["Key id", "Label", "Created", "Last used", "rps / burst", "Restrictions", "State", "Action"], rows)}`,
    "/portal/keys",
  );
}
