import type { FastifyReply, FastifyRequest } from "fastify";
import { XMLBuilder } from "fast-xml-parser";
import type { CatalogEntry } from "../errors/catalog.ts";
import { CONTENT_TYPES } from "./negotiate.ts";

/**
 * How a body is written on the wire: XML for clients that asked for it, the Part A and Part B error bodies, and
 * Part A's success replies in the negotiated format. Which error body a request gets is errorHandler.ts's choice.
 */

const builder = new XMLBuilder({ format: false, suppressEmptyNode: false, processEntities: true });
const XML_DECL = '<?xml version="1.0" encoding="UTF-8"?>';

/** `<root>` with one child per own property, text-escaped; nested objects become nested elements. */
export function renderXml(root: string, body: Record<string, unknown>): string {
  return XML_DECL + builder.build({ [root]: body });
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
