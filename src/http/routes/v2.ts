import { Type } from "typebox";
import { catalog } from "../../errors/catalog.ts";
import { AppError } from "../../errors/AppError.ts";
import { MAX_CERTS } from "../../attestation/formats/androidKey.ts";
import { sendBody, sendEar } from "../render.ts";
import { DeviceIdSchema, jsonOrEar, NonceSchema, partAErrors, verdictRecordRef } from "../schemas/common.ts";
import type { AppDeps, AppInstance } from "../types.ts";
import { methodNotAllowed, partAGuards } from "./guards.ts";
import type { FastifyRequest } from "fastify";

const OCTET = "application/octet-stream";

/**
 * The body of POST /v2/blobs as /openapi.json describes it. Every format is sent as application/octet-stream, the
 * bytes as the device made them, and attestd tells the format from the bytes alone (blob-format.md): the
 * alternatives document what may be sent, they choose nothing. The binary forms say `format: binary`, which
 * generators make bytes of (a Blob, a byte array), beside JSON Schema 2020-12's `contentMediaType`; the text forms
 * are strings, which a client may send as they are.
 */
const binary = { type: "string", format: "binary", contentMediaType: OCTET };
const BlobBytes = Type.Unsafe<Uint8Array | string>({
  description:
    "The blob, unchanged: the bytes the device's SDK or Android Keystore gave the app. Always sent as " +
    "application/octet-stream, whatever the format: attestd tells the format from the bytes.",
  anyOf: [
    { ...binary, title: "vendor container", description: "The vendor device SDK's container, version 2 (blob-format.md)" },
    {
      ...binary,
      title: "android-key: DER certificates",
      description: "KeyStore.getCertificateChain(alias): each certificate's DER, end to end, leaf first (docs/android-key.md)",
    },
    {
      type: "string",
      title: "android-key: PEM bundle",
      description: "The same chain as PEM CERTIFICATE blocks, leaf first; text around the blocks is ignored",
      contentMediaType: "application/pem-certificate-chain",
      pattern: "-----BEGIN CERTIFICATE-----",
    },
    {
      type: "string",
      title: "android-key: x5c JSON",
      description: "The same chain as {\"x5c\": [...]} (RFC 7515 section 4.1.6), leaf first; other keys are ignored",
      contentMediaType: "application/json",
      contentSchema: {
        type: "object",
        required: ["x5c"],
        properties: {
          x5c: {
            type: "array",
            minItems: 1,
            maxItems: MAX_CERTS,
            items: { type: "string", description: "one certificate's DER in standard base64 (RFC 4648 section 4)" },
          },
        },
      },
    },
    {
      type: "string",
      title: "play-integrity: integrity token",
      description:
        "The Play Integrity token as the app received it: a compact JWE (A256KW, A256GCM) of five base64url parts; " +
        "surrounding whitespace is ignored (docs/play-integrity.md)",
      contentMediaType: "application/jose",
      pattern: "^\\s*[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+){4}\\s*$",
    },
    {
      type: "string",
      title: "app-attest: attestation object",
      description:
        "The CBOR attestation object DCAppAttestService.attestKey returns, as is: {fmt: \"apple-appattest\", attStmt: {x5c, receipt}, authData}; at most 16 KiB (docs/app-attest.md)",
      format: "binary",
      contentMediaType: "application/cbor",
    },
    {
      type: "string",
      title: "app-attest: assertion",
      description: "An assertion by a key attested before: the key id generateKey gave and the assertion generateAssertion gave, each base64 (docs/app-attest.md)",
      contentMediaType: "application/json",
      contentSchema: {
        type: "object",
        required: ["keyId", "assertion"],
        additionalProperties: false,
        properties: {
          keyId: { type: "string", description: "base64 of the 32-byte key id" },
          assertion: { type: "string", description: "base64 of the CBOR assertion {signature, authenticatorData}" },
        },
      },
    },
  ],
});

/** The query of POST /v2/blobs: the route validates `nonce` as optional text, the document as required (below). */
const BlobQuery = { nonce: Type.Optional(Type.String()), deviceId: Type.Optional(DeviceIdSchema) };

