import type { SwaggerOptions } from "@fastify/swagger";

/**
 * What /openapi.json says beside the route schemas. OpenAPI 3.1, because its Schema Objects are JSON Schema 2020-12
 * as the routes' TypeBox schemas are: a 3.0 document is held to 3.0's older dialect, where exclusiveMinimum is a
 * boolean and the routes' numeric one (e.g. a key's rps) makes the document invalid.
 */
export const openapiOptions: SwaggerOptions = {
  openapi: {
    openapi: "3.1.0",
    info: {
      title: "attestd",
      version: "2.0",
      description:
        "Device attestation (Part A, /v2 and /api/v1), enrollment (Part B, /svc/v1), the portal's admin API " +
        "(/portal/api) and the operations routes.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-vendor-attest-api-key" },
        apiToken: { type: "apiKey", in: "header", name: "x-vendor-apitoken" },
      },
    },
  },
  // shared schemas keep their $id as their name in components.schemas, so a generated client's types are named
  refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) ?? `def-${i}` },
};
