import Negotiator from "negotiator";
import { EAR_CONTENT_TYPE } from "../results/ear.ts";

export type MediaFormat = "json" | "xml" | "ear";

const OFFERED = ["application/json", "application/xml", "text/xml"];
// Offered with its profile parameter, so an Accept of the bare type or of this profile matches and another
// profile does not; last, so `*/*` and ties keep answering JSON.
const OFFERED_WITH_EAR = [...OFFERED, EAR_CONTENT_TYPE];

/**
 * Picks the response format from Accept, honouring q-values (negotiator does RFC 9110 matching). Absent Accept →
 * JSON; nothing acceptable → undefined (the caller answers 406 in JSON). `ear`: the route can answer with a signed
 * result (application/eat+jwt, docs/results.md), which is then offered too.
 */
export function negotiateFormat(accept: string | undefined, ear = false): MediaFormat | undefined {
  if (accept === undefined || accept.trim() === "") return "json";
  const chosen = new Negotiator({ headers: { accept } }).mediaType(ear ? OFFERED_WITH_EAR : OFFERED);
  if (chosen === undefined) return undefined;
  return chosen === "application/json" ? "json" : chosen === EAR_CONTENT_TYPE ? "ear" : "xml";
}

export const CONTENT_TYPES: Record<MediaFormat, string> = {
  json: "application/json; charset=utf-8",
  xml: "application/xml; charset=utf-8",
  ear: EAR_CONTENT_TYPE,
};