/**
 * What the document tells a client to send, in place of what the route validates. The route leaves a missing or
 * malformed nonce, a wrong Content-Type and an empty body to its own checks, each with its catalog code and in
 * attestation-api.md's order (415, then 422 or 400 BLOB_EMPTY, then NONCE_REQUIRED or NONCE_INVALID). Validation
 * comes before the handler, so a `required` nonce in the route's schema would answer a missing one NONCE_INVALID
 * with Fastify's reason, ahead of BLOB_EMPTY, and a body schema would refuse the bytes the parser hands over. So
 * the document's nonce is required and patterned and its body declared here, for @fastify/swagger only.
 */
const documentedBlobRequest = {
  querystring: Type.Object({ ...BlobQuery, nonce: NonceSchema }),
  consumes: [OCTET],
  body: BlobBytes,
};

/** POST /v2/nonces and POST /v2/blobs, with the checks in attestation-api.md's order. */
export function registerV2Routes(app: AppInstance, deps: AppDeps): void {
  const guard = partAGuards(deps);

  methodNotAllowed(app, "/v2/nonces", ["POST"]);
  // A body is accepted and ignored, whatever it is (attestation-api.md): in a scope of its own the route reads any
  // body as bytes, so `Content-Type: application/json` with an empty or unparsable body (what many client libraries
  // send) is no error. bodyLimit bounds what is read of it.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => done(null, undefined));
    registerNonceRoute(scope, deps);
  });

  // The body check runs in onRequest, before Fastify reads the body, so a wrong type or an oversized
  // Content-Length is refused without buffering anything (415 and 422 precede the nonce checks).
  const contentChecks = async (request: FastifyRequest) => {
    const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== OCTET) throw new AppError(catalog.UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/octet-stream");
    const declared = Number(request.headers["content-length"] ?? NaN);
    if (declared > deps.limits.maxBlobBytes) {
      throw new AppError(catalog.BLOB_TOO_LARGE, `The blob exceeds ${deps.limits.maxBlobBytes} bytes`);
    }
  };

  methodNotAllowed(app, "/v2/blobs", ["POST"]);
  app.post(
    "/v2/blobs",
    {
      onRequest: [guard, contentChecks],
      bodyLimit: deps.limits.maxBlobBytes,
      config: {
        tooLargeEntry: catalog.BLOB_TOO_LARGE,
        invalidEntry: catalog.NONCE_INVALID,
        // refused before the nonce is looked at, so a malformed name spends no nonce
        fieldEntries: { deviceId: catalog.INVALID_REQUEST },
        offersEar: true,
        swaggerTransform: ({ schema, url }) => ({ url, schema: { ...schema, ...documentedBlobRequest } }),
      },
      schema: {
        tags: ["attestation"],
        operationId: "appraiseBlob",
        summary: "Appraise a blob against a nonce; with deviceId, also against that device's pin",
        description: "Answers the verdict record, or with `Accept: application/eat+jwt` its signed result (EAR) alone.",
        security: [{ apiKey: [] }],
        querystring: Type.Object(BlobQuery),
        response: {
          200: jsonOrEar(verdictRecordRef, "The verdict record (JSON or XML), or its EAR"),
          ...partAErrors(400, 401, 403, 405, 406, 415, 422, 429, 500, 501),
        },
      },
    },
    async (request, reply) => {
      const blob = (request.body as Buffer | undefined) ?? Buffer.alloc(0);
      const stored = await deps.attestation.submitBlob(request.principal!.tenant, request.query.nonce, blob, {
        deviceId: request.query.deviceId,
      });
      reply.header("Location", `/api/v1/verdicts/${stored.objectId}`);
      if (request.mediaFormat === "ear") return sendEar(reply, await deps.results.ear(stored));
      return sendBody(request, reply, "verdictRecord", { ...stored.record });
    },
  );
}

/** POST /v2/nonces, registered in the scope above */
function registerNonceRoute(app: AppInstance, deps: AppDeps): void {
  app.post(
    "/v2/nonces",
    {
      onRequest: partAGuards(deps),
      bodyLimit: 4096,
      schema: {
        tags: ["attestation"],
        operationId: "issueNonce",
        summary: "Issue a single-use nonce",
        security: [{ apiKey: [] }],
        response: {
          200: Type.Object({ nonce: NonceSchema }),
          ...partAErrors(400, 401, 403, 405, 406, 422, 429, 500),
        },
      },
    },
    async (request, reply) => {
      const nonce = await deps.attestation.issueNonce(request.principal!.tenant.tenantId);
      return sendBody(request, reply, "nonceResponse", { nonce });
    },
  );
}
