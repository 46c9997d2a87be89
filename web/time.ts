import { html, type Html } from "./html.ts";

/**
 * A stored time (ISO 8601, UTC) as people read it in a table: date and time to the second, the exact value in the
 * element's `datetime`. Column headings say "(UTC)".
 */
export function when(iso: string): Html {
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace("T", " ")}</time>`;
}
