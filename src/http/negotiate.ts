import Negotiator from "negotiator";
import { EAR_CONTENT_TYPE, EAR_MEDIA_TYPE } from "../results/ear.ts";

export type MediaFormat = "json" | "xml" | "ear";

const OFFERED = ["application/json", "application/xml", "text/xml"];
// Offered with its profile parameter, so an Accept of the bare type or of this profile matches and another
// profile does not; last, so `*/*` and ties keep answering JSON.
const OFFERED_WITH_EAR = [...OFFERED, EAR_CONTENT_TYPE];

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
 * Accept with every media-type parameter dropped but the weight and an EAR's profile: `application/json;
 * charset=utf-8` (the server's own Content-Type, which clients echo) is `application/json`. negotiator, like RFC
 * 9110, makes a range with parameters match only an offer with the same ones, and the server offers none for JSON
 * and XML; no parameter (charset, version) changes which of them is written, so none may turn an acceptable type
 * into a 406. `eat_profile` is the exception: it names which signed result the client can read
 * (docs/results.md), so a range asking for another profile must not match ours.
 */
export function withoutMediaParameters(accept: string): string {
  const ranges: string[] = [];
  for (const range of splitOutsideQuotes(accept, ",")) {
    const [type, ...params] = splitOutsideQuotes(range, ";").map((p) => p.trim());
    if (!type) continue;
    const kept = params.filter((p) => /^q\s*=/i.test(p) || (type.toLowerCase() === EAR_MEDIA_TYPE && /^eat_profile\s*=/i.test(p)));
    ranges.push([type, ...kept.map((p) => p.replace(/\s*=\s*/, "="))].join(";"));
  }
  return ranges.join(", ");
}

/**
 * Picks the response format from Accept, honouring q-values (negotiator does RFC 9110 matching) and ignoring
 * other media-type parameters. Absent Accept → JSON; nothing acceptable → undefined (the caller answers 406 in
 * JSON). `ear`: the route can answer with a signed result (application/eat+jwt, docs/results.md), which is then
 * offered too.
 */
export function negotiateFormat(accept: string | undefined, ear = false): MediaFormat | undefined {
  if (accept === undefined || accept.trim() === "") return "json";
  const chosen = new Negotiator({ headers: { accept: withoutMediaParameters(accept) } }).mediaType(ear ? OFFERED_WITH_EAR : OFFERED);
  if (chosen === undefined) return undefined;
  return chosen === "application/json" ? "json" : chosen === EAR_CONTENT_TYPE ? "ear" : "xml";
}

export const CONTENT_TYPES: Record<MediaFormat, string> = {
  json: "application/json; charset=utf-8",
  xml: "application/xml; charset=utf-8",
  ear: EAR_CONTENT_TYPE,
};
