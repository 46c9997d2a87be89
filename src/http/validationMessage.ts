/**
 * A request that fails its schema, said for a person: which field, and what it may be. The portal shows this
 * instead of the validator's own text ("querystring/status must be >= 100, querystring/status must be equal to
 * constant, querystring/status must match a schema in anyOf"), which names schema keywords and none of the
 * allowed values. The API's error codes are unchanged; only the `data` text of the portal's answers reads so.
 */

import { DEVICE_ID_PATTERN } from "../domain/devices.ts";
import { SAFE_TEXT_PATTERN } from "../domain/text.ts";
import { NONCE_PATTERN } from "../nonces/nonce.ts";

interface AjvError {
  instancePath?: string;
  keyword?: string;
  params?: { missingProperty?: string; additionalProperty?: string };
}

type Schema = {
  type?: string | string[];
  const?: unknown;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
};

/** The shared patterns, in words: what a person may type there. */
const PATTERN_WORDS: Record<string, string> = {
  [SAFE_TEXT_PATTERN]: "without control or bidi formatting characters",
  [DEVICE_ID_PATTERN]: "of A-Z a-z 0-9 . _ : - only",
  [NONCE_PATTERN]: "a nonce from POST /v2/nonces (43 characters of A-Z a-z 0-9 _ -)",
};

/** What a schema allows, in words: "one of Yes, No, Unknown", "a whole number from 100 to 599", ... */
export function allowedBy(schema: Schema | undefined): string {
  if (!schema || typeof schema !== "object") return "a valid value";
  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf.filter((s): s is Schema => typeof s === "object" && s !== null);
    const consts = branches.filter((s) => "const" in s).map((s) => s.const);
    const others = branches.filter((s) => !("const" in s)).map(allowedBy);
    const named = consts.filter((c) => c !== "").map((c) => String(c));
    const parts = [...others, ...(named.length === 1 ? [`"${named[0]}"`] : named.length ? [`one of ${named.join(", ")}`] : [])];
    return parts.join(", or ") + (consts.includes("") ? " (or empty)" : "");
  }
  if ("const" in schema) return `"${String(schema.const)}"`;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "integer" || type === "number") {
    const what = type === "integer" ? "a whole number" : "a number";
    const low = schema.minimum !== undefined ? `at least ${schema.minimum}` : schema.exclusiveMinimum !== undefined ? `more than ${schema.exclusiveMinimum}` : undefined;
    const high = schema.maximum !== undefined ? `at most ${schema.maximum}` : schema.exclusiveMaximum !== undefined ? `less than ${schema.exclusiveMaximum}` : undefined;
    if (schema.minimum !== undefined && schema.maximum !== undefined) return `${what} from ${schema.minimum} to ${schema.maximum}`;
    return [what, [low, high].filter(Boolean).join(" and ")].filter(Boolean).join(", ");
  }
  if (type === "boolean") return "true or false";
  if (type === "null") return "null";
  if (type === "string") {
    const length =
      schema.minLength && schema.maxLength ? `${schema.minLength} to ${schema.maxLength} characters`
      : schema.maxLength !== undefined ? `at most ${schema.maxLength} characters`
      : schema.minLength ? `at least ${schema.minLength} characters`
      : "text";
    if (schema.pattern && PATTERN_WORDS[schema.pattern]) {
      const words = PATTERN_WORDS[schema.pattern]!;
      return schema.pattern === NONCE_PATTERN ? words : `${length} ${words}`;
    }
    return schema.pattern || schema.format ? `${length} of the expected form` : length;
  }
  if (type === "object") return "an object";
  if (type === "array") return "a list";
  return "a valid value";
}

const PARTS: Record<string, string> = { querystring: "filter or query parameter", body: "field", params: "part of the address", headers: "header" };

/**
 * The first validation error as a sentence: `status: must be a whole number from 100 to 599 (or empty for any)`.
 * `schema` is the failed part's schema (the route's querystring, body, ... schema); `context` says which part.
 */
export function readableValidation(validation: unknown, context: string | undefined, schema: unknown): string {
  const errors = (Array.isArray(validation) ? validation : []) as AjvError[];
  const first = errors[0];
  const root = (typeof schema === "object" && schema !== null ? schema : undefined) as Schema | undefined;
  const what = PARTS[context ?? ""] ?? "field";
  if (!first) return `A ${what} is not valid.`;
  if (first.keyword === "additionalProperties" && first.params?.additionalProperty) {
    const known = root?.properties && typeof root.properties === "object" ? Object.keys(root.properties) : [];
    return `"${first.params.additionalProperty}" is not a ${what} here${known.length ? `; the ones there are: ${known.join(", ")}` : ""}.`;
  }
  if (first.keyword === "required" && first.params?.missingProperty) {
    const name = first.params.missingProperty;
    return `${name}: missing; it must be ${allowedBy(root?.properties?.[name])}.`;
  }
  // the top-level field the error is about; an anyOf reports every branch, all under the same field
  const path = (first.instancePath ?? "").split("/").filter(Boolean);
  const name = path[0];
  if (!name) return `The ${what}s are not valid.`;
  const field = root?.properties?.[name];
  const shown = path.length > 1 ? path.join(".") : name;
  return `${shown}: must be ${path.length > 1 ? "valid" : allowedBy(field)}.`;
}
