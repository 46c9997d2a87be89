import type { FastifyDynamicSwaggerOptions, SwaggerTransformObject } from "@fastify/swagger";
import { ERROR_ID_HEADER } from "./errorHandler.ts";

/**
 * The tags operations are filed under. A route names its tag (and its operationId) in its own schema;
 * test/http/openapi.test.ts holds every operation in /openapi.json to both, and every tag it uses to this list.
 */
export const API_TAGS = [
  {
    name: "attestation",
    description:
      "Part A: nonces, blobs and their verdicts, the batch, and named devices (attestation-api.md, docs/devices.md). " +
      "Every call carries the tenant's API key in x-vendor-attest-api-key.",
  },
  {
    name: "results",
    description: "The public keys that verify attestd's signed results (EARs, docs/results.md). Public and cacheable.",
  },
  {
    name: "enrollment",
    description:
      "Part B, /svc/v1: access tokens, profiles, devices, resellers and API key restrictions (docs/enrollment.md). " +
      "Every call but POST /svc/v1/auth/accesstoken carries a fresh x-vendor-apitoken.",
  },
  {
    name: "portal",
    description:
      "The admin API under /portal/api that the portal's pages call (docs/portal.md): a session cookie and, on " +
      "every change, the session's CSRF token.",
  },
  {
    name: "operations",
    description: "Liveness, readiness and Prometheus metrics, for load balancers and monitoring. Unauthenticated.",
  },
];

/**
 * What /openapi.json says beside the route schemas. OpenAPI 3.1, because its Schema Objects are JSON Schema 2020-12
 * as the routes' TypeBox schemas are: a 3.0 document is held to 3.0's older dialect, where exclusiveMinimum is a
 * boolean and the routes' numeric one (e.g. a key's rps) makes the document invalid.
 */
export const openapiOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: "3.1.0",
    info: {
      title: "attestd",
      version: "2.0",
      description:
        "Device attestation (Part A, /v2 and /api/v1), enrollment (Part B, /svc/v1), the portal's admin API " +
        "(/portal/api) and the operations routes. docs/client.md generates a typed client from this document.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    tags: API_TAGS,
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-vendor-attest-api-key" },
        apiToken: { type: "apiKey", in: "header", name: "x-vendor-apitoken" },
      },
    },
  },
  transformObject: (doc) => ("openapiObject" in doc ? withErrorIdHeader(doc.openapiObject) : doc.swaggerObject),
  // shared schemas keep their $id as their name in components.schemas, so a generated client's types are named
  refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) ?? `def-${i}` },
};

type OpenApiDocument = Extract<Parameters<SwaggerTransformObject>[0], { openapiObject: unknown }>["openapiObject"];

/** What /openapi.json says of the X-Error-Id header, on every error response. */
const ERROR_ID_HEADER_OBJECT = {
  description:
    "The errorId of this error answer (Part B and the admin API also carry it in the body as `errorId`). Unique per " +
    "answer, it names the request in the activity log: the portal finds it at /portal/activity?errorId=…",
  schema: { type: "string", pattern: "^[0-9a-f]{24}$" },
} as const;

/** Every 4XX and 5XX response of every operation names the X-Error-Id header. */
function withErrorIdHeader(doc: OpenApiDocument): OpenApiDocument {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item ?? {})) {
      const responses = (op as { responses?: Record<string, { headers?: Record<string, unknown> }> } | undefined)?.responses;
      if (!responses || typeof responses !== "object") continue;
      for (const [status, response] of Object.entries(responses)) {
        if (!/^[45]/.test(status) || !response || typeof response !== "object") continue;
        response.headers = { ...response.headers, [ERROR_ID_HEADER]: ERROR_ID_HEADER_OBJECT };
      }
    }
  }
  return doc;
}
