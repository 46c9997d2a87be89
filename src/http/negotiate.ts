import Negotiator from "negotiator";

export type MediaFormat = "json" | "xml";

const OFFERED = ["application/json", "application/xml", "text/xml"];

/**
 * Picks the response format from Accept, honouring q-values (negotiator does RFC 9110 matching). Absent Accept →
 * JSON; nothing acceptable → undefined (the caller answers 406 in JSON).
 */
export function negotiateFormat(accept: string | undefined): MediaFormat | undefined {
  if (accept === undefined || accept.trim() === "") return "json";
  const chosen = new Negotiator({ headers: { accept } }).mediaType(OFFERED);
  if (chosen === undefined) return undefined;
  return chosen === "application/json" ? "json" : "xml";
}

export const CONTENT_TYPES: Record<MediaFormat, string> = {
  json: "application/json; charset=utf-8",
  xml: "application/xml; charset=utf-8",
};
