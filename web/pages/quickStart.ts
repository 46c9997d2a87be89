import type { ApiKeySummary } from "../../src/services/apiKeyAdmin.ts";
import { API_KEY_PREFIX } from "../../src/auth/apiKeys.ts";
import { html, type Html } from "../html.ts";
import { withQuery, type PageContext } from "../layout.ts";

/**
 * Where a tenant's programs reach the attestation API: the base the server reports (--public-url, else this host
 * and port, as the start-up banner and invitation links say it) and, with the dev TLS, the CA file curl must trust.
 */
export interface ApiAccess {
  baseUrl: string;
  caFile?: string;
}

/**
 * The README's first walk-through as the page's own commands (attestation-api.md: POST /v2/nonces, then POST
 * /v2/blobs?nonce= with the blob as application/octet-stream, both with x-vendor-attest-api-key). `key` is what
 * goes between the quotes of KEY=: the key itself, or an element the page fills in with it (the key-created box).
 */
export function curlCommands(api: ApiAccess, key: Html | string): Html {
  const ca = api.caFile ? ` --cacert ${shellWord(api.caFile)}` : "";
  return html`KEY='${key}'
NONCE=$(curl -sS${ca} -X POST -H "x-vendor-attest-api-key: $KEY" \\
  ${api.baseUrl}/v2/nonces | sed -E 's/.*"nonce":"([^"]+)".*/\\1/')
echo "$NONCE"
# blob.bin: what the device made for this nonce (to try it: README.md, "The walk-throughs: one set-up, one server")
curl -sS${ca} -X POST -H "x-vendor-attest-api-key: $KEY" \\
  -H "Content-Type: application/octet-stream" --data-binary @blob.bin \\
  "${api.baseUrl}/v2/blobs?nonce=$NONCE"`;
}

/** a path as one shell word: quoted when it holds anything but the plainest characters */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** the key as far as the page knows it: its visible prefix and id, the secret shown only once */
export function keyPlaceholder(k: ApiKeySummary): string {
  return `${API_KEY_PREFIX}${k.keyId}_PASTE-THE-REST-OF-THE-KEY`;
}

const docsLinks = html`<a href="/docs">the API reference</a> (every route, its answers and error codes) and the
  README's <em>The walk-throughs: one set-up, one server</em>, then part 1 (a simulated device end to end)`;

/**
 * An empty tenant's first steps, on its overview until its first verdict: make a key, get a nonce and post a blob
 * with it, read the docs. The key's secret is shown once, on the keys page, with these commands filled in; here the
 * commands carry the newest key's prefix and a placeholder for the rest.
 */
export function quickStart(ctx: PageContext, o: { keys: ApiKeySummary[]; canWrite: boolean; api: ApiAccess }): Html {
  const keysPage = withQuery("/portal/keys", { tenant: ctx.tenant });
  const active = o.keys.filter((k) => !k.revokedAt);
  const newest = active.reduce<ApiKeySummary | undefined>((a, k) => (!a || k.createdAt > a.createdAt ? k : a), undefined);
  const step1 = newest
    ? html`<li><strong>An API key</strong>: you have ${active.length === 1 ? "one" : active.length}, the newest
    <code>${API_KEY_PREFIX}${newest.keyId}_…</code>${newest.label ? html` (“${newest.label}”)` : ""}. Its whole value was
    shown once, when it was made; ${o.canWrite ? html`<a href="${keysPage}">make another</a> if it is lost.` : "an admin of your tenant makes another if it is lost."}</li>`
    : html`<li><strong>Make an API key</strong>. ${o.canWrite
      ? html`It is shown once, with the commands below filled in.<br><a href="${keysPage}" role="button" class="auto">Create a key</a>`
      : "An admin of your tenant makes it (you read only)."}</li>`;
  return html`<article aria-labelledby="start-h" class="quick-start" data-quick-start>
  <h2 id="start-h">Quick start</h2>
  <p>No verdict yet. Three steps to the first one:</p>
  <ol>
    ${step1}
    <li><strong>Get a nonce, then post the device's blob with it</strong>, from the program that talks to attestd:
      <pre class="commands" tabindex="0" role="region" aria-label="The commands"><code id="quick-curl">${curlCommands(o.api, newest ? keyPlaceholder(newest) : `${API_KEY_PREFIX}YOUR-KEY`)}</code></pre>
      <p><button type="button" class="secondary auto" data-copy="quick-curl">Copy the commands</button></p>
      <p><small>A nonce is valid for one blob, for a few minutes. The answer is the verdict record; it shows on this page and under Verdicts.</small></p></li>
    <li><strong>Read on</strong>: ${docsLinks}.</li>
  </ol>
</article>`;
}

/** An operator's overview while no tenant exists: the way to the first tenant's quick start. */
export function operatorFirstRun(): Html {
  return html`<article aria-labelledby="first-h" class="quick-start" data-quick-start>
  <h2 id="first-h">First steps</h2>
  <ol>
    <li><strong>Create a tenant</strong> (a customer or a reseller): <a href="/portal/tenants">Tenants</a>, or <code>attestd tenant create NAME</code>.</li>
    <li><strong>Invite its admin</strong>: <a href="/portal/users">Users</a> → Invite someone, with the tenant picked from the list. The link is shown once; send it to them.</li>
    <li><strong>Their overview guides them</strong> (and yours, with the tenant picked above): an API key, the first nonce and blob, the docs.</li>
  </ol>
  <p>Read on: ${docsLinks}.</p>
</article>`;
}
