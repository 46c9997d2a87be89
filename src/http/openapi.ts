import type { FastifyDynamicSwaggerOptions, SwaggerTransformObject } from "@fastify/swagger";
import { PACKAGE_VERSION } from "../packageInfo.ts";
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
 * Where a relying party starts, in the order it calls them: a nonce, the blob (or a batch) that answers with the
 * verdict, then the reads of what was stored. Routes register in the order their plugins load, which is no order a
 * reader wants, so the document lists these first within their tag (and the tags in `API_TAGS` order); every other
 * operation keeps its registration order after them.
 */
export const RELYING_PARTY_ORDER = ["issueNonce", "appraiseBlob", "appraiseBatch", "getVerdict", "getDevice"] as const;

/** `paths` reordered: by the rank of their operations' tag in API_TAGS, then RELYING_PARTY_ORDER, then as they came. */
export function orderPaths<P extends Record<string, unknown>>(paths: P): P {
  const operations = (item: unknown) =>
    Object.values(item ?? {}).filter((op): op is { operationId?: string; tags?: string[] } => typeof op === "object" && op !== null && "responses" in op);
  const rank = (item: unknown): [number, number] => {
    const ops = operations(item);
    const tagRanks = ops.flatMap((op) => op.tags ?? []).map((t) => API_TAGS.findIndex((tag) => tag.name === t)).filter((i) => i >= 0);
    const flowRanks = ops.map((op) => (RELYING_PARTY_ORDER as readonly string[]).indexOf(op.operationId ?? "")).filter((i) => i >= 0);
    return [tagRanks.length ? Math.min(...tagRanks) : API_TAGS.length, flowRanks.length ? Math.min(...flowRanks) : RELYING_PARTY_ORDER.length];
  };
  const entries = Object.entries(paths).map(([path, item], index) => ({ path, item, index, rank: rank(item) }));
  entries.sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.index - b.index);
  return Object.fromEntries(entries.map((e) => [e.path, e.item])) as P;
}

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
      // the release that serves it: what a generated client was generated from, and what a bug report names
      version: PACKAGE_VERSION,
      description:
        "Device attestation (Part A, /v2 and /api/v1), enrollment (Part B, /svc/v1), the portal's admin API " +
        "(/portal/api) and the operations routes, attestation first, in the order a relying party calls it: " +
        "POST /v2/nonces, then POST /v2/blobs with the device's blob and the nonce, which answers the verdict, then " +
        "GET /api/v1/verdicts/{objectId} to read it again.\n\n" +
        "To try it here: **Authorize** with an API key (`attestd key create --tenant NAME` prints one) under `apiKey`, " +
        "open POST /v2/nonces, **Try it out**, **Execute**. docs/client.md generates a typed client from this document.",
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
  transformObject: (document) => {
    if (!("openapiObject" in document)) return document.swaggerObject;
    const paths = document.openapiObject.paths ?? {};
    // reordered in place: the document's own (union-typed) object, its keys removed and put back in order
    const ordered = orderPaths(paths as Record<string, unknown>);
    for (const key of Object.keys(paths)) delete (paths as Record<string, unknown>)[key];
    Object.assign(paths, ordered);
    return withErrorIdHeader(document.openapiObject);
  },
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
