import { html } from "../html.ts";
import { layout, type PageContext } from "../layout.ts";

/** The error body the portal's API answers with (Part B's), which a page shows to a person instead. */
export interface ErrorBody {
  errorId?: string;
  code?: string;
  message?: string;
  data?: string;
}

const TITLES: Record<number, string> = {
  400: "This request is not valid",
  403: "Not allowed",
  404: "Not found",
  429: "Too many requests",
};

/** A page the portal could not show: what went wrong, in words, and the error id support can look up. */
export function errorPage(ctx: PageContext, status: number, body: ErrorBody): string {
  const title = TITLES[status] ?? (status >= 500 ? "Something went wrong" : "This page cannot be shown");
  return layout(
    title,
    ctx,
    html`<p>${body.data || body.message || `HTTP ${status}`}</p>
<p class="who">${body.code ? html`Code <code>${body.code}</code>` : ""}${body.errorId ? html` · error id <code>${body.errorId}</code>` : ""}</p>
<p>${body.message?.startsWith("PORTAL_SSO_") ? html`<a href="/portal/signin">Back to the sign-in page</a>` : html`<a href="/portal/">Back to the overview</a>`}</p>`,
  );
}
