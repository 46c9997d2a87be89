import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import type { FastifySchema, FastifySchemaCompiler } from "fastify";

/**
 * How every route's request schema is checked. Two Ajv instances: query strings, params and headers are text, so
 * their numbers and booleans are coerced; JSON bodies are typed already, and coercing them would let 42 pass as
 * "42" or null as "" where a schema asks for a string.
 *
 * No number that is not finite passes, whatever the schema's bounds. A number too large for a double (1e309, or
 * 400 digits) reads as ±Infinity, from JSON.parse as from Ajv's coercion of text, and Ajv checks `minimum` and
 * `maximum` only on finite numbers, so ±Infinity used to pass `Type.Integer({ maximum })` and reach a store.
 * `strictNumbers` makes a JSON body's Infinity fail its type; Ajv never re-checks what it coerced, so a coerced
 * text value is looked at once more after validation (`finiteOnly`).
 */
export function validatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  const ajvBody = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strictNumbers: true });
  const ajvText = new Ajv({ coerceTypes: "array", useDefaults: true, removeAdditional: false, allErrors: false, strictNumbers: true });
  return ({ schema, httpPart }) => (httpPart === "body" ? ajvBody.compile(schema) : finiteOnly(ajvText.compile(schema)));
}

/** The path (`/pageNum`) of the first number in `data` that is not finite, or undefined. */
function nonFiniteAt(data: unknown): string | undefined {
  if (typeof data === "number") return Number.isFinite(data) ? undefined : "";
  if (data !== null && typeof data === "object") {
    for (const [key, value] of Object.entries(data)) {
      const at = nonFiniteAt(value);
      if (at !== undefined) return `/${key}${at}`;
    }
  }
  return undefined;
}

/** `validate`, failing like a type error of the field when what it coerced is ±Infinity. */
function finiteOnly(validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown) => {
    if (!validate(data)) {
      checked.errors = validate.errors;
      return false;
    }
    const at = nonFiniteAt(data);
    if (at === undefined) {
      checked.errors = null;
      return true;
    }
    const error: ErrorObject = { instancePath: at, schemaPath: "#", keyword: "type", params: {}, message: "must be a finite number" };
    checked.errors = [error];
    return false;
  }) as ValidateFunction;
  checked.schema = validate.schema;
  checked.schemaEnv = validate.schemaEnv;
  return checked;
}
