import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Type } from "typebox";
import { allowedBy, readableValidation } from "../../src/http/validationMessage.ts";

/**
 * src/http/validationMessage.ts: what the portal says of a field that fails its schema. The routes' own answers are
 * in test/http/portalVerdictWords.test.ts; here, the words for each kind of schema, and that whatever the validator
 * reports (any shape, any path) the answer is a sentence without the validator's keywords and never a throw.
 */
describe("readable validation messages", () => {
  it("says what each kind of schema allows", () => {
    assert.equal(allowedBy(Type.Union([Type.Literal("Yes"), Type.Literal("No"), Type.Literal("")])), "one of Yes, No (or empty)");
    assert.equal(allowedBy(Type.Integer({ minimum: 1, maximum: 5 })), "a whole number from 1 to 5");
    assert.equal(allowedBy(Type.Number({ exclusiveMinimum: 0 })), "a number, more than 0");
    assert.equal(allowedBy(Type.String({ maxLength: 9 })), "at most 9 characters");
    assert.equal(allowedBy(Type.String({ minLength: 2, maxLength: 9, pattern: "^x+$" })), "2 to 9 characters of the expected form");
    assert.equal(allowedBy(Type.Boolean()), "true or false");
    assert.equal(allowedBy(undefined), "a valid value");
  });

  it("names the field, a missing one, an unknown one", () => {
    const schema = Type.Object({ status: Type.Integer({ minimum: 100, maximum: 599 }), name: Type.String({ maxLength: 3 }) }, { additionalProperties: false });
    assert.equal(readableValidation([{ instancePath: "/status", keyword: "minimum" }], "querystring", schema), "status: must be a whole number from 100 to 599.");
    assert.equal(readableValidation([{ instancePath: "", keyword: "required", params: { missingProperty: "name" } }], "body", schema), "name: missing; it must be at most 3 characters.");
    assert.equal(
      readableValidation([{ instancePath: "", keyword: "additionalProperties", params: { additionalProperty: "x" } }], "body", schema),
      '"x" is not a field here; the ones there are: status, name.',
    );
  });

  it("any report, any schema: a sentence, no validator keyword, no throw", () => {
    const error = fc.record(
      {
        instancePath: fc.oneof(fc.constant(""), fc.string().map((s) => `/${s}`), fc.string()),
        keyword: fc.constantFrom("anyOf", "type", "minimum", "required", "additionalProperties", "pattern", "const"),
        params: fc.record({ missingProperty: fc.string(), additionalProperty: fc.string() }, { requiredKeys: [] }),
      },
      { requiredKeys: [] },
    );
    // schemas of the shapes the routes use, and shapes they do not: nested at random
    const { schemaLike } = fc.letrec((tie) => ({
      schemaLike: fc.oneof(
        { depthSize: "small" },
        fc.anything(),
        fc.record({ anyOf: fc.oneof(fc.array(tie("schemaLike")), fc.anything()) }, { requiredKeys: [] }),
        fc.record({ properties: fc.oneof(fc.dictionary(fc.string(), tie("schemaLike")), fc.anything()), type: fc.constantFrom("object", "string", "integer", "null") }, { requiredKeys: [] }),
        fc.record({ const: fc.anything(), type: fc.anything(), maxLength: fc.nat(), minimum: fc.integer(), pattern: fc.string() }, { requiredKeys: [] }),
      ),
    }));
    fc.assert(
      fc.property(fc.oneof(fc.array(error), fc.anything()), fc.option(fc.constantFrom("querystring", "body", "params", "headers", "other")), schemaLike, (validation, context, schema) => {
        const text = readableValidation(validation, context ?? undefined, schema);
        assert.equal(typeof text, "string");
        assert.ok(text.length > 0);
        assert.ok(!/\banyOf\b|must match a schema|must be equal to constant/.test(text), text);
      }),
      { numRuns: 500 },
    );
  });
});
