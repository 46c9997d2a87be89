import type { FastifyReply, FastifyRequest } from "fastify";
import type { CatalogEntry } from "../errors/catalog.ts";
import { CONTENT_TYPES } from "./negotiate.ts";

/**
 * How a body is written on the wire: XML for clients that asked for it, the Part A and Part B error bodies, and
 * Part A's success replies in the negotiated format. Which error body a request gets is errorHandler.ts's choice.
 */

const XML_DECL = '<?xml version="1.0" encoding="UTF-8"?>';

/**
 * What XML 1.0 allows in a document (its `Char` production), and the rest, which no escape can carry (not even
 * `&#1;`): C0 controls but tab, newline and carriage return; lone surrogates; U+FFFE and U+FFFF.
 */
const XML_FORBIDDEN = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
/** the five markup characters, and carriage return, which a parser would turn into a newline unless referenced */
const XML_SPECIAL = /[&<>"'\r]/g;
const ENTITY: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;", "\r": "&#13;" };
/** element names the writer accepts: ours are all plain ASCII identifiers */
const XML_NAME = /^[A-Za-z_][A-Za-z0-9._-]*$/;

/**
 * Text content: the five special characters as entities (and CR as `&#13;`, which survives a parser's line-end
 * normalisation), and each character XML 1.0 forbids as U+FFFD, so no
 * value, whatever it holds, can make the document ill-formed. (Input that would need it is refused on the way in
 * where it matters, e.g. a batch item's requestedId.)
 */
export function xmlText(value: string): string {
  return value.replace(XML_SPECIAL, (c) => ENTITY[c]!).replace(XML_FORBIDDEN, "\uFFFD");
}

function xmlElement(name: string, value: unknown): string {
  if (!XML_NAME.test(name)) throw new Error(`not an XML element name: ${JSON.stringify(name.slice(0, 40))}`);
  if (value === undefined) return "";
  if (value === null) return `<${name}/>`;
  if (Array.isArray(value)) return value.map((v) => xmlElement(name, v)).join("");
  if (typeof value === "object") return `<${name}>${xmlChildren(value as Record<string, unknown>)}</${name}>`;
  return `<${name}>${xmlText(String(value))}</${name}>`;
}

function xmlChildren(body: Record<string, unknown>): string {
  let out = "";
  for (const key of Object.keys(body)) out += xmlElement(key, body[key]);
  return out;
}

/**
 * `<root>` with one child per own property, in order; nested objects become nested elements, an array one element
 * per item (named after the property), null an empty element, undefined nothing. Always a well-formed document:
 * text is escaped (`xmlText`) and a name that is not a plain XML name is a programming error, thrown.
 */
export function renderXml(root: string, body: Record<string, unknown>): string {
  return XML_DECL + xmlElement(root, body);
}

export interface PartAErrorBody {
  result: "FAIL";
  error: { code: string; message: string; reason: string };
}

export interface PartBErrorBody {
  errorId: string;
  code: string;
  message: string;
  data?: string;
}

export function partAErrorBody(entry: CatalogEntry, reason: string): PartAErrorBody {
  return { result: "FAIL", error: { code: entry.code, message: entry.message, reason } };
}

export function partBErrorBody(entry: CatalogEntry, errorId: string, data: string | undefined): PartBErrorBody {
  return data === undefined
    ? { errorId, code: entry.code, message: entry.message }
    : { errorId, code: entry.code, message: entry.message, data };
}

/** A Part A success reply: `body` as JSON, or as `<root>` when Accept chose XML. */
export function sendBody(request: FastifyRequest, reply: FastifyReply, root: string, body: Record<string, unknown>) {
  if (request.mediaFormat === "xml") return reply.type(CONTENT_TYPES.xml).send(renderXml(root, body));
  return reply.type(CONTENT_TYPES.json).send(body);
}

/** A signed result (EAR) alone, as the body: a compact JWS, `application/eat+jwt` with its profile. */
export function sendEar(reply: FastifyReply, ear: string) {
  return reply.type(CONTENT_TYPES.ear).send(ear);
}
