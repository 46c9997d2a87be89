import { XMLBuilder } from "fast-xml-parser";
import type { CatalogEntry } from "../errors/catalog.ts";

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
