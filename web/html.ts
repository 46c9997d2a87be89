import escapeHtml from "escape-html";

/**
 * HTML built from template literals, escaped by default: every interpolated value is text (escape-html) unless
 * it is itself `Html` made by this tag, so a verdict's detail or an email can never become markup. The one way
 * to skip escaping is to build with `html`; there is no "raw" helper to misuse.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join("");
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}
