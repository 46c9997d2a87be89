import Negotiator from "negotiator";

export type MediaFormat = "json" | "xml";

const OFFERED = ["application/json", "application/xml", "text/xml"];

/** splits on `sep` outside double-quoted strings (a quoted parameter value may hold `,` or `;`) */
function splitOutsideQuotes(text: string, sep: "," | ";"): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\\" && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if (c === sep && !quoted) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/**
 * Accept with every media-type parameter dropped but the weight: `application/json; charset=utf-8` (the server's
 * own Content-Type, which clients echo) is `application/json`. negotiator, like RFC 9110, makes a range with
 * parameters match only an offer with the same ones, and the server offers none; no parameter (charset, version,
 * profile) changes which of JSON or XML is written, so none may turn an acceptable type into a 406.
 */
export function withoutMediaParameters(accept: string): string {
  const ranges: string[] = [];
  for (const range of splitOutsideQuotes(accept, ",")) {
    const [type, ...params] = splitOutsideQuotes(range, ";").map((p) => p.trim());
    if (!type) continue;
    const q = params.find((p) => /^q\s*=/i.test(p));
    ranges.push(q ? `${type};${q.replace(/\s+/g, "")}` : type);
  }
  return ranges.join(", ");
}

/**
 * Picks the response format from Accept, honouring q-values (negotiator does RFC 9110 matching) and ignoring
 * other media-type parameters. Absent Accept → JSON; nothing acceptable → undefined (the caller answers 406 in
 * JSON).
 */
export function negotiateFormat(accept: string | undefined): MediaFormat | undefined {
  if (accept === undefined || accept.trim() === "") return "json";
  const chosen = new Negotiator({ headers: { accept: withoutMediaParameters(accept) } }).mediaType(OFFERED);
  if (chosen === undefined) return undefined;
  return chosen === "application/json" ? "json" : "xml";
}

export const CONTENT_TYPES: Record<MediaFormat, string> = {
  json: "application/json; charset=utf-8",
  xml: "application/xml; charset=utf-8",
};
